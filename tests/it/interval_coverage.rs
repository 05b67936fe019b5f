//! The intervals are honest: on the twin, in virtual time, a workload run
//! under 100 seeds, each run's 95 % interval of its TTFT P95 holds the
//! long-run value (the P95 of every run's values pooled) in 90–98 % of the
//! runs. A class and a Poisson rate level, on the profile the interval
//! methods were chosen on (classroom-64k, the GB10) and on one they were not
//! (a dense 8B coder on a fast GPU, `fixtures/calibration/dense-fast.toml`);
//! the classes on a few seats with a compact prompt, so that a small class
//! queues as a full one does and a hundred of them run quickly. The full
//! classes and more levels of docs/validation.md run in
//! `cargo bench --bench interval_coverage`.

use std::time::Duration;

use codendum::plan::coverage::{
    class_trials, compact_prompt, coverage, level_trials, ClassWorkload, LevelWorkload, Trial,
};
use codendum_core::profile::Profile;

/// Seeded runs per workload.
const TRIALS: u64 = 100;

/// The held-out profile: a fitted dense 8B coder on a fast GPU.
const HELD_OUT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/calibration/dense-fast.toml"
);

fn profile(name: &str, seats: u32) -> Profile {
    let mut p = Profile::load(name).expect("a profile");
    p.server.max_num_seqs = seats;
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
    for (name, seats, users) in [("classroom-64k", 3, 8), (HELD_OUT, 1, 5)] {
        let w = ClassWorkload {
            profile: profile(name, seats),
            users,
            duration: Duration::from_secs(240),
            ramp_up: Duration::from_secs(30),
            prompt: Some(compact_prompt()),
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
    // The last near saturation: its queue builds and drains over spans as
    // long as the level, and only its open tail interval holds.
    for (name, rate, seats) in [
        ("classroom-64k", 0.8, 16),
        (HELD_OUT, 3.0, 24),
        ("classroom-64k", 1.5, 16),
    ] {
        let w = LevelWorkload {
            profile: profile(name, seats),
            rate_per_s: rate,
            requests: 200,
            output_tokens: 64,
        };
        let trials = level_trials(&w, &seeds, threads(), scratch.path()).expect("levels run");
        assert_honest(&format!("{name} at {rate}/s"), &trials);
    }
}
