//! Sharing one run between processes: under `cargo nextest run` every trial
//! runs in its own process, and each must judge the same run of its
//! workload, not start another.
//!
//! A cache directory (`target/capacity-cache/`) holds:
//! - `run.lock`: a file that the process running a workload holds an
//!   exclusive OS lock on (`flock` on Unix, `LockFileEx` on Windows, through
//!   the `fs4` crate) for the length of the run; other processes wait for it
//!   (one workload at a time, so two workloads never disturb each other's
//!   figures or load a live server together). The OS drops the lock when its
//!   file closes, however the holder ends (`kill -9` and crashes included),
//!   so a lock never outlives its process and no PID is ever trusted. The
//!   file stays (removing it would let two processes lock two different
//!   files); it holds the last holder's PID, for people only.
//! - `<profile>--<workload>--<mode>--<target hash>.json`: the results folder
//!   of the last finished run of that workload, when it finished, and the
//!   nextest run it belonged to.
//!
//! A recorded run is reused when it belongs to the same nextest run
//! (`NEXTEST_RUN_ID`), or when it finished within the reuse window
//! (`CODENDUM_CAPACITY_REUSE_S`), and its folder still exists.

use crate::events::Events;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use codendum_core::clock::Clock;

/// The lock file's name in the cache directory.
pub const LOCK_FILE: &str = "run.lock";

/// How long to wait between tries at a held lock, real time.
const LOCK_POLL: Duration = Duration::from_millis(250);

/// What the cache remembers of a finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The results folder.
    pub folder: PathBuf,
    /// When the run finished, Unix seconds.
    pub finished_unix_s: i64,
    /// The nextest run it belonged to (`NEXTEST_RUN_ID`), if any.
    pub nextest_run_id: Option<String>,
}

/// The cache directory and the rules for reuse.
#[derive(Debug, Clone)]
pub struct RunCache {
    /// Where lock and records live.
    pub dir: PathBuf,
    /// The current nextest run, if under nextest.
    pub nextest_run_id: Option<String>,
    /// Reuse a run finished at most this many seconds ago (0: never by age).
    pub window_s: u64,
}

/// A held run lock: an exclusive OS lock on [`LOCK_FILE`] that lasts as long
/// as this value's open file. Dropping it releases the lock, and so does the
/// end of the process, whatever the way.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

impl RunCache {
    /// A cache in `dir`, reading `NEXTEST_RUN_ID` from the environment.
    pub fn new(dir: PathBuf, window_s: u64) -> Self {
        RunCache {
            dir,
            nextest_run_id: std::env::var("NEXTEST_RUN_ID")
                .ok()
                .filter(|s| !s.is_empty()),
            window_s,
        }
    }

    /// The record file of a key.
    pub fn record_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{}.json", sanitize(key)))
    }

    /// A reusable finished run of `key`, if any.
    pub fn lookup(&self, key: &str, now_unix_s: i64) -> Option<RunRecord> {
        let text = std::fs::read_to_string(self.record_path(key)).ok()?;
        let record: RunRecord = serde_json::from_str(&text).ok()?;
        if !record
            .folder
            .join(codendum_core::results::SUMMARY_JSON)
            .is_file()
        {
            return None;
        }
        let same_nextest_run =
            self.nextest_run_id.is_some() && record.nextest_run_id == self.nextest_run_id;
        let age = now_unix_s.saturating_sub(record.finished_unix_s);
        let recent = self.window_s > 0 && (0..=self.window_s as i64).contains(&age);
        (same_nextest_run || recent).then_some(record)
    }

    /// Remembers a finished run of `key`.
    pub fn store(&self, key: &str, folder: &Path, now_unix_s: i64) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let record = RunRecord {
            folder: std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf()),
            finished_unix_s: now_unix_s,
            nextest_run_id: self.nextest_run_id.clone(),
        };
        let text = serde_json::to_string_pretty(&record).map_err(std::io::Error::other)?;
        let tmp = self
            .dir
            .join(format!(".{}.tmp{}", sanitize(key), std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(tmp, self.record_path(key))
    }

    /// The lock file, [`LOCK_FILE`] in the cache directory.
    pub fn lock_path(&self) -> PathBuf {
        self.dir.join(LOCK_FILE)
    }

    /// Takes the run lock, waiting while another process (or another open
    /// of the file in this one) holds it. The wait tries the lock without
    /// blocking every 250 ms real time on `clock`, so no thread of the
    /// runtime is blocked and dropping the future (a timeout, Ctrl-C)
    /// leaves nothing waiting behind.
    pub async fn lock(&self, clock: &Clock) -> std::io::Result<RunLock> {
        self.lock_telling(clock, &Events::silent()).await
    }

    /// [`RunCache::lock`], telling once through `events` that it waits and
    /// for whom.
    pub async fn lock_telling(&self, clock: &Clock, events: &Events) -> std::io::Result<RunLock> {
        let mut told = false;
        loop {
            if let Some(held) = self.try_lock()? {
                return Ok(held);
            }
            if !told {
                let holder = std::fs::read_to_string(self.lock_path())
                    .ok()
                    .and_then(|t| t.trim().parse::<u32>().ok())
                    .map(|pid| format!(", held by pid {pid}"))
                    .unwrap_or_default();
                events.note(format!(
                    "waiting for another process's workload ({}{holder})",
                    self.lock_path().display()
                ));
                told = true;
            }
            clock.sleep(LOCK_POLL.mul_f64(clock.scale())).await;
        }
    }

    /// Takes the run lock if it is free: `None` while someone holds it.
    /// Creates the cache directory and the lock file as needed.
    pub fn try_lock(&self) -> std::io::Result<Option<RunLock>> {
        std::fs::create_dir_all(&self.dir)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.lock_path())?;
        // Called by path: std's own `File::try_lock` (Rust 1.89) would shadow
        // the trait's method on newer compilers.
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => {}
            Err(fs4::TryLockError::WouldBlock) => return Ok(None),
            Err(fs4::TryLockError::Error(e)) => return Err(e),
        }
        // For people looking: who holds it. Never read back to decide, so
        // a failure to write it is no failure to lock.
        let _ = file
            .set_len(0)
            .and_then(|()| writeln!(file, "{}", std::process::id()));
        Ok(Some(RunLock { _file: file }))
    }
}

