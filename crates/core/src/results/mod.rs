//! Results folders: `bench-results/<UTC timestamp>/` with `summary.csv`,
//! `summary.json`, `requests.jsonl` and `server-timeline.jsonl`. Writers take
//! any [`std::io::Write`]; readers any [`std::io::Read`] / [`std::io::BufRead`],
//! so `report` and `compare` work from files alone. No tokio here. A run
//! writes its folder through one [`RunFolder`].

pub mod capacity;
pub mod classroom;
pub mod classroom_records;
pub mod classroom_summary;
pub mod continuity;
pub mod csv;
pub mod folder;
pub mod jsonl;
pub mod level;
pub mod metrics;
pub mod profile_check;
pub mod records;
pub mod repeat;
pub mod repeat_folder;
pub mod repeat_levels;
pub mod replicas;
pub mod schema;
pub mod slo;
pub mod steady;
pub mod summary;
pub mod target_list;
pub mod verdict;

use std::fs::{File, OpenOptions};
use std::io::BufReader;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

pub use self::classroom::{
    read_classroom_folder_summary, read_classroom_summary, read_replay_summary, summary_kind,
    write_classroom_summary, ClassroomParameters, ClassroomRunSummary, ReplayParameters,
    TASKS_JSONL,
};
pub use self::classroom_summary::{ClassroomSummary, ServerFigures};
pub use self::continuity::MetricsContinuity;
pub use self::csv::{
    interval_csv_columns, summary_csv_header, write_summary_csv, SUMMARY_CSV_COLUMNS,
};
pub use self::folder::{read_summary, summary_kind_of, JsonlFile, RunFolder, RunSummary};
pub use self::jsonl::{read_jsonl, JsonlContents, JsonlWriter};
pub use self::level::{apply_server_window, summarize_level, LevelFrame};
pub use self::metrics::{level_metric, LevelMetric, LEVEL_METRICS};
pub use self::records::{ErrorGroup, LevelEnd, LevelSummary, RateFigures, RequestRecord};
pub use self::replicas::{ReplicaMetric, REPLICA_METRICS};
pub use self::schema::{
    FolderKind, BENCH_KIND, BENCH_SCHEMA_VERSION, CLASSROOM_KIND, CLASSROOM_SCHEMA_VERSION,
    REPLAY_KIND,
};
pub use self::summary::{
    read_summary_json, write_summary_json, BenchParameters, BenchSummary, EngineSettings,
    PromptSizing, RunHeader, ServerDescription, ShapeSizing, SizingMethod, SkippedShape,
};
pub use self::summary::{RateSearch, RateStep};
pub use self::verdict::{RunStatus, Verdict};

/// File name of the per-level summary table.
pub const SUMMARY_CSV: &str = "summary.csv";
/// File name of the run summary.
pub const SUMMARY_JSON: &str = "summary.json";
/// File name of the per-request lines.
pub const REQUESTS_JSONL: &str = "requests.jsonl";
/// File name of the `/metrics` samples.
pub const SERVER_TIMELINE_JSONL: &str = "server-timeline.jsonl";
/// The default root of results folders.
pub const DEFAULT_RESULTS_ROOT: &str = "bench-results";

/// Why a results file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// Writing failed.
    #[error("cannot write results: {0}")]
    Write(#[source] std::io::Error),
    /// A value could not be turned into JSON.
    #[error("cannot encode results as JSON: {0}")]
    JsonWrite(#[source] serde_json::Error),
    /// Reading a file failed.
    #[error("cannot read {file}: {source}")]
    Read {
        /// Which file.
        file: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file holds invalid JSON or JSON of the wrong shape.
    #[error("{file} line {line}: {reason}")]
    BadJson {
        /// Which file.
        file: &'static str,
        /// 1-based line (0 when unknown).
        line: usize,
        /// The parser's message.
        reason: String,
    },
    /// `summary.json` is of another kind (e.g. a classroom run).
    #[error("summary.json is a {found:?} summary, expected {expected:?}")]
    WrongKind {
        /// The kind wanted.
        expected: &'static str,
        /// The kind found (empty when missing).
        found: String,
    },
    /// `summary.json` has no `schema_version`.
    #[error("summary.json has no schema_version")]
    MissingSchemaVersion,
    /// `summary.json` was written by a newer (or unknown) schema.
    #[error(
        "summary.json has schema_version {found}; this codendum reads version {supported} \
         (upgrade codendum to read newer results)"
    )]
    UnsupportedSchema {
        /// The version in the file.
        found: u64,
        /// The version this build reads.
        supported: u32,
    },
}

