//! The suite's workloads: what runs in quick and full mode, and how fast the
//! embedded twin runs them.

use std::time::Duration;

use crate::bench::config::{OpenLoop, DEFAULT_CONCURRENCY};
use crate::bench::{BenchConfig, Load};
use crate::classroom::ClassroomConfig;
use codendum_core::shape::Shape;
use codendum_core::targets::bench::ModeTargets;

/// Which workloads run (`CODENDUM_CAPACITY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Short workloads: the levels the quick targets name, a few dozen
    /// requests each; a class of [`QUICK_CLASS_USERS`] students.
    Quick,
    /// The lab's full workloads: levels 1, 8, 16, 24, 40 × short, long, and a
    /// 40-student, 15-minute class.
    Full,
}

impl Mode {
    /// `quick` or `full`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Quick => "quick",
            Mode::Full => "full",
        }
    }

    /// Parses `quick` / `full` (case-insensitive).
    pub fn from_name(s: &str) -> Option<Mode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "quick" => Some(Mode::Quick),
            "full" => Some(Mode::Full),
            _ => None,
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Mode::from_name(s).ok_or_else(|| format!("{s:?} is neither quick nor full"))
    }
}

/// The two kinds of workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkloadKind {
    /// One closed-loop benchmark run covering every checked level.
    Bench,
    /// One classroom simulation.
    Classroom,
}

impl WorkloadKind {
    /// `bench` or `classroom`.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Bench => "bench",
            WorkloadKind::Classroom => "classroom",
        }
    }
}

pub use super::quick::{
    QUICK_BENCH_LEVEL_CAP, QUICK_BENCH_REQUESTS, QUICK_CLASS_RAMP_UP, QUICK_CLASS_USERS,
    QUICK_CLASS_WINDOW,
};

/// Speed-up of the embedded twin for the suite's benchmark when it runs on
/// a loopback port (a profile with a fleet, or the students' keys behind
/// the lab's proxy; a single twin runs in virtual time). Measured on a
/// loaded 2-core machine in the debug build: each request costs the process
/// about 20 ms of real time, which the scaled clock turns into 0.2 s of
/// TTFT at 10×; higher scales inflate single-user TTFT beyond its target.
pub const TWIN_BENCH_TIME_SCALE: f64 = 10.0;
/// Speed-up of the embedded twin for the suite's class on a loopback port
/// (as for the benchmark). Class TTFTs are
/// seconds to a minute, so the same overhead (about 0.5 s at 25×) stays
/// small beside them.
pub const TWIN_CLASSROOM_TIME_SCALE: f64 = 25.0;

/// Per-request time limit of the suite's workloads, seconds.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(1800);

/// The benchmark of a mode: quick runs exactly the checked levels; full
/// runs the lab's levels plus any other checked level.
pub fn bench_config(mode: Mode, targets: &ModeTargets) -> BenchConfig {
    let mut config = BenchConfig::default();
    let mut levels: Vec<u32> = targets
        .bench
        .iter()
        .filter(|b| b.rate.is_none())
        .map(|b| b.concurrency)
        .collect();
    let mut rates: Vec<f64> = targets.bench.iter().filter_map(|b| b.rate).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let mut shapes: Vec<Shape> = targets.bench.iter().filter_map(|b| b.shape()).collect();
    match mode {
        Mode::Quick => {
            config.requests_per_level = Some(QUICK_BENCH_REQUESTS);
            config.level_duration = Some(QUICK_BENCH_LEVEL_CAP);
        }
        Mode::Full => {
            levels.extend(DEFAULT_CONCURRENCY);
            shapes.extend(Shape::ALL);
        }
    }
    levels.sort_unstable();
    levels.dedup();
    if !rates.is_empty() {
        // Rate levels after the closed-loop ones, Poisson as vLLM's bench.
        config.load = Load::Rates {
            rates,
            closed_first: !levels.is_empty(),
            open: OpenLoop {
                arrival: crate::bench::arrival::Arrival::Poisson,
                max_concurrency: None,
            },
        };
    }
    config.concurrency = levels;
    config.shapes = Shape::ALL
        .into_iter()
        .filter(|s| shapes.contains(s))
        .collect();
    config
}

/// The class of a mode (`model` empty: the server's first model; context
/// limit: the server's).
pub fn classroom_config(mode: Mode) -> ClassroomConfig {
    let c = ClassroomConfig::new(String::new(), None);
    match mode {
        Mode::Quick => super::quick::quick_class(c),
        Mode::Full => c,
    }
}

/// The twin's speed-up for a workload.
pub fn twin_time_scale(kind: WorkloadKind) -> f64 {
    match kind {
        WorkloadKind::Bench => TWIN_BENCH_TIME_SCALE,
        WorkloadKind::Classroom => TWIN_CLASSROOM_TIME_SCALE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codendum_core::targets::bench::BenchLevelTargets;

    fn level(shape: &str, n: u32) -> BenchLevelTargets {
        BenchLevelTargets {
            shape: shape.into(),
            concurrency: n,
            ..Default::default()
        }
        .with("errors", 0.0)
    }

    #[test]
    fn quick_bench_runs_only_the_checked_levels() {
        let t = ModeTargets {
            bench: vec![level("short", 16), level("short", 1), level("short", 16)],
            classroom: None,
            capacity: Vec::new(),
        };
        let c = bench_config(Mode::Quick, &t);
        assert_eq!(c.concurrency, vec![1, 16]);
        assert_eq!(c.shapes, vec![Shape::Short]);
        assert_eq!(c.requests_per_level, Some(QUICK_BENCH_REQUESTS));
        assert_eq!(c.load, Load::Closed);
    }

    #[test]
    fn full_bench_runs_the_seed_levels_and_checked_extras() {
        let t = ModeTargets {
            bench: vec![level("long", 32)],
            classroom: None,
            capacity: Vec::new(),
        };
        let c = bench_config(Mode::Full, &t);
        assert_eq!(c.concurrency, vec![1, 8, 16, 24, 32, 40]);
        assert_eq!(c.shapes, vec![Shape::Short, Shape::Long]);
        assert_eq!(c.requests_per_level, None);
    }

    #[test]
    fn modes_by_name_and_classes() {
        assert_eq!(Mode::from_name(" FULL "), Some(Mode::Full));
        assert_eq!(Mode::from_name("slow"), None);
        let q = classroom_config(Mode::Quick);
        assert_eq!(
            (q.users, q.class.person.follow_ups.max()),
            (QUICK_CLASS_USERS, 1.0)
        );
        let f = classroom_config(Mode::Full);
        assert_eq!((f.users, f.duration.as_secs()), (40, 900));
    }
}
