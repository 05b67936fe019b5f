//! [`RunFolder`]: the one writer of a results folder (bench, classroom,
//! plan, capture, a calibration's files). It creates the folder, hands out
//! crash-safe appenders for its JSON-lines files (one flushed line per
//! record, so `kill -9` keeps every record finished) and writes whole files
//! (summaries, reports) through a temporary file, so a reader never sees
//! half of one. [`read_summary`] is the one reader of `summary.json`; the
//! version rules are [`super::schema`]'s.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::schema::{FolderKind, BENCH_KIND, CLASSROOM_KIND, REPLAY_KIND};
use super::{BenchSummary, ClassroomRunSummary, JsonlWriter, ResultsError};
use crate::error::Error;

/// An appender of one JSON-lines file of a results folder (opened for
/// appending; every line is flushed as it is written).
pub type JsonlFile<T> = JsonlWriter<File, T>;

/// A results folder being written: `requests.jsonl`, `tasks.jsonl`,
/// `server-timeline.jsonl` through [`RunFolder::appender`], then
/// `summary.json` (and for bench `summary.csv`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFolder {
    path: PathBuf,
}

impl RunFolder {
    /// Creates `root/<kind's prefix><UTC timestamp>/` (see
    /// [`super::create_run_folder`]: never a folder of another run).
    pub fn create(root: &Path, kind: FolderKind, utc: DateTime<Utc>) -> Result<Self, Error> {
        super::create_run_folder(root, kind.prefix(), utc).map(|path| RunFolder { path })
    }

    /// Writes `name` whole (through `name.tmp`, renamed into place).
    pub fn write_text(&self, name: &str, text: &str) -> Result<PathBuf, Error> {
        let path = self.path.join(name);
        let tmp = self.path.join(format!("{name}.tmp"));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
        Ok(path)
    }

    /// Writes `value` as pretty JSON with a trailing newline, whole.
    pub fn write_json<T: Serialize + ?Sized>(
        &self,
        name: &str,
        value: &T,
    ) -> Result<PathBuf, Error> {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| Error::Failed(format!("cannot encode {name}: {e}")))?;
        self.write_text(name, &(text + "\n"))
    }

    /// A folder that already exists (nothing is created until written).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        RunFolder { path: path.into() }
    }

    /// Where the folder is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder's path, giving the writer up.
    pub fn into_path(self) -> PathBuf {
        self.path
    }

    /// Opens (creating if needed) the JSON-lines file `name` for appending:
    /// each [`JsonlWriter::append`] writes one line and flushes it.
    pub fn appender<T: Serialize + ?Sized>(&self, name: &str) -> Result<JsonlFile<T>, Error> {
        super::open_append(&self.path, name).map(JsonlWriter::new)
    }

    /// Writes `summary.csv` and `summary.json` of a bench run.
    pub fn write_bench_summary(&self, summary: &BenchSummary) -> Result<(), Error> {
        super::write_summary_csv(
            self.create_file(super::SUMMARY_CSV, "create")?,
            &summary.levels,
        )?;
        super::write_summary_json(self.create_file(super::SUMMARY_JSON, "create")?, summary)?;
        Ok(())
    }

    /// Writes `summary.json` of a classroom run.
    pub fn write_classroom_summary(&self, summary: &ClassroomRunSummary) -> Result<(), Error> {
        super::write_classroom_summary(self.create_file(super::SUMMARY_JSON, "write")?, summary)?;
        Ok(())
    }

    /// Creates (truncating) `name`; `verb` words the error ("cannot create
    /// …" for bench, "cannot write …" for classroom, as they always said).
    fn create_file(&self, name: &str, verb: &str) -> Result<BufWriter<File>, Error> {
        let path = self.path.join(name);
        File::create(&path)
            .map(BufWriter::new)
            .map_err(|e| Error::io(format!("cannot {verb} {}", path.display()), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn appenders_write_one_flushed_line_per_record() {
        let dir = tempfile::tempdir().unwrap();
        let utc = Utc.with_ymd_and_hms(2026, 11, 30, 4, 12, 33).unwrap();
        let folder = RunFolder::create(dir.path(), FolderKind::Classroom, utc).unwrap();
        assert!(folder.path().ends_with("classroom-2026-11-30T04-12-33Z"));
        let mut w = folder.appender::<serde_json::Value>("x.jsonl").unwrap();
        w.append(&serde_json::json!({"a": 1})).unwrap();
        // Read before the writer is dropped: the line is already on disk.
        let text = std::fs::read_to_string(folder.path().join("x.jsonl")).unwrap();
        assert_eq!(text, "{\"a\":1}\n");
        drop(w);
        let mut again = RunFolder::at(folder.path())
            .appender::<serde_json::Value>("x.jsonl")
            .unwrap();
        again.append(&serde_json::json!({"a": 2})).unwrap();
        let text = std::fs::read_to_string(folder.path().join("x.jsonl")).unwrap();
        assert_eq!(text, "{\"a\":1}\n{\"a\":2}\n", "appends, never truncates");
    }
}

/// The summary of a bench or classroom folder, as [`read_summary`] found it.
#[derive(Debug, Clone)]
pub enum RunSummary {
    /// A bench run.
    Bench(Box<BenchSummary>),
    /// A classroom run.
    Classroom(Box<ClassroomRunSummary>),
}

impl RunSummary {
    /// The `profile_check` the run recorded, if any.
    pub fn profile_check(&self) -> Option<&super::profile_check::ProfileCheck> {
        match self {
            RunSummary::Bench(s) => s.profile_check.as_ref(),
            RunSummary::Classroom(s) => s.profile_check.as_ref(),
        }
    }
}

/// Reads `summary.json` of a results folder, whichever kind it is (each at
/// the version this build writes; see [`super::schema`]).
pub fn read_summary(folder: &Path) -> Result<RunSummary, ResultsError> {
    let path = folder.join(super::SUMMARY_JSON);
    let text = std::fs::read_to_string(&path).map_err(|source| ResultsError::Read {
        file: super::SUMMARY_JSON,
        source,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ResultsError::BadJson {
            file: super::SUMMARY_JSON,
            line: e.line(),
            reason: e.to_string(),
        })?;
    match value.get("kind").and_then(serde_json::Value::as_str) {
        Some(CLASSROOM_KIND) => super::read_classroom_summary(text.as_bytes())
            .map(|s| RunSummary::Classroom(Box::new(s))),
        // A replay is a classroom-like run: its summary reads as one.
        Some(REPLAY_KIND) => super::classroom::read_replay_summary(text.as_bytes())
            .map(|s| RunSummary::Classroom(Box::new(s))),
        Some(BENCH_KIND) | None => {
            super::read_summary_json(text.as_bytes()).map(|s| RunSummary::Bench(Box::new(s)))
        }
        Some(other) => Err(ResultsError::WrongKind {
            expected: "bench, classroom or replay",
            found: other.to_string(),
        }),
    }
}

/// The `kind` a folder's `summary.json` states (`bench`, `classroom`),
/// without reading the rest; `None` when it has none or cannot be read.
pub fn summary_kind_of(folder: &Path) -> Option<String> {
    let text = std::fs::read_to_string(folder.join(super::SUMMARY_JSON)).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    super::summary_kind(&value).map(str::to_string)
}
