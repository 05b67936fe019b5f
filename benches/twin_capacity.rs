//! Twin capacity: 1,000 concurrent streams against the real twin over HTTP
//! at time scale 1 (GB10 profile with max_num_seqs raised to 1,024), driven
//! by the real `HttpClient` recording TTFT and gaps. Reports how late the
//! engine task handed over each step's tokens against the step's scheduled
//! end (`StepLateness`, also on `/metrics` as
//! `codendum_twin_step_lateness_seconds`), and the share of steps within 5 %
//! of their modelled duration.
//!
//! The twin and the client run on separate tokio runtimes (two worker
//! threads each) in this one process.
//!
//! `cargo bench --bench twin_capacity` (about a minute).
//!
//! A fleet: `CODENDUM_REPLICAS=4 CODENDUM_SEATS=256 CODENDUM_STREAMS=1024`
//! runs 4 replicas of 256 seats each behind one endpoint (round-robin: the
//! streams carry no session), each engine on its own thread; the lateness is
//! reported for all engines together and per replica.
//!
//! `CODENDUM_BUSY_LOOPS=2` spins that many threads beside the run (the load
//! of other work on the same cores); the output says whether the engine
//! threads got their raised priority (root or `CAP_SYS_NICE`).

use std::sync::Arc;

use codendum::client::{ClientOptions, HttpClient};
use codendum_core::clock::Clock;
use codendum_core::openai::{CallOutcome, CallRequest, Endpoint, Transport};
use codendum_core::profile::fleet::{FleetSpec, RouterPolicy};
use codendum_core::profile::Profile;
use codendum_core::stats::{percentile, sorted_finite};
use codendum_twin::fleet::{start_fleet, FleetHandle};
use codendum_twin::runner::StepLateness;
use codendum_twin::runner::ON_TIME_SHARE;
use codendum_twin::{start, TwinHandle, TwinOptions};
use serde_json::json;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(default)
}

/// What the environment asks for.
struct Settings {
    streams: usize,
    tokens: usize,
    replicas: u32,
    seats: usize,
    busy_loops: usize,
}

impl Settings {
    fn from_env() -> Self {
        Settings {
            streams: env_usize("CODENDUM_STREAMS", 1000),
            tokens: env_usize("CODENDUM_TOKENS", 256),
            replicas: env_usize("CODENDUM_REPLICAS", 1) as u32,
            seats: env_usize("CODENDUM_SEATS", 1024),
            busy_loops: env_usize("CODENDUM_BUSY_LOOPS", 0),
        }
    }
}

fn runtime(name: &str) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(name)
        .enable_all()
        .build()
        .expect("runtime")
}

fn main() {
    let set = Settings::from_env();
    let (twin_rt, client_rt) = (runtime("twin"), runtime("client"));
    let clock = Clock::real();
    let twin = twin_rt.block_on(start_server(&set, clock.clone()));
    let client = Arc::new(
        HttpClient::new(
            &codendum_core::access::BaseUrl::parse(twin.base_url()).expect("base URL"),
            ClientOptions {
                max_connections: set.streams,
                clock: clock.clone(),
                ..ClientOptions::default()
            },
        )
        .expect("client"),
    );
    let busy = BusyLoops::start(set.busy_loops);
    let load_before = loadavg();
    let t0 = clock.now_secs();
    let outcomes = client_rt.block_on(run_streams(&client, set.streams, set.tokens));
    let wall = clock.now_secs() - t0;
    let page = client_rt
        .block_on(async { reqwest::get(twin.metrics_url()).await?.text().await })
        .expect("metrics text");
    drop(busy);
    let parts = twin.lateness();
    let raised = twin.engine_priority_raised();
    twin_rt.block_on(twin.shutdown());
    print_streams(&set, &outcomes, wall);
    print_lateness(&parts);
    println!(
        "  /metrics has the lateness histogram: {}; engine priority raised: {raised}; {} busy loops beside; load before {load_before}, after {}",
        page.contains("codendum_twin_step_lateness_seconds_count"),
        set.busy_loops,
        loadavg()
    );
}

/// The twin (one replica) or a round-robin fleet, at time scale 1.
async fn start_server(set: &Settings, clock: Clock) -> Server {
    let mut profile = Profile::load("classroom-64k").expect("embedded profile");
    profile.server.max_num_seqs = set.seats as u32;
    let mut opts = TwinOptions::new(profile);
    opts.clock = clock;
    let addr = "127.0.0.1:0".parse().expect("addr");
    if set.replicas > 1 {
        let spec = FleetSpec {
            replicas: set.replicas,
            router: RouterPolicy::RoundRobin,
        };
        Server::Fleet(
            start_fleet(opts, spec, addr)
                .await
                .expect("start the fleet"),
        )
    } else {
        Server::One(start(opts, addr).await.expect("start the twin"))
    }
}

