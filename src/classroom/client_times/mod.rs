//! The client time of a simulated student: how long OpenCode spends on its
//! own side between the end of one answer and the next request of the same
//! session (running the answer's tools, formatting, diagnostics, preparing
//! the step).
//!
//! Two models:
//! - **the class's** (the default): each kind's distribution in the class
//!   file (`[agent.tool_s]`; the `lab` class: 0.05–0.5 s per file tool, 1–4 s
//!   after an edit or a write, 3–12 s per build or test, 0.05 s for a simple
//!   shell command), drawn by [`super::shell::ShellState::tool_time`];
//! - **measured** (`classroom --client-times FILE`): each tool call's time is
//!   drawn (with the student's seeded random source) from the samples that
//!   `codendum capture` measured for its [`ClientTimeKind`]. A kind with no
//!   samples keeps the class's time.
//!
//! The file, `client-times.json` (written by `codendum capture`):
//! `{"schema_version": 1, "unit": "seconds", "source": …, "kinds": {KIND:
//! {"count", "samples_s": […], "mean_s", "p50_s", "p90_s", "p99_s", "min_s",
//! "max_s"}}}`. Only `samples_s` is read; the figures are for people. Kinds
//! are [`ClientTimeKind::as_str`]; any other is an error naming it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use codendum_core::error::ConfigError;
use codendum_core::results::schema::{
    check_version, CAPTURE_SCHEMA_VERSION, CLIENT_TIMES_SCHEMA_VERSION,
};
use codendum_core::stats::{mean, percentile, sorted_finite};

/// The file name of the distribution inside a capture folder.
pub const CLIENT_TIMES_FILE: &str = "client-times.json";

use codendum_core::capture::CAPTURE_HEADER_FILE;

/// What the client did between an answer and the next request of its
/// session, by the answer's tool calls (the heaviest kind wins when an answer
/// holds several: build/test, then edit, then other shell, then other tools,
/// then file tools).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientTimeKind {
    /// `read`, `glob`, `grep`, `list`: reading or searching the project.
    FileTool,
    /// `edit`, `write` (and `multiedit`, `patch`): the file is changed,
    /// formatted and checked by the language server.
    AfterEdit,
    /// A `bash` command that builds or runs tests (`mvn`, `gradle`,
    /// `pytest`, `javac`, …; the command runs inside this time).
    BuildTest,
    /// Any other `bash` command (`ls`, `cat`, …).
    Bash,
    /// Any other tool (`todowrite`, `skill`, `webfetch`, …).
    OtherTool,
    /// After a final answer (no tool calls): the student reads it and types
    /// the next request. Measured, not used by the classroom (its pauses are
    /// `--pause-min` / `--pause-max`).
    UserPause,
    /// After a compaction answer, until the continued step. Measured, not
    /// used by the classroom.
    AfterCompaction,
}

impl ClientTimeKind {
    /// Every kind, in file order.
    pub const ALL: [ClientTimeKind; 7] = [
        ClientTimeKind::FileTool,
        ClientTimeKind::AfterEdit,
        ClientTimeKind::BuildTest,
        ClientTimeKind::Bash,
        ClientTimeKind::OtherTool,
        ClientTimeKind::UserPause,
        ClientTimeKind::AfterCompaction,
    ];

    /// The name in `client-times.json` and `calls.jsonl`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientTimeKind::FileTool => "file_tool",
            ClientTimeKind::AfterEdit => "after_edit",
            ClientTimeKind::BuildTest => "build_test",
            ClientTimeKind::Bash => "bash",
            ClientTimeKind::OtherTool => "other_tool",
            ClientTimeKind::UserPause => "user_pause",
            ClientTimeKind::AfterCompaction => "after_compaction",
        }
    }

    /// The kind of a name, if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Rank for "the heaviest kind wins" (higher is heavier).
    fn weight(self) -> u8 {
        match self {
            ClientTimeKind::BuildTest => 6,
            ClientTimeKind::AfterEdit => 5,
            ClientTimeKind::Bash => 4,
            ClientTimeKind::OtherTool => 3,
            ClientTimeKind::FileTool => 2,
            ClientTimeKind::AfterCompaction => 1,
            ClientTimeKind::UserPause => 0,
        }
    }

    /// The heavier of two kinds.
    pub fn heavier(self, other: Self) -> Self {
        if other.weight() > self.weight() {
            other
        } else {
            self
        }
    }

    /// The kind of one tool call by its name and, for `bash`, its command
    /// (JSON `arguments`). `None` for `task`: the parent then waits for a
    /// subagent session, which is not client time.
    pub fn of_tool(name: &str, arguments: &str) -> Option<Self> {
        Some(match name {
            "read" | "glob" | "grep" | "list" | "ls" => ClientTimeKind::FileTool,
            "edit" | "write" | "multiedit" | "patch" | "apply_patch" => ClientTimeKind::AfterEdit,
            "bash" => {
                let command = serde_json::from_str::<Value>(arguments)
                    .ok()
                    .and_then(|v| v.get("command").and_then(Value::as_str).map(String::from))
                    .unwrap_or_default();
                if super::command_line::is_build_or_test(&command) {
                    ClientTimeKind::BuildTest
                } else {
                    ClientTimeKind::Bash
                }
            }
            "task" => return None,
            _ => ClientTimeKind::OtherTool,
        })
    }
}

