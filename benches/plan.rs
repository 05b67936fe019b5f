//! `codendum plan` speed: one small cell under criterion, and (with
//! `CODENDUM_PLAN_CELLS`) one-shot timings of big plans.
//!
//! ```text
//! cargo bench --bench plan                       # criterion: 8 users x 300 s, the persona
//!                                                # reading a 60-step session (whole / cached), and the
//!                                                # search of classroom-64k up to 200 students, 5 seeds
//! CODENDUM_PLAN_CELLS="40x900,400x3600" CODENDUM_PLAN_PROFILES=classroom-64k \
//!     cargo bench --bench plan -- --one-shot     # timings and figures of each plan
//! cargo bench --bench plan -- --search           # one search: wall and CPU time, the answers
//! ```
//!
//! `CODENDUM_CLASS` (a class name or file) and `CODENDUM_PLAN_SEED` set the
//! class and the seed of the one-shot plans and of the records.

use std::time::{Duration, Instant};

use codendum::plan::{run_plan, PlanConfig};
use criterion::{criterion_group, Criterion};

/// A plan of one class size; `CODENDUM_CLASS` (a class name or file) and
/// `CODENDUM_PLAN_SEED` change its class and seed.
fn config(users: u32, duration_s: u64, profiles: &[String]) -> PlanConfig {
    let mut c = PlanConfig {
        users: vec![users],
        profiles: profiles.to_vec(),
        duration: Duration::from_secs(duration_s),
        jobs: 1,
        ..PlanConfig::new()
    };
    if let Ok(class) = std::env::var("CODENDUM_CLASS") {
        c.class = std::sync::Arc::new(codendum_core::class::Class::load(&class).expect("class"));
    }
    if let Some(seed) = std::env::var("CODENDUM_PLAN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        c.seed = seed;
    }
    c
}

fn small_cell(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan");
    g.sample_size(10);
    let profiles = vec!["classroom-64k".to_string()];
    g.bench_function("cell_8_users_300_s", |b| {
        b.iter(|| run_plan(&config(8, 300, &profiles), &|_| {}).expect("plan runs"))
    });
    g.finish();
}

/// The search `codendum plan --profile classroom-64k` runs by default: up
/// to 200 students, 5 seeds, on every core.
fn search_config(seeds: u32) -> PlanConfig {
    PlanConfig {
        users: Vec::new(),
        profiles: vec!["classroom-64k".to_string()],
        max_users: Some(200),
        seeds,
        ..PlanConfig::new()
    }
}

fn search(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan");
    g.sample_size(10);
    g.bench_function("search_200_users_5_seeds", |b| {
        b.iter(|| codendum::plan::run_search(&search_config(5), &|_, _, _| {}).expect("searches"))
    });
    g.finish();
}

