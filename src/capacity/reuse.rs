//! Sharing one run between processes: under `cargo nextest run` every trial
//! runs in its own process, and each must judge the same run of its
//! workload, not start another.
//!
//! A cache directory (`target/capacity-cache/`) holds:
//! - `run.lock`: created exclusively by the process that runs a workload and
//!   removed when it is done; other processes wait for it (one workload at a
//!   time, so two workloads never disturb each other's figures or load a
//!   live server together). A lock whose process is gone is taken over.
//! - `<profile>--<workload>--<mode>--<target hash>.json`: the results folder
//!   of the last finished run of that workload, when it finished, and the
//!   nextest run it belonged to.
//!
//! A recorded run is reused when it belongs to the same nextest run
//! (`NEXTEST_RUN_ID`), or when it finished within the reuse window
//! (`CODENDUM_CAPACITY_REUSE_S`), and its folder still exists.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Clock;

/// How long to wait between looks at a held lock, real time.
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

/// A held `run.lock`; removed on drop.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
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
        if !record.folder.join(crate::results::SUMMARY_JSON).is_file() {
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

    /// Takes `run.lock`, waiting while another live process holds it.
    pub async fn lock(&self, clock: &Clock) -> std::io::Result<RunLock> {
        std::fs::create_dir_all(&self.dir)?;
        let path = self.dir.join("run.lock");
        let mut told = false;
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    writeln!(f, "{}", std::process::id())?;
                    return Ok(RunLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if holder_is_gone(&path) {
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    if !told {
                        eprintln!(
                            "capacity: waiting for another process's workload ({})",
                            path.display()
                        );
                        told = true;
                    }
                    clock.sleep(LOCK_POLL).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whether the process named in a lock file no longer runs.
fn holder_is_gone(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let Ok(pid) = text.trim().parse::<u32>() else {
        // Being written right now, or garbage: judge by age.
        return lock_age(path).is_some_and(|a| a > Duration::from_secs(60));
    };
    if cfg!(target_os = "linux") {
        !Path::new(&format!("/proc/{pid}")).exists()
    } else {
        lock_age(path).is_some_and(|a| a > Duration::from_secs(6 * 3600))
    }
}

fn lock_age(path: &Path) -> Option<Duration> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    std::time::SystemTime::now().duration_since(modified).ok()
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
    async fn the_lock_is_exclusive_and_a_dead_holder_is_taken_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = RunCache::new(dir.path().to_path_buf(), 0);
        let clock = Clock::real();
        let held = cache.lock(&clock).await.expect("lock");
        let path = dir.path().join("run.lock");
        assert!(path.exists());
        assert!(!holder_is_gone(&path), "our own process holds it");
        drop(held);
        assert!(!path.exists());
        if !cfg!(target_os = "linux") {
            return;
        }
        // A lock left by a process that is gone (pid beyond the Linux limit).
        std::fs::write(&path, "4194305\n").expect("write");
        let again = clock
            .timeout(Duration::from_secs(30), cache.lock(&clock))
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
