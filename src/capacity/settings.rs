//! What a search was asked to do, typed and resolved once by the command
//! line (or a test, or the capacity suite), and what follows from it: the
//! steps' timing, the search's bounds and the plan made from the twin's
//! prediction (plain functions).

use std::sync::Arc;
use std::time::Duration;

use super::engine::{Settle, Timing};
use super::predict::{Predicted, WATCH_S};
use super::search::{default_resolution, rehearse, Search, SearchBounds};
use super::settle::{clear_for, AVERAGE_S};
use super::students::ReplayedSessions;
use crate::classroom::ClassroomConfig;
use codendum_core::bound::Outcome;
use codendum_core::profile::Profile;
use codendum_core::results::capacity::{CapacityStep, Prediction, StepKind};
use codendum_core::targets::{ClassroomKey, ClassroomTargets, Tier};

/// The search's window per step when none is given, seconds.
pub const DEFAULT_HOLD: Duration = Duration::from_secs(180);
/// The spread over which new students join, when none is given.
pub const DEFAULT_JOIN_OVER: Duration = Duration::from_secs(30);
/// The largest class considered when none is given, students.
pub const DEFAULT_MAX_USERS: u32 = 200;
/// The most windows a step too close to call is held for: three windows
/// hold three times the calls, which narrows a percentile's interval by
/// about √3, enough to call a figure a few per cent off its target.
pub const MAX_HOLDS: u32 = 3;

/// Where a search's tiers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TiersFrom {
    /// The profile's `[targets.classroom]`.
    Profile,
    /// `--slo`.
    Slo,
    /// `--tiers`.
    Tiers,
}

impl TiersFrom {
    /// As `capacity.json` names it.
    pub fn name(self) -> &'static str {
        match self {
            TiersFrom::Profile => "profile",
            TiersFrom::Slo => "--slo",
            TiersFrom::Tiers => "--tiers",
        }
    }
}

/// What a search was asked to do besides the run settings.
#[derive(Debug, Clone)]
pub struct CapacitySettings {
    /// The students (their model and context limit are set once the server
    /// is known).
    pub class: ClassroomConfig,
    /// Recorded sessions replayed as the students instead (`--replay`);
    /// the class's seed then salts their text, its keys are theirs.
    pub replay: Option<Arc<ReplayedSessions>>,
    /// The tiers, each judged on every step.
    pub tiers: Vec<Tier>,
    /// Where they came from.
    pub tiers_from: TiersFrom,
    /// Targets of the profile left out of its tier, with why.
    pub left_out: Vec<String>,
    /// The profile the twin predicts with.
    pub profile: Profile,
    /// The largest class considered, students.
    pub max_users: u32,
    /// Each step's steady window.
    pub hold: Duration,
    /// New students join spread over this.
    pub join_over: Duration,
    /// Every step settles this long instead of the twin's time to plateau.
    pub settle: Option<Duration>,
    /// The widest gap left between a size met and one missed, students
    /// (`None`: from the prediction).
    pub resolution: Option<u32>,
    /// The most server time the search may take.
    pub budget: Option<Duration>,
}

impl CapacitySettings {
    /// The timing of the live steps, with the twin's times to plateau.
    pub fn timing(&self, plateaus: &[(u32, f64)], request_timeout: Duration) -> Timing {
        let join = self.join_over.as_secs_f64();
        Timing {
            hold_s: self.hold.as_secs_f64(),
            join_over_s: join,
            settle: match self.settle {
                Some(s) => Settle::Fixed(s.as_secs_f64()),
                None => Settle::Predicted {
                    plateaus: plateaus.to_vec(),
                    floor_s: join + AVERAGE_S,
                    ceiling_s: WATCH_S,
                },
            },
            drain_cap_s: request_timeout.as_secs_f64(),
            budget_s: self.budget.map(|b| b.as_secs_f64()),
            step_cap: step_cap(self.max_users, self.tiers.len()),
            // Held longer only when the user gave the server time for it:
            // without a budget, a size too close to call is left undecided
            // and the answer is a range.
            max_holds: if self.budget.is_some() { MAX_HOLDS } else { 1 },
        }
    }
}

/// The most steps a search takes: enough to bracket and bisect every
/// tier over `1..=max_users`, and hold each answer twice.
fn step_cap(max_users: u32, tiers: usize) -> usize {
    let bisect = f64::from(max_users.max(2)).log2().ceil() as usize;
    tiers * (2 * bisect + 2) + 4
}

impl CapacitySettings {
    /// The search's bounds once the twin has answered: its resolution is
    /// the one asked for, else one from the largest predicted answer.
    pub fn bounds(&self, predicted: &Predicted) -> SearchBounds {
        let largest = predicted
            .answers
            .iter()
            .map(|a| a.carries)
            .max()
            .unwrap_or(1);
        SearchBounds {
            max_users: self.max_users,
            resolution: self
                .resolution
                .unwrap_or_else(|| default_resolution(largest)),
            confirm: true,
        }
    }