/// A session's conversation of `steps` agent steps, each reading a file of
/// about 2 KB, for the persona's reading of transcripts.
fn session(steps: usize) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    use serde_json::json;
    let tools = vec![json!({"type": "function", "function": {"name": "read",
        "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}}}}})];
    let mut m = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Fix the failing test in src/main/java/App.java"}),
    ];
    for i in 0..steps {
        let id = format!("call_{i}");
        let lines: String = (1..60)
            .map(|l| format!("{l:05}| int field{l} = {i}; // line {l}\n"))
            .collect();
        m.push(
            json!({"role": "assistant", "content": "Reading the next file.",
            "tool_calls": [{"id": id, "type": "function", "function": {"name": "read",
            "arguments": format!("{{\"filePath\": \"src/main/java/F{i}.java\"}}")}}]}),
        );
        m.push(json!({"role": "tool", "tool_call_id": id,
            "content": format!("<file>\n{lines}</file>")}));
    }
    (tools, m)
}

/// The persona reading a 60-step session call by call: every prefix read
/// whole (as before the digests were kept), and through the cache of
/// digests (each call reads only the new messages).
fn transcript(c: &mut Criterion) {
    use codendum_twin::persona::tools::ToolKit;
    use codendum_twin::persona::transcript::{cache::TranscriptCache, Transcript};
    let (tools, messages) = session(60);
    let kit = ToolKit::from_definitions(&tools);
    let calls: Vec<usize> = (2..=messages.len()).step_by(2).collect();
    let mut g = c.benchmark_group("persona");
    g.sample_size(20);
    g.bench_function("session_60_steps_read_whole", |b| {
        b.iter(|| {
            calls
                .iter()
                .map(|&n| Transcript::read(&messages[..n], &kit).len)
                .sum::<usize>()
        })
    });
    g.bench_function("session_60_steps_read_cached", |b| {
        b.iter(|| {
            let cache = TranscriptCache::default();
            calls
                .iter()
                .map(|&n| cache.lease(&messages[..n], &tools, &kit).len)
                .sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(benches, small_cell, transcript, search);

/// One search, timed: its wall time, the process's CPU time over it, and
/// the answer per seed (`CODENDUM_PLAN_SEEDS`, default 5).
fn one_search() {
    let seeds = std::env::var("CODENDUM_PLAN_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let config = search_config(seeds);
    let cpu0 = codendum::bench::level::process_cpu_s();
    let start = Instant::now();
    let results = codendum::plan::run_search(&config, &|v, cell, meets| {
        println!(
            "  {v}: {} students: {}",
            cell.result.spec.users,
            if meets { "meets" } else { "misses" }
        )
    })
    .expect("searches");
    let wall = start.elapsed().as_secs_f64();
    let cpu = codendum::bench::level::process_cpu_s()
        .zip(cpu0)
        .map(|(a, b)| a - b);
    let students =
        codendum::plan::cell::STUDENTS_SIMULATED.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "search up to 200 students, {seeds} seeds, {} jobs: {wall:.2} s wall, {} CPU, {students} students simulated",
        config.jobs,
        cpu.map_or("?".into(), |c| format!("{c:.2} s"))
    );
    for v in results.search.iter().flat_map(|s| &s.variants) {
        println!("{}", v.summary);
    }
}

fn one_shot(cells: &str) {
    let profiles: Vec<String> = std::env::var("CODENDUM_PLAN_PROFILES")
        .unwrap_or_else(|_| "classroom-64k".into())
        .split(',')
        .map(str::to_string)
        .collect();
    for cell in cells.split(',') {
        let Some((u, d)) = cell.split_once('x') else {
            eprintln!("skipping {cell:?}: expected USERSxSECONDS");
            continue;
        };
        let (Ok(u), Ok(d)) = (u.trim().parse::<u32>(), d.trim().parse::<u64>()) else {
            eprintln!("skipping {cell:?}: expected USERSxSECONDS");
            continue;
        };
        for p in &profiles {
            let start = Instant::now();
            let results =
                run_plan(&config(u, d, std::slice::from_ref(p)), &|_| {}).expect("plan runs");
            let wall = start.elapsed().as_secs_f64();
            let r = &results.cells[0].result;
            println!(
                "{p} {u} users x {d} s: {wall:.2} s real; tok/s {:.1}, TTFT p50 {:.1} p95 {:.1}, speed p50 {:.1}, coding p50 {:.1} p95 {:.1} min, completed {} of {}, peak running {:?} waiting {:?}, peak KV {:.1} %, preemptions {:?}, hit {:.1} %, calls {}, errors {}",
                r.server_output_tok_per_s.unwrap_or(f64::NAN),
                r.ttft_p50_s.unwrap_or(f64::NAN),
                r.ttft_p95_s.unwrap_or(f64::NAN),
                r.output_speed_p50_tok_s.unwrap_or(f64::NAN),
                r.coding_request_p50_s.unwrap_or(f64::NAN) / 60.0,
                r.coding_request_p95_s.unwrap_or(f64::NAN) / 60.0,
                r.completed,
                r.coding_requests,
                r.peak_running,
                r.peak_waiting,
                r.peak_kv_usage.unwrap_or(f64::NAN) * 100.0,
                r.preemptions,
                r.prefix_hit_rate.unwrap_or(f64::NAN) * 100.0,
                r.summary.requests,
                r.summary.errors,
            );
            if std::env::var_os("CODENDUM_PLAN_SUMMARY").is_some() {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&r.summary).unwrap_or_default()
                );
            }
        }
    }
}

/// Runs one 40-user java class against the in-process twin and writes its
/// records (requests.jsonl, tasks.jsonl) to `dir`, for analysis; the class
/// is `CODENDUM_CLASS` (a name or a class file) when set, else `lab`, and
/// the seed `CODENDUM_PLAN_SEED` (default 1).
fn records(dir: &str, profile: &str) {
    use codendum::classroom::{run_classroom, ClassroomConfig, JsonlSink, LiveStatus};
    use codendum_core::profile::Profile;
    use codendum_twin::inproc::InProcTransport;
    use codendum_twin::{persona::AgentPersona, TwinOptions};
    use std::sync::Arc;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let clock = codendum_core::clock::Clock::scaled(1.0);
        let p = Profile::load(profile).expect("profile");
        let seed: u64 = std::env::var("CODENDUM_PLAN_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        let class = std::env::var("CODENDUM_CLASS").unwrap_or_else(|_| "lab".into());
        let class = Arc::new(codendum_core::class::Class::load(&class).expect("class"));
        let mut cc = ClassroomConfig::new(
            p.server.served_model_name.clone(),
            Some(u64::from(p.server.max_model_len)),
        );
        cc.seed = seed;
        cc.class = Arc::clone(&class);
        let mut opts = TwinOptions::new(p);
        opts.clock = clock.clone();
        opts.responder = Arc::new(AgentPersona::with_spread(
            seed,
            Arc::new(class.agent.clone()),
        ));
        opts.seed = seed;
        let t = Arc::new(InProcTransport::start(opts));
        let open = |n: &str| std::fs::File::create(format!("{dir}/{n}")).expect("create");
        let sink = Arc::new(JsonlSink::new(open("requests.jsonl"), open("tasks.jsonl")));
        let status = Arc::new(LiveStatus::new(clock.clone()));
        run_classroom(&cc, t, clock, sink, status)
            .await
            .expect("runs");
    });
}

fn main() {
    if let Ok(dir) = std::env::var("CODENDUM_PLAN_RECORDS") {
        records(
            &dir,
            &std::env::var("CODENDUM_PLAN_PROFILES").unwrap_or_else(|_| "classroom-64k".into()),
        );
        return;
    }
    if std::env::args().any(|a| a == "--search") {
        one_search();
        return;
    }
    if std::env::args().any(|a| a == "--one-shot") {
        one_shot(&std::env::var("CODENDUM_PLAN_CELLS").unwrap_or_else(|_| "40x900".into()));
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
