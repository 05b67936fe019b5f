//! Prometheus answers recorded from a real Prometheus 2.42 scraping two
//! twins (`fixtures/prometheus/`, see its README), read back into timelines.

use super::super::api::{parse_answer, AnswerProblem};
use super::*;

fn fixture(name: &str) -> String {
    let path = format!("{}/fixtures/prometheus/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const A: &str = "127.0.0.1:18101";
const B: &str = "127.0.0.1:18102";
/// The recorded range: 16 steps of 1 s from this Unix second.
const START: i64 = 1_796_125_561;

fn grid() -> Vec<(f64, chrono::DateTime<chrono::Utc>)> {
    (0..16)
        .map(|k| {
            (
                k as f64,
                chrono::DateTime::from_timestamp(START + k, 0).unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_snapshot_name_is_read_by_a_snapshot() {
    for name in SNAPSHOT_SAMPLE_NAMES {
        assert!(
            codendum_core::prom::snapshot::is_snapshot_sample(name),
            "{name}"
        );
    }
}

#[test]
fn a_recorded_range_answer_is_one_series_per_label_set() {
    let series = parse_answer(&fixture("range.json")).expect("a matrix");
    assert_eq!(series.len(), 28);
    assert!(series.iter().all(|s| s.points.len() == 16));
    let generated: Vec<(&str, f64)> = series
        .iter()
        .filter(|s| s.label("__name__") == Some("vllm:generation_tokens_total"))
        .map(|s| (s.label("instance").unwrap(), s.points.last().unwrap().1))
        .collect();
    assert_eq!(generated, [(A, 360.0), (B, 120.0)]);
    assert_eq!(series[0].points[0].0, START as f64);
}

#[test]
fn instant_empty_scalar_and_error_answers() {
    let instant = parse_answer(&fixture("instant.json")).expect("a vector");
    let running: Vec<f64> = instant.iter().map(|s| s.points[0].1).collect();
    assert_eq!(running, [3.0, 1.0]);
    assert!(parse_answer(&fixture("empty.json"))
        .expect("a vector")
        .is_empty());
    let scalar = parse_answer(&fixture("scalar_min.json")).expect("a vector");
    assert_eq!(scalar[0].points, [(1_796_125_576.451, 1_796_125_575.842)]);
    match parse_answer(&fixture("bad_query.json")) {
        Err(AnswerProblem::Rejected(kind, text)) => {
            assert_eq!(kind, "bad_data");
            assert!(text.contains("parse error"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn answers_that_are_not_prometheus_say_what_they_are() {
    // What the twin (a vLLM look-alike) answers at /api/v1/query.
    for body in [
        "{\"detail\":\"Not Found\"}",
        "<html><body>Grafana</body></html>",
        "",
    ] {
        match parse_answer(body) {
            Err(AnswerProblem::NotPrometheus(what)) => {
                assert!(!what.contains('\n'), "{what}");
                if !body.is_empty() {
                    assert!(what.contains(&body[..8]), "{what}");
                }
            }
            other => panic!("{body}: {other:?}"),
        }
    }
}

#[test]
fn the_last_step_equals_the_direct_scrapes_of_the_idle_fleet() {
    let series = parse_answer(&fixture("range.json")).unwrap();
    let instances = vec![A.to_string(), B.to_string()];
    let (fleet, replicas) = rebuild_timelines(&series, &instances, &grid());
    assert_eq!(fleet.len(), 16);
    assert_eq!(replicas.len(), 32);
    let last = fleet
        .last()
        .unwrap()
        .snapshot
        .clone()
        .expect("data at the last step");
    let direct: Vec<ServerSnapshot> = ["replica-a.metrics", "replica-b.metrics"]
        .iter()
        .map(|f| ServerSnapshot::from_text(&fixture(f)).unwrap())
        .collect();
    let want = ServerSnapshot::sum(&direct);
    assert_eq!(last.running, want.running);
    assert_eq!(last.waiting, want.waiting);
    assert_eq!(last.kv_usage, want.kv_usage);
    assert_eq!(last.preemptions, want.preemptions);
    assert_eq!(last.prefix_cache_queries, want.prefix_cache_queries);
    assert_eq!(last.prefix_cache_hits, want.prefix_cache_hits);
    assert_eq!(last.prompt_tokens, want.prompt_tokens);
    assert_eq!(last.generation_tokens, want.generation_tokens);
    assert_eq!(last.finished_requests, want.finished_requests);
    assert_eq!(last.kv_capacity_tokens, want.kv_capacity_tokens);
    assert_eq!(last.block_size, want.block_size);
    assert_eq!(last.model_name, want.model_name);
    assert_eq!(last.generation_tokens, Some(480.0));
    // Per replica: the three requests of A and the one of B.
    let fleet_figs =
        codendum_core::prom::replicas::fleet_figures(&replicas, "prometheus", 0.0, 15.0)
            .expect("two replicas");
    let served: Vec<Option<f64>> = fleet_figs
        .replicas
        .iter()
        .map(|r| r.requests_served)
        .collect();
    assert_eq!(served, [Some(3.0), Some(1.0)]);
    assert_eq!(fleet_figs.imbalance, Some(1.5));
    assert_eq!(fleet_figs.replicas[0].peak_running, Some(3.0));
}

#[test]
fn an_instance_without_data_fails_its_steps_and_the_fleet_sum() {
    let series = parse_answer(&fixture("range.json")).unwrap();
    let instances = vec![A.to_string(), "10.0.0.9:8000".to_string()];
    let (fleet, replicas) = rebuild_timelines(&series, &instances, &grid());
    assert!(fleet.iter().all(|s| s.snapshot.is_none()));
    let missing = replicas
        .iter()
        .find(|r| r.replica == "10.0.0.9:8000")
        .unwrap();
    let error = missing.sample.error.as_deref().unwrap();
    assert!(error.contains("10.0.0.9:8000"), "{error}");
    assert!(replicas
        .iter()
        .filter(|r| r.replica == A)
        .all(|r| r.sample.snapshot.is_some()));
}

#[test]
fn pages_escape_label_values_and_write_go_floats() {
    let labels = std::collections::BTreeMap::from([
        (
            "__name__".to_string(),
            "vllm:num_requests_running".to_string(),
        ),
        ("model_name".to_string(), "a \"b\"\\c".to_string()),
    ]);
    let page = page_of(&[(&labels, 2.0), (&labels, f64::INFINITY)]);
    let snap = ServerSnapshot::from_text(&page).unwrap();
    assert_eq!(snap.model_name.as_deref(), Some("a \"b\"\\c"));
    assert!(page.contains("+Inf"));
}

#[test]
fn the_instance_filter_escapes_regex_characters() {
    let f = instance_filter(&[A.to_string(), "gpu-1.lab:8000".to_string()]);
    assert_eq!(f, r#"instance=~"127\\.0\\.0\\.1:18101|gpu-1\\.lab:8000""#);
}
