//! A class captured through `codendum capture` records the class (every
//! call's sizes, kind, parent and dependency the same as in the class's own
//! records, its times within milliseconds), and replayed against a fresh
//! twin of the same profile it gives the same prompt tokens, server output
//! (within 10 %) and prefix-cache hit rate (within 2 %). The figures that
//! depend on timing (the steady server output within 5 %, TTFT P50/P95 and
//! peak KV) are checked in virtual time in `replay_timing` and on a real
//! clock in `tests/perf`: on this test's 40x clock a loaded machine's lost
//! milliseconds are seconds of the class, and moved the steady output by
//! 20 % with other tests running beside it; a hand-written Mooncake trace
//! replays with its prefix sharing.

use codendum::client::build_http_client;
use codendum::scrape::Scraper;
use codendum_core::clock::Clock;
use codendum_core::trace::{mooncake, Trace};

use crate::replay_support::{class_then_replay, client, replay_through, twin, within};
use codendum::replay::{template_tokens, Template};
use codendum_core::openai::Endpoint;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_captured_class_replayed_gives_its_server_output_and_hit_rate() {
    let dir = tempfile::tempdir().expect("dir");
    let (class, replayed) = class_then_replay(dir.path(), 6, 40.0).await;
    let (a, b) = (&class.server, &replayed.server);
    within(
        "server output tokens",
        a.generation_tokens.expect("class output"),
        b.generation_tokens.expect("replay output"),
        0.10,
    );
    within(
        "prefix-cache hit rate",
        a.prefix_hit_rate.expect("class hit rate"),
        b.prefix_hit_rate.expect("replay hit rate"),
        0.02,
    );
}

/// The twin's ChatML template, measured as a live server's: a new turn adds
/// what a lone message has around it and the answer's `<|im_end|>\n`.
#[tokio::test]
async fn the_probes_measure_the_chat_template_of_a_message_and_a_turn() {
    let clock = Clock::scaled(20.0);
    let server = twin(&clock).await;
    let transport = client(&server.base_url(), &clock);
    let chat = template_tokens(transport.as_ref(), Endpoint::Chat, "qwen3-coder").await;
    let completions =
        template_tokens(transport.as_ref(), Endpoint::Completions, "qwen3-coder").await;
    server.shutdown().await;
    assert_eq!(
        chat,
        Template {
            message_tokens: 9,
            turn_tokens: 11
        }
    );
    assert_eq!(completions.message_tokens, completions.turn_tokens);
}

/// A hand-written trace: 3 sessions share a 2,048-token system prefix;
/// each then grows its own conversation over 4 turns.
fn hand_trace() -> String {
    let mut lines = Vec::new();
    for s in 0..3u64 {
        let mut own: Vec<u64> = Vec::new();
        for turn in 0..4u64 {
            own.extend((0..16).map(|j| 10_000 * (s + 1) + 100 * turn + j));
            let ids: Vec<u64> = (1..=128).chain(own.iter().copied()).collect();
            let line = serde_json::json!({
                "timestamp": s * 40_000 + turn * 9_000,
                "input_length": ids.len() * 16,
                "output_length": 24,
                "hash_ids": ids,
            });
            lines.push(line.to_string());
        }
    }
    lines.join("\n") + "\n"
}

#[tokio::test]
async fn a_hand_written_mooncake_trace_replays_with_its_prefix_sharing() {
    let text = hand_trace();
    let trace: Trace = mooncake::read_trace(text.as_bytes(), 16).expect("reads");
    let expected = trace.theoretical_hit_rate().expect("fraction");
    assert!(expected > 0.5, "{expected}");
    // The calls are 9 simulated seconds apart and each must be cached before
    // the next shares it: at 200x that is 45 ms of real time, which a loaded
    // machine missed (12 test threads, 2026-12-02); at 20x it is 450 ms.
    let clock = Clock::scaled(20.0);
    let server = twin(&clock).await;
    let http = build_http_client(None, 4).expect("http");
    let scraper = Scraper::new(http, vec![server.metrics_url()]);
    let before = scraper.scrape().await.expect("metrics");
    let out = replay_through(&server.base_url(), &clock, &trace, 1.0, 9).await;
    let after = scraper.scrape().await.expect("metrics");
    server.shutdown().await;
    assert_eq!(out.requests.len(), 12);
    let sent: Vec<u64> = out
        .requests
        .iter()
        .filter_map(|r| r.prompt_tokens)
        .collect();
    assert!(
        sent.iter()
            .all(|&p| [2_304, 2_560, 2_816, 3_072].contains(&p)),
        "prompts of the recorded size: {sent:?}"
    );
    let hits = after.prefix_cache_hits.expect("hits") - before.prefix_cache_hits.expect("hits");
    let queries = after.prefix_cache_queries.expect("queries")
        - before.prefix_cache_queries.expect("queries");
    let rate = hits / queries;
    assert!(
        (rate - expected).abs() <= 0.02,
        "twin hit rate {rate:.4}, trace's shared blocks {expected:.4}"
    );
}
