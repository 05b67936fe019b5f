//! What a plan found, as `plan.json` holds it: the parameters it ran with,
//! the judged cells, the answer per server variant, and the search's and
//! the fleets' sections.

use serde::{Deserialize, Serialize};

use super::fleet::FleetPlan;
use super::search_results::SearchResults;
use super::verdicts::{Bottleneck, JudgedCell};
use codendum_core::results::target_list::TargetList;

/// The parameters a plan ran with (everything that shapes its results;
/// `jobs` does not).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanParameters {
    /// Class sizes tried, ascending (in a search: the sizes probed).
    pub users: Vec<u32>,
    /// Profiles, as given.
    pub profiles: Vec<String>,
    /// `max_num_seqs` overrides (empty: the profiles' own).
    pub max_num_seqs: Vec<u32>,
    /// Scenario name.
    pub scenario: String,
    /// Window for new coding requests, seconds.
    pub duration_s: f64,
    /// Ramp-up, seconds.
    pub ramp_up_s: f64,
    /// Seed (the first of a search's seeds).
    pub seed: u64,
    /// Seeds a search ran (`seed`, `seed + 1`, …); absent when one.
    #[serde(default = "one_seed", skip_serializing_if = "is_one_seed")]
    pub seeds: u32,
    /// Upper end of a search (`--max-users`), students; absent when the
    /// class sizes were given (`--users`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_users: Option<u32>,
    /// Fleet sizes asked for (`--replicas`), replicas; empty: the profiles' own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<u32>,
    /// Routers asked for (`--router`), names; empty: the profiles' own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routers: Vec<String>,
    /// The class the students and the persona drew from (its name; `lab`
    /// by default). Absent in plans written before class files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
}

fn one_seed() -> u32 {
    1
}

fn is_one_seed(n: &u32) -> bool {
    *n == 1
}

/// The answer for one server variant (a profile, with its `max_num_seqs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantVerdict {
    /// `classroom-64k` or `classroom-64k @ 32 seqs`.
    pub variant: String,
    /// Profile name.
    pub profile: String,
    /// `max_num_seqs` of the variant.
    pub max_num_seqs: u32,
    /// The profile's classroom targets.
    pub targets: TargetList,
    /// The largest class size tried such that it and every smaller size
    /// tried met the targets; `None` when the smallest already missed.
    /// In a search: the answer (`carries`) when it meets every target,
    /// floors included; `None` otherwise.
    pub largest_class: Option<u32>,
    /// The smallest class size tried that missed the targets.
    /// In a search: the first class that missed a ceiling (`carries + 1`).
    pub first_miss: Option<u32>,
    /// Where the limit comes from, judged at the smallest class tried that
    /// missed a ceiling (which is `first_miss` unless that class missed
    /// only a floor); `None` when no class missed a ceiling.
    pub limit: Option<Bottleneck>,
    /// One sentence for people.
    pub summary: String,
}

/// Everything a plan found: the contents of `plan.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanResults {
    /// Always [`codendum_core::results::schema::PLAN_KIND`].
    pub kind: String,
    /// [`codendum_core::results::schema::PLAN_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// What was run.
    pub parameters: PlanParameters,
    /// Every cell, in report order (profile, `max_num_seqs`, users).
    pub cells: Vec<JudgedCell>,
    /// One answer per server variant.
    pub verdicts: Vec<VariantVerdict>,
    /// The search for the largest class (no `--users`): its probes and
    /// answers. Absent when the class sizes were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchResults>,
    /// The fleets (replicas × router) and, with `--users`, the fewest
    /// replicas per router. Absent when every cell is one server and no
    /// fleet was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetPlan>,
    /// One line per fitted profile whose classes went outside the region
    /// its calibration measured (contexts, requests in flight).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub region_warnings: Vec<String>,
}
