//! A captured class replayed (see `tests/replay_support`): the figures that
//! depend on timing, TTFT P50/P95 and the peak KV-cache usage, besides its
//! server output and prefix-cache hit rate, each within 10 % of the
//! class's, and its steady server output (each over its own window: the
//! class's, and the one the replay infers from the capture) within 5 %.
//! The class is the lab's: 40 students, the seats full and a
//! queue. TTFT is compared in the twin's engine clock (its per-request
//! log), where the HTTP path and the client do not add the machine's lost
//! milliseconds; the client's TTFT is printed beside it. The run is on a
//! real clock 5 times faster than real time (every millisecond the machine
//! loses is 5 ms of the class's time), through real sockets, which is why
//! it runs here, alone, and only when asked (about 8 minutes):
//! `cargo test -p codendum --test perf replay_class -- --ignored --nocapture`.
//! The same class in virtual time, where no machine time enters, is
//! checked on every `cargo test` (`tests/it/replay_timing.rs`).

#[path = "../replay_support/mod.rs"]
mod replay_support;

use replay_support::{assert_replay_kept, assert_steady_output_kept, class_then_replay_windows};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "about 8 minutes at 5x real time: run with --ignored"]
async fn a_replayed_whole_class_keeps_its_ttft_and_peak_kv() {
    let _alone = super::alone();
    let dir = tempfile::tempdir().expect("dir");
    let (class, replayed, windows) = class_then_replay_windows(dir.path(), 40, 5.0).await;
    assert_steady_output_kept(&class, &replayed, windows);
    assert_replay_kept("40 students at 5x", &class, &replayed);
}
