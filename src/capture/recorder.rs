//! The capture's disk. One writer thread owns every file of the folder and
//! takes its work from a bounded queue, so no student's call ever waits on
//! the disk: a call hands its record to the queue and goes on.
//!
//! - A slow disk fills the queue; records that find it full are dropped
//!   and counted ([`Losses::dropped`]), and the operator is told once.
//! - A full or failing disk refuses writes; each line it refuses is counted
//!   ([`Losses::failed`]) and the next lines are tried again (a disk that
//!   frees up is used again). A line is appended whole or not at all: a
//!   partial write is cut off again, so `calls.jsonl` stays readable.
//! - At the end, the records still waiting get the stop's grace; those
//!   still waiting after it are counted too ([`Losses::unwritten`]).
//!
//! What the writer writes to is a [`CaptureDisk`]: the folder
//! ([`FolderDisk`]), or in tests a disk that fails or stalls.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::notice::{CaptureNotice, Notifier};
use codendum_core::capture::{CallLine, CALLS_FILE};

/// Records that may wait for the disk at once. A call line is about half a
/// kilobyte, so this is a few megabytes of memory, and minutes of a whole
/// class's calls on a disk that stalls.
pub const DEFAULT_QUEUE: usize = 4096;

/// Where the capture's files go.
pub trait CaptureDisk: Send + 'static {
    /// Appends one line (newline included) to `calls.jsonl`, whole or not
    /// at all.
    fn append_call(&mut self, line: &[u8]) -> std::io::Result<()>;
    /// Replaces the folder's file `name` whole.
    fn replace(&mut self, name: &str, bytes: &[u8]) -> std::io::Result<()>;
}

/// The capture folder on disk.
#[derive(Debug)]
pub struct FolderDisk {
    folder: PathBuf,
    calls: File,
    /// Bytes of `calls.jsonl` known good: where a failed append is cut back to.
    calls_len: u64,
}

impl FolderDisk {
    /// Opens (creating) `calls.jsonl` in `folder` for appending.
    pub fn open(folder: &Path) -> std::io::Result<FolderDisk> {
        let calls = OpenOptions::new()
            .create(true)
            .append(true)
            .open(folder.join(CALLS_FILE))?;
        Ok(FolderDisk::with_calls_file(folder, calls))
    }

    /// A folder whose `calls.jsonl` is the already open `calls`.
    pub fn with_calls_file(folder: &Path, calls: File) -> FolderDisk {
        let calls_len = calls.metadata().map(|m| m.len()).unwrap_or(0);
        FolderDisk {
            folder: folder.to_path_buf(),
            calls,
            calls_len,
        }
    }
}

impl CaptureDisk for FolderDisk {
    fn append_call(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self.calls.write_all(line).and_then(|()| self.calls.flush()) {
            Ok(()) => {
                self.calls_len += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Part of the line may be on disk: cut it off, so the next
                // line starts where a line ended.
                let _ = self.calls.set_len(self.calls_len);
                Err(e)
            }
        }
    }

    fn replace(&mut self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let path = self.folder.join(name);
        let tmp = self.folder.join(format!("{name}.tmp"));
        let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, &path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

/// What the capture could not record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Losses {
    /// Call lines dropped because the queue was full (the disk too slow).
    pub dropped: u64,
    /// Call lines the disk refused (full, failing).
    pub failed: u64,
    /// Call lines still waiting for the disk when the capture ended.
    pub unwritten: u64,
    /// Other files (`prompt.json`, `client-times.json`, `capture.json`)
    /// that could not be written when due.
    pub files_failed: u64,
    /// The first write error, in one line.
    pub first_error: Option<String>,
}

impl Losses {
    /// Call lines lost, for whatever reason.
    pub fn calls_lost(&self) -> u64 {
        self.dropped + self.failed + self.unwritten
    }

