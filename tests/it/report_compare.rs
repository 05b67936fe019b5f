//! The comparison model: headings naming what differs, change words that
//! know which direction is good, and runs that lack a figure.

use crate::report_support;

use codendum_core::access::Provenance;
use codendum_core::results::metrics::{Better, Shown, Unit};
use codendum_core::results::LevelSummary;
use codendum_report::{markdown, Assessment, BenchReport, ComparedFigure, Comparison, RunInfo};

fn run(profile: &str, image: &str, server: &str) -> RunInfo {
    RunInfo {
        provenance: Provenance {
            profile: Some(profile.to_string()),
            image_digest: Some(image.to_string()),
            ..Provenance::default()
        },
        server_version: Some(server.to_string()),
        codendum_version: "0.1.0".to_string(),
        ..RunInfo::default()
    }
}

fn report(info: RunInfo, levels: Vec<LevelSummary>) -> BenchReport {
    BenchReport {
        run: info,
        levels,
        ..BenchReport::default()
    }
}

fn level(concurrency: u32, out: f64, ttft_p95: Option<f64>) -> LevelSummary {
    LevelSummary {
        shape: "short".to_string(),
        concurrency,
        output_tok_per_s: out,
        ttft_p95_s: ttft_p95,
        ..LevelSummary::default()
    }
}

#[test]
fn a_change_inside_both_intervals_is_within_noise() {
    use codendum_core::stats::Interval;
    let fig = |a: (f64, f64, f64), b: (f64, f64, f64)| {
        ComparedFigure::new(
            "TTFT P95",
            Unit::Seconds,
            Better::Lower,
            vec![Some(a.0), Some(b.0)],
        )
        .with_intervals(vec![
            Some(Interval::closed(a.1, a.2)),
            Some(Interval::closed(b.1, b.2)),
        ])
    };
    let word = |f: ComparedFigure| f.change(1).map(|c| c.assessment);
    // 29.5 (27.8–31.3) then 31.0 (29.0–33.2): the intervals overlap.
    assert_eq!(
        word(fig((29.5, 27.8, 31.3), (31.0, 29.0, 33.2))),
        Some(Assessment::WithinNoise)
    );
    // 29.5 (27.8–31.3) then 36.0 (33.0–39.0): worse, for real.
    assert_eq!(
        word(fig((29.5, 27.8, 31.3), (36.0, 33.0, 39.0))),
        Some(Assessment::Worse)
    );
    assert_eq!(Assessment::WithinNoise.word(), "within noise");
    // Without intervals (older folders), the 0.5 % rule still applies.
    let plain = ComparedFigure::new(
        "x",
        Unit::Seconds,
        Better::Lower,
        vec![Some(2.0), Some(1.0)],
    );
    assert_eq!(word(plain), Some(Assessment::Better));
}

#[test]
fn assessment_follows_direction() {
    let f = |better, a, b| ComparedFigure::new("x", Unit::Seconds, better, vec![Some(a), Some(b)]);
    let word = |fig: ComparedFigure| fig.change(1).map(|c| c.assessment);
    assert_eq!(word(f(Better::Lower, 2.0, 1.0)), Some(Assessment::Better));
    assert_eq!(word(f(Better::Lower, 1.0, 2.0)), Some(Assessment::Worse));
    assert_eq!(word(f(Better::Higher, 1.0, 2.0)), Some(Assessment::Better));
    assert_eq!(word(f(Better::Higher, 2.0, 1.0)), Some(Assessment::Worse));
    assert_eq!(
        word(f(Better::Neither, 1.0, 2.0)),
        Some(Assessment::Changed)
    );
    assert_eq!(
        word(f(Better::Higher, 100.0, 100.4)),
        Some(Assessment::Same)
    );
    // Zero baseline: no percentage, but the direction still counts.
    let zero = f(Better::Lower, 0.0, 3.0).change(1).expect("values");
    assert_eq!(zero.percent, None);
    assert_eq!(zero.assessment, Assessment::Worse);
    // A missing or non-finite value gives no change.
    let missing = ComparedFigure::new("x", Unit::Count, Better::Lower, vec![Some(1.0), None]);
    assert_eq!(missing.change(1), None);
    let nan = ComparedFigure::new(
        "x",
        Unit::Count,
        Better::Lower,
        vec![Some(f64::NAN), Some(1.0)],
    );
    assert_eq!(nan.change(1), None);
    assert_eq!(missing.change(5), None);
}

