//! How honest the intervals are: the same workload run on the twin in
//! virtual time under many seeds, each run's 95 % interval of a figure set
//! against the figure's long-run value (the same percentile of every run's
//! values pooled), and the share of runs whose interval holds it. An
//! honest 95 % interval holds it in about 95 % of the runs; far more is an
//! interval wider than it needs, far fewer one that claims too much.
//!
//! The twin's times come in steps, so many requests share a TTFT to the
//! microsecond and a percentile can fall between two such values: then
//! every point between them is the long-run percentile (the share of
//! values below is the same all the way), and numpy's interpolation picks
//! one of them. The long-run value is therefore the stretch between the
//! two pooled values the percentile's rank falls between ([`Coverage::truth`]
//! to [`Coverage::truth_hi`], one point for values that do not repeat),
//! and an interval holds it when it reaches that stretch.
//!
//! Two workloads, as the intervals are built ([`codendum_core::stats`]):
//! a class (its TTFT P95 over every model call, calls of forty students
//! queued behind the same bursts) and a rate level (Poisson arrivals, its
//! TTFT P95 over the level). A closed-loop level against the twin has no
//! chance in it (the twin's step times are exact, so every seed gives the
//! same figures to the millisecond) and is left out: its intervals cover
//! the one value there is.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::bench::arrival::Arrival;
use crate::bench::config::{Load, OpenLoop};
use crate::bench::{run_on_twin, BenchConfig, TwinFacts};
use crate::classroom::{run_classroom, ClassroomConfig, LiveStatus, MemorySink};
use crate::settings::RunSettings;
use codendum_core::access::ClientSettings;
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::profile::Profile;
use codendum_core::results::{read_bench_requests, ClassroomSummary};
use codendum_core::shape::Shape;
use codendum_core::stats::{percentile, sorted_finite, Interval};
use codendum_twin::inproc::InProcTransport;
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

/// One seeded run: the figure's values in time order and the interval the
/// run reported for the figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    /// The random seed of the class and the twin.
    pub seed: u64,
    /// The values the figure is a percentile of (TTFTs of successful
    /// calls or requests, seconds), in start order.
    pub values: Vec<f64>,
    /// The figure the run reported.
    pub figure: Option<f64>,
    /// Its 95 % interval as the run reported it.
    pub interval: Option<Interval>,
}

/// A class to run under many seeds.
#[derive(Debug, Clone)]
pub struct ClassWorkload {
    /// The server.
    pub profile: Profile,
    /// Students.
    pub users: usize,
    /// Window for new coding requests.
    pub duration: Duration,
    /// Ramp-up.
    pub ramp_up: Duration,
    /// The agent's prompt and tools (`None`: the built-in ones).
    pub prompt: Option<crate::classroom::PromptSet>,
}

/// The built-in tools with one-line descriptions and a one-line system
/// prompt: each call carries a few hundred tokens of prompt instead of six
/// thousand, so a hundred small classes run in seconds, while the queueing
/// the intervals must cope with (students waiting for a few decode seats)
/// is the same.
pub fn compact_prompt() -> crate::classroom::PromptSet {
    let mut p = crate::classroom::PromptSet::built_in();
    p.system = "You are a coding agent working in the student's project.".into();
    p.explore_system = "You explore the project and report what you find.".into();
    for t in p.tools.iter_mut().chain(p.explore_tools.iter_mut()) {
        if let Some(d) = t.pointer_mut("/function/description") {
            *d = "A tool.".into();
        }
    }
    p
}

/// A rate level to run under many seeds (short prompts, Poisson arrivals,
/// no cap on requests in flight).
#[derive(Debug, Clone)]
pub struct LevelWorkload {
    /// The server.
    pub profile: Profile,
    /// Requests per second.
    pub rate_per_s: f64,
    /// Requests in the level.
    pub requests: u64,
    /// Output tokens per request.
    pub output_tokens: u32,
}

