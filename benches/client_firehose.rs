//! The client under load, two processes on one machine: this bench starts
//! itself again as the firehose server (`src/twin/firehose.rs`, one tokio
//! worker thread) and drives it with the real `HttpClient` (`Transport::call`,
//! every request recording TTFT and gaps).
//!
//! - `firehose`: S concurrent streams of 4,096 tokens written as fast as the
//!   server can (64 SSE events per write); tokens/s into the client.
//! - `paced`: S streams with TTFT 50 ms and 20 ms per token; the client's CPU
//!   per token, the rate held, and the client's TTFT and gaps against the
//!   server's own stamps (UTC nanoseconds in each token, see
//!   `firehose::parse_stamps`; both processes read the same system clock).
//!
//! `cargo bench --bench client_firehose [-- firehose|paced]`

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use codendum::client::{ClientOptions, HttpClient};
use codendum_core::clock::Clock;
use codendum_core::openai::{CallOutcome, CallRequest, Endpoint, Transport};
use codendum_core::stats::{percentile, sorted_finite};
use codendum_twin::firehose::{self, parse_stamps, FirehoseOptions};
use serde_json::json;

const ROLE_ENV: &str = "CODENDUM_FIREHOSE_SERVER";
const FIREHOSE_TOKENS: u64 = 4096;
const PACED_TOKENS: u64 = 100;

fn main() {
    if std::env::var_os(ROLE_ENV).is_some() {
        serve();
        return;
    }
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |name: &str| args.is_empty() || args.iter().any(|a| name.contains(a.as_str()));
    let mut server = Server::spawn();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(env_usize("CODENDUM_CLIENT_THREADS", 2))
        .enable_all()
        .build()
        .expect("runtime");
    let sizes = |default: Vec<usize>| match std::env::var("CODENDUM_STREAMS") {
        Ok(v) => v.split(',').filter_map(|x| x.parse().ok()).collect(),
        Err(_) => default,
    };
    let base = server.base_url.clone();
    if wants("firehose") {
        for streams in sizes(vec![64, 256]) {
            let c = Client::new(&base, streams);
            rt.block_on(firehose_round(&c, streams, 8, &server)); // warm the pool
            let mut rates = Vec::new();
            let mut cpu = Vec::new();
            for _ in 0..3 {
                let r = rt.block_on(firehose_round(&c, streams, FIREHOSE_TOKENS, &server));
                rates.push(r.tokens as f64 / r.wall);
                cpu.push((r.client_cpu / r.wall, r.server_cpu / r.wall));
            }
            let median = sorted_finite(rates.iter().copied());
            println!(
                "firehose streams={streams} tokens={FIREHOSE_TOKENS}: median {:.0} tok/s (runs {:?}), client CPU {:.2} cores, server {:.2} cores, load {}",
                percentile(&median, 50.0).unwrap_or(0.0),
                rates.iter().map(|r| r.round()).collect::<Vec<_>>(),
                cpu.iter().map(|c| c.0).sum::<f64>() / cpu.len() as f64,
                cpu.iter().map(|c| c.1).sum::<f64>() / cpu.len() as f64,
                loadavg()
            );
        }
    }
    if wants("paced") {
        for streams in sizes(vec![1, 100, 1024]) {
            let c = Client::new(&base, streams);
            let r = rt.block_on(paced_round(&c, streams, PACED_TOKENS, &server));
            println!("{r} load {}", loadavg());
        }
    }
    server.stop();
}

/// The firehose child process.
struct Server {
    child: Child,
    base_url: String,
}