fn sanitize(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A short stable hash of text (FNV-1a, 16 hex digits), for cache keys.
pub fn short_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder_with_summary(dir: &Path) -> PathBuf {
        let f = dir.join("run");
        std::fs::create_dir_all(&f).expect("mkdir");
        std::fs::write(f.join("summary.json"), "{}").expect("write");
        f
    }

    #[test]
    fn records_are_reused_within_a_nextest_run_or_a_window() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = folder_with_summary(dir.path());
        let mut cache = RunCache {
            dir: dir.path().join("cache"),
            nextest_run_id: Some("run-a".into()),
            window_s: 0,
        };
        assert!(cache.lookup("p::bench::quick", 1000).is_none());
        cache
            .store("p::bench::quick", &folder, 1000)
            .expect("store");
        assert!(cache.lookup("p::bench::quick", 999_999).is_some());
        assert!(cache.lookup("p::classroom::quick", 1000).is_none());
        cache.nextest_run_id = Some("run-b".into());
        assert!(cache.lookup("p::bench::quick", 1001).is_none());
        cache.window_s = 60;
        assert!(cache.lookup("p::bench::quick", 1060).is_some());
        assert!(cache.lookup("p::bench::quick", 1061).is_none());
        std::fs::remove_file(folder.join("summary.json")).expect("rm");
        assert!(cache.lookup("p::bench::quick", 1001).is_none());
    }

    #[tokio::test]
    async fn the_lock_is_exclusive_per_open_file_and_released_on_drop() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = RunCache::new(dir.path().join("cache"), 0);
        let clock = Clock::real();
        let held = cache.lock(&clock).await.expect("lock");
        let path = cache.lock_path();
        assert_eq!(
            std::fs::read_to_string(&path).expect("read").trim(),
            std::process::id().to_string()
        );
        // A second open of the file in this very process is refused too.
        assert!(cache.try_lock().expect("try").is_none());
        let waited = clock
            .timeout(Duration::from_millis(600), cache.lock(&clock))
            .await;
        assert!(waited.is_err(), "waits while held");
        drop(held);
        assert!(path.exists(), "the file stays; only the lock goes");
        let again = cache.try_lock().expect("try").expect("free again");
        drop(again);
        // Whatever an older version or a crash left in the file is no lock.
        std::fs::write(&path, "4194305\n").expect("write");
        let again = clock
            .timeout(Duration::from_secs(5), cache.lock(&clock))
            .await
            .expect("not stuck")
            .expect("lock");
        drop(again);
    }

    #[test]
    fn keys_become_file_names() {
        assert_eq!(sanitize("a/b::c d"), "a_b__c_d");
        assert_eq!(short_hash("x").len(), 16);
        assert_ne!(short_hash("x"), short_hash("y"));
    }
}