/// How often the trials' intervals held the long-run value.
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    /// Runs.
    pub trials: usize,
    /// Runs whose interval held the long-run value.
    pub covered: usize,
    /// The long-run value: the percentile of every run's values pooled.
    pub truth: f64,
    /// The stretch the long-run percentile spans (see the module
    /// documentation): the pooled values its rank falls between.
    pub truth_lo: f64,
    /// See [`Coverage::truth_lo`].
    pub truth_hi: f64,
    /// `covered / trials`.
    pub share: f64,
    /// Runs whose interval was open on a side (too few values).
    pub open: usize,
    /// The median of the intervals' widths over the figure, a fraction.
    pub median_width: f64,
    /// Values a run, on average (calls or requests with a TTFT).
    pub mean_values: f64,
}

/// The coverage of the trials' intervals of the `p`-th percentile.
pub fn coverage(trials: &[Trial], p: f64) -> Option<Coverage> {
    let pooled = sorted_finite(trials.iter().flat_map(|t| t.values.iter().copied()));
    let truth = percentile(&pooled, p)?;
    let h = (pooled.len() - 1) as f64 * p / 100.0;
    let (truth_lo, truth_hi) = (
        pooled[h.floor() as usize],
        pooled[(h.ceil() as usize).min(pooled.len() - 1)],
    );
    let stretch = Interval::closed(truth_lo, truth_hi);
    let covered = trials
        .iter()
        .filter(|t| t.interval.is_some_and(|i| i.overlaps(&stretch)))
        .count();
    let open = trials
        .iter()
        .filter(|t| t.interval.is_some_and(|i| !i.is_closed()))
        .count();
    let mut widths: Vec<f64> = trials
        .iter()
        .filter_map(|t| {
            let i = t.interval?;
            Some((i.hi? - i.lo?) / t.figure?)
        })
        .collect();
    widths.sort_by(f64::total_cmp);
    Some(Coverage {
        trials: trials.len(),
        covered,
        truth,
        truth_lo,
        truth_hi,
        share: covered as f64 / trials.len().max(1) as f64,
        open,
        median_width: widths.get(widths.len() / 2).copied().unwrap_or(f64::NAN),
        mean_values: pooled.len() as f64 / trials.len().max(1) as f64,
    })
}

/// Runs `run` for each of `seeds` over `jobs` threads; the trials in seed
/// order.
fn each_seed(
    seeds: &[u64],
    jobs: usize,
    run: &(dyn Fn(u64) -> Result<Trial, Error> + Sync),
) -> Result<Vec<Trial>, Error> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Result<Trial, Error>>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, seeds.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&seed) = seeds.get(i) else { break };
                let trial = run(seed);
                if let Ok(mut o) = out.lock() {
                    o.push(trial);
                }
            });
        }
    });
    let mut trials = out
        .into_inner()
        .map_err(|_| Error::Failed("a coverage trial stopped".into()))?
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    trials.sort_by_key(|t| t.seed);
    Ok(trials)
}

/// A paused current-thread runtime: virtual time, with timers and no I/O
/// driver (the twin is in process; without one the runtime moves from one
/// instant to the next without polling epoll).
fn paused() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| Error::io("cannot start a simulation runtime", e))
}

/// The class under each seed, on `jobs` threads: each class's TTFTs and
/// its TTFT P95 with the interval its summary gives.
pub fn class_trials(w: &ClassWorkload, seeds: &[u64], jobs: usize) -> Result<Vec<Trial>, Error> {
    each_seed(seeds, jobs, &|seed| {
        paused()?.block_on(async {
            let clock = Clock::scaled(1.0);
            let p = w.profile.clone();
            let mut c = ClassroomConfig::new(
                p.server.served_model_name.clone(),
                Some(u64::from(p.server.max_model_len)),
            );
            c.users = w.users;
            c.duration = w.duration;
            c.ramp_up = w.ramp_up.min(w.duration);
            c.seed = seed;
            if let Some(prompt) = &w.prompt {
                c.prompt = prompt.clone();
            }
            let mut opts = TwinOptions::new(p);
            opts.clock = clock.clone();
            opts.responder = Arc::new(AgentPersona::new(seed));
            opts.seed = seed;
            let transport = Arc::new(InProcTransport::start(opts));
            let status = Arc::new(LiveStatus::new(clock.clone()));
            let sink = Arc::new(MemorySink::default());
            let run = run_classroom(&c, transport.clone(), clock, sink, status).await;
            transport.stop();
            let outcome = run?;
            let summary =
                ClassroomSummary::from_records(w.users, &outcome.requests, &outcome.tasks);
            let mut ok: Vec<_> = outcome.requests.iter().filter(|r| r.is_ok()).collect();
            ok.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
            Ok(Trial {
                seed,
                values: ok.iter().filter_map(|r| r.ttft_s).collect(),
                figure: summary.ttft_p95_s,
                interval: summary.intervals.get("ttft_p95_s").copied(),
            })
        })
    })
}

