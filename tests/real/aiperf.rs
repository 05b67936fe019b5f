//! AIPerf (PyPI `aiperf`, `.ci/run` installs the pinned version into
//! `~/.cache/codendum-aiperf/venv`) replays a trace `codendum
//! export-trace` wrote, against the twin, and its figures agree with
//! `codendum replay` of the same trace against a twin of the same profile:
//! every request answered, the same output tokens, the same prompt tokens
//! within 10 %, and the twin's prefix-cache hit rate within 5 points.
//!
//! AIPerf turns `hash_ids` into text with a tokenizer; the word-level one
//! in `fixtures/aiperf-tokenizer` needs no download. AIPerf 0.13's decode
//! workers load a tokenizer by hub name only (offline), so the test lays
//! the fixture out as a cached hub repository (`codendum/replay-words`)
//! under its own `HF_HOME`.

use std::path::Path;

use codendum::app::replay::{export_trace, TraceFormat};
use codendum::client::build_http_client;
use codendum::scrape::Scraper;
use codendum_core::clock::Clock;
use codendum_core::trace::mooncake;
use codendum_testkit::real::Component;
use codendum_twin::TwinHandle;

use crate::replay_support::{replay_through, twin};

/// The twin runs this many times faster than the GB10 it models.
const TIME_SCALE: f64 = 10.0;

/// Three sessions of four turns in AIPerf's form: a first turn of a
/// 1,024-token prefix they all share and 128 tokens of their own, then
/// turns of 128 new tokens after the history; 2 s between a turn's answer
/// and the next.
fn trace_text() -> String {
    let mut lines = Vec::new();
    for s in 0..3u64 {
        for turn in 0..4u64 {
            let own = (0..8).map(|j| 10_000 * (s + 1) + 100 * turn + j);
            let ids: Vec<u64> = if turn == 0 {
                (1..=64).chain(own).collect()
            } else {
                own.collect()
            };
            let mut line = serde_json::json!({
                "session_id": format!("s{s}"),
                "input_length": ids.len() * 16,
                "output_length": 16,
                "hash_ids": ids,
            });
            if turn == 0 {
                line["timestamp"] = (s * 3_000).into();
            } else {
                line["delay"] = 2_000.into();
            }
            lines.push(line.to_string());
        }
    }
    lines.join("\n") + "\n"
}

/// The fixture tokenizer as a cached hub repository under `hf_home`.
fn tokenizer_repo(hf_home: &Path) -> &'static str {
    let rev = "0000000000000000000000000000000000000001";
    let repo = hf_home.join("hub/models--codendum--replay-words");
    let snapshot = repo.join("snapshots").join(rev);
    std::fs::create_dir_all(&snapshot).expect("mkdir");
    std::fs::create_dir_all(repo.join("refs")).expect("mkdir");
    std::fs::write(repo.join("refs/main"), rev).expect("ref");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/aiperf-tokenizer");
    for name in ["tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(fixture.join(name), snapshot.join(name)).expect("copy");
    }
    "codendum/replay-words"
}

/// (prefix-cache hit rate, generation tokens, prompt tokens) of a twin,
/// from `/metrics`.
async fn counters(twin: &TwinHandle) -> (f64, f64, f64) {
    let scraper = Scraper::new(
        build_http_client(None, 2).expect("http"),
        vec![twin.metrics_url()],
    );
    let s = scraper.scrape().await.expect("metrics");
    let hits = s.prefix_cache_hits.expect("hits");
    let queries = s.prefix_cache_queries.expect("queries");
    (
        hits / queries,
        s.generation_tokens.expect("generation"),
        s.prompt_tokens.expect("prompt"),
    )
}

pub fn aiperf_replays_an_exported_trace_as_codendum_replay_does() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(compare());
}

async fn compare() {
    let dir = tempfile::tempdir().expect("dir");
    let source = dir.path().join("sessions.jsonl");
    std::fs::write(&source, trace_text()).expect("write");
    let trace = mooncake::read_trace(trace_text().as_bytes(), 16).expect("reads");

    // codendum replay of the trace.
    let clock = Clock::scaled(TIME_SCALE);
    let first = twin(&clock).await;
    let ours = replay_through(&first.base_url(), &clock, &trace, 1.0, 2).await;
    assert!(ours.requests.iter().all(|r| r.is_ok()));
    let (our_rate, our_output, our_prompt) = counters(&first).await;
    first.shutdown().await;

    // AIPerf of the exported trace.
    let exported = dir.path().join("aiperf.jsonl");
    assert_eq!(
        export_trace(
            &source,
            None,
            16,
            TraceFormat::Aiperf,
            &exported,
            &mut std::io::sink(),
            &codendum::events::Events::silent(),
        )
        .expect("export"),
        12
    );
    let second = twin(&Clock::scaled(TIME_SCALE)).await;
    let origin = second.base_url().trim_end_matches("/v1").to_string();
    let artifacts = dir.path().join("aiperf-out");
    let hf_home = dir.path().join("hf");
    let tokenizer = tokenizer_repo(&hf_home);
    let program = Component::Aiperf.program();
    let args = [
        "profile",
        "--model",
        "qwen3-coder",
        "--url",
        origin.as_str(),
        "--endpoint-type",
        "chat",
        "--streaming",
        "--input-file",
        exported.to_str().expect("utf8"),
        "--custom-dataset-type",
        "mooncake_trace",
        "--isl-block-size",
        "16",
        "--tokenizer",
        tokenizer,
        "--use-server-token-count",
        "--ui-type",
        "none",
        "--artifact-dir",
        artifacts.to_str().expect("utf8"),
    ];
    let out = tokio::process::Command::new(program)
        .args(args)
        .env("HF_HOME", &hf_home)
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .await
        .expect("aiperf runs");
    assert!(
        out.status.success(),
        "aiperf failed: {}",
        String::from_utf8_lossy(&[out.stdout.as_slice(), out.stderr.as_slice()].concat())
            .lines()
            .rev()
            .take(30)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let (their_rate, their_output, their_prompt) = counters(&second).await;
    second.shutdown().await;
    let export: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(artifacts.join("profile_export_aiperf.json")).expect("export"),
    )
    .expect("json");
    assert_eq!(export["request_count"]["avg"].as_f64(), Some(12.0));
    assert_eq!(export["output_sequence_length"]["avg"].as_f64(), Some(16.0));
    // 12 requests of 16 tokens; the two template probes add one each, and
    // their prompts 10 and 23 tokens (a lone message, then a second turn).
    assert_eq!(their_output, 12.0 * 16.0);
    assert_eq!(our_output, 12.0 * 16.0 + 2.0);
    let probe = 10.0 + 23.0;
    let off = ((our_prompt - probe) - their_prompt).abs() / their_prompt;
    assert!(
        off <= 0.10,
        "prompt tokens: codendum replay {our_prompt}, aiperf {their_prompt}"
    );
    assert!(
        (our_rate - their_rate).abs() <= 0.05 && their_rate > 0.5,
        "hit rate: codendum replay {our_rate:.3}, aiperf {their_rate:.3}"
    );
    eprintln!(
        "codendum replay vs aiperf: hit rate {our_rate:.3} / {their_rate:.3}, prompt tokens {our_prompt} / {their_prompt}, output {our_output} / {their_output}"
    );
}
