//! How often the 95 % intervals hold the long-run value, on the twin in
//! virtual time (docs/validation.md, "Are the intervals honest?"): a
//! workload run under many seeds, each run's interval of its TTFT P95 set
//! against the P95 of every run's values pooled.
//!
//! ```text
//! cargo bench --bench interval_coverage                 # the table of docs/validation.md
//! CODENDUM_COVERAGE="class:classroom-64k:40:900:120:100" \
//!     cargo bench --bench interval_coverage             # one class workload, 100 seeds
//! CODENDUM_COVERAGE="level:classroom-64k:0.2:300:256:100" \
//!     cargo bench --bench interval_coverage             # one rate level, 100 seeds
//! ```
//!
//! A workload is `class:PROFILE:USERS:DURATION_S:RAMP_UP_S:SEEDS[:compact]` (`compact`: the
//! short prompt of `codendum::plan::coverage::compact_prompt`) or
//! `level:PROFILE:RATE:REQUESTS:OUTPUT_TOKENS:SEEDS`; several are separated
//! by `,`. `PROFILE@N` runs the profile with N seats (`max_num_seqs`).

use std::time::{Duration, Instant};

use codendum::plan::coverage::{
    class_trials, coverage, level_trials, ClassWorkload, LevelWorkload, Trial,
};
use codendum_core::profile::Profile;

/// The workloads of docs/validation.md: the full class and levels on
/// classroom-64k (where the methods were chosen), the held-out profiles
/// (classroom-64k-high-concurrency with 60 students, the fitted dense 8B
/// coder), the small classes and levels `cargo test` runs, and two levels
/// near saturation, where a single level cannot show its own memory.
const TABLE: &str = "class:classroom-64k:40:900:120:100,\
class:classroom-64k-high-concurrency:60:900:120:100,\
class:classroom-64k@3:8:240:30:100:compact,\
class:fixtures/calibration/dense-fast.toml@1:5:240:30:100:compact,\
class:fixtures/calibration/dense-fast.toml@2:6:240:30:100:compact,\
level:classroom-64k:0.2:300:256:100,\
level:classroom-64k:0.8:200:64:100,\
level:fixtures/calibration/dense-fast.toml:3:200:64:100,\
level:classroom-64k-high-concurrency:0.3:300:256:100,\
level:classroom-64k:0.5:300:256:100,\
level:classroom-64k:1.5:200:64:100";

fn run(spec: &str, jobs: usize) -> Option<(String, Vec<Trial>, f64)> {
    let parts: Vec<&str> = spec.trim().split(':').collect();
    let num = |i: usize| parts.get(i).and_then(|s| s.parse::<f64>().ok());
    let (name, seats) = match parts.get(1)?.split_once('@') {
        Some((n, s)) => (n, s.parse::<u32>().ok()),
        None => (*parts.get(1)?, None),
    };
    let mut profile = Profile::load(name).ok()?;
    if let Some(seats) = seats {
        profile.server.max_num_seqs = seats;
    }
    let seeds: Vec<u64> = (1..=num(5)? as u64).collect();
    let start = Instant::now();
    let scratch = tempfile::tempdir().ok()?;
    let trials = match *parts.first()? {
        "class" => class_trials(
            &ClassWorkload {
                profile,
                users: num(2)? as usize,
                duration: Duration::from_secs_f64(num(3)?),
                ramp_up: Duration::from_secs_f64(num(4)?),
                prompt: (parts.get(6) == Some(&"compact"))
                    .then(codendum::plan::coverage::compact_prompt),
            },
            &seeds,
            jobs,
        ),
        "level" => level_trials(
            &LevelWorkload {
                profile,
                rate_per_s: num(2)?,
                requests: num(3)? as u64,
                output_tokens: num(4)? as u32,
            },
            &seeds,
            jobs,
            scratch.path(),
        ),
        _ => return None,
    }
    .ok()?;
    Some((spec.to_string(), trials, start.elapsed().as_secs_f64()))
}

/// The median over the runs of each run's TTFT `p`-th percentile over its
/// 5th: how far queueing stretches the TTFTs beyond the unloaded ones.
fn spread_of(trials: &[Trial], p: f64) -> f64 {
    let mut ratios: Vec<f64> = trials
        .iter()
        .filter_map(|t| {
            let sorted = codendum_core::stats::sorted_finite(t.values.iter().copied());
            let low = codendum_core::stats::percentile(&sorted, 5.0)?;
            Some(codendum_core::stats::percentile(&sorted, p)? / low.max(1e-9))
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    codendum_core::stats::percentile(&ratios, 50.0).unwrap_or(f64::NAN)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let jobs = std::thread::available_parallelism().map_or(1, usize::from);
    let specs = std::env::var("CODENDUM_COVERAGE").unwrap_or_else(|_| TABLE.to_string());
    println!("| workload | seeds | long-run TTFT P95 | covered | open | median width | P95/P5 | P50/P5 | time |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for spec in specs.split(',') {
        let Some((name, trials, took)) = run(spec, jobs) else {
            eprintln!("skipping {spec:?}: not a workload (see the file's documentation)");
            continue;
        };
        let Some(c) = coverage(&trials, 95.0) else {
            eprintln!("{name}: no values");
            continue;
        };
        let (p95, p50) = (spread_of(&trials, 95.0), spread_of(&trials, 50.0));
        let width = if c.median_width.is_finite() {
            format!("{:.0} %", c.median_width * 100.0)
        } else {
            "– (all open)".to_string()
        };
        println!(
            "| `{name}` | {} | {:.2} s | {} of {} ({:.0} %) | {} | {width} | {p95:.1} | {p50:.1} | {took:.0} s |",
            c.trials,
            c.truth,
            c.covered,
            c.trials,
            c.share * 100.0,
            c.open,
        );
    }
}
