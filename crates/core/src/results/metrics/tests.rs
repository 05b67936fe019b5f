//! Tests of [`super`] (kept beside it to keep that file short).

use std::collections::{BTreeMap, HashSet};

use super::*;
use crate::results::{ErrorGroup, LevelEnd, SUMMARY_CSV_COLUMNS};

fn full_level() -> LevelSummary {
    LevelSummary {
        shape: "short".into(),
        concurrency: 4,
        ended_by: LevelEnd::Requests,
        requests: 5,
        successes: 4,
        errors: BTreeMap::from([(
            "timeout".to_string(),
            ErrorGroup {
                count: 1,
                sample_message: "late".into(),
            },
        )]),
        abandoned: 0,
        mean_input_tokens: Some(512.0),
        mean_output_tokens: Some(64.0),
        tokens_client_counted: false,
        started_at_s: 1.0,
        wall_time_s: 2.0,
        requests_per_s: 2.0,
        error_rate: Some(0.2),
        output_tok_per_s: 128.0,
        total_tok_per_s: 1152.0,
        ttft_p50_s: Some(0.1),
        ttft_p95_s: Some(0.2),
        ttft_p99_s: Some(0.3),
        e2e_p50_s: Some(1.0),
        e2e_p95_s: Some(1.5),
        tpot_mean_s: Some(0.01),
        ttft_mean_s: Some(0.3),
        e2e_mean_s: Some(2.0),
        preemptions: Some(0.0),
        peak_kv_usage: Some(0.5),
        peak_running: Some(4.0),
        peak_waiting: Some(0.0),
        prefix_hit_rate: Some(0.25),
        failed_scrapes: Some(0),
        time_split: None,
        fleet: None,
        rate: Some(crate::results::RateFigures {
            rate_per_s: 2.0,
            arrival: "poisson".into(),
            max_concurrency: None,
            offered_rate_per_s: Some(2.1),
            achieved_rate_per_s: Some(2.0),
            send_lag_p50_s: Some(0.001),
            send_lag_p95_s: Some(0.003),
            send_lag_max_s: Some(0.01),
            saturated: false,
            ttft_stretch: Some(1.4),
        }),
        slo_share: Some(0.75),
        goodput_per_s: Some(1.5),
        server_restarted: false,
        steady: Some(crate::results::records::SteadyWindow {
            start_s: 1.5,
            end_s: 2.5,
            requests: 3,
            ramp_up: 1,
            drain: 1,
            used: false,
        }),
        intervals: BTreeMap::new(),
        client_cpu: Some(0.25),
    }
}

#[test]
fn every_csv_column_has_exactly_one_metric() {
    let columns: Vec<&str> = LEVEL_METRICS.iter().map(|m| m.column).collect();
    assert_eq!(columns, SUMMARY_CSV_COLUMNS);
    let unique: HashSet<&str> = columns.iter().copied().collect();
    assert_eq!(unique.len(), columns.len(), "a column defined twice");
    for column in SUMMARY_CSV_COLUMNS {
        let n = LEVEL_METRICS.iter().filter(|m| m.column == column).count();
        assert_eq!(n, 1, "{column}");
        assert_eq!(level_metric(column).map(|m| m.column), Some(column));
    }
    assert!(level_metric("ttft").is_none());
}

#[test]
fn names_carry_their_units_and_fields_exist_in_json() {
    let json = serde_json::to_value(full_level()).expect("json");
    for m in &LEVEL_METRICS {
        assert!(json.get(m.field).is_some(), "{} has no field", m.field);
        match m.unit {
            Unit::Seconds => assert!(m.column.ends_with("_s"), "{}", m.column),
            Unit::TokensPerSecond | Unit::RequestsPerSecond => {
                assert!(m.column.ends_with("_per_s"), "{}", m.column)
            }
            Unit::Fraction => assert_eq!(m.column, format!("{}_pct", m.field)),
            _ => {}
        }
        if m.field == "rate" {
            assert!(json["rate"].get(m.column).is_some(), "rate.{}", m.column);
        } else if m.field == "steady" {
            let key = m.column.strip_prefix("steady_").expect("steady_ prefix");
            assert!(json["steady"].get(key).is_some(), "steady.{key}");
        } else if m.unit != Unit::Fraction && m.column != "error_kinds" {
            assert_eq!(m.column, m.field);
        }
        let is_text = matches!(m.read, Reading::Text(_));
        assert_eq!(is_text, m.unit == Unit::None, "{}", m.column);
        assert_eq!(m.number(&full_level()).is_some(), !is_text, "{}", m.column);
        if m.source == Source::Level || is_text {
            assert_eq!(m.better, Better::Neither, "{}", m.column);
        }
    }
}

#[test]
fn figures_are_read_from_the_level() {
    let l = full_level();
    let get = |c: &str| level_metric(c).and_then(|m| m.number(&l));
    assert_eq!(get("errors"), Some(1.0));
    assert_eq!(get("peak_kv_usage_pct"), Some(0.5), "a fraction");
    assert_eq!(get("shape"), None, "text is no number");
    assert_eq!(
        level_metric("ttft_p95_s").map(|m| m.trial_name()),
        Some("ttft_p95")
    );
    assert_eq!(
        level_metric("output_tok_per_s").map(|m| m.trial_name()),
        Some("output_tok_per_s")
    );
    assert_eq!(Unit::TokensPerSecond.symbol(), "tok/s");
    assert_eq!(Unit::Count.symbol(), "");
}

#[test]
fn class_keys_are_unique() {
    let keys: HashSet<&str> = CLASS_METRICS.iter().map(|m| m.key).collect();
    assert_eq!(keys.len(), CLASS_METRICS.len(), "a class key defined twice");
}

#[test]
fn class_summary_rows_keep_table_order_and_join_figures_of_one_row() {
    let rows = class_summary_rows();
    let (first, figures) = &rows[0];
    assert_eq!(*first, "Students");
    assert_eq!(figures.len(), 1);
    let ttft = rows
        .iter()
        .find(|(row, _)| row.starts_with("Time to first token"))
        .expect("TTFT row");
    let keys: Vec<&str> = ttft.1.iter().map(|m| m.key).collect();
    assert_eq!(keys, ["ttft_p50_s", "ttft_p95_s"]);
    // Every summary figure is in exactly one row.
    let shown: usize = rows.iter().map(|(_, f)| f.len()).sum();
    assert_eq!(shown, class_metrics_in(View::ClassSummary).count());
}

#[test]
fn class_figures_are_read_from_the_summary() {
    let mut s = crate::results::ClassroomSummary {
        users: 40,
        completed: 45,
        ttft_p95_s: Some(60.0),
        ..Default::default()
    };
    s.errors_by_kind
        .insert(crate::openai::ErrorKind::Http503, 2);
    s.errors_by_kind
        .insert(crate::openai::ErrorKind::Http429, 5);
    let read = |key: &str| (class_metric(key).expect(key).read)(&s);
    assert_eq!(read("students"), Some(40.0));
    assert_eq!(read("completed"), Some(45.0));
    assert_eq!(read("ttft_p95_s"), Some(60.0));
    assert_eq!(
        read("server_errors"),
        Some(2.0),
        "429s are not server errors"
    );
    assert_eq!(read("peak_waiting"), None, "no /metrics: not zero");
}
