//! A `codendum capacity` results folder (`capacity-<UTC>/`): `capacity.json`
//! (the search: its tiers, the twin's prediction, every step measured and
//! predicted side by side, the answers), beside the class's
//! `requests.jsonl`, `tasks.jsonl` and `server-timeline.jsonl` over the
//! whole search. Each step's figures are a [`ClassroomSummary`] of the
//! step's steady window, so a step is read, shown and compared by the one
//! table of class figures ([`crate::results::metrics::CLASS_METRICS`]).

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::classroom_summary::ClassroomSummary;
use super::schema::{check_schema, CAPACITY_KIND, CAPACITY_SCHEMA_VERSION};
use super::summary::{RunHeader, ServerDescription};
use super::target_list::TargetList;
use super::ResultsError;
use crate::bound::{Bound, Outcome};
use crate::stats::censored::CensoredBounds;
use crate::stats::Interval;

/// The file name of a search's results.
pub const CAPACITY_JSON: &str = "capacity.json";

/// The class figures shown for every step, predicted beside measured, by
/// their keys in the table of class figures: students, TTFT P50 and P95,
/// output speed per user, coding requests completed and their P50, peak
/// waiting requests, prefix-cache hit rate.
pub const STEP_FIGURES: [&str; 8] = [
    "students",
    "ttft_p50_s",
    "ttft_p95_s",
    "output_speed_p50_tok_per_s",
    "completed",
    "coding_request_p50_s",
    "peak_waiting",
    "prefix_hit_rate",
];

/// A tier as the search judged it: its name and targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierSpec {
    /// The tier's name (`interactive`; `profile` or `slo` when one level
    /// was given).
    pub name: String,
    /// Its targets.
    pub targets: TargetList,
}

/// What the search was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityParameters {
    /// The profile the twin predicted with.
    pub profile: String,
    /// Where the tiers came from: `profile`, `--slo` or `--tiers`.
    pub tiers_from: String,
    /// The tiers, in the order they were given.
    pub tiers: Vec<TierSpec>,
    /// Targets of the profile left out of its tier, with why (a coding
    /// request longer than a step's window cannot be judged in it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// The largest class considered, students.
    pub max_users: u32,
    /// Each step's steady window, seconds.
    pub hold_s: f64,
    /// New students join spread over this many seconds.
    pub join_over_s: f64,
    /// The widest gap the search leaves between a size met and one
    /// missed, students.
    pub resolution: u32,
    /// The most server time the search may take, seconds; absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<f64>,
    /// What the students run: `class` (the simulated class) or `replay`
    /// (recorded sessions replayed as users).
    pub workload: String,
    /// With `replay`: where the sessions were read from, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed_from: Option<String>,
    /// With `replay`: the root sessions the trace holds (each seat replays
    /// them in turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed_sessions: Option<usize>,
    /// The class's scenario.
    pub scenario: String,
    /// The random seed of the class.
    pub seed: u64,
    /// Simulated seconds per real second (1 for a live server).
    pub clock_scale: f64,
}

/// Whether a step searched or held an answer again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A size the search chose.
    Probe,
    /// A second hold of a tier's answer.
    Confirm,
}

/// One target judged on one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepCheck {
    /// The target key (`ttft_p95_s`).
    pub key: String,
    /// Ceiling or floor.
    pub bound: Bound,
    /// The limit, in the key's unit.
    pub limit: f64,
    /// The step's figure, in the key's unit.
    pub measured: Option<f64>,
    /// The figure's 95 % interval, in the key's unit, when it has one
    /// (the one that decides met, missed or indeterminate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// Met, missed or indeterminate.
    pub outcome: Outcome,
    /// Whether the search steers on it (a floor more students do not make
    /// harder, such as the server output, is judged at the answer only).
    pub steers: bool,
}

/// A tier's judgement of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierStep {
    /// The tier.
    pub tier: String,
    /// The worst outcome of the targets the search steers on.
    pub outcome: Outcome,
    /// Every target of the tier.
    pub checks: Vec<StepCheck>,
}

/// Coding requests a step's window saw end, and those still running at
/// its end.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Censoring {
    /// Coding requests completed in the window (their durations are the
    /// figures' values).
    pub completed: u64,
    /// Coding requests still running at the window's end: only a lower
    /// bound of their duration is known.
    pub running: u64,
    /// Where the coding-request P50 of completed and running together
    /// lies, seconds; absent without either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_bounds_s: Option<CensoredBounds>,
}

/// One step of the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityStep {
    /// Its place in the search, from 1.
    pub index: u32,
    /// Students.
    pub users: u32,
    /// A probe or a confirmation.
    pub kind: StepKind,
    /// When the class was set to this size, seconds since the search
    /// started.
    pub changed_s: f64,
    /// How long it settled before its window, seconds.
    pub settle_s: f64,
    /// Its steady window, seconds since the search started.
    pub window_start_s: f64,
    /// Its window's end, seconds since the search started.
    pub window_end_s: f64,
    /// When it was judged (the step's end), seconds since the search
    /// started: once the calls started in its window had finished, or
    /// sooner when those still running could no longer change any tier's
    /// outcome (counted at their best and at their worst; a call whose
    /// first token had come with its TTFT known, as answered).
    pub ended_s: f64,
    /// Calls started in its window still running when it was judged.
    pub unfinished: u64,
    /// Windows of the search's hold it was judged over: more than one
    /// when a figure was too close to a target to call after the first
    /// and the step was held longer.
    #[serde(default = "one_hold")]
    pub holds: u32,
    /// The step's figures over its window, every call started in it to
    /// its end (taken when the search was over).
    pub measured: ClassroomSummary,
    /// The twin's figures for the same step (the same sizes in the same
    /// order and times, in virtual time); absent when not predicted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<ClassroomSummary>,
    /// The coding requests of the window.
    pub censoring: Censoring,
    /// Each tier's judgement: the outcome the search went on, the checks'
    /// figures from [`CapacityStep::measured`].
    pub tiers: Vec<TierStep>,
}

