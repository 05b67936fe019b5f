//! A bench folder without `summary.json` (the run was killed with
//! `kill -9`, or the machine went down) still has `requests.jsonl`, written
//! line by line as requests finished. This rebuilds a summary from those
//! lines so that `report` can read the folder: the levels are recomputed
//! from the records, the run is marked interrupted, and what only the lost
//! summary knew (server, model, provenance, most parameters) is left
//! unknown rather than guessed.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, NaiveDateTime, Utc};

use super::model::Parameter;
use codendum_core::access::Provenance;
use codendum_core::openai::Endpoint;
use codendum_core::results::{
    self, BenchParameters, BenchSummary, LevelEnd, LevelSummary, PromptSizing, RequestRecord,
    RunHeader, ServerDescription, SizingMethod,
};
use codendum_core::results::{summarize_level, LevelFrame};

/// What the rebuilt summary calls the unknown server and model.
pub const UNKNOWN: &str = "unknown (summary.json missing)";

/// Whether `folder` looks like a bench folder whose summary was never
/// written: `requests.jsonl` without `summary.json` or `tasks.jsonl`.
pub fn is_bench_without_summary(folder: &Path) -> bool {
    folder.join(results::REQUESTS_JSONL).is_file()
        && !folder.join(results::SUMMARY_JSON).exists()
        && !folder.join(results::TASKS_JSONL).exists()
}

/// Rebuilds a bench summary from `requests.jsonl` (a torn last line is
/// dropped). Levels appear in the order their first request finished; the
/// last one is marked interrupted. Server columns stay absent (the
/// timeline cannot be placed on the records' axis without the summary).
pub fn bench_summary_from_requests(folder: &Path) -> Result<BenchSummary, String> {
    let records = results::read_bench_requests(folder)
        .map_err(|e| e.to_string())?
        .items;
    if records.is_empty() {
        return Err(format!(
            "{} is missing and {} holds no finished request",
            results::SUMMARY_JSON,
            results::REQUESTS_JSONL
        ));
    }
    let all = records.clone();
    let (order, levels, run_end) = rebuilt_levels(records);
    let verdict = results::verdict::bench_verdict(
        &all,
        &levels,
        &[],
        results::verdict::DEFAULT_MAX_ERROR_RATE,
    );
    let started_utc = folder_start(folder);
    let finished_utc =
        started_utc + chrono::Duration::milliseconds((run_end.clamp(0.0, 1.0e9) * 1000.0) as i64);
    Ok(BenchSummary {
        header: RunHeader {
            schema_version: results::BENCH_SCHEMA_VERSION,
            kind: results::BENCH_KIND.to_string(),
            run_id: folder
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            started_utc,
            finished_utc,
            interrupted: true,
        },
        parameters: rebuilt_parameters(&order, &levels),
        server: ServerDescription {
            url: UNKNOWN.to_string(),
            model: UNKNOWN.to_string(),
            server_version: None,
            metrics: folder.join(results::SERVER_TIMELINE_JSONL).is_file(),
            max_model_len: None,
            engine: None,
        },
        provenance: Provenance::default(),
        prompt_sizing: PromptSizing {
            method: SizingMethod::Estimate,
            shapes: Vec::new(),
        },
        levels,
        skipped_shapes: Vec::new(),
        profile_check: None,
        verdict: Some(verdict),
        rate_search: Vec::new(),
        metrics_continuity: Vec::new(),
        router: None,
    })
}

/// Groups the records by level (shape, concurrency) in the order each
/// level's first request finished and summarises each; the last is marked
/// interrupted. Returns the order, the levels and the end of the last
/// request (seconds into the run).
fn rebuilt_levels(records: Vec<RequestRecord>) -> (Vec<(String, u32)>, Vec<LevelSummary>, f64) {
    let mut order: Vec<(String, u32)> = Vec::new();
    let mut groups: BTreeMap<(String, u32), Vec<RequestRecord>> = BTreeMap::new();
    for r in records {
        let key = (r.shape.clone(), r.concurrency);
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(r);
    }
    let mut levels: Vec<LevelSummary> = Vec::with_capacity(order.len());
    let mut run_end = 0.0f64;
    for (i, key) in order.iter().enumerate() {
        let records = groups.get(key).map(Vec::as_slice).unwrap_or_default();
        let start = records
            .iter()
            .map(|r| r.started_at)
            .fold(f64::INFINITY, f64::min);
        let end = records
            .iter()
            .map(|r| r.ended_at())
            .fold(f64::NEG_INFINITY, f64::max);
        let (start, end) = if start.is_finite() && end.is_finite() {
            (start, end.max(start))
        } else {
            (0.0, 0.0)
        };
        run_end = run_end.max(end);
        let frame = LevelFrame {
            shape: &key.0,
            concurrency: key.1,
            ended_by: if i + 1 == order.len() {
                LevelEnd::Interrupted
            } else {
                LevelEnd::Requests
            },
            started_at_s: start,
            wall_time_s: end - start,
            abandoned: 0,
            rate: None,
            slo: None,
        };
        levels.push(summarize_level(frame, records, None));
    }
    (order, levels, run_end)
}

