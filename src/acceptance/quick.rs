//! What the capacity suite's workloads are, in one place: the suite runs
//! them against a server or the twin, and `codendum calibrate` runs them on
//! a fitted twin to write the targets of a lab's own profile.
//!
//! - quick: a benchmark of the levels the quick targets name (at most
//!   [`QUICK_BENCH_REQUESTS`] requests or [`QUICK_BENCH_LEVEL_CAP`] a
//!   level) and a class of [`QUICK_CLASS_USERS`] students with a 4-minute
//!   window ([`quick_class`]);
//! - full: the benchmark levels [`crate::bench::config::DEFAULT_CONCURRENCY`]
//!   × short, long (plus any other checked level), `max(16, 4N)` requests
//!   each, and the default class: 40 students, 15 minutes.

use std::time::Duration;

use crate::classroom::ClassroomConfig;

/// Students in the quick class: as many as the high-concurrency profile
/// runs at once, 1.5 times what `classroom-64k` runs, so the two profiles
/// differ.
pub const QUICK_CLASS_USERS: usize = 24;
/// Window for new coding requests in the quick class, simulated seconds.
pub const QUICK_CLASS_WINDOW: Duration = Duration::from_secs(240);
/// Ramp-up of the quick class, simulated seconds.
pub const QUICK_CLASS_RAMP_UP: Duration = Duration::from_secs(30);
/// Shortest and longest pause between a quick-class student's requests.
pub const QUICK_CLASS_PAUSES: (Duration, Duration) =
    (Duration::from_secs(5), Duration::from_secs(20));
/// Follow-up coding requests of each quick-class student.
pub const QUICK_CLASS_FOLLOW_UPS: usize = 1;
/// Requests per level of the quick benchmark (at most).
pub const QUICK_BENCH_REQUESTS: u64 = 48;
/// Cap on each quick benchmark level, simulated seconds: a single user gets
/// about five requests, 16 in flight turn over twice.
pub const QUICK_BENCH_LEVEL_CAP: Duration = Duration::from_secs(40);

/// `c` made the quick class (students, window, ramp-up, pauses,
/// follow-ups); the rest as given.
pub fn quick_class(mut c: ClassroomConfig) -> ClassroomConfig {
    c.users = QUICK_CLASS_USERS;
    c.duration = QUICK_CLASS_WINDOW;
    c.ramp_up = QUICK_CLASS_RAMP_UP;
    let (low, high) = QUICK_CLASS_PAUSES;
    // Two constants in order: cannot fail.
    let _ = c.set_pauses(low, high);
    c.set_follow_ups(QUICK_CLASS_FOLLOW_UPS);
    c
}
