//! A profile for a server the team did not configure: a calibration run of
//! a test server (in virtual time), `calibrate --targets-from
//! classroom-64k`, and the profile it writes judged as the capacity suite
//! judges it: the suite lists its trials; the server itself meets every
//! quick target on the same workloads; the same server with half its seats
//! does not.

use std::path::Path;
use std::time::Duration;

use codendum::acceptance::quick::{quick_class, QUICK_BENCH_LEVEL_CAP, QUICK_BENCH_REQUESTS};
use codendum::bench::config::{Cell, Load};
use codendum::bench::BenchConfig;
use codendum::calibrate::targets::class_figures;
use codendum::classroom::ClassroomConfig;
use codendum_core::profile::Profile;
use codendum_core::targets::bench::{bound_of, parse_targets, ModeTargets};

use super::calibrate_inputs::{calibrate, stderr};
use super::calibrate_twin::{calibration_run, FIXTURES};

/// Every quick target `server` misses on the quick workloads, in virtual time.
fn quick_misses(server: &Profile, quick: &ModeTargets, scratch: &Path) -> Vec<String> {
    let cells = quick
        .bench
        .iter()
        .map(|t| Cell {
            shape: t.shape().expect("a shape"),
            concurrency: t.concurrency,
            requests: QUICK_BENCH_REQUESTS,
        })
        .collect();
    let config = BenchConfig {
        load: Load::Cells(cells),
        level_duration: Some(QUICK_BENCH_LEVEL_CAP),
        ..BenchConfig::default()
    };
    let levels = codendum::virtual_time::bench_on_twin(server, config, scratch).expect("bench");
    let mut misses = Vec::new();
    for t in &quick.bench {
        let level = levels.iter().find(|l| t.names(l)).expect("the level ran");
        for (metric, limit) in t.checked() {
            let value = metric.number(level);
            if !bound_of(metric).expect("a bound").is_met(value, limit) {
                misses.push(format!(
                    "{} {}: {value:?} against {limit}",
                    t.group_name(),
                    metric.column
                ));
            }
        }
    }
    let class = class_figures(
        server,
        quick_class(ClassroomConfig::new(String::new(), None)),
    )
    .expect("class");
    let judged = quick
        .classroom
        .as_ref()
        .expect("class targets")
        .judge(&class.summary);
    for c in judged.iter().filter(|c| !c.passed) {
        misses.push(format!(
            "classroom {}: {:?} against {}",
            c.key.name(),
            c.measured,
            c.limit
        ));
    }
    misses
}

