//! What a search found, as `plan.json`'s `search` holds it: the range
//! searched, each variant's answer and probes, and what several seeds
//! support (data and the sentence of the seeds, nothing runs here).

use serde::{Deserialize, Serialize};

use super::verdicts::Bottleneck;
use super::wording::{students, students_do};

/// The range searched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchParameters {
    /// Smallest class considered, students: always 1 (no class is too
    /// small to judge; zero students would meet every ceiling trivially).
    pub min_users: u32,
    /// Largest class considered (`--max-users`), students.
    pub max_users: u32,
}

/// One probe of a search, in the order the bisection used it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// Students.
    pub users: u32,
    /// Whether every ceiling was met (what steers the bisection).
    pub meets_ceilings: bool,
    /// Whether every target, floors included, was met.
    pub meets_targets: bool,
    /// The keys of the targets missed, in judging order.
    pub missed: Vec<String>,
}

/// The class that missed its ceilings run again with more seats, to tell
/// a seat limit from a decode-throughput limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeatsProbe {
    /// Students (the variant's first failure).
    pub users: u32,
    /// Seats tried: twice the variant's `max_num_seqs`.
    pub max_num_seqs: u32,
    /// Whether every ceiling was met with those seats.
    pub meets_ceilings: bool,
    /// Server output in steady state, tokens per second.
    pub server_output_tok_per_s: Option<f64>,
    /// TTFT P95, seconds.
    pub ttft_p95_s: Option<f64>,
}

/// The answer of the search for one server variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantSearch {
    /// `classroom-64k` or `classroom-64k @ 32 seqs`.
    pub variant: String,
    /// Profile name.
    pub profile: String,
    /// `max_num_seqs` of the variant.
    pub max_num_seqs: u32,
    /// The largest class meeting every ceiling, students; 0 when even one
    /// student misses one.
    pub carries: u32,
    /// Whether `carries` is `max_users`: the answer is "at least".
    pub at_least: bool,
    /// Whether the class of `carries` students also meets the floors
    /// (false when `carries` is 0).
    pub meets_floors: bool,
    /// The floors missed at `carries` students.
    pub floors_missed: Vec<String>,
    /// The smallest class that missed a ceiling (`carries + 1`); `None`
    /// when `at_least`.
    pub first_failure: Option<u32>,
    /// The targets that class missed.
    pub failed_targets: Vec<String>,
    /// Where the limit comes from, judged at `first_failure`.
    pub limit: Option<Bottleneck>,
    /// The seats probe, when the first failure had its seats pinned.
    pub seats_probe: Option<SeatsProbe>,
    /// Every probe of the bisection, in order.
    pub probes: Vec<Probe>,
    /// With several seeds: what they support (the fields above are the
    /// first seed's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeds: Option<SeedsAnswer>,
    /// One sentence for people: "classroom-64k carries 45 students; the
    /// limit is seats …".
    pub summary: String,
}

/// What the seeds of a search support for one variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedsAnswer {
    /// The seeds, in order (the first is `--seed`).
    pub seeds: Vec<u64>,
    /// Each seed's largest class meeting every ceiling (0: even one
    /// student misses), in seed order.
    pub carries: Vec<u32>,
    /// Whether each seed's answer reached `--max-users` (then "at least").
    pub at_least: Vec<bool>,
    /// The smallest and the largest of `carries`.
    pub range: (u32, u32),
    /// The largest class meeting the ceilings in a majority of the seeds.
    pub majority: u32,
    /// Each class from `majority` to the largest answer with the seeds it
    /// meets the ceilings in, ascending (by each seed's bisection).
    pub support: Vec<(u32, u32)>,
    /// Each further seed's probes, in bisection order (the first seed's
    /// are [`VariantSearch::probes`]).
    pub probes: Vec<Vec<Probe>>,
}

impl SeedsAnswer {
    /// What `carries` over `seeds` support (see the fields).
    pub fn new(
        seeds: Vec<u64>,
        carries: Vec<u32>,
        at_least: Vec<bool>,
        probes: Vec<Vec<Probe>>,
    ) -> Self {
        let mut sorted = carries.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let n = sorted.len();
        let majority = sorted.get(n / 2).copied().unwrap_or(0);
        let range = (
            sorted.last().copied().unwrap_or(0),
            sorted.first().copied().unwrap_or(0),
        );
        let mut sizes: Vec<u32> = carries.iter().copied().filter(|c| *c >= majority).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let support = sizes
            .into_iter()
            .map(|size| (size, carries.iter().filter(|c| **c >= size).count() as u32))
            .collect();
        SeedsAnswer {
            seeds,
            carries,
            at_least,
            range,
            majority,
            support,
            probes,
        }
    }

    /// `36–42 students over 5 seeds: 36 meets the ceilings in 5 of 5
    /// seeds, 40 in 2, 42 in 1`.
    pub fn sentence(&self) -> String {
        let n = self.seeds.len();
        let (lo, hi) = self.range;
        let range = if lo == hi {
            students(lo)
        } else {
            format!("{lo}–{hi} students")
        };
        let support: Vec<String> = self
            .support
            .iter()
            .enumerate()
            .map(|(i, (size, k))| {
                if i == 0 {
                    format!(
                        "{} the ceilings in {k} of {n} seeds",
                        students_do(*size, "meets", "meet")
                    )
                } else {
                    format!("{size} in {k}")
                }
            })
            .collect();
        format!("{range} over {n} seeds: {}", support.join(", "))
    }
}

/// What a search found (`plan.json`'s `search`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResults {
    /// The range searched.
    pub parameters: SearchParameters,
    /// One answer per server variant, in report order.
    pub variants: Vec<VariantSearch>,
}