/// The parameters the records show: the levels and shapes reached and the
/// largest mean output; the rest left at its defaults.
fn rebuilt_parameters(order: &[(String, u32)], levels: &[LevelSummary]) -> BenchParameters {
    let mut concurrency: Vec<u32> = Vec::new();
    let mut shapes: Vec<String> = Vec::new();
    for (shape, n) in order {
        if !concurrency.contains(n) {
            concurrency.push(*n);
        }
        if !shapes.contains(shape) {
            shapes.push(shape.clone());
        }
    }
    let output_tokens = levels
        .iter()
        .filter_map(|l| l.mean_output_tokens)
        .fold(0.0f64, f64::max)
        .round()
        .clamp(0.0, f64::from(u32::MAX)) as u32;
    BenchParameters {
        concurrency,
        shapes,
        output_tokens,
        requests_per_level: None,
        requests_by_concurrency: BTreeMap::new(),
        level_duration_s: None,
        endpoint: Endpoint::Chat,
        seed: 0,
        allow_busy: false,
        yes: false,
        timeout_s: 0.0,
        cancel_grace_s: 0.0,
        clock_scale: 1.0,
        calibration: false,
    }
}

/// The parameters a report can state for a rebuilt summary: only what the
/// records show, and why the rest is missing.
pub fn known_parameters(s: &BenchSummary) -> Vec<Parameter> {
    let levels: Vec<String> = s
        .parameters
        .concurrency
        .iter()
        .map(u32::to_string)
        .collect();
    vec![
        Parameter {
            name: "summary.json".into(),
            value: "missing: the run was killed before writing it; levels rebuilt from \
                    requests.jsonl, other parameters and provenance unknown"
                .into(),
        },
        Parameter {
            name: "concurrency (levels reached)".into(),
            value: levels.join(","),
        },
        Parameter {
            name: "shapes (reached)".into(),
            value: s.parameters.shapes.join(","),
        },
        Parameter {
            name: "output tokens (measured)".into(),
            value: s.parameters.output_tokens.to_string(),
        },
    ]
}

/// The run's start from the folder name (`2026-11-30T04-12-33Z`, maybe
/// with a `-2` suffix); the folder's modification time otherwise.
fn folder_start(folder: &Path) -> DateTime<Utc> {
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(stamp) = name.get(..20) {
        if let Ok(t) = NaiveDateTime::parse_from_str(stamp, "%Y-%m-%dT%H-%M-%SZ") {
            return t.and_utc();
        }
    }
    std::fs::metadata(folder)
        .and_then(|m| m.modified())
        .map(DateTime::<Utc>::from)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(shape: &str, n: u32, index: u64, start: f64, ttft: f64, e2e: f64) -> String {
        format!(
            "{{\"shape\":\"{shape}\",\"concurrency\":{n},\"index\":{index},\"started_at\":{start},\
             \"ttft_s\":{ttft},\"e2e_s\":{e2e},\"tpot_s\":0.01,\"input_tokens\":520,\
             \"output_tokens\":64,\"tokens_counted_by\":\"server\",\"finish_reason\":\"length\",\
             \"ok\":true,\"error_kind\":null,\"error_message\":null,\"status\":200}}\n"
        )
    }

    #[test]
    fn levels_are_rebuilt_in_order_and_the_last_is_interrupted() {
        let root = tempfile::tempdir().expect("tempdir");
        let folder = root.path().join("2026-11-30T04-12-33Z");
        std::fs::create_dir(&folder).expect("mkdir");
        let mut text = String::new();
        text.push_str(&line("short", 1, 0, 0.1, 0.4, 2.0));
        text.push_str(&line("short", 1, 1, 2.1, 0.5, 2.1));
        text.push_str(&line("short", 2, 0, 4.3, 0.6, 2.4));
        text.push_str("{\"shape\":\"short\",\"conc");
        std::fs::write(folder.join(results::REQUESTS_JSONL), text).expect("write");
        assert!(is_bench_without_summary(&folder));
        let s = bench_summary_from_requests(&folder).expect("rebuilt");
        assert!(s.header.interrupted);
        assert_eq!(s.parameters.concurrency, vec![1, 2]);
        assert_eq!(s.parameters.output_tokens, 64);
        assert_eq!(s.levels.len(), 2);
        assert_eq!(s.levels[0].ended_by, LevelEnd::Requests);
        assert_eq!(s.levels[1].ended_by, LevelEnd::Interrupted);
        assert_eq!(s.levels[0].requests, 2);
        assert!((s.levels[0].wall_time_s - 4.1).abs() < 1e-9);
        assert!((s.levels[0].ttft_p50_s.expect("p50") - 0.45).abs() < 1e-9);
        assert!(
            s.levels[0].peak_running.is_none(),
            "no invented server figures"
        );
        assert_eq!(
            s.header.started_utc.to_rfc3339(),
            "2026-11-30T04:12:33+00:00"
        );
    }

    #[test]
    fn an_empty_requests_file_is_an_error() {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::write(root.path().join(results::REQUESTS_JSONL), "").expect("write");
        let e = bench_summary_from_requests(root.path()).expect_err("nothing to rebuild");
        assert!(e.contains("no finished request"), "{e}");
    }
}
