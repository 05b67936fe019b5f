//! `codendum capacity` as a user runs it, against the embedded twin served
//! faster than real time: the plan, the steps, each tier's answer, the
//! results folder (capacity.json, the report with its chart) and `compare`
//! of two searches. The figures depend on the machine's load (the twin runs
//! in real time, scaled), so only what holds at any load is asserted.

use std::path::Path;

use crate::cli_support::{codendum, only_folder, read_json, run, Finished};
use codendum_testkit::profiles::write_gb10_with_seats;

/// A search of at most six students on the two-seat twin, 100 times faster
/// than real time, with `tiers`.
fn search(dir: &Path, tiers: &str, results: &str, extra: &[&str]) -> Finished {
    let mut cmd = codendum(dir);
    cmd.args(["capacity", "--profile", "tiny.toml", "--tiers", tiers])
        .args(["--max-users", "6", "--hold", "60", "--join-over", "10"])
        .args(["--settle", "20", "--time-scale", "100", "--seed", "3"])
        .args(["--results-dir", results])
        .args(extra);
    run(cmd)
}

#[test]
fn a_search_on_the_embedded_twin_answers_every_tier_and_compares() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_gb10_with_seats(dir.path(), "tiny.toml", 2);
    let f = search(dir.path(), "fast:ttft_p95=5s,slow:ttft_p95=40s", "one", &[]);
    assert_eq!(f.code, Some(0), "{}", f.both());
    for said in [
        "the twin (profile tiny",
        "predicts: fast ",
        "server time: about ",
        "step 1, ",
        "students carried: fast ",
    ] {
        assert!(f.stderr.contains(said), "{said:?} not in:\n{}", f.stderr);
    }
    let folder = only_folder(&dir.path().join("one"));
    let results = read_json(&folder.join("capacity.json"));
    assert_eq!(results["kind"], "capacity");
    let answers = results["answers"].as_array().expect("answers");
    let tiers: Vec<&str> = answers
        .iter()
        .map(|a| a["tier"].as_str().expect("tier"))
        .collect();
    assert_eq!(tiers, ["fast", "slow"]);
    for a in answers {
        let (carries, upper) = (a["carries"].as_u64(), a["upper"].as_u64());
        assert!(carries <= upper && upper <= Some(6), "{a}");
        assert!(a["predicted"].is_u64(), "{a}");
    }
    let steps = results["steps"].as_array().expect("steps");
    assert!(!steps.is_empty());
    // Over HTTP the stream tells each call's first token as it comes, so
    // a step is judged while calls of its window still stream.
    assert!(
        steps.iter().any(|s| s["unfinished"].as_u64() > Some(0)),
        "every step waited for its calls to end: {:?}",
        steps.iter().map(|s| &s["unfinished"]).collect::<Vec<_>>()
    );
    for s in steps {
        assert!(s["measured"]["requests"].as_u64() > Some(0), "{s}");
        assert!(s["predicted"].is_object(), "no twin figures beside {s}");
        assert_eq!(s["tiers"].as_array().map(Vec::len), Some(2), "{s}");
        // The window lasts at least its 60 s; a loaded machine makes the
        // scaled twin's clock late, never early.
        let (start, end) = (s["window_start_s"].as_f64(), s["window_end_s"].as_f64());
        let window_s = end.zip(start).map(|(e, s)| e - s).expect("window");
        assert!(window_s >= 59.9, "{s}");
    }
    let report = std::fs::read_to_string(folder.join("report.html")).expect("report");
    assert!(report.contains("<svg"), "no chart in the report");
    assert!(
        report.contains("Judged (s after the window)") && report.contains("Calls still streaming"),
        "the steps table does not say when each step was judged"
    );
    // A second search with other targets: compare says what changed.
    let f = search(
        dir.path(),
        "fast:ttft_p95=10s,slow:ttft_p95=60s",
        "two",
        &["--no-report"],
    );
    assert_eq!(f.code, Some(0), "{}", f.both());
    let other = only_folder(&dir.path().join("two"));
    let mut cmd = codendum(dir.path());
    cmd.arg("compare").arg(&folder).arg(&other);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    let compared = std::fs::read_to_string(other.join("compare.md")).expect("compare.md");
    for said in [
        "## Students carried",
        "| Targets of fast | TTFT P95 ≤ 5.00 s | TTFT P95 ≤ 10.0 s |",
        "| Targets of slow | TTFT P95 ≤ 40.0 s | TTFT P95 ≤ 60.0 s |",
    ] {
        assert!(compared.contains(said), "{said:?} not in:\n{compared}");
    }
}
