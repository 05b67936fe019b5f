//! The latency `codendum capture` adds with a whole class behind it: 40
//! scripted sessions at once straight to the twin, then through a
//! capture; every step's wall time (request sent → whole answer read),
//! P50 and P95 of both printed (docs/replay.md has the figures). The
//! capture's P50 is held within 500 ms of the direct one's: a guard against
//! calls queueing behind each other in the capture, not a target (a loaded
//! 2-core machine moves these figures by tens of milliseconds).

use std::time::Duration;

#[path = "../replay_support/whole_class.rs"]
mod whole_class_support;

use crate::capture_support::{capture, twin};
use whole_class_support::class_through;

fn quantiles(mut d: Vec<Duration>) -> (f64, f64) {
    d.sort_unstable();
    let at = |q: f64| d[((d.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1000.0;
    (at(0.5), at(0.95))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_in_front_of_a_class_adds_little() {
    let _alone = super::alone();
    let pause = 0.005;
    let server = twin().await;
    let direct = quantiles(class_through(&server.base_url(), 40, pause).await);
    let dir = tempfile::tempdir().expect("dir");
    let cap = capture(&server.base_url(), dir.path()).await;
    let through = quantiles(class_through(&cap.base_url(), 40, pause).await);
    let recorded = cap
        .shutdown(Duration::from_secs(5))
        .await
        .expect("shutdown");
    server.shutdown().await;
    eprintln!(
        "40 sessions, step wall time P50/P95: direct {:.1}/{:.1} ms, through the capture {:.1}/{:.1} ms ({recorded} calls recorded)",
        direct.0, direct.1, through.0, through.1
    );
    assert_eq!(recorded, 160);
    assert!(
        through.0 - direct.0 < 500.0,
        "the capture adds {:.1} ms at P50",
        through.0 - direct.0
    );
}
