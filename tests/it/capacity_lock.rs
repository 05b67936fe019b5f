//! The capacity run-cache lock: an OS file lock on
//! `run.lock`, held by one open file at a time, whether the contenders are
//! two threads of one process (each with its own open of the file) or two
//! processes. The second waits until the first lets go; a holder killed
//! with SIGKILL lets go at once, leaving its PID in the file and no stale
//! lock.
//!
//! The other process is this very test binary, run for the one test
//! [`lock_holder_child`], which does nothing unless [`HOLDER_DIR`] is set.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use codendum::acceptance::reuse::{RunCache, LOCK_FILE};
use codendum_core::clock::Clock;

/// Set for the child: the folder with `cache/` (the run cache) and the
/// child's marks (`acquired`, `releasing`).
const HOLDER_DIR: &str = "CODENDUM_IT_LOCK_HOLDER_DIR";
/// Set for the child: how long to hold the lock, ms; 0: until killed.
const HOLDER_MS: &str = "CODENDUM_IT_LOCK_HOLDER_MS";
/// The longest a child ever holds the lock, should its parent be gone.
const CHILD_LIMIT: Duration = Duration::from_secs(60);

fn cache_in(dir: &Path) -> RunCache {
    RunCache {
        dir: dir.join("cache"),
        nextest_run_id: None,
        window_s: 0,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Writes a mark file whole (write, then rename), so a reader never sees
/// half of one.
fn mark(dir: &Path, name: &str) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, std::process::id().to_string()).expect("write mark");
    std::fs::rename(&tmp, dir.join(name)).expect("rename mark");
}

/// Not a test of its own: the lock holder that the tests below run in a
/// child process (with `--ignored`). Without [`HOLDER_DIR`] it returns at
/// once.
#[test]
#[ignore = "a helper: the lock-holding child process of the tests beside it"]
fn lock_holder_child() {
    let Some(dir) = std::env::var_os(HOLDER_DIR).map(PathBuf::from) else {
        return;
    };
    let hold_ms: u64 = std::env::var(HOLDER_MS)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let rt = runtime();
    let clock = Clock::real();
    let held = rt
        .block_on(cache_in(&dir).lock(&clock))
        .expect("child takes the lock");
    mark(&dir, "acquired");
    let hold = if hold_ms == 0 {
        CHILD_LIMIT
    } else {
        Duration::from_millis(hold_ms)
    };
    std::thread::sleep(hold);
    mark(&dir, "releasing");
    drop(held);
}

/// A child process running [`lock_holder_child`]; killed on drop.
struct Holder {
    child: Child,
}

impl Holder {
    fn spawn(dir: &Path, hold_ms: u64) -> Holder {
        let exe = std::env::current_exe().expect("current exe");
        let stderr = std::fs::File::create(dir.join("child.stderr")).expect("stderr file");
        let child = Command::new(exe)
            .args(["--ignored", "--exact", "capacity_lock::lock_holder_child"])
            .args(["--nocapture", "--test-threads", "1"])
            .env(HOLDER_DIR, dir)
            .env(HOLDER_MS, hold_ms.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("child starts");
        Holder { child }
    }

    /// Waits for the child's `acquired` mark.
    fn wait_until_held(&mut self, dir: &Path) {
        let start = Instant::now();
        while !dir.join("acquired").exists() {
            if let Ok(Some(status)) = self.child.try_wait() {
                let err = std::fs::read_to_string(dir.join("child.stderr")).unwrap_or_default();
                panic!("the child ended ({status}) without the lock: {err}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the child did not take the lock"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn two_threads_with_their_own_opens_take_turns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first_lets_go = Arc::new(AtomicBool::new(false));
    let (held_tx, held_rx) = mpsc::channel();
    let first = {
        let dir = dir.path().to_path_buf();
        let lets_go = Arc::clone(&first_lets_go);
        std::thread::spawn(move || {
            let rt = runtime();
            let held = rt
                .block_on(cache_in(&dir).lock(&Clock::real()))
                .expect("first lock");
            held_tx.send(()).expect("send");
            std::thread::sleep(Duration::from_millis(700));
            lets_go.store(true, Ordering::SeqCst);
            drop(held);
        })
    };
    held_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the first thread takes the lock");
    let second = {
        let dir = dir.path().to_path_buf();
        let lets_go = Arc::clone(&first_lets_go);
        std::thread::spawn(move || {
            let cache = cache_in(&dir);
            assert!(cache.try_lock().expect("try").is_none(), "held: refused");
            let start = Instant::now();
            let held = runtime()
                .block_on(cache.lock(&Clock::real()))
                .expect("second lock");
            assert!(
                lets_go.load(Ordering::SeqCst),
                "the second took the lock before the first let go"
            );
            drop(held);
            start.elapsed()
        })
    };
    first.join().expect("first thread");
    let waited = second.join().expect("second thread");
    // A lower bound only (the first thread holds the lock for 300 ms before
    // it lets go; load can only make the wait longer).
    assert!(
        waited >= Duration::from_millis(300),
        "the second waited: {waited:?}"
    );
}

#[test]
fn another_process_waits_until_the_holder_lets_go() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut holder = Holder::spawn(dir.path(), 1000);
    holder.wait_until_held(dir.path());
    let cache = cache_in(dir.path());
    assert!(
        cache.try_lock().expect("try").is_none(),
        "held by the child"
    );
    let rt = runtime();
    let clock = Clock::real();
    let held = rt
        .block_on(clock.timeout(Duration::from_secs(30), cache.lock(&clock)))
        .expect("the lock comes free")
        .expect("lock");
    assert!(
        dir.path().join("releasing").exists(),
        "taken before the child let go"
    );
    let status = holder.child.wait().expect("child ends");
    assert!(status.success(), "the child: {status}");
    drop(held);
}

#[test]
fn a_holder_killed_with_sigkill_leaves_no_stale_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut holder = Holder::spawn(dir.path(), 0);
    holder.wait_until_held(dir.path());
    let cache = cache_in(dir.path());
    let rt = runtime();
    let clock = Clock::real();
    let waited = rt.block_on(clock.timeout(Duration::from_millis(800), cache.lock(&clock)));
    assert!(waited.is_err(), "no lock while the child lives");
    holder.child.kill().expect("SIGKILL");
    holder.child.wait().expect("reaped");
    let lock_file = cache.dir.join(LOCK_FILE);
    assert_eq!(
        std::fs::read_to_string(&lock_file)
            .expect("lock file")
            .trim(),
        holder.child.id().to_string(),
        "the dead holder's pid is still written there"
    );
    // Free the moment the holder is reaped: a lock that waited for a stale
    // time-out would refuse here.
    let held = cache
        .try_lock()
        .expect("try")
        .expect("free at once after the kill");
    assert!(
        !dir.path().join("releasing").exists(),
        "the child never let go by itself"
    );
    drop(held);
}