#[test]
fn a_calibrated_profile_carries_targets_its_own_server_meets() {
    let truth = Profile::load(&format!("{FIXTURES}/dense-fast.toml")).expect("fixture");
    let dir = tempfile::tempdir().expect("dir");
    let run = calibration_run(&truth, dir.path());
    let out = dir.path().join("lab").join("lab.toml");
    std::fs::create_dir_all(out.parent().expect("parent")).expect("mkdir");
    let o = calibrate(&[
        run.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--targets-from",
        "classroom-64k",
        "--bootstrap",
        "10",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lab = Profile::load(out.to_str().expect("utf-8")).expect("the profile loads");
    // The server's own settings, read from the runs.
    assert_eq!(lab.server.max_num_seqs, truth.server.max_num_seqs);
    assert_eq!(lab.server.kv_cache_tokens, truth.server.kv_cache_tokens);
    assert_eq!(lab.server.max_model_len, truth.server.max_model_len);
    assert_eq!(lab.server.served_model_name, truth.server.served_model_name);
    let targets = parse_targets(&lab.targets).expect("the suite's targets parse");
    let class = targets.full.classroom.as_ref().expect("full class targets");
    let required = |key: &str| {
        class
            .limits()
            .iter()
            .find(|(k, _)| k.name() == key)
            .map(|p| p.1)
    };
    assert_eq!(
        required("ttft_p95_s"),
        Some(75.0),
        "the lab's requirement, copied"
    );
    assert_eq!(required("coding_request_p50_s"), Some(900.0));
    let groups: Vec<String> = targets.quick.bench.iter().map(|t| t.group_name()).collect();
    assert_eq!(
        groups,
        vec!["bench-short-c1", "bench-short-c24", "bench-short-c36"],
        "one at a time, the seats, half again"
    );

    // The capacity suite takes the profile and lists its trials.
    let settings = codendum::acceptance::settings::Settings::from_lookup(|k| {
        (k == "CODENDUM_CAPACITY_PROFILES").then(|| out.display().to_string())
    })
    .expect("settings");
    let suite = codendum::app::suite(settings, dir.path().join("cache"));
    let names: Vec<String> = suite.trials().into_iter().map(|t| t.name).collect();
    for want in [
        "lab::bench-short-c24::ttft_p95",
        "lab::bench-short-c36::output_tok_per_s",
        "lab::classroom::server_output_tok_per_s",
        "lab::classroom::server_errors",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    assert!(!names.iter().any(|n| n.ends_with("::targets")), "{names:?}");

    // The server it was fitted to meets every quick target; with half its
    // seats it does not.
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).expect("scratch");
    let misses = quick_misses(&truth, &targets.quick, &scratch);
    assert!(
        misses.is_empty(),
        "the calibrated server misses: {misses:?}"
    );
    let mut halved = truth.clone();
    halved.server.max_num_seqs /= 2;
    let misses = quick_misses(&halved, &targets.quick, &scratch);
    assert!(
        misses
            .iter()
            .any(|m| m.contains("bench-short-c36 ttft_p95")),
        "half the seats keeps requests waiting: {misses:?}"
    );
}

/// A calibration run of `truth` with the decode ladder `ladder` in virtual
/// time, as a live vLLM leaves it: the engine's settings not stated, the
/// server timeline read every second.
fn live_like_run(truth: &Profile, ladder: Vec<u32>, root: &Path) -> std::path::PathBuf {
    use codendum::bench::calibration::{calibration_plan, CalibrationInputs};
    use codendum_twin::inproc::{InProcTransport, StatsSampler};
    let plan = calibration_plan(&CalibrationInputs {
        ladder,
        seats: None,
        max_model_len: Some(u64::from(truth.server.max_model_len)),
        output_tokens: 128,
    });
    std::fs::create_dir_all(root).expect("root");
    let (folder, timeline, first) = codendum::virtual_time::on_paused_runtime(async {
        let clock = codendum_core::clock::Clock::scaled(1.0);
        let mut opts = codendum_twin::TwinOptions::new(truth.clone());
        opts.clock = clock.clone();
        let transport = std::sync::Arc::new(InProcTransport::start(opts));
        let sampler = StatsSampler::spawn(transport.clone(), Duration::from_secs(1));
        let mut run = codendum::settings::RunSettings::new(
            codendum_core::access::ClientSettings::new(Duration::from_secs(3_600)),
        );
        run.results_dir = root.to_path_buf();
        run.yes = true;
        let config = BenchConfig {
            load: Load::Cells(plan.cells),
            output_tokens: 128,
            ..BenchConfig::default()
        };
        let info = codendum::bench::TwinFacts {
            model: truth.server.served_model_name.clone(),
            max_model_len: Some(u64::from(truth.server.max_model_len)),
            tokenize: true,
        };
        let outcome =
            codendum::bench::run_on_twin((&config, &run), &transport, &info, clock).await?;
        let first = outcome.levels.first().map_or(0.0, |l| l.started_at_s);
        Ok((outcome.folder, sampler.finish(), first))
    })
    .expect("the calibration runs");
    // On the run's axis, as the live sampler writes it.
    let lines: String = timeline
        .into_iter()
        .map(|mut s| {
            s.t -= first;
            serde_json::to_string(&s).expect("json") + "\n"
        })
        .collect();
    std::fs::write(folder.join("server-timeline.jsonl"), lines).expect("timeline");
    folder
}

#[test]
fn seats_are_read_where_only_seats_make_requests_wait() {
    let truth = Profile::load(&format!("{FIXTURES}/cpu-compute.toml")).expect("fixture");
    assert_eq!(truth.server.max_num_seqs, 8);
    let dir = tempfile::tempdir().expect("dir");
    let seats_of = |ladder: Vec<u32>, name: &str| {
        let root = dir.path().join(name);
        let run = live_like_run(&truth, ladder, &root);
        let out = root.join(format!("{name}.toml"));
        let o = calibrate(&[
            run.to_str().expect("utf-8"),
            "--out",
            out.to_str().expect("utf-8"),
            "--bootstrap",
            "5",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = std::fs::read_to_string(&out).expect("profile");
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("max_num_seqs"))
            .expect("max_num_seqs");
        (lines[at - 1].to_string(), lines[at].to_string())
    };
    // A ladder beyond the seats: the short prompts wait for a seat at 12.
    let (source, value) = seats_of(vec![1, 2, 4, 8, 12], "beyond");
    assert_eq!(value, "max_num_seqs = 8", "{source}");
    assert!(source.contains("inferred: at 12 in flight"), "{source}");
    // A ladder up to the seats: long prompts wait for the step's budget,
    // which says nothing of the seats; a lower bound, said as such.
    let (source, value) = seats_of(vec![1, 2, 4, 8], "up-to");
    assert_eq!(value, "max_num_seqs = 8", "{source}");
    assert!(
        source.contains("lower bound") && source.contains("--max-num-seqs"),
        "{source}"
    );
}