    /// Why lines were lost, in a few words; `None` when nothing was.
    pub fn reason(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.failed > 0 || self.files_failed > 0 {
            let error = self.first_error.as_deref().unwrap_or("a write failed");
            parts.push(format!("the disk refused writes ({error})"));
        }
        if self.dropped > 0 {
            parts.push("the disk did not keep up".to_string());
        }
        if self.unwritten > 0 {
            parts.push("records still waiting for the disk at the end".to_string());
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

enum Job {
    Call(Box<CallLine>),
    File(&'static str, Vec<u8>),
    ClientTimes,
}

/// Builds the current `client-times.json` (its bytes), when asked by the
/// writer.
pub type ClientTimesSource = Box<dyn Fn() -> Option<Vec<u8>> + Send>;

#[derive(Default)]
struct Counters {
    /// Jobs queued (every kind).
    queued: AtomicU64,
    /// Call lines queued.
    calls_queued: AtomicU64,
    calls_written: AtomicU64,
    calls_failed: AtomicU64,
    calls_dropped: AtomicU64,
    files_failed: AtomicU64,
    /// A `client-times.json` rewrite is queued and not yet taken.
    times_due: AtomicBool,
    /// The queue was full at least once (said once).
    behind_said: AtomicBool,
    first_error: Mutex<Option<String>>,
}

/// The writer's handle: queue records, wait for the disk, count losses.
pub struct Recorder {
    tx: SyncSender<Job>,
    counters: Arc<Counters>,
    /// Jobs the writer has finished with (written or failed).
    done: watch::Receiver<u64>,
    notices: Notifier,
    capacity: usize,
}

impl Recorder {
    /// Starts the writer thread on `disk` with room for `capacity` records;
    /// `client_times` builds `client-times.json` when a rewrite is due.
    pub fn start(
        disk: Box<dyn CaptureDisk>,
        capacity: usize,
        client_times: ClientTimesSource,
        folder: String,
        notices: Notifier,
    ) -> std::io::Result<Recorder> {
        let capacity = capacity.max(1);
        let (tx, rx) = sync_channel(capacity);
        let counters = Arc::new(Counters::default());
        let (done_tx, done) = watch::channel(0u64);
        let writer = Writer {
            disk,
            counters: counters.clone(),
            done: done_tx,
            client_times,
            folder,
            notices: notices.clone(),
            failing: false,
        };
        std::thread::Builder::new()
            .name("capture-disk".into())
            .spawn(move || writer.run(rx))?;
        Ok(Recorder {
            tx,
            counters,
            done,
            notices,
            capacity,
        })
    }

    fn queue(&self, job: Job) -> bool {
        match self.tx.try_send(job) {
            Ok(()) => {
                self.counters.queued.fetch_add(1, Ordering::SeqCst);
                true
            }
            Err(TrySendError::Full(_)) => {
                if !self.counters.behind_said.swap(true, Ordering::SeqCst) {
                    self.notices.send(CaptureNotice::DiskBehind {
                        waiting: self.capacity,
                    });
                }
                false
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Queues a call's line; counts it as lost when the queue is full.
    pub fn call(&self, line: CallLine) {
        if self.queue(Job::Call(Box::new(line))) {
            self.counters.calls_queued.fetch_add(1, Ordering::SeqCst);
        } else {
            self.counters.calls_dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Queues a whole file; counts it as failed when the queue is full.
    pub fn file(&self, name: &'static str, bytes: Vec<u8>) {
        if !self.queue(Job::File(name, bytes)) {
            self.counters.files_failed.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Asks for `client-times.json` to be rewritten with the samples as
    /// they are when the writer gets to it (several asks before then make
    /// one rewrite).
    pub fn client_times_due(&self) {
        if !self.counters.times_due.swap(true, Ordering::SeqCst) && !self.queue(Job::ClientTimes) {
            // Not queued: the next sample asks again, the end rewrites it.
            self.counters.times_due.store(false, Ordering::SeqCst);
        }
    }

    /// Waits until everything queued so far is written (or failed), for at
    /// most `within`; whether it was.
    pub async fn settle(&self, within: Duration) -> bool {
        let target = self.counters.queued.load(Ordering::SeqCst);
        let mut done = self.done.clone();
        tokio::time::timeout(within, done.wait_for(|&n| n >= target))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// What was lost so far; call lines still queued count as unwritten.
    pub fn losses(&self) -> Losses {
        let c = &self.counters;
        let queued = c.calls_queued.load(Ordering::SeqCst);
        let written = c.calls_written.load(Ordering::SeqCst);
        let failed = c.calls_failed.load(Ordering::SeqCst);
        Losses {
            dropped: c.calls_dropped.load(Ordering::SeqCst),
            failed,
            unwritten: queued.saturating_sub(written + failed),
            files_failed: c.files_failed.load(Ordering::SeqCst),
            first_error: c
                .first_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }

    /// Call lines written so far.
    pub fn calls_written(&self) -> u64 {
        self.counters.calls_written.load(Ordering::SeqCst)
    }
}

struct Writer {
    disk: Box<dyn CaptureDisk>,
    counters: Arc<Counters>,
    done: watch::Sender<u64>,
    client_times: ClientTimesSource,
    folder: String,
    notices: Notifier,
    /// The last write failed (a recovery is said once it works again).
    failing: bool,
}

impl Writer {
    fn run(mut self, rx: Receiver<Job>) {
        let mut done = 0u64;
        for job in rx {
            let c = self.counters.clone();
            match job {
                Job::Call(line) => {
                    let result = serde_json::to_vec(&line)
                        .map_err(std::io::Error::other)
                        .and_then(|mut bytes| {
                            bytes.push(b'\n');
                            self.disk.append_call(&bytes)
                        });
                    let counter = match &result {
                        Ok(()) => &c.calls_written,
                        Err(_) => &c.calls_failed,
                    };
                    counter.fetch_add(1, Ordering::SeqCst);
                    self.outcome(result);
                }
                Job::File(name, bytes) => {
                    let result = self.disk.replace(name, &bytes);
                    if result.is_err() {
                        c.files_failed.fetch_add(1, Ordering::SeqCst);
                    }
                    self.outcome(result);
                }
                Job::ClientTimes => {
                    c.times_due.store(false, Ordering::SeqCst);
                    if let Some(bytes) = (self.client_times)() {
                        let result = self
                            .disk
                            .replace(crate::classroom::client_times::CLIENT_TIMES_FILE, &bytes);
                        if result.is_err() {
                            c.files_failed.fetch_add(1, Ordering::SeqCst);
                        }
                        self.outcome(result);
                    }
                }
            }
            done += 1;
            self.done.send_replace(done);
        }
    }

    /// Says the first failure and a recovery, once each episode.
    fn outcome(&mut self, result: std::io::Result<()>) {
        match result {
            Ok(()) if self.failing => {
                self.failing = false;
                let lost = self.counters.calls_failed.load(Ordering::SeqCst)
                    + self.counters.calls_dropped.load(Ordering::SeqCst);
                self.notices.send(CaptureNotice::DiskRecovered { lost });
            }
            Ok(()) => {}
            Err(e) if !self.failing => {
                self.failing = true;
                let text = e.to_string();
                let mut first = self
                    .counters
                    .first_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                if first.is_none() {
                    *first = Some(text.clone());
                }
                drop(first);
                self.notices.send(CaptureNotice::DiskFailing {
                    folder: self.folder.clone(),
                    error: text,
                });
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_device_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("dir");
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let mut disk = FolderDisk::with_calls_file(dir.path(), full);
        let e = disk.append_call(b"{\"a\":1}\n").expect_err("no space");
        assert_eq!(e.raw_os_error(), Some(28), "ENOSPC: {e}");
    }

    #[test]
    fn losses_say_why() {
        let none = Losses::default();
        assert_eq!((none.calls_lost(), none.reason()), (0, None));
        let l = Losses {
            dropped: 2,
            failed: 3,
            unwritten: 1,
            files_failed: 0,
            first_error: Some("No space left on device (os error 28)".into()),
        };
        assert_eq!(l.calls_lost(), 6);
        let reason = l.reason().expect("a reason");
        assert!(reason.contains("No space left") && reason.contains("did not keep up"));
    }
}
