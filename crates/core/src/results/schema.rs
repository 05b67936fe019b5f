//! The kinds of results folder codendum writes and reads back, with their
//! schema versions: the one place for the version rules.
//!
//! - Every JSON file a run writes whole (`summary.json`, `plan.json`,
//!   `capture.json`, `client-times.json`) says its `kind` and its
//!   `schema_version`.
//! - A reader accepts its own kind at the versions this build knows (the
//!   one it writes and the older ones it still reads); another kind or a
//!   newer version is refused with one line naming the file and both
//!   versions (never a guess at an unknown layout).
//! - A change that an old reader would misread bumps the version; a new
//!   optional field (absent = not measured) does not, so old folders still
//!   read.

use super::ResultsError;

/// The `schema_version` of a bench `summary.json`. Version 2 added each
/// figure's interval (`intervals`), a closed-loop level's steady window
/// (`steady`, whose requests its latencies and rates then come from) and
/// the client's CPU. Version 3 gave the lines of `requests.jsonl` the
/// classroom's name for the prompt's size (`prompt_tokens`, was
/// `input_tokens`). Versions 1 and 2 still read.
pub const BENCH_SCHEMA_VERSION: u32 = 3;
/// Every bench `summary.json` version this build reads, oldest first.
pub const BENCH_SCHEMA_VERSIONS: [u32; 3] = [1, 2, 3];
/// The `kind` of a bench `summary.json`.
pub const BENCH_KIND: &str = "bench";
/// The `schema_version` of a classroom `summary.json` (a replay's too).
/// Version 2 added each figure's interval (`summary.intervals`) and the
/// steady window (`summary.steady_window`). Version 3 gave the lines of
/// `requests.jsonl` the bench's names for the same facts (`e2e_s`, was
/// `duration_s`; `tokens_counted_by`, was `token_source`). Versions 1 and 2
/// still read.
pub const CLASSROOM_SCHEMA_VERSION: u32 = 3;
/// Every classroom `summary.json` version this build reads, oldest first.
pub const CLASSROOM_SCHEMA_VERSIONS: [u32; 3] = [1, 2, 3];
/// The `kind` of a classroom `summary.json`.
pub const CLASSROOM_KIND: &str = "classroom";
/// The `kind` of a replay's `summary.json` (`codendum replay`): a classroom
/// summary whose `replay` block says what was replayed.
pub const REPLAY_KIND: &str = "replay";
/// The `kind` of `capacity.json`.
pub const CAPACITY_KIND: &str = "capacity";
/// The `schema_version` of `capacity.json`.
pub const CAPACITY_SCHEMA_VERSION: u32 = 1;
/// The `kind` of `plan.json`.
pub const PLAN_KIND: &str = "plan";
/// The `schema_version` of a `plan.json` over given class sizes.
pub const PLAN_SCHEMA_VERSION: u32 = 1;
/// The `schema_version` of a `plan.json` with a search in it.
pub const SEARCH_SCHEMA_VERSION: u32 = 2;
/// The `kind` of a capture folder's `capture.json`.
pub const CAPTURE_KIND: &str = "capture";
/// The `schema_version` of a capture folder (its `capture.json`).
pub const CAPTURE_SCHEMA_VERSION: u32 = 1;
/// The `schema_version` of `client-times.json`.
pub const CLIENT_TIMES_SCHEMA_VERSION: u32 = 1;

/// A kind of results folder: its name prefix under the results root and
/// what its summary says of itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FolderKind {
    /// `bench-results/<UTC>/`: `summary.json` of kind `bench`.
    Bench,
    /// `bench-results/classroom-<UTC>/`: `summary.json` of kind `classroom`.
    Classroom,
    /// `bench-results/plan-<UTC>/`: `plan.json` of kind `plan`.
    Plan,
    /// A capture folder (`capture --out DIR`): `capture.json`.
    Capture,
    /// `bench-results/replay-<UTC>/`: `summary.json` of kind `replay` (a
    /// classroom summary, read as one by `report` and `compare`).
    Replay,
    /// `bench-results/capacity-<UTC>/`: `capacity.json` of kind `capacity`.
    Capacity,
}

