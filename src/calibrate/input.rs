//! Reading the bench folders a calibration is fitted from, and what they
//! say about the server: one server and model across all of them, or a
//! one-line refusal naming the difference.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::observe::TimedRequest;
use codendum_core::error::ConfigError;
use codendum_core::results::{self, BenchSummary, RequestRecord};

/// One bench folder, read.
#[derive(Debug, Clone)]
pub struct RunInput {
    /// The folder.
    pub folder: PathBuf,
    /// Its `summary.json`.
    pub summary: BenchSummary,
    /// Its `requests.jsonl`.
    pub requests: Vec<RequestRecord>,
    /// Its server timeline readings (`snapshot` of each line), if any.
    pub timeline: Vec<Value>,
    /// When each reading of `timeline` was taken, seconds since the run
    /// started (the lines' `t`).
    pub sampled_at_s: Vec<f64>,
}

/// A level (cell) of an input run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelKey {
    /// Index of the run in the inputs.
    pub run: usize,
    /// Shape name.
    pub shape: String,
    /// Concurrency N.
    pub concurrency: u32,
}

impl LevelKey {
    /// `shape@N`, with the run's number when there are several runs.
    pub fn label(&self, runs: usize) -> String {
        if runs > 1 {
            format!("run{} {}@{}", self.run + 1, self.shape, self.concurrency)
        } else {
            format!("{}@{}", self.shape, self.concurrency)
        }
    }
}

fn bad(folder: &Path, reason: impl Into<String>) -> ConfigError {
    ConfigError::BadFile {
        what: "bench folder",
        path: folder.to_path_buf(),
        reason: reason.into(),
    }
}

/// Reads one bench folder: `summary.json` (of kind `bench`),
/// `requests.jsonl`, and `server-timeline.jsonl` when present.
pub fn read_run(folder: &Path) -> Result<RunInput, ConfigError> {
    if !folder.is_dir() {
        return Err(bad(folder, "is not a folder"));
    }
    if !folder.join(results::SUMMARY_JSON).is_file() {
        return Err(bad(folder, "has no summary.json: not a results folder"));
    }
    match results::summary_kind_of(folder).as_deref() {
        Some(results::BENCH_KIND) => {}
        Some(k) => return Err(bad(folder, format!("is a {k} run, not a bench run"))),
        None => return Err(bad(folder, "summary.json is not a codendum summary")),
    }
    let summary = match results::read_summary(folder).map_err(|e| bad(folder, e.to_string()))? {
        results::RunSummary::Bench(summary) => *summary,
        results::RunSummary::Classroom(_) => {
            return Err(bad(folder, "is a classroom run, not a bench run"))
        }
    };
    let requests = results::read_bench_requests(folder)
        .map_err(|e| bad(folder, e.to_string()))?
        .items;
    let (sampled_at_s, timeline) = read_timeline(&folder.join(results::SERVER_TIMELINE_JSONL))
        .into_iter()
        .unzip();
    Ok(RunInput {
        folder: folder.to_path_buf(),
        summary,
        requests,
        timeline,
        sampled_at_s,
    })
}

/// The time (`t`) and `snapshot` of every readable line of a server
/// timeline that has both (missing file: none).
fn read_timeline(path: &Path) -> Vec<(f64, Value)> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .filter_map(|v| Some((v.get("t")?.as_f64()?, v.get("snapshot")?.clone())))
        .collect()
}

/// Refuses runs of different servers or models, naming the difference.
pub fn check_same_server(runs: &[RunInput]) -> Result<(), ConfigError> {
    let Some(first) = runs.first() else {
        return Err(ConfigError::invalid("RUN_DIR", "no bench folder given"));
    };
    let describe = |r: &RunInput| {
        [
            ("server", r.summary.server.url.clone()),
            ("model", r.summary.server.model.clone()),
            (
                "server version",
                r.summary.server.server_version.clone().unwrap_or_default(),
            ),
            (
                "twin profile",
                if r.summary.server.url == "embedded twin" {
                    r.summary.provenance.profile.clone().unwrap_or_default()
                } else {
                    String::new()
                },
            ),
        ]
    };
    let want = describe(first);
    for r in &runs[1..] {
        for ((what, a), (_, b)) in want.iter().zip(describe(r)) {
            if *a != b {
                return Err(ConfigError::invalid(
                    "RUN_DIR",
                    format!(
                        "{} and {} are runs of different servers: {what} {a:?} vs {b:?}",
                        first.folder.display(),
                        r.folder.display()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The successful, fully timed requests of every run as the fit sees them,
/// and the levels they belong to.
pub fn timed_requests(runs: &[RunInput]) -> (Vec<TimedRequest>, Vec<LevelKey>) {
    let mut levels: Vec<LevelKey> = Vec::new();
    let mut out = Vec::new();
    for (run, input) in runs.iter().enumerate() {
        let targets = shape_targets(&input.summary);
        let path_of = |shape: &str, n: u32| {
            input
                .summary
                .levels
                .iter()
                .find(|l| l.shape == shape && l.concurrency == n)
                .and_then(|l| l.time_split.as_ref())
                .and_then(|t| t.path_ttft_s())
                .filter(|p| p.is_finite())
        };
        for r in input.requests.iter().filter(|r| r.ok) {
            let Some(ttft) = r.ttft_s else { continue };
            let key = LevelKey {
                run,
                shape: r.shape.clone(),
                concurrency: r.concurrency,
            };
            let level = match levels.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    levels.push(key);
                    levels.len() - 1
                }
            };
            let input_tokens = r
                .prompt_tokens
                .or_else(|| targets.iter().find(|(s, _)| *s == r.shape).map(|(_, t)| *t))
                .unwrap_or(0);
            out.push(TimedRequest {
                level,
                run,
                start: r.started_at,
                ttft,
                e2e: r.e2e_s,
                input_tokens,
                output_tokens: r.output_tokens,
                path_s: path_of(&r.shape, r.concurrency),
            });
        }
    }
    (out, levels)
}

/// Measured prompt size of each shape (`prompt_sizing`), for requests the
/// server sent no usage for.
fn shape_targets(s: &BenchSummary) -> Vec<(String, u64)> {
    s.prompt_sizing
        .shapes
        .iter()
        .map(|p| {
            (
                p.shape.clone(),
                p.measured_tokens.unwrap_or(p.target_input_tokens),
            )
        })
        .collect()
}
