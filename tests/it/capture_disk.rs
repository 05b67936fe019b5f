//! The capture on a disk that fails or stalls: every student's call goes
//! through as usual while the records cannot be written; what is lost is
//! counted, said once as it happens, and summed at the end; a disk that
//! takes writes again is used again; a stalled disk does not hold up the
//! stop beyond its grace.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use codendum::capture::{self, CaptureConfig, CaptureDisk, FolderDisk};
use codendum::events::{Events, Recorder};

use crate::capture_support::{calls, session, twin};

/// A disk that refuses the call lines numbered in `refuse` (0-based) with
/// "no space left", and every other file while it refuses lines; the rest
/// go to the folder.
struct FillingDisk {
    inner: FolderDisk,
    refuse: std::ops::Range<u64>,
    line: u64,
}

fn no_space() -> io::Error {
    io::Error::from_raw_os_error(28)
}

impl CaptureDisk for FillingDisk {
    fn append_call(&mut self, line: &[u8]) -> io::Result<()> {
        let n = self.line;
        self.line += 1;
        if self.refuse.contains(&n) {
            return Err(no_space());
        }
        self.inner.append_call(line)
    }

    fn replace(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        if self.refuse.contains(&self.line) {
            return Err(no_space());
        }
        self.inner.replace(name, bytes)
    }
}

/// A disk whose writes wait until the gate opens.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn wait(&self) {
        let (open, cv) = &*self.0;
        let mut g = open.lock().expect("gate");
        while !*g {
            g = cv.wait(g).expect("gate");
        }
    }

    fn open(&self) {
        let (open, cv) = &*self.0;
        *open.lock().expect("gate") = true;
        cv.notify_all();
    }
}

struct StallingDisk {
    inner: FolderDisk,
    gate: Gate,
    /// Writes that reached the disk and wait at the gate (or went through).
    reached: Arc<AtomicU64>,
}

impl CaptureDisk for StallingDisk {
    fn append_call(&mut self, line: &[u8]) -> io::Result<()> {
        self.reached.fetch_add(1, Ordering::SeqCst);
        self.gate.wait();
        self.inner.append_call(line)
    }

    fn replace(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.reached.fetch_add(1, Ordering::SeqCst);
        self.gate.wait();
        self.inner.replace(name, bytes)
    }
}

/// A capture's config with room for `queue` records, telling its
/// warnings to the returned recorder.
fn config(upstream: &str, out: &std::path::Path, queue: usize) -> (CaptureConfig, Arc<Recorder>) {
    let mut c = CaptureConfig::new(upstream, "127.0.0.1:0", out.to_path_buf()).expect("config");
    c.queue = queue;
    let (events, recorder) = Events::recording();
    c.events = events;
    (c, recorder)
}

/// The warnings that contain `text`.
fn said(recorder: &Recorder, text: &str) -> Vec<String> {
    recorder
        .warnings()
        .into_iter()
        .filter(|w| w.contains(text))
        .collect()
}

#[tokio::test]
async fn a_full_disk_loses_counted_records_and_no_call() {
    let twin = twin().await;
    let dir = tempfile::tempdir().expect("dir");
    let disk = FillingDisk {
        inner: FolderDisk::open(dir.path()).expect("folder"),
        refuse: 1..u64::MAX,
        line: 0,
    };
    let (config, told) = config(&twin.base_url(), dir.path(), 64);
    let cap = capture::start_on(config, Box::new(disk))
        .await
        .expect("capture starts");
    // A four-step session: every step is answered although only the first
    // line reaches the disk.
    let steps = session(&cap.base_url(), "ses_full", &[0.01; 4]).await;
    assert_eq!(steps.len(), 4, "the session went on to its answer");
    let summary = cap.finish(Duration::from_secs(5)).await;
    twin.shutdown().await;
    assert_eq!(summary.calls, 4);
    assert_eq!(summary.losses.failed, 3, "{summary:?}");
    assert_eq!(summary.losses.calls_lost(), 3);
    assert!(!summary.header_written, "the header's end cannot land");
    let reason = summary.losses.reason().expect("a reason");
    assert!(reason.contains("No space left on device"), "{reason}");
    assert_eq!(calls(dir.path()).len(), 1, "the line written before");
    let line = summary.line(dir.path());
    assert!(
        line.contains("3 not recorded") && line.contains("the other 1"),
        "{line}"
    );
    let failing = said(&told, "cannot write into");
    assert_eq!(failing.len(), 1, "said once: {:?}", told.warnings());
    assert!(
        failing[0].contains("No space left on device"),
        "{failing:?}"
    );
}