/// The figures of one kind in `client-times.json` (seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindStats {
    /// Samples measured.
    pub count: usize,
    /// Every sample, seconds, in the order measured.
    pub samples_s: Vec<f64>,
    /// Mean, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_s: Option<f64>,
    /// Median, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_s: Option<f64>,
    /// 90th percentile, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_s: Option<f64>,
    /// 99th percentile, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_s: Option<f64>,
    /// Shortest, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_s: Option<f64>,
    /// Longest, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_s: Option<f64>,
}

impl KindStats {
    /// The figures of these samples (seconds).
    pub fn from_samples(samples: &[f64]) -> Self {
        let sorted = sorted_finite(samples.iter().copied());
        KindStats {
            count: samples.len(),
            samples_s: samples.to_vec(),
            mean_s: mean(sorted.iter().copied()),
            p50_s: percentile(&sorted, 50.0),
            p90_s: percentile(&sorted, 90.0),
            p99_s: percentile(&sorted, 99.0),
            min_s: sorted.first().copied(),
            max_s: sorted.last().copied(),
        }
    }
}

/// `client-times.json` as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientTimesFile {
    /// [`CLIENT_TIMES_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `"seconds"`.
    pub unit: String,
    /// Who measured (e.g. `codendum capture`, with the upstream's origin).
    pub source: String,
    /// Per kind ([`ClientTimeKind::as_str`]).
    pub kinds: BTreeMap<String, KindStats>,
}

/// The client-time model of a run: built in, or measured samples per kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientTimes {
    measured: BTreeMap<ClientTimeKind, Vec<f64>>,
    source: Option<PathBuf>,
}

impl ClientTimes {
    /// The built-in model (no measured samples).
    pub fn built_in() -> Self {
        Self::default()
    }

    /// A measured model from samples per kind (seconds; negative and
    /// non-finite values are dropped).
    pub fn from_samples(samples: BTreeMap<ClientTimeKind, Vec<f64>>) -> Self {
        let measured = samples
            .into_iter()
            .map(|(k, v)| {
                (
                    k,
                    v.into_iter()
                        .filter(|s| s.is_finite() && *s >= 0.0)
                        .collect(),
                )
            })
            .filter(|(_, v): &(ClientTimeKind, Vec<f64>)| !v.is_empty())
            .collect();
        ClientTimes {
            measured,
            source: None,
        }
    }

    /// Whether no kind has measured samples.
    pub fn is_built_in(&self) -> bool {
        self.measured.is_empty()
    }

    /// The file the samples came from, if any.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// The measured samples of a kind (seconds; empty: built in).
    pub fn samples(&self, kind: ClientTimeKind) -> &[f64] {
        self.measured.get(&kind).map_or(&[], Vec::as_slice)
    }

    /// A measured time for `kind`, drawn uniformly from its samples with
    /// `rng`; `None` when the kind has none (use the built-in time).
    pub fn draw(&self, kind: ClientTimeKind, rng: &mut impl Rng) -> Option<Duration> {
        let samples = self.samples(kind);
        if samples.is_empty() {
            return None;
        }
        Some(Duration::from_secs_f64(
            samples[rng.gen_range(0..samples.len())],
        ))
    }

    /// The file form of these samples.
    pub fn to_file(&self, source: &str) -> ClientTimesFile {
        ClientTimesFile {
            schema_version: CLIENT_TIMES_SCHEMA_VERSION,
            unit: "seconds".into(),
            source: source.into(),
            kinds: self
                .measured
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), KindStats::from_samples(v)))
                .collect(),
        }
    }

    /// Parses the text of a `client-times.json`; errors are one line.
    pub fn parse(text: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        check_version(&v, CLIENT_TIMES_SCHEMA_VERSION)?;
        let Some(kinds) = v.get("kinds").and_then(Value::as_object) else {
            return Err("no \"kinds\" object".into());
        };
        let mut measured = BTreeMap::new();
        for (name, entry) in kinds {
            let kind = ClientTimeKind::parse(name).ok_or_else(|| {
                let known: Vec<&str> = ClientTimeKind::ALL.iter().map(|k| k.as_str()).collect();
                format!("unknown tool kind {name:?} (known: {})", known.join(", "))
            })?;
            let Some(samples) = entry.get("samples_s").and_then(Value::as_array) else {
                return Err(format!("kind {name:?} has no \"samples_s\" array"));
            };
            let mut values = Vec::with_capacity(samples.len());
            for (i, s) in samples.iter().enumerate() {
                match s.as_f64() {
                    Some(x) if x.is_finite() && x >= 0.0 => values.push(x),
                    _ => {
                        return Err(format!(
                            "{name}.samples_s[{i}] is not a number of seconds ≥ 0"
                        ))
                    }
                }
            }
            measured.insert(kind, values);
        }
        Ok(Self::from_samples(measured))
    }

    /// Reads `--client-times`: a `client-times.json`, or a capture folder
    /// holding one (its `capture.json` must be of this build's version).
    pub fn from_path(path: &Path) -> Result<Self, ConfigError> {
        let bad = |p: &Path, reason: String| ConfigError::BadFile {
            what: "client-times file",
            path: p.to_path_buf(),
            reason,
        };
        let file = if path.is_dir() {
            let header = path.join(CAPTURE_HEADER_FILE);
            let text = read(&header)?;
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| bad(&header, format!("not valid JSON: {e}")))?;
            check_version(&v, CAPTURE_SCHEMA_VERSION).map_err(|r| bad(&header, r))?;
            path.join(CLIENT_TIMES_FILE)
        } else {
            path.to_path_buf()
        };
        let text = read(&file)?;
        let mut times = Self::parse(&text).map_err(|r| bad(&file, r))?;
        times.source = Some(file);
        Ok(times)
    }
}

fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| ConfigError::Unreadable {
        what: "client-times file",
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests;
