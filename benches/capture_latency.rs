//! What `codendum capture` adds to a stream: TTFT and per-chunk delay
//! through the capture against a direct connection, to the firehose server
//! in paced mode (`src/twin/firehose.rs`: TTFT 50 ms, a token every 20 ms,
//! each token stamped with the UTC nanosecond the server wrote it).
//!
//! Server, capture and client each run on their own single-threaded tokio
//! runtime (as three processes would); requests alternate direct / through
//! the capture so both see the same machine load.
//!
//! - TTFT: request sent → first chunk carrying content, at the client;
//! - per-chunk delay: the client's arrival time of each token − the
//!   server's stamp for it (same system clock).
//!
//! A third path goes through a capture whose disk never takes a write (a
//! writer that blocks for good, with room for 8 records): what the capture
//! adds when its disk stalls, which must be what it adds otherwise.
//!
//! `cargo bench --bench capture_latency` (`CODENDUM_ROUNDS=N` requests per
//! path, default 60; 100 tokens each).

use std::time::Instant;

use codendum::capture::{self, CaptureConfig, CaptureDisk};
use codendum_core::openai::chunk::parse_chunk;
use codendum_core::openai::sse::{SseDecoder, SseEvent};
use codendum_core::stats::{percentile, sorted_finite};
use codendum_twin::firehose::{self, parse_stamps, FirehoseOptions};
use serde_json::json;

const TOKENS: u64 = 100;

fn thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Starts `make` on a runtime of its own thread; returns what it yields.
fn on_own_thread<T: Send + 'static, F>(make: impl FnOnce() -> F + Send + 'static) -> T
where
    F: std::future::Future<Output = T>,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = thread_runtime();
        rt.block_on(async move {
            let value = make().await;
            let _ = tx.send(value);
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("server started")
}

#[derive(Default)]
struct Figures {
    ttft: Vec<f64>,
    delay: Vec<f64>,
}

fn utc_ns() -> i64 {
    chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
}

async fn one(http: &reqwest::Client, base: &str, into: &mut Figures) {
    let body = json!({"model": "m", "stream": true, "max_tokens": TOKENS,
        "messages": [{"role": "user", "content": "go"}], "firehose": {"ttft_ms": 50, "itl_ms": 20}});
    let sent = Instant::now();
    let mut resp = http
        .post(format!("{base}/chat/completions"))
        .header("x-session-id", "ses_bench")
        .json(&body)
        .send()
        .await
        .expect("send");
    let mut dec = SseDecoder::new();
    let mut first = true;
    while let Some(piece) = resp.chunk().await.expect("chunk") {
        let now_ns = utc_ns();
        let now = Instant::now();
        dec.push(&piece);
        while let Some(ev) = dec.next_event() {
            let SseEvent::Data(d) = ev else { continue };
            let Ok(c) = parse_chunk(d) else { continue };
            let text: String = c
                .choices
                .iter()
                .filter_map(|ch| {
                    ch.delta
                        .as_ref()?
                        .content
                        .as_ref()
                        .map(|s| s.as_str().to_string())
                })
                .collect();
            if text.is_empty() {
                continue;
            }
            if first {
                into.ttft.push(now.duration_since(sent).as_secs_f64());
                first = false;
            }
            for stamp in parse_stamps(&text).sent {
                into.delay.push((now_ns - stamp) as f64 / 1e9);
            }
        }
    }
}

/// A disk whose every write blocks for good.
struct StalledDisk;

impl CaptureDisk for StalledDisk {
    fn append_call(&mut self, _line: &[u8]) -> std::io::Result<()> {
        loop {
            std::thread::park();
        }
    }
    fn replace(&mut self, _name: &str, _bytes: &[u8]) -> std::io::Result<()> {
        loop {
            std::thread::park();
        }
    }
}

fn ms(sorted: &[f64], p: f64) -> f64 {
    percentile(sorted, p).unwrap_or(f64::NAN) * 1e3
}

fn main() {
    let rounds: usize = std::env::var("CODENDUM_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let fire = on_own_thread(|| async {
        firehose::start(
            FirehoseOptions::default(),
            "127.0.0.1:0".parse().expect("addr"),
        )
        .await
        .expect("firehose")
    });
    let direct = fire.base_url();
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("cap");
    let upstream = direct.clone();
    let cap = on_own_thread(move || async move {
        let config = CaptureConfig::new(&upstream, "127.0.0.1:0", out).expect("config");
        capture::start(config).await.expect("capture")
    });
    let through = cap.base_url();
    let stalled_dir = dir.path().join("stalled");
    std::fs::create_dir_all(&stalled_dir).expect("dir");
    let upstream = direct.clone();
    let stalled = on_own_thread(move || async move {
        let mut config = CaptureConfig::new(&upstream, "127.0.0.1:0", stalled_dir).expect("config");
        config.queue = 8;
        capture::start_on(config, Box::new(StalledDisk))
            .await
            .expect("capture")
    });
    let stalled_url = stalled.base_url();
    let rt = thread_runtime();
    let (d, c, st) = rt.block_on(async {
        let http = reqwest::Client::builder()
            .no_proxy()
            .tcp_nodelay(true)
            .build()
            .expect("client");
        let (mut d, mut c, mut st) = (Figures::default(), Figures::default(), Figures::default());
        one(&http, &direct, &mut Figures::default()).await; // warm the pools
        one(&http, &through, &mut Figures::default()).await;
        one(&http, &stalled_url, &mut Figures::default()).await;
        for _ in 0..rounds {
            one(&http, &direct, &mut d).await;
            one(&http, &through, &mut c).await;
            one(&http, &stalled_url, &mut st).await;
        }
        (d, c, st)
    });
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("capture_latency: {rounds} requests per path, {TOKENS} tokens each, paced 50 ms + 20 ms/token; load {}", load.trim());
    println!(
        "| figure | direct P50 | direct P99 | capture P50 | capture P99 | added P50 | added P99 |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, a, b) in [
        ("TTFT", &d.ttft, &c.ttft),
        ("per-chunk delay", &d.delay, &c.delay),
        ("TTFT, disk stalled", &d.ttft, &st.ttft),
        ("per-chunk delay, disk stalled", &d.delay, &st.delay),
    ] {
        let (a, b) = (
            sorted_finite(a.iter().copied()),
            sorted_finite(b.iter().copied()),
        );
        println!(
            "| {name} (ms) | {:.3} | {:.3} | {:.3} | {:.3} | {:+.3} | {:+.3} |",
            ms(&a, 50.0),
            ms(&a, 99.0),
            ms(&b, 50.0),
            ms(&b, 99.0),
            ms(&b, 50.0) - ms(&a, 50.0),
            ms(&b, 99.0) - ms(&a, 99.0)
        );
    }
    println!("calls recorded by the capture: {}", cap.store().calls());
    let lost = stalled.store().losses();
    println!(
        "through the stalled disk: {} calls passed on, {} records waiting, {} dropped",
        stalled.store().calls(),
        lost.unwritten,
        lost.dropped
    );
}