#[tokio::test]
async fn a_disk_that_frees_up_is_used_again() {
    let twin = twin().await;
    let dir = tempfile::tempdir().expect("dir");
    let disk = FillingDisk {
        inner: FolderDisk::open(dir.path()).expect("folder"),
        refuse: 1..3,
        line: 0,
    };
    let (config, told) = config(&twin.base_url(), dir.path(), 64);
    let cap = capture::start_on(config, Box::new(disk))
        .await
        .expect("capture starts");
    session(&cap.base_url(), "ses_back", &[0.01; 4]).await;
    let summary = cap.finish(Duration::from_secs(5)).await;
    twin.shutdown().await;
    assert_eq!((summary.calls, summary.losses.failed), (4, 2));
    assert!(summary.header_written);
    let seqs: Vec<u64> = calls(dir.path())
        .iter()
        .map(|c| c["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(seqs, vec![1, 4], "the lines around the gap, whole");
    let header: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("capture.json")).expect("header"),
    )
    .expect("json");
    assert_eq!(header["calls"], 4);
    assert_eq!(header["calls_not_recorded"], 2);
    assert!(header["loss"]
        .as_str()
        .is_some_and(|l| l.contains("refused writes")));
    assert_eq!(
        said(&told, "the disk takes writes again"),
        vec!["capture: the disk takes writes again (2 call records lost so far)"],
        "{:?}",
        told.warnings()
    );
}

#[tokio::test]
async fn a_stalled_disk_holds_up_no_call_and_drops_what_does_not_fit() {
    let twin = twin().await;
    let dir = tempfile::tempdir().expect("dir");
    let gate = Gate::default();
    let reached = Arc::new(AtomicU64::new(0));
    let disk = StallingDisk {
        inner: FolderDisk::open(dir.path()).expect("folder"),
        gate: gate.clone(),
        reached: reached.clone(),
    };
    let (config, told) = config(&twin.base_url(), dir.path(), 2);
    let cap = capture::start_on(config, Box::new(disk))
        .await
        .expect("capture starts");
    // Three sessions, one after the other, with the disk stalled for all
    // of them: every step is answered.
    for s in 0..3 {
        let steps = session(&cap.base_url(), &format!("ses_slow_{s}"), &[0.01; 4]).await;
        assert_eq!(steps.len(), 4);
    }
    assert_eq!(
        reached.load(Ordering::SeqCst),
        1,
        "one write waits at the disk, the rest in the queue or dropped"
    );
    let behind = said(&told, "the disk is not keeping up");
    assert_eq!(behind.len(), 1, "said once: {:?}", told.warnings());
    gate.open();
    let summary = cap.finish(Duration::from_secs(5)).await;
    twin.shutdown().await;
    assert_eq!(summary.calls, 12);
    assert!(summary.losses.dropped > 0, "{summary:?}");
    assert_eq!(summary.losses.failed + summary.losses.unwritten, 0);
    let written = calls(dir.path()).len() as u64;
    assert_eq!(written + summary.losses.dropped, 12, "{summary:?}");
    assert!(summary.header_written);
}

#[tokio::test]
async fn a_disk_stalled_for_good_does_not_hold_up_the_stop() {
    let twin = twin().await;
    let dir = tempfile::tempdir().expect("dir");
    let gate = Gate::default();
    let disk = StallingDisk {
        inner: FolderDisk::open(dir.path()).expect("folder"),
        gate: gate.clone(),
        reached: Arc::default(),
    };
    let cap = capture::start_on(config(&twin.base_url(), dir.path(), 64).0, Box::new(disk))
        .await
        .expect("capture starts");
    session(&cap.base_url(), "ses_stuck", &[0.01; 4]).await;
    let summary = cap.finish(Duration::from_millis(200)).await;
    twin.shutdown().await;
    assert_eq!(summary.calls, 4);
    assert_eq!(
        summary.losses.unwritten, 4,
        "every line still waits: {summary:?}"
    );
    assert!(!summary.header_written);
    assert!(summary.line(dir.path()).contains("4 not recorded"));
    // Let the writer thread go.
    gate.open();
}
