//! What a classroom run records: one line per model call (`requests.jsonl`)
//! and one per coding request (`tasks.jsonl`), written through a
//! [`RecordSink`] as they finish. The records themselves are
//! [`codendum_core::results::classroom_records`]'s.

use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

use serde::Serialize;

use codendum_core::results::classroom_records::{CallRecord, TaskRecord};
use codendum_core::results::{JsonlWriter, ResultsError, RunFolder};

/// Where records go as they finish: a run's files ([`JsonlSink`]), or memory
/// alone ([`MemorySink`], for tests).
pub trait RecordSink: Send + Sync {
    /// One finished model call.
    fn request(&self, record: &CallRecord) -> std::io::Result<()>;
    /// One finished coding request.
    fn task(&self, record: &TaskRecord) -> std::io::Result<()>;
}

/// Keeps records in memory.
#[derive(Debug, Default)]
pub struct MemorySink {
    requests: Mutex<Vec<CallRecord>>,
    tasks: Mutex<Vec<TaskRecord>>,
}

impl MemorySink {
    /// The model calls recorded so far.
    pub fn requests(&self) -> Vec<CallRecord> {
        self.requests.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// The coding requests recorded so far.
    pub fn tasks(&self) -> Vec<TaskRecord> {
        self.tasks.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl RecordSink for MemorySink {
    fn request(&self, record: &CallRecord) -> std::io::Result<()> {
        if let Ok(mut v) = self.requests.lock() {
            v.push(record.clone());
        }
        Ok(())
    }

    fn task(&self, record: &TaskRecord) -> std::io::Result<()> {
        if let Ok(mut v) = self.tasks.lock() {
            v.push(record.clone());
        }
        Ok(())
    }
}

/// The records' JSON-lines sink, the one a classroom run ships with and
/// tests use: each record becomes one line written and flushed at once
/// ([`JsonlWriter`]: `kill -9` loses nothing finished), model calls to one
/// writer (`requests.jsonl`), coding requests to another (`tasks.jsonl`).
/// It also keeps every record in memory ([`JsonlSink::requests`],
/// [`JsonlSink::tasks`]), for a summary after an interruption.
pub struct JsonlSink<W: Write + Send = File> {
    memory: MemorySink,
    requests: Mutex<JsonlWriter<W, CallRecord>>,
    tasks: Mutex<JsonlWriter<W, TaskRecord>>,
}

impl JsonlSink<File> {
    /// A sink appending to `requests.jsonl` and `tasks.jsonl` of `folder`.
    pub fn in_folder(folder: &RunFolder) -> Result<Self, codendum_core::error::Error> {
        Ok(Self::from_writers(
            folder.appender(codendum_core::results::REQUESTS_JSONL)?,
            folder.appender(codendum_core::results::TASKS_JSONL)?,
        ))
    }
}

impl<W: Write + Send> JsonlSink<W> {
    /// A sink over two writers (for files, open them in append mode).
    pub fn new(requests: W, tasks: W) -> Self {
        Self::from_writers(JsonlWriter::new(requests), JsonlWriter::new(tasks))
    }

    /// A sink over two line writers.
    pub fn from_writers(
        requests: JsonlWriter<W, CallRecord>,
        tasks: JsonlWriter<W, TaskRecord>,
    ) -> Self {
        JsonlSink {
            memory: MemorySink::default(),
            requests: Mutex::new(requests),
            tasks: Mutex::new(tasks),
        }
    }

    /// The model calls recorded so far.
    pub fn requests(&self) -> Vec<CallRecord> {
        self.memory.requests()
    }

    /// The coding requests recorded so far.
    pub fn tasks(&self) -> Vec<TaskRecord> {
        self.memory.tasks()
    }

    /// What it keeps in memory.
    pub fn memory(&self) -> &MemorySink {
        &self.memory
    }

    /// Gives back the two writers.
    pub fn into_inner(self) -> (W, W) {
        let r = self
            .requests
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        let t = self.tasks.into_inner().unwrap_or_else(|p| p.into_inner());
        (r.into_inner(), t.into_inner())
    }
}

/// Appends one line. A poisoned lock is taken over: the writer keeps no
/// state across lines that a panic could have left half done.
fn write_line<W: Write, T: Serialize>(
    w: &Mutex<JsonlWriter<W, T>>,
    value: &T,
) -> std::io::Result<()> {
    let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
    w.append(value).map_err(|e| match e {
        ResultsError::Write(io) => io,
        ResultsError::JsonWrite(json) => std::io::Error::other(json),
        other => std::io::Error::other(other),
    })
}

impl<W: Write + Send> RecordSink for JsonlSink<W> {
    fn request(&self, record: &CallRecord) -> std::io::Result<()> {
        self.memory.request(record)?;
        write_line(&self.requests, record)
    }

    fn task(&self, record: &TaskRecord) -> std::io::Result<()> {
        self.memory.task(record)?;
        write_line(&self.tasks, record)
    }
}
