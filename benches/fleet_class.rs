//! Fleets for a department: three classes of 40 students at once (120 agent
//! sessions, Java scenario, 15-minute window) on classroom-64k replicas, in
//! process and in virtual time (a paused tokio runtime, as `plan` runs).
//! For every replica count and router: the prefix hit rate, TTFT P50/P95
//! of successful model calls, the coding-request P50, the steady-state
//! server output of the fleet and of each replica, the imbalance (max over
//! mean of requests served), preemptions and server errors, and whether the
//! run meets the profile's class targets (TTFT P95 ≤ 75 s, coding request
//! P50 ≤ 900 s, no server errors).
//!
//! `cargo bench --bench fleet_class` (env: `CODENDUM_REPLICAS=1,2,3,4`,
//! `CODENDUM_ROUTERS=round-robin,session`, `CODENDUM_CLASSES=3`,
//! `CODENDUM_USERS=40` per class, `CODENDUM_DURATION=900` seconds,
//! `CODENDUM_SEED=1`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use codendum::classroom::{run_classroom, ClassroomConfig, LiveStatus, MemorySink};
use codendum_core::clock::Clock;
use codendum_core::profile::fleet::{FleetSpec, RouterPolicy};
use codendum_core::profile::Profile;
use codendum_core::prom::window_stats;
use codendum_core::results::classroom_records::TaskOutcome;
use codendum_core::stats::{percentile, sorted_finite};
use codendum_twin::fleet::{imbalance, FleetSampler, FleetTransport};
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn num(name: &str, default: u64) -> u64 {
    env(name, &default.to_string()).parse().unwrap_or(default)
}

struct Setup {
    classes: u64,
    users: u64,
    duration: u64,
    seed: u64,
}

struct Row {
    hit: f64,
    ttft: (f64, f64),
    task_p50: f64,
    fleet_out: f64,
    per_replica: Vec<f64>,
    imbalance: f64,
    preemptions: f64,
    errors: u64,
    completed: u64,
    wall: f64,
}

fn class_config(s: &Setup, k: u64) -> ClassroomConfig {
    let mut c = ClassroomConfig::new("qwen3-coder", Some(65_536));
    c.users = s.users as usize;
    c.duration = Duration::from_secs(s.duration);
    c.seed = s.seed.wrapping_mul(1000).wrapping_add(k);
    c
}

fn simulate(s: &Setup, spec: FleetSpec) -> Row {
    let wall = Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    let (outcomes, tl, served) = runtime.block_on(async {
        let clock = Clock::scaled(1.0);
        let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
        opts.clock = clock.clone();
        opts.responder = Arc::new(AgentPersona::new(s.seed));
        opts.seed = s.seed;
        let fleet = Arc::new(FleetTransport::start(opts, spec));
        let sampler = FleetSampler::spawn(fleet.clone(), Duration::from_secs(1));
        let configs: Vec<ClassroomConfig> = (0..s.classes).map(|k| class_config(s, k)).collect();
        let runs = configs.iter().map(|c| {
            let status = Arc::new(LiveStatus::new(clock.clone()));
            run_classroom(
                c,
                fleet.clone(),
                clock.clone(),
                Arc::new(MemorySink::default()),
                status,
            )
        });
        let outcomes = futures::future::join_all(runs).await;
        let tl = sampler.finish();
        fleet.stop();
        (outcomes, tl, fleet.served())
    });
    let outcomes: Vec<_> = outcomes.into_iter().map(|o| o.expect("class")).collect();
    let ramp = class_config(s, 0).ramp_up.as_secs_f64();
    let t0 = tl.fleet.first().map_or(0.0, |x| x.t);
    let (a, b) = (t0 + ramp, t0 + s.duration as f64);
    let out = |line: &[codendum_core::prom::TimelineSample]| {
        window_stats(line, a, b).generation_tokens.unwrap_or(0.0) / (b - a)
    };
    let whole = window_stats(&tl.fleet, f64::NEG_INFINITY, f64::INFINITY);
    let calls = outcomes.iter().flat_map(|o| o.requests.iter());
    let ttft = sorted_finite(calls.filter(|r| r.is_ok()).filter_map(|r| r.ttft_s));
    let tasks = sorted_finite(
        outcomes
            .iter()
            .flat_map(|o| o.tasks.iter())
            .filter(|t| t.outcome == TaskOutcome::Completed)
            .map(|t| t.end - t.start),
    );
    let p = |v: &[f64], q| percentile(v, q).unwrap_or(f64::NAN);
    Row {
        hit: whole.prefix_hit_rate.unwrap_or(f64::NAN),
        ttft: (p(&ttft, 50.0), p(&ttft, 95.0)),
        task_p50: p(&tasks, 50.0),
        fleet_out: out(&tl.fleet),
        per_replica: tl.replicas.iter().map(|r| out(r)).collect(),
        imbalance: imbalance(&served).unwrap_or(f64::NAN),
        preemptions: whole.preemptions.unwrap_or(0.0),
        errors: outcomes
            .iter()
            .map(|o| codendum_core::results::metrics::server_errors(&o.summary))
            .sum(),
        completed: outcomes.iter().map(|o| o.summary.completed).sum(),
        wall: wall.elapsed().as_secs_f64(),
    }
}

fn meets(r: &Row) -> bool {
    r.ttft.1 <= 75.0 && r.task_p50 <= 900.0 && r.errors == 0
}

fn main() {
    let s = Setup {
        classes: num("CODENDUM_CLASSES", 3),
        users: num("CODENDUM_USERS", 40),
        duration: num("CODENDUM_DURATION", 900),
        seed: num("CODENDUM_SEED", 1),
    };
    let replicas: Vec<u32> = env("CODENDUM_REPLICAS", "1,2,3,4")
        .split(',')
        .filter_map(|t| t.trim().parse().ok())
        .collect();
    let routers: Vec<RouterPolicy> = env("CODENDUM_ROUTERS", "round-robin,session")
        .split(',')
        .map(|t| t.parse().expect("router"))
        .collect();
    println!(
        "{} classes x {} students, {} s, seed {}, classroom-64k; load before {}",
        s.classes,
        s.users,
        s.duration,
        s.seed,
        loadavg()
    );
    println!("| router | replicas | prefix hit rate | TTFT P50 / P95 s | coding request P50 s | completed | server output tok/s (fleet; per replica) | imbalance | preemptions | server errors | meets targets | wall s |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut verdicts = Vec::new();
    for router in &routers {
        let mut needed = None;
        for &n in &replicas {
            let r = simulate(
                &s,
                FleetSpec {
                    replicas: n,
                    router: *router,
                },
            );
            let per: Vec<String> = r.per_replica.iter().map(|x| format!("{x:.0}")).collect();
            println!(
                "| {router} | {n} | {:.1} % | {:.1} / {:.1} | {:.0} | {} | {:.0}; {} | {:.2} | {:.0} | {} | {} | {:.1} |",
                r.hit * 100.0,
                r.ttft.0,
                r.ttft.1,
                r.task_p50,
                r.completed,
                r.fleet_out,
                per.join(", "),
                r.imbalance,
                r.preemptions,
                r.errors,
                if meets(&r) { "yes" } else { "no" },
                r.wall
            );
            if needed.is_none() && meets(&r) {
                needed = Some(n);
            }
        }
        verdicts.push(match needed {
            Some(n) => format!("{router}: {n} replicas needed"),
            None => format!("{router}: no replica count tried meets the targets"),
        });
    }
    for v in verdicts {
        println!("{v}");
    }
    println!("load after {}", loadavg());
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