#[test]
fn units_show_values_and_changes() {
    let fig = |unit| ComparedFigure::new("x", unit, Better::Neither, vec![]);
    let shown = |unit, shown| fig(unit).shown_as(shown);
    assert_eq!(fig(Unit::TokensPerSecond).show(110.0), "110.0 tok/s");
    assert_eq!(shown(Unit::Seconds, Shown::Millis).show(0.0314), "31.4 ms");
    assert_eq!(shown(Unit::Seconds, Shown::Minutes).show(660.0), "11.0 min");
    assert_eq!(fig(Unit::Fraction).show(0.085), "8.5 %");
    assert_eq!(fig(Unit::Fraction).show_delta(0.03), "+3.0 pp");
    assert_eq!(fig(Unit::Seconds).show_delta(-6.9), "-6.90 s");
    assert_eq!(fig(Unit::Count).show_delta(0.0), "0");
    assert_eq!(fig(Unit::TokensPerSecond).show_delta(0.01), "0.0 tok/s");
    assert_eq!(fig(Unit::Seconds).show(f64::NAN), "–");
}

#[test]
fn heading_names_what_differs() {
    let a = report(run("p1", "sha256:a", "vLLM 0.30.0"), vec![]);
    let b = report(run("p2", "sha256:b", "vLLM 0.30.0"), vec![]);
    let c = report(run("p3", "sha256:a", "vLLM 0.31.0"), vec![]);
    let two = Comparison::of_bench(&[("a".into(), &a), ("b".into(), &b)]).expect("two");
    assert_eq!(two.heading(), "Profile and image digest differ");
    let three = Comparison::of_bench(&[("a".into(), &a), ("b".into(), &b), ("c".into(), &c)])
        .expect("three");
    assert_eq!(three.heading(), "Profile, image digest and server differ");
    let same = Comparison::of_bench(&[("a".into(), &a), ("a2".into(), &a)]).expect("two");
    assert_eq!(same.heading(), "Same profile, image, model and server");
    assert!(same.differences.is_empty());
    let one = Comparison::of_bench(&[
        ("a".into(), &a),
        (
            String::new(),
            &report(run("p1", "sha256:a", "vLLM 0.31.0"), vec![]),
        ),
    ])
    .expect("two");
    assert_eq!(one.heading(), "Server: vLLM 0.30.0 vs vLLM 0.31.0");
    assert_eq!(one.labels, vec!["a".to_string(), "Run 2".to_string()]);
}

/// The comparison's section headings.
fn titles(c: &Comparison) -> Vec<&str> {
    c.sections.iter().map(|s| s.title.as_str()).collect()
}

