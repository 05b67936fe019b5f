//! A captured class replayed (see `tests/replay_support`): the figures that
//! depend on timing, TTFT P50/P95 and the peak KV-cache usage, besides its
//! server output and prefix-cache hit rate, each within 10 % of the
//! class's. TTFT is compared in the twin's engine clock (its per-request
//! log), where the HTTP path and the client do not add the machine's lost
//! milliseconds; the client's TTFT is printed beside it. At 5× real time a
//! millisecond the machine loses is still 5 ms of simulated arrival time,
//! which is why this runs here, alone, and only when asked (about 3
//! minutes):
//! `cargo test -p codendum --test perf replay_class -- --ignored --nocapture`.

#[path = "../replay_support/mod.rs"]
mod replay_support;

use replay_support::{class_then_replay, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "about 3 minutes at 5x real time: run with --ignored"]
async fn a_replayed_class_keeps_its_ttft_and_peak_kv() {
    let _alone = super::alone();
    let dir = tempfile::tempdir().expect("dir");
    let (class, replayed) = class_then_replay(dir.path(), 6, 5.0).await;
    let (a, b) = (&class.server, &replayed.server);
    eprintln!(
        "class vs replay ({} calls): output {:?} / {:?} tokens, hit rate {:?} / {:?}, peak KV {:?} / {:?}, engine TTFT P50/P95 {:.3}/{:.3} vs {:.3}/{:.3} s, client TTFT P50/P95 {:.3}/{:.3} vs {:.3}/{:.3} s",
        class.calls,
        a.generation_tokens,
        b.generation_tokens,
        a.prefix_hit_rate,
        b.prefix_hit_rate,
        a.peak_kv_usage,
        b.peak_kv_usage,
        class.engine_ttft.0,
        class.engine_ttft.1,
        replayed.engine_ttft.0,
        replayed.engine_ttft.1,
        class.ttft.0,
        class.ttft.1,
        replayed.ttft.0,
        replayed.ttft.1
    );
    within(
        "server output tokens",
        a.generation_tokens.expect("class"),
        b.generation_tokens.expect("replay"),
        0.10,
    );
    within(
        "prefix-cache hit rate",
        a.prefix_hit_rate.expect("class"),
        b.prefix_hit_rate.expect("replay"),
        0.10,
    );
    within(
        "TTFT P50",
        class.engine_ttft.0,
        replayed.engine_ttft.0,
        0.10,
    );
    within(
        "TTFT P95",
        class.engine_ttft.1,
        replayed.engine_ttft.1,
        0.10,
    );
    within(
        "peak KV usage",
        a.peak_kv_usage.expect("class"),
        b.peak_kv_usage.expect("replay"),
        0.10,
    );
}