impl FolderKind {
    /// The folder name's prefix before the UTC timestamp.
    pub const fn prefix(self) -> &'static str {
        match self {
            FolderKind::Bench => "",
            FolderKind::Classroom => "classroom-",
            FolderKind::Plan => "plan-",
            FolderKind::Capture => "capture-",
            FolderKind::Replay => "replay-",
            FolderKind::Capacity => "capacity-",
        }
    }

    /// The `kind` its summary file states.
    pub const fn kind(self) -> &'static str {
        match self {
            FolderKind::Bench => BENCH_KIND,
            FolderKind::Classroom => CLASSROOM_KIND,
            FolderKind::Plan => PLAN_KIND,
            FolderKind::Capture => CAPTURE_KIND,
            FolderKind::Replay => REPLAY_KIND,
            FolderKind::Capacity => CAPACITY_KIND,
        }
    }
}

/// Checks the `schema_version` of a whole-file JSON `value` of a folder
/// that has no summary kind (a capture's files): exactly `supported`; the
/// error says what to do.
pub fn check_version(value: &serde_json::Value, supported: u32) -> Result<(), String> {
    match value.get("schema_version").and_then(serde_json::Value::as_u64) {
        Some(found) if found == u64::from(supported) => Ok(()),
        Some(found) => Err(format!(
            "schema_version {found}; this codendum reads version {supported} (capture it again with this codendum)"
        )),
        None => Err("no schema_version".into()),
    }
}

/// Checks the `kind` and `schema_version` of a whole-file JSON `value` read
/// from `file`: `kind` must be `kind`, the version one of `versions`.
pub fn check_schema(
    value: &serde_json::Value,
    kind: &'static str,
    versions: &[u32],
) -> Result<u32, ResultsError> {
    let found = value.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    if found != kind {
        return Err(ResultsError::WrongKind {
            expected: kind,
            found: found.to_string(),
        });
    }
    let found = value
        .get("schema_version")
        .and_then(|v| v.as_u64())
        .ok_or(ResultsError::MissingSchemaVersion)?;
    versions
        .iter()
        .copied()
        .find(|v| u64::from(*v) == found)
        .ok_or(ResultsError::UnsupportedSchema {
            found,
            supported: versions.last().copied().unwrap_or(0),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_takes_its_kind_at_the_versions_it_knows() {
        let ok = serde_json::json!({"kind": "bench", "schema_version": 1});
        assert_eq!(
            check_schema(&ok, BENCH_KIND, &BENCH_SCHEMA_VERSIONS).ok(),
            Some(1),
            "an old folder still reads"
        );
        let now = serde_json::json!({"kind": "bench", "schema_version": BENCH_SCHEMA_VERSION});
        assert_eq!(
            check_schema(&now, BENCH_KIND, &BENCH_SCHEMA_VERSIONS).ok(),
            Some(BENCH_SCHEMA_VERSION)
        );
        assert_eq!(BENCH_SCHEMA_VERSIONS.last(), Some(&BENCH_SCHEMA_VERSION));
        assert_eq!(
            CLASSROOM_SCHEMA_VERSIONS.last(),
            Some(&CLASSROOM_SCHEMA_VERSION)
        );
        let other = serde_json::json!({"kind": "classroom", "schema_version": 1});
        assert!(matches!(
            check_schema(&other, BENCH_KIND, &[1]),
            Err(ResultsError::WrongKind { .. })
        ));
        let newer = serde_json::json!({"kind": "bench", "schema_version": 9});
        let e = check_schema(&newer, BENCH_KIND, &[1])
            .unwrap_err()
            .to_string();
        assert!(e.contains('9') && e.contains('1'), "{e}");
        let none = serde_json::json!({"kind": "bench"});
        assert!(matches!(
            check_schema(&none, BENCH_KIND, &[1]),
            Err(ResultsError::MissingSchemaVersion)
        ));
        assert_eq!(FolderKind::Plan.prefix(), "plan-");
        assert_eq!(FolderKind::Classroom.kind(), "classroom");
    }
}
