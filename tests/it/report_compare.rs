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
    let titles: Vec<&str> = c.sections.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Short prompts, 1 concurrent",
            "Short prompts, 8 concurrent",
            "Short prompts, 16 concurrent"
        ]
    );
    let mut out = Vec::new();
    markdown::write_comparison(&c, &mut out).expect("write");
    let md = String::from_utf8(out).expect("utf-8");
    report_support::assert_no_nan(&md);
    assert!(md.contains("| TTFT P95 | 0.20 s | – | – | – |"), "{md}");
    assert!(
        md.contains("| Output | 30.0 tok/s | 33.0 tok/s | +3.0 tok/s (+10.0 %) | better |"),
        "{md}"
    );
    assert!(md.contains("| Output | 150.0 tok/s | – | – | – |"), "{md}");
}