fn one_hold() -> u32 {
    1
}

impl CapacityStep {
    /// The tier's judgement of this step.
    pub fn tier(&self, name: &str) -> Option<&TierStep> {
        self.tiers.iter().find(|t| t.tier == name)
    }
}

/// The answer for one tier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierAnswer {
    /// The tier.
    pub tier: String,
    /// The largest class that met the tier, students (0: even the
    /// smallest tried did not surely meet it).
    pub carries: u32,
    /// The largest class not known to miss it, students: the answer is
    /// the range `carries..=upper` when this is larger.
    pub upper: u32,
    /// Whether `carries` is the largest class considered.
    pub at_least: bool,
    /// Whether a second hold of `carries` met the tier again.
    pub confirmed: bool,
    /// Sizes between `carries` and the first miss that were too close to
    /// a target to call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<u32>,
    /// The smallest class that missed the tier, students.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_miss: Option<u32>,
    /// Floors (judged at the answer) the class of `carries` missed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub floors_missed: Vec<String>,
    /// The twin's answer before the search, students.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<u32>,
    /// One sentence for people.
    pub sentence: String,
    /// What more server time would buy, when the answer is a range or a
    /// step was undecided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_time: Option<String>,
}

/// The twin's answer for one tier before the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictedTier {
    /// The tier.
    pub tier: String,
    /// The largest class the twin met it with, students.
    pub carries: u32,
    /// The largest class not known to miss it on the twin, students.
    pub upper: u32,
}

/// What the twin predicted before the search touched the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// Each tier's predicted answer.
    pub tiers: Vec<PredictedTier>,
    /// The sizes the twin's own search tried, in order, each with the
    /// time its load took to reach a plateau after the change, seconds.
    pub steps: Vec<(u32, f64)>,
    /// The live search's steps if the server is the twin, in order.
    pub planned: Vec<u32>,
    /// Their server time, seconds.
    pub server_time_s: f64,
    /// The server time if the server carries a fifth fewer students than
    /// predicted, seconds.
    pub server_time_if_off_s: f64,
    /// Real seconds the prediction took.
    pub wall_s: f64,
}

/// `capacity.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityResults {
    /// Kind [`CAPACITY_KIND`], schema [`CAPACITY_SCHEMA_VERSION`], times.
    #[serde(flatten)]
    pub header: RunHeader,
    /// What was asked.
    pub parameters: CapacityParameters,
    /// The server.
    pub server: ServerDescription,
    /// The twin's prediction, made first.
    pub prediction: Prediction,
    /// Every step, in order.
    pub steps: Vec<CapacityStep>,
    /// One answer per tier, in the tiers' order.
    pub answers: Vec<TierAnswer>,
    /// Server time the search took, seconds (simulated seconds against the
    /// embedded twin).
    pub server_time_s: f64,
    /// `students carried: interactive 24, relaxed 40`.
    pub summary: String,
}

impl CapacityResults {
    /// The header of a search that started at `started_utc`.
    pub fn header(
        started_utc: DateTime<Utc>,
        finished_utc: DateTime<Utc>,
        interrupted: bool,
    ) -> RunHeader {
        RunHeader {
            schema_version: CAPACITY_SCHEMA_VERSION,
            kind: CAPACITY_KIND.into(),
            run_id: format!("capacity-{}", started_utc.format("%Y%m%dT%H%M%SZ")),
            started_utc,
            finished_utc,
            interrupted,
        }
    }
}

/// Whether `folder` holds a search (`capacity.json`).
pub fn is_capacity(folder: &Path) -> bool {
    folder.join(CAPACITY_JSON).is_file()
}

/// Reads `capacity.json` of `folder`, checking its kind and version.
pub fn read_capacity(folder: &Path) -> Result<CapacityResults, ResultsError> {
    let path = folder.join(CAPACITY_JSON);
    let text = std::fs::read_to_string(&path).map_err(|source| ResultsError::Read {
        file: CAPACITY_JSON,
        source,
    })?;
    let bad = |e: serde_json::Error| ResultsError::BadJson {
        file: CAPACITY_JSON,
        line: e.line(),
        reason: e.to_string(),
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(bad)?;
    check_schema(&value, CAPACITY_KIND, &[CAPACITY_SCHEMA_VERSION])?;
    serde_json::from_value(value).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_figures_are_class_figures() {
        for key in STEP_FIGURES {
            assert!(
                crate::results::metrics::class_metric(key).is_some(),
                "{key} is in the table of class figures"
            );
        }
    }
}