/// `streams` paced streams of `tokens` tokens each, all at once.
async fn run_streams(client: &Arc<HttpClient>, streams: usize, tokens: usize) -> Vec<CallOutcome> {
    let tasks: Vec<_> = (0..streams)
        .map(|i| {
            let client = client.clone();
            let body = json!({"model": "qwen3-coder",
                "messages": [{"role": "user", "content": format!("Student {i}: why does my build fail?")}],
                "max_tokens": tokens, "ignore_eos": true, "stream": true,
                "stream_options": {"include_usage": true}});
            tokio::spawn(async move {
                client
                    .call(CallRequest {
                        endpoint: Endpoint::Chat,
                        body: body.into(),
                        api_key: None,
                        headers: Vec::new(),
                        record_gaps: true,
                        first_token: None,
                    })
                    .await
            })
        })
        .collect();
    let mut out = Vec::with_capacity(streams);
    for t in tasks {
        out.push(t.await.expect("task"));
    }
    out
}

fn print_streams(set: &Settings, outcomes: &[CallOutcome], wall: f64) {
    let ok = outcomes.iter().filter(|o| o.is_ok()).count();
    let out_tokens: u64 = outcomes.iter().map(|o| o.output_tokens().0).sum();
    let tpot = sorted_finite(outcomes.iter().filter_map(|o| o.tpot()));
    let ttft = sorted_finite(outcomes.iter().filter_map(|o| o.ttft));
    let p = |v: &[f64], q: f64| percentile(v, q).unwrap_or(f64::NAN);
    println!(
        "twin capacity: {} replica(s) x {} seats, {} streams x {} tokens, {ok} ok, {out_tokens} tokens in {wall:.1} s ({:.0} tok/s)",
        set.replicas,
        set.seats,
        set.streams,
        set.tokens,
        out_tokens as f64 / wall
    );
    println!(
        "  TTFT s P50 {:.3} P99 {:.3}; TPOT ms P50 {:.1} P99 {:.1}",
        p(&ttft, 50.0),
        p(&ttft, 99.0),
        p(&tpot, 50.0) * 1e3,
        p(&tpot, 99.0) * 1e3
    );
}

/// Every engine's steps together, then each replica's.
fn print_lateness(parts: &[StepLateness]) {
    let lateness = codendum_twin::fleet::pages::merge_lateness(parts);
    let h = &lateness.histogram;
    let bucket_line: Vec<String> = h
        .bounds
        .iter()
        .zip(h.cumulative())
        .map(|(b, c)| format!("<={b}s:{c}"))
        .collect();
    println!(
        "  steps {}, on time (lateness <= {:.0} % of the step) {} = {:.2} %; lateness mean {:.3} ms, max {:.3} ms = {:.2} % of its step",
        lateness.steps,
        ON_TIME_SHARE * 100.0,
        lateness.on_time,
        lateness.on_time_share() * 100.0,
        h.sum / h.count.max(1) as f64 * 1e3,
        lateness.max_seconds * 1e3,
        lateness.max_share * 100.0
    );
    println!(
        "  lateness histogram (cumulative): {}",
        bucket_line.join(" ")
    );
    let late: Vec<String> = lateness
        .late_steps
        .iter()
        .map(|(i, share)| format!("#{i}:{:.1}%", share * 100.0))
        .collect();
    println!("  late steps (number: lateness/step): {}", late.join(" "));
    if parts.len() > 1 {
        for (i, l) in parts.iter().enumerate() {
            println!(
                "  replica {i}: steps {}, on time {} = {:.2} %, max lateness {:.3} ms = {:.2} % of its step",
                l.steps,
                l.on_time,
                l.on_time_share() * 100.0,
                l.max_seconds * 1e3,
                l.max_share * 100.0
            );
        }
    }
}

/// Threads spinning until dropped: other work on the same cores.
struct BusyLoops {
    stop: Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl BusyLoops {
    fn start(n: usize) -> BusyLoops {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        BusyLoops { stop, threads }
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

enum Server {
    One(TwinHandle),
    Fleet(FleetHandle),
}

impl Server {
    fn base_url(&self) -> String {
        match self {
            Server::One(t) => t.base_url(),
            Server::Fleet(f) => f.base_url(),
        }
    }

    fn metrics_url(&self) -> String {
        match self {
            Server::One(t) => t.metrics_url(),
            Server::Fleet(f) => f.metrics_url(),
        }
    }

    fn lateness(&self) -> Vec<StepLateness> {
        match self {
            Server::One(t) => vec![t.state().step_lateness()],
            Server::Fleet(f) => f.replicas().iter().map(|r| r.step_lateness()).collect(),
        }
    }

    fn engine_priority_raised(&self) -> bool {
        match self {
            Server::One(t) => t.engine_priority_raised(),
            Server::Fleet(f) => f.engine_priority_raised(),
        }
    }

    async fn shutdown(self) {
        match self {
            Server::One(t) => t.shutdown().await,
            Server::Fleet(f) => f.shutdown().await,
        }
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