impl ResultsError {
    pub(crate) fn write(e: std::io::Error) -> Self {
        ResultsError::Write(e)
    }

    pub(crate) fn json_write(e: serde_json::Error) -> Self {
        ResultsError::JsonWrite(e)
    }
}

impl From<ResultsError> for crate::error::Error {
    fn from(e: ResultsError) -> Self {
        crate::error::Error::Failed(e.to_string())
    }
}

/// The folder name for a run started at `utc`: `2026-11-30T04-12-33Z`
/// (colons are not portable in file names), after an optional prefix such as
/// `classroom-`.
pub fn folder_name(prefix: &str, utc: DateTime<Utc>) -> String {
    format!("{prefix}{}", utc.format("%Y-%m-%dT%H-%M-%SZ"))
}

/// Creates `root/<prefix><UTC timestamp>/` (and `root` if needed). When that
/// folder already exists, `-2`, `-3`, ... are appended, so two runs never
/// share a folder.
pub fn create_run_folder(
    root: &Path,
    prefix: &str,
    utc: DateTime<Utc>,
) -> Result<PathBuf, crate::error::Error> {
    std::fs::create_dir_all(root)
        .map_err(|e| crate::error::Error::io(format!("cannot create {}", root.display()), e))?;
    let base = folder_name(prefix, utc);
    for attempt in 1..=1000u32 {
        let name = if attempt == 1 {
            base.clone()
        } else {
            format!("{base}-{attempt}")
        };
        let path = root.join(name);
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(crate::error::Error::io(
                    format!("cannot create {}", path.display()),
                    e,
                ))
            }
        }
    }
    Err(crate::error::Error::Failed(format!(
        "too many results folders named {base} in {}",
        root.display()
    )))
}

/// Opens (creating if needed) a JSON-lines file of a results folder for
/// appending.
pub fn open_append(folder: &Path, name: &str) -> Result<File, crate::error::Error> {
    let path = folder.join(name);
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| crate::error::Error::io(format!("cannot open {}", path.display()), e))
}

/// Reads `summary.json` of a bench results folder.
pub fn read_bench_summary(folder: &Path) -> Result<BenchSummary, ResultsError> {
    let file = File::open(folder.join(SUMMARY_JSON)).map_err(|source| ResultsError::Read {
        file: SUMMARY_JSON,
        source,
    })?;
    read_summary_json(BufReader::new(file))
}

/// Reads `requests.jsonl` of a bench results folder, tolerating a truncated
/// last line.
pub fn read_bench_requests(folder: &Path) -> Result<JsonlContents<RequestRecord>, ResultsError> {
    let file = File::open(folder.join(REQUESTS_JSONL)).map_err(|source| ResultsError::Read {
        file: REQUESTS_JSONL,
        source,
    })?;
    read_jsonl(BufReader::new(file), REQUESTS_JSONL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn folder_names_are_portable_and_unique() {
        let utc = Utc.with_ymd_and_hms(2026, 11, 30, 4, 12, 33).unwrap();
        assert_eq!(folder_name("", utc), "2026-11-30T04-12-33Z");
        assert_eq!(
            folder_name("classroom-", utc),
            "classroom-2026-11-30T04-12-33Z"
        );
        let dir = tempfile::tempdir().unwrap();
        let a = create_run_folder(dir.path(), "", utc).unwrap();
        let b = create_run_folder(dir.path(), "", utc).unwrap();
        assert!(a.ends_with("2026-11-30T04-12-33Z"));
        assert!(b.ends_with("2026-11-30T04-12-33Z-2"));
    }
}