    /// The search around the twin's answers.
    pub fn search(&self, predicted: &Predicted, bounds: SearchBounds) -> Search {
        let guesses: Vec<(String, u32)> = predicted
            .answers
            .iter()
            .map(|a| (a.tier.clone(), a.carries))
            .collect();
        Search::around(&guesses, bounds)
    }
}

/// The outcome at `n` students of a tier the twin answered `(carries,
/// upper)`: met up to its answer, too close to call up to its upper end,
/// missed beyond.
fn as_predicted((carries, upper): (u32, u32), n: u32) -> Outcome {
    if n <= carries {
        Outcome::Met
    } else if n <= upper {
        Outcome::Indeterminate
    } else {
        Outcome::Missed
    }
}

/// The server time of `steps`, seconds, as the steps spend it: each
/// settles, and past its settling waits for the calls sent before its
/// change to end (the twin's time to clear them, `clears`, up to the
/// settling's longest; not with a fixed settling, which is kept as
/// asked), holds and waits for its window's calls (`drain_s`, the twin's
/// mean); a size some tier finds too close to call (`unsure`) is held as
/// long as a step may be.
fn server_time(
    steps: &[(u32, StepKind)],
    timing: &Timing,
    (drain_s, clears): (f64, &[(u32, f64)]),
    unsure: impl Fn(u32) -> bool,
) -> f64 {
    let mut before = 0;
    steps
        .iter()
        .map(|(n, _)| {
            let holds = if unsure(*n) {
                timing.max_holds.max(1)
            } else {
                1
            };
            let settle = timing.settle.for_users(*n);
            let settle = match timing.settle.longest_s() {
                Some(cap) => settle.max(clear_for(before, *n, clears).min(cap)),
                None => settle,
            };
            before = *n;
            settle + f64::from(holds) * (timing.hold_s + drain_s)
        })
        .sum()
}

/// What the prediction plans: the live search's steps if the server is
/// the twin, and their server time (and if it carries a fifth fewer).
pub fn plan_prediction(predicted: &Predicted, search: &Search, timing: &Timing) -> Prediction {
    let answered: Vec<(u32, u32)> = predicted
        .answers
        .iter()
        .map(|a| (a.carries, a.upper))
        .collect();
    let cap = timing.step_cap;
    let planned = rehearse(search.clone(), |i, n| as_predicted(answered[i], n), cap);
    let fewer: Vec<(u32, u32)> = answered
        .iter()
        .map(|(c, u)| (c * 4 / 5, u * 4 / 5))
        .collect();
    let off = rehearse(search.clone(), |i, n| as_predicted(fewer[i], n), cap);
    let drain_s = drain_of(&predicted.steps).unwrap_or(timing.hold_s / 10.0);
    Prediction {
        tiers: predicted.answers.clone(),
        steps: predicted.plateaus.clone(),
        planned: planned.iter().map(|(n, _)| *n).collect(),
        server_time_s: server_time(&planned, timing, (drain_s, &predicted.clears), |n| {
            answered
                .iter()
                .any(|a| as_predicted(*a, n) == Outcome::Indeterminate)
        }),
        server_time_if_off_s: server_time(&off, timing, (drain_s, &predicted.clears), |n| {
            fewer
                .iter()
                .any(|a| as_predicted(*a, n) == Outcome::Indeterminate)
        }),
        wall_s: predicted.wall_s,
    }
}

/// The mean wait for a window's calls to decide its step over `steps`,
/// seconds.
pub fn drain_of(steps: &[CapacityStep]) -> Option<f64> {
    codendum_core::stats::mean(steps.iter().map(|s| s.ended_s - s.window_end_s))
}

/// The mean server time of a step, seconds (a step's cost for what more
/// steps would take).
pub fn mean_step_s(steps: &[CapacityStep], timing: &Timing) -> f64 {
    codendum_core::stats::mean(steps.iter().map(|s| s.ended_s - s.changed_s))
        .unwrap_or(timing.hold_s * 1.5)
}

/// A profile's `[targets.classroom]` as a tier a search with windows of
/// `hold` can judge: a coding-request median longer than a window is not
/// seen in it (too few coding requests end), so that target is left out,
/// with a note saying so.
pub fn judgeable_in_window(
    targets: ClassroomTargets,
    hold: Duration,
) -> (ClassroomTargets, Option<String>) {
    let hold_s = hold.as_secs_f64();
    match targets.coding_request_p50_s.filter(|l| *l > hold_s) {
        Some(limit) => (
            targets.without(ClassroomKey::CodingRequestP50),
            Some(format!(
                "the profile's coding_request_p50_s ≤ {limit:.0} s is not judged: a {hold_s:.0} s window sees too few coding requests end"
            )),
        ),
        None => (targets, None),
    }
}
