//! A second Ctrl-C ends a bench at once, without waiting out the grace
//! that the first one gives the requests in flight (5 s): a timing check,
//! so it lives in the perf binary. The bound (2 s after the second signal)
//! is the point of the test; measured here it ends within 0.1 s.

use std::time::{Duration, Instant};

use codendum_testkit::cli::{codendum, Running};
use codendum_testkit::servers::{MetricsCase, Servers};

#[test]
fn a_second_ctrl_c_ends_at_once() {
    let _alone = crate::alone();
    // Every answer takes 30 s: the first signal alone would wait the grace out.
    let servers = Servers::start(Duration::from_secs(30));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--base-url", &servers.base_url()])
        .args(["--metrics-url", &servers.metrics_url(MetricsCase::Fine)])
        .args(["--concurrency", "1", "--shapes", "short"])
        .args(["--output-tokens", "16", "--requests-per-level", "4"])
        .args(["--yes", "--allow-busy", "--results-dir", "results"]);
    let running = Running::spawn(cmd, dir.path(), "bench");
    let start = Instant::now();
    while !dir.path().join("results").is_dir() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    running.signal("INT");
    std::thread::sleep(Duration::from_millis(300));
    let second = Instant::now();
    running.signal("INT");
    let done = running.wait(Duration::from_secs(10));
    let took = second.elapsed();
    assert_eq!(done.code, Some(130), "{}", done.both());
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(done.stderr.contains("second interrupt"), "{}", done.stderr);
}
