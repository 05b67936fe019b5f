//! [`RunFolder`]: the one writer of a results folder, for bench and
//! classroom alike. It creates the folder, hands out crash-safe appenders
//! for its JSON-lines files (one flushed line per record, so `kill -9` keeps
//! every record finished) and writes the summaries at the end.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{BenchSummary, ClassroomRunSummary, JsonlWriter};
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
    /// Creates `root/<prefix><UTC timestamp>/` (see
    /// [`super::create_run_folder`]: never a folder of another run).
    pub fn create(root: &Path, prefix: &str, utc: DateTime<Utc>) -> Result<Self, Error> {
        super::create_run_folder(root, prefix, utc).map(|path| RunFolder { path })
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
        let folder = RunFolder::create(dir.path(), "classroom-", utc).unwrap();
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
