//! A class with a captured session's client times and prompt, next to the
//! built-in defaults: 40 students, Java, 900 s, seed 1, classroom-64k, in
//! virtual time exactly as `codendum plan` runs a cell (the classroom, the
//! twin's engine and persona in process, on a paused clock).
//!
//! `CODENDUM_CAPTURE=DIR cargo bench --bench capture_class` (or `cargo test
//! --bench capture_class` for a debug build); DIR is a `codendum capture`
//! folder. Variants: built in; `--client-times DIR`; `--client-times DIR
//! --prompt-file DIR/prompt.json`. `CODENDUM_USERS` changes the class size.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use codendum::classroom::{
    run_classroom, ClassroomConfig, ClientTimes, LiveStatus, MemorySink, PromptSet,
};
use codendum::plan::config::CellSpec;
use codendum::plan::figures::{figures, CellResult, Window};
use codendum::virtual_time::SAMPLE_INTERVAL;
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_twin::inproc::{InProcTransport, StatsSampler};
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

const SEED: u64 = 1;
const DURATION_S: u64 = 900;
const RAMP_UP_S: u64 = 120;

async fn class(profile: &Profile, users: u32, times: ClientTimes, prompt: PromptSet) -> CellResult {
    let clock = Clock::scaled(1.0);
    let mut config = ClassroomConfig::new(
        profile.server.served_model_name.clone(),
        Some(u64::from(profile.server.max_model_len)),
    );
    config.users = users as usize;
    config.duration = std::time::Duration::from_secs(DURATION_S);
    config.ramp_up = std::time::Duration::from_secs(RAMP_UP_S);
    config.seed = SEED;
    config.client_times = Arc::new(times);
    config.prompt = prompt;
    let mut opts = TwinOptions::new(profile.clone());
    opts.clock = clock.clone();
    opts.responder = Arc::new(AgentPersona::new(SEED));
    opts.seed = SEED;
    let transport = Arc::new(InProcTransport::start(opts));
    let sampler = StatsSampler::spawn(Arc::clone(&transport), SAMPLE_INTERVAL);
    let origin = clock.now_secs();
    let status = Arc::new(LiveStatus::new(clock.clone()));
    let sink = Arc::new(MemorySink::default());
    let run = run_classroom(&config, transport.clone(), clock, sink, status).await;
    let timeline = sampler.finish();
    transport.stop();
    let outcome = run.expect("the class runs");
    let spec = CellSpec {
        profile: profile.name.clone(),
        max_num_seqs: profile.server.max_num_seqs,
        overridden: false,
        users,
        seed: None,
    };
    let window = Window {
        origin,
        ramp_up: RAMP_UP_S as f64,
        duration: DURATION_S as f64,
    };
    figures(&spec, outcome.summary, &timeline, window)
}

fn cell(profile: &Profile, users: u32, times: ClientTimes, prompt: PromptSet) -> CellResult {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime")
        .block_on(class(profile, users, times, prompt))
}

fn f(v: Option<f64>, scale: f64, digits: usize) -> String {
    v.map_or("–".into(), |x| format!("{:.*}", digits, x * scale))
}

fn main() {
    let Some(dir) = std::env::var_os("CODENDUM_CAPTURE").map(PathBuf::from) else {
        eprintln!(
            "capture_class: set CODENDUM_CAPTURE=DIR (a codendum capture folder); nothing to do"
        );
        return;
    };
    let users: u32 = std::env::var("CODENDUM_USERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let profile = Profile::load("classroom-64k").expect("profile");
    let times = ClientTimes::from_path(&dir).expect("client times");
    let prompt = PromptSet::from_file(&dir.join("prompt.json")).expect("prompt.json");
    let variants = [
        ("built in", ClientTimes::built_in(), PromptSet::built_in()),
        ("--client-times", times.clone(), PromptSet::built_in()),
        ("--client-times --prompt-file", times, prompt),
    ];
    println!("{users} students, Java, {DURATION_S} s, seed {SEED}, classroom-64k, virtual time");
    println!("| variant | server output | TTFT P50 / P95 | coding request P50 | completed | peak waiting | peak KV | hit rate | calls / request | tool errors | wall |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, times, prompt) in variants {
        let started = Instant::now();
        let r = cell(&profile, users, times, prompt);
        let s = &r.summary;
        let per_request =
            (s.coding_requests > 0).then(|| s.requests as f64 / s.coding_requests as f64);
        println!(
            "| {name} | {} tok/s | {} / {} s | {} min | {} | {} | {} % | {} % | {} | {} | {:.0} s |",
            f(r.server_output_tok_per_s, 1.0, 0),
            f(r.ttft_p50_s, 1.0, 1),
            f(r.ttft_p95_s, 1.0, 1),
            f(r.coding_request_p50_s, 1.0 / 60.0, 1),
            r.completed,
            f(r.peak_waiting, 1.0, 0),
            f(r.peak_kv_usage, 100.0, 1),
            f(r.prefix_hit_rate, 100.0, 1),
            f(per_request, 1.0, 1),
            s.tool_errors,
            started.elapsed().as_secs_f64()
        );
    }
}