impl Server {
    fn spawn() -> Self {
        let exe = std::env::current_exe().expect("own path");
        let mut child = Command::new(exe)
            .env(ROLE_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the firehose server");
        let mut line = String::new();
        let out = child.stdout.take().expect("stdout");
        BufReader::new(out).read_line(&mut line).expect("address");
        Server {
            child,
            base_url: line.trim().to_string(),
        }
    }

    fn cpu(&self) -> f64 {
        cpu_seconds(&format!("/proc/{}/stat", self.child.id()))
    }

    fn stop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// Serves until stdin closes (the parent ended).
fn serve() {
    let threads = env_usize("CODENDUM_FIREHOSE_THREADS", 1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("runtime");
    let handle = rt
        .block_on(firehose::start(
            FirehoseOptions::default(),
            "127.0.0.1:0".parse().expect("addr"),
        ))
        .expect("bind");
    println!("{}", handle.base_url());
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    rt.block_on(handle.shutdown());
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(default)
}

/// utime + stime of a process, seconds (from `/proc/PID/stat`, 100 Hz ticks).
fn cpu_seconds(path: &str) -> f64 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let after = text.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

struct Round {
    tokens: u64,
    wall: f64,
    client_cpu: f64,
    server_cpu: f64,
    outcomes: Vec<CallOutcome>,
}

/// One client (and its connection pool) for the rounds of one size.
struct Client {
    http: Arc<HttpClient>,
    clock: Clock,
}

impl Client {
    fn new(base: &str, streams: usize) -> Self {
        let clock = Clock::real();
        let opts = ClientOptions {
            max_connections: streams,
            clock: clock.clone(),
            ..ClientOptions::default()
        };
        let http = Arc::new(
            HttpClient::new(
                &codendum_core::access::BaseUrl::parse(base).expect("base URL"),
                opts,
            )
            .expect("client"),
        );
        Client { http, clock }
    }
}

/// `streams` workers; worker k waits `k × stagger / streams` seconds, then
/// sends `repeat` requests one after the other. Tokens and CPU count every
/// request; `outcomes` drops each worker's first (cold) one when `repeat` > 1.
async fn run_round(
    c: &Client,
    streams: usize,
    body: std::sync::Arc<serde_json::Value>,
    server: &Server,
    stagger: f64,
    repeat: usize,
) -> Round {
    let server_cpu0 = server.cpu();
    let cpu0 = cpu_seconds("/proc/self/stat");
    let t0 = c.clock.now_secs();
    let mut tasks = Vec::with_capacity(streams);
    for k in 0..streams {
        let (client, body, clock) = (c.http.clone(), body.clone(), c.clock.clone());
        let wait = Duration::from_secs_f64(stagger * k as f64 / streams as f64);
        tasks.push(tokio::spawn(async move {
            clock.sleep(wait).await;
            let mut all = Vec::with_capacity(repeat);
            for _ in 0..repeat {
                let request = CallRequest {
                    endpoint: Endpoint::Chat,
                    body: body.clone(),
                    api_key: None,
                    headers: Vec::new(),
                    record_gaps: true,
                    first_token: None,
                };
                all.push(client.call(request).await);
            }
            all
        }));
    }
    let mut outcomes = Vec::with_capacity(streams);
    let mut tokens = 0;
    for t in tasks {
        for o in t.await.expect("task") {
            assert!(o.is_ok(), "call failed: {:?}", o.error);
            assert!(o.ttft.is_some());
            assert_eq!(o.gaps.len() as u64 + 1, o.text_chunks);
            tokens += o.output_tokens().0;
            outcomes.push(o);
        }
        if repeat > 1 {
            outcomes.remove(outcomes.len() - repeat);
        }
    }
    let wall = c.clock.now_secs() - t0;
    Round {
        tokens,
        wall,
        client_cpu: cpu_seconds("/proc/self/stat") - cpu0,
        server_cpu: server.cpu() - server_cpu0,
        outcomes,
    }
}

fn request(tokens: u64) -> serde_json::Value {
    json!({"model": "firehose", "messages": [{"role": "user", "content": "go"}],
           "max_tokens": tokens, "stream": true,
           "stream_options": {"include_usage": true}})
}

async fn firehose_round(c: &Client, streams: usize, tokens: u64, server: &Server) -> Round {
    let r = run_round(c, streams, request(tokens).into(), server, 0.0, 1).await;
    assert_eq!(r.tokens, streams as u64 * tokens);
    r
}

async fn paced_round(c: &Client, streams: usize, tokens: u64, server: &Server) -> PacedReport {
    let mut body = request(tokens);
    body["firehose"] = json!({"ttft_ms": 50, "itl_ms": 20});
    let ideal = 0.05 + (tokens as f64 - 1.0) * 0.02;
    let r = run_round(c, streams, body.into(), server, ideal, 3).await;
    let mut ttft_err = Vec::new();
    let mut first_lag = Vec::new();
    let mut gap_err = Vec::new();
    let mut tpot = Vec::new();
    let mut e2e = Vec::new();
    for o in &r.outcomes {
        let s = parse_stamps(&o.message.content);
        let (Some(rcv), Some(ttft)) = (s.received, o.ttft) else {
            continue;
        };
        let Some(&s0) = s.sent.first() else { continue };
        ttft_err.push((ttft - (s0 - rcv) as f64 / 1e9) * 1e3);
        let arrival = c.clock.utc_at(Duration::from_secs_f64(o.sent_at + ttft));
        let arrival = arrival.timestamp_nanos_opt().unwrap_or(0);
        first_lag.push((arrival - s0) as f64 / 1e6);
        for (g, w) in o.gaps.iter().zip(s.sent.windows(2)) {
            gap_err.push((f64::from(*g) - (w[1] - w[0]) as f64 / 1e9).abs() * 1e3);
        }
        if let Some(t) = o.tpot() {
            tpot.push(t * 1e3);
        }
        e2e.push(o.e2e * 1e3);
    }
    PacedReport {
        streams,
        tokens: r.tokens,
        wall: r.wall,
        ideal,
        cpu_us_per_token: r.client_cpu / r.tokens as f64 * 1e6,
        server_cpu: r.server_cpu / r.wall,
        ttft_err: sorted_finite(ttft_err),
        first_lag: sorted_finite(first_lag),
        gap_err: sorted_finite(gap_err),
        tpot: sorted_finite(tpot),
        e2e: sorted_finite(e2e),
    }
}

struct PacedReport {
    streams: usize,
    tokens: u64,
    wall: f64,
    ideal: f64,
    cpu_us_per_token: f64,
    server_cpu: f64,
    ttft_err: Vec<f64>,
    first_lag: Vec<f64>,
    gap_err: Vec<f64>,
    tpot: Vec<f64>,
    e2e: Vec<f64>,
}

impl std::fmt::Display for PacedReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = |v: &[f64], q: f64| percentile(v, q).unwrap_or(f64::NAN);
        write!(
            f,
            "paced streams={} tokens={} wall {:.3} s (ideal per request {:.3} s), {:.0} tok/s; client CPU {:.2} us/token; server {:.2} cores\n  TTFT error ms (client - server): P50 {:.3} P99 {:.3} max {:.3}\n  first token lag ms (client arrival - server stamp): P50 {:.3} P99 {:.3}\n  |gap error| ms: P50 {:.4} P99 {:.4} max {:.4} (n={})\n  TPOT ms: P50 {:.3} P99 {:.3}; E2E ms: P50 {:.1} P99 {:.1} (ideal {:.1})",
            self.streams,
            self.tokens,
            self.wall,
            self.ideal,
            self.tokens as f64 / self.wall,
            self.cpu_us_per_token,
            self.server_cpu,
            p(&self.ttft_err, 50.0),
            p(&self.ttft_err, 99.0),
            self.ttft_err.last().copied().unwrap_or(f64::NAN),
            p(&self.first_lag, 50.0),
            p(&self.first_lag, 99.0),
            p(&self.gap_err, 50.0),
            p(&self.gap_err, 99.0),
            self.gap_err.last().copied().unwrap_or(f64::NAN),
            self.gap_err.len(),
            p(&self.tpot, 50.0),
            p(&self.tpot, 99.0),
            p(&self.e2e, 50.0),
            p(&self.e2e, 99.0),
            self.ideal * 1e3,
        )
    }
}
