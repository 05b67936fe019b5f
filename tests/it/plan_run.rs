//! A small plan end to end: the files with every field, and the same
//! results whatever the number of threads.

use std::time::Duration;

use codendum::plan::{plan, run_plan, PlanConfig, PlanResults};
use serde_json::Value;

fn small(jobs: usize, dir: &std::path::Path) -> PlanConfig {
    PlanConfig {
        users: vec![8, 4],
        profiles: vec!["classroom-64k".into()],
        duration: Duration::from_secs(120),
        seed: 5,
        jobs,
        results_dir: dir.to_path_buf(),
        ..PlanConfig::new()
    }
}

fn no_nulls(v: &Value, path: &str) {
    match v {
        Value::Null => panic!("{path} is null"),
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| no_nulls(x, &format!("{path}.{k}"))),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| no_nulls(x, &format!("{path}[{i}]"))),
        _ => {}
    }
}

#[test]
fn a_small_plan_writes_every_file_and_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seen = std::sync::atomic::AtomicUsize::new(0);
    let (results, folder) = plan(&small(2, dir.path()), &|_| {
        seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    })
    .expect("plan runs");
    assert_eq!(seen.into_inner(), 2);
    assert!(folder
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("plan-")));
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("plan.json")).expect("json"))
            .expect("valid json");
    assert_eq!(json["kind"], "plan");
    let cells = json["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 2);
    assert_eq!(cells[0]["result"]["spec"]["users"], 4);
    for cell in cells {
        // Every figure of the lab's table is measured (a class this small never queues for long).
        let r = &cell["result"];
        for key in [
            "server_output_tok_per_s",
            "ttft_p50_s",
            "ttft_p95_s",
            "output_speed_p50_tok_s",
            "coding_request_p50_s",
            "coding_request_p95_s",
            "completed",
            "peak_waiting",
            "peak_kv_usage",
            "preemptions",
            "prefix_hit_rate",
            "server_errors",
        ] {
            assert!(!r[key].is_null(), "{key} missing");
        }
        assert!(r["server_output_tok_per_s"]
            .as_f64()
            .is_some_and(|v| v > 0.0));
        assert!(r["prefix_hit_rate"]
            .as_f64()
            .is_some_and(|v| v > 0.5 && v <= 1.0));
        assert_eq!(cell["checks"].as_array().map(Vec::len), Some(5));
    }
    let verdict = &json["verdicts"][0];
    assert_eq!(verdict["variant"], "classroom-64k");
    assert!(verdict["summary"]
        .as_str()
        .is_some_and(|s| s.starts_with("classroom-64k")));
    no_nulls(&json["parameters"], "parameters");
    let md = std::fs::read_to_string(folder.join("plan.md")).expect("md");
    assert!(
        md.contains("| classroom-64k | 4 |") && md.contains("| classroom-64k | 8 |"),
        "{md}"
    );
    assert!(md.contains(&results.verdicts[0].summary));
    let html = std::fs::read_to_string(folder.join("plan.html")).expect("html");
    assert_eq!(html.matches("<svg").count(), 2);
    assert!(html.contains("Time to first token, P95") && html.contains("</html>"));
}

#[test]
fn results_do_not_depend_on_the_number_of_threads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let one: PlanResults = run_plan(&small(1, dir.path()), &|_| {}).expect("jobs 1");
    let two: PlanResults = run_plan(&small(2, dir.path()), &|_| {}).expect("jobs 2");
    let text = |r: &PlanResults| serde_json::to_string_pretty(r).expect("json");
    assert_eq!(text(&one), text(&two));
    assert!(one.cells[1].result.summary.requests > one.cells[0].result.summary.requests);
}