/// The rate level under each seed (its Poisson arrivals drawn from the
/// seed), on `jobs` threads: each level's TTFTs and its TTFT P95 with the
/// interval its summary gives. Each level writes a bench folder under
/// `scratch`.
pub fn level_trials(
    w: &LevelWorkload,
    seeds: &[u64],
    jobs: usize,
    scratch: &std::path::Path,
) -> Result<Vec<Trial>, Error> {
    each_seed(seeds, jobs, &|seed| {
        paused()?.block_on(async {
            let clock = Clock::scaled(1.0);
            let p = w.profile.clone();
            let mut opts = TwinOptions::new(p.clone());
            opts.clock = clock.clone();
            opts.seed = seed;
            let transport = Arc::new(InProcTransport::start(opts));
            let config = BenchConfig {
                load: Load::Rates {
                    rates: vec![w.rate_per_s],
                    closed_first: false,
                    open: OpenLoop {
                        arrival: Arrival::Poisson,
                        max_concurrency: None,
                    },
                },
                shapes: vec![Shape::Short],
                requests_per_level: Some(w.requests),
                output_tokens: w.output_tokens,
                seed,
                ..BenchConfig::default()
            };
            let mut client = ClientSettings::new(Duration::from_secs(3_600));
            client.model = Some(p.server.served_model_name.clone());
            let mut run = RunSettings::new(client);
            run.results_dir = scratch.join(format!("seed-{seed}"));
            run.yes = true;
            let info = TwinFacts {
                model: p.server.served_model_name.clone(),
                max_model_len: None,
                tokenize: false,
            };
            let outcome = run_on_twin((&config, &run), &transport, &info, clock).await?;
            let level = outcome
                .levels
                .first()
                .ok_or_else(|| Error::Failed("the level did not run".into()))?;
            let records = read_bench_requests(&outcome.folder)?.items;
            let mut ok: Vec<_> = records.iter().filter(|r| r.ok).collect();
            ok.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
            Ok(Trial {
                seed,
                values: ok.iter().filter_map(|r| r.ttft_s).collect(),
                figure: level.ttft_p95_s,
                interval: level.intervals.get("ttft_p95_s").copied(),
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(seed: u64, values: Vec<f64>, lo: f64, hi: f64) -> Trial {
        Trial {
            seed,
            values,
            figure: Some(0.5 * (lo + hi)),
            interval: Some(Interval::closed(lo, hi)),
        }
    }

    #[test]
    fn coverage_counts_the_intervals_holding_the_pooled_percentile() {
        // Pooled values 1..=8: P50 is 4.5, anywhere from 4 to 5.
        let trials = [
            trial(1, vec![1.0, 2.0, 3.0, 4.0], 2.0, 3.5),
            trial(2, vec![5.0, 6.0, 7.0, 8.0], 5.0, 8.0),
            trial(3, vec![1.0, 2.0, 7.0, 8.0], 1.0, 2.0),
        ];
        let c = coverage(&trials, 50.0).expect("values");
        assert_eq!((c.truth, c.truth_lo, c.truth_hi), (4.5, 4.0, 5.0));
        assert_eq!((c.covered, c.trials, c.open), (1, 3, 0));
        assert!(coverage(&[], 50.0).is_none());
    }
}