/// The comparison as compare.md.
fn markdown_of(c: &Comparison) -> String {
    let mut out = Vec::new();
    markdown::write_comparison(c, &mut out).expect("write");
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn levels_missing_in_one_run_show_as_dashes() {
    let a = report(
        run("p1", "i", "s"),
        vec![level(1, 30.0, Some(0.2)), level(8, 150.0, Some(0.5))],
    );
    let b = report(
        run("p2", "i", "s"),
        vec![level(1, 33.0, None), level(16, 210.0, Some(0.9))],
    );
    let c = Comparison::of_bench(&[("a".into(), &a), ("b".into(), &b)]).expect("two");
    assert_eq!(
        titles(&c),
        [
            "Short prompts, 1 concurrent",
            "Short prompts, 8 concurrent",
            "Short prompts, 16 concurrent"
        ]
    );
    let md = markdown_of(&c);
    report_support::assert_no_nan(&md);
    assert!(md.contains("| TTFT P95 | 0.20 s | – | – | – |"), "{md}");
    assert!(
        md.contains("| Output | 30.0 tok/s | 33.0 tok/s | +3.0 tok/s (+10.0 %) | better |"),
        "{md}"
    );
    assert!(md.contains("| Output | 150.0 tok/s | – | – | – |"), "{md}");
}

/// A short-prompt rate level at `rate` requests/s.
fn rate_level(rate: f64, out: f64) -> LevelSummary {
    LevelSummary {
        shape: "short".to_string(),
        output_tok_per_s: out,
        rate: Some(codendum_core::results::RateFigures {
            rate_per_s: rate,
            arrival: "poisson".to_string(),
            ..Default::default()
        }),
        ..LevelSummary::default()
    }
}

/// A sweep's report: short prompts at 1 and 8 in flight, then each
/// `(rate, output tok/s)`.
fn sweep(rates: &[(f64, f64)]) -> BenchReport {
    let mut levels = vec![level(1, 10.0, None), level(8, 50.0, None)];
    levels.extend(rates.iter().map(|(r, out)| rate_level(*r, *out)));
    report(run("p", "i", "s"), levels)
}

#[test]
fn sweeps_of_different_lengths_pair_by_nearest_rate_and_list_the_rest() {
    // A full sweep of three rates against one stopped after two: 1.2 and
    // 1.25, 2.31 and 2.40 are within 10 %; 3.4 has no partner.
    let a = sweep(&[(1.2, 20.0), (2.31, 30.0), (3.4, 40.0)]);
    let b = sweep(&[(1.25, 21.0), (2.40, 31.0)]);
    let c = Comparison::of_bench(&[("a".into(), &a), ("b".into(), &b)]).expect("two");
    assert_eq!(
        titles(&c),
        [
            "Short prompts, 1 concurrent",
            "Short prompts, 8 concurrent",
            "Short prompts, rate 1.2 req/s vs 1.25 req/s (paired by nearest rate)",
            "Short prompts, rate 2.31 req/s vs 2.4 req/s (paired by nearest rate)",
            "Short prompts, rate 3.4 req/s vs –",
        ]
    );
    assert!(
        c.sections[4].note.as_deref().is_some_and(
            |n| n == "No partner in b: no rate level there within 10 % of a's 3.4 req/s."
        )
    );
    let md = markdown_of(&c);
    assert!(
        md.contains(
            "the rate levels of b are paired with a's by nearest rate, within 10 % of the \
             baseline's rate (a: a sweep of 3 rates; b: a sweep of 2 rates). 1 without a partner \
             is listed on its own."
        ),
        "{md}"
    );
    assert!(md.contains("| Output | 40.0 tok/s | – | – | – |"), "{md}");
    // As many rates on each side: by place, even where the rates moved
    // further apart than the tolerance.
    let far = sweep(&[(1.6, 21.0), (2.9, 31.0), (4.2, 41.0)]);
    let c = Comparison::of_bench(&[("a".into(), &a), ("far".into(), &far)]).expect("two");
    assert_eq!(
        c.sections[3].title,
        "Short prompts, sweep rate 2 of 3: rate 2.31 req/s vs 2.9 req/s (paired by place)"
    );
    assert!(c.sections.iter().all(|s| s.note.is_none()));
    // Three runs: each later run pairs with the baseline its own way, and
    // the heading says which; a rate only a later run has stands alone.
    let lone = sweep(&[(1.2, 20.0), (5.0, 60.0)]);
    let c = Comparison::of_bench(&[
        ("a".into(), &a),
        ("far".into(), &far),
        ("lone".into(), &lone),
    ])
    .expect("three");
    assert_eq!(
        c.sections[3].title,
        "Short prompts, sweep rate 2 of 3: rate 2.31 req/s vs 2.9 req/s vs – (paired by place)"
    );
    assert_eq!(
        c.sections[2].title,
        "Short prompts, sweep rate 1 of 3: rate 1.2 req/s vs 1.6 req/s vs 1.2 req/s \
         (paired: far by place, lone by nearest rate)"
    );
    let last = c.sections.last().expect("sections");
    assert_eq!(last.title, "Short prompts, rate – vs – vs 5 req/s");
    assert_eq!(
        last.note.as_deref(),
        Some("Only in lone: a has no rate level within 10 % of its 5 req/s, so it stands alone.")
    );
}

#[test]
fn two_twin_sweeps_with_different_seeds_compare_level_by_level() {
    use crate::cli_support::{codendum, only_folder, read_json, run as run_cli};
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    let sweep = |seed: &str, out: &str| {
        let mut cmd = codendum(cwd);
        cmd.args([
            "bench",
            "--sweep",
            "2",
            "--concurrency",
            "4",
            "--shapes",
            "short",
        ]);
        cmd.args(["--requests-per-level", "16", "--output-tokens", "16"]);
        cmd.args(["--time-scale", "100", "--no-report", "--seed", seed]);
        cmd.args(["--results-dir", out]);
        let done = run_cli(cmd);
        assert_eq!(done.code, Some(0), "{}", done.both());
        let folder = only_folder(&cwd.join(out));
        let rates: Vec<f64> = read_json(&folder.join("summary.json"))["levels"]
            .as_array()
            .expect("levels")
            .iter()
            .filter_map(|l| l["rate"]["rate_per_s"].as_f64())
            .collect();
        (folder, rates)
    };
    let ((a, ra), (b, rb)) = (sweep("1", "one"), sweep("2", "two"));
    assert_eq!((ra.len(), rb.len()), (2, 2), "{ra:?} {rb:?}");
    let mut cmd = codendum(cwd);
    cmd.arg("compare").arg(&a).arg(&b).args(["--out", "cmp"]);
    let done = run_cli(cmd);
    assert_eq!(
        done.code,
        Some(0),
        "a comparison, not a refusal: {}",
        done.both()
    );
    let md = std::fs::read_to_string(cwd.join("cmp/compare.md")).expect("compare.md");
    assert!(md.contains("by their place in the sweep"), "{md}");
    for k in 0..2 {
        let trim = codendum_core::results::records::trim_rate;
        let heading = if trim(ra[k]) == trim(rb[k]) {
            format!("## Short prompts, {} requests/s", trim(ra[k]))
        } else {
            format!(
                "## Short prompts, sweep rate {} of 2: rate {} req/s vs {} req/s (paired by place)",
                k + 1,
                trim(ra[k]),
                trim(rb[k])
            )
        };
        assert!(md.contains(&heading), "{heading} in {md}");
    }
    assert!(!md.contains("No partner"), "{md}");
}
