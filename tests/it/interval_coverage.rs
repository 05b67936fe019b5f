//! The intervals are honest: on the twin, in virtual time, a workload run
//! under 100 seeds, each run's 95 % interval of its TTFT P95 holds the
//! long-run value (the P95 of every run's values pooled) in 90–98 % of the
//! runs. A class and a Poisson rate level, on the profile the interval
//! methods were chosen on (classroom-64k) and on one they were not
//! (classroom-64k-high-concurrency's engine), each narrowed to a few seats
//! so that a small class queues as a full one does. The larger workloads
//! of docs/validation.md run in `cargo bench --bench interval_coverage`.

use std::time::Duration;

use codendum::classroom::PromptSet;
use codendum::plan::coverage::{
    class_trials, coverage, level_trials, ClassWorkload, LevelWorkload, Trial,
};
use codendum_core::profile::Profile;

/// Seeded runs per workload.
const TRIALS: u64 = 100;

fn profile(name: &str, seats: u32) -> Profile {
    let mut p = Profile::load(name).expect("an embedded profile");
    p.server.max_num_seqs = seats;
    p
}

/// The built-in tools with one-line descriptions and a one-line system
/// prompt: each call carries a few hundred tokens instead of six thousand,
/// so a hundred classes run in seconds; the queueing the intervals must
/// cope with comes from the decode seats, not the prompt.
fn short_prompt() -> PromptSet {
    let mut p = PromptSet::built_in();
    p.system = "You are a coding agent working in the student's project.".into();
    p.explore_system = "You explore the project and report what you find.".into();
    for t in p.tools.iter_mut().chain(p.explore_tools.iter_mut()) {
        if let Some(d) = t.pointer_mut("/function/description") {
            *d = "A tool.".into();
        }
    }
    p
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn assert_honest(what: &str, trials: &[Trial]) {
    let c = coverage(trials, 95.0).expect("values");
    eprintln!(
        "{what}: {:.0} % of {}, {:.0} values a run, truth {:.2}",
        c.share * 100.0,
        c.trials,
        c.mean_values,
        c.truth
    );
    assert_eq!(c.trials as u64, TRIALS, "{what}");
    assert!(
        (0.90..=0.98).contains(&c.share),
        "{what}: {} of {} intervals hold the long-run TTFT P95 {:.2} s ({} open, median width {:.0} %)",
        c.covered,
        c.trials,
        c.truth,
        c.open,
        c.median_width * 100.0
    );
}

#[test]
fn class_ttft_p95_intervals_cover_the_long_run_value() {
    let seeds: Vec<u64> = (1..=TRIALS).collect();
    for (name, seats, users) in [
        ("classroom-64k", 2, 6),
        ("classroom-64k-high-concurrency", 3, 9),
    ] {
        let w = ClassWorkload {
            profile: profile(name, seats),
            users,
            duration: Duration::from_secs(240),
            ramp_up: Duration::from_secs(30),
            prompt: Some(short_prompt()),
        };
        let trials = class_trials(&w, &seeds, threads()).expect("classes run");
        assert_honest(
            &format!("{name} at {seats} seats, {users} students"),
            &trials,
        );
    }
}

#[test]
fn level_ttft_p95_intervals_cover_the_long_run_value() {
    let seeds: Vec<u64> = (1..=TRIALS).collect();
    let scratch = tempfile::tempdir().expect("tempdir");
    for (name, rate) in [
        ("classroom-64k", 1.0),
        ("classroom-64k-high-concurrency", 1.0),
    ] {
        let w = LevelWorkload {
            profile: profile(name, 16),
            rate_per_s: rate,
            requests: 200,
            output_tokens: 64,
        };
        let trials = level_trials(&w, &seeds, threads(), scratch.path()).expect("levels run");
        assert_honest(&format!("{name} at {rate}/s"), &trials);
    }
}
