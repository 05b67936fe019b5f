//! `codendum plan` without `--users`: the largest class each server
//! variant carries, found by bisection over `1..=--max-users`
//! ([`super::bisect`]), and where its limit comes from
//! ([`super::limit::classify`]).
//!
//! The bisection is steered by the profile's ceilings (the `Max` targets of
//! `[targets.classroom]`); its floors (server output) are judged at the
//! answer. Rounds run over `--jobs` threads: every variant still searching
//! gets a probe per round, spare threads compute the sizes the bisection
//! may need next ([`super::bisect::Bisection::speculate`]). Only the probes
//! on the bisection's path are reported, so the results do not depend on
//! `--jobs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::bisect::{Bisection, Outcome};
use super::config::{cells, CellSpec, PlanConfig};
use super::limit::{classify, meets_ceilings, probe_seats, wants_seats_probe};
use super::run::{judge, parameters, run_cells, JudgedCell, PlanResults};
use super::search_text::{search_summary, verdict_of};
use super::verdicts::{classroom_targets, Bottleneck, ClassroomTargets};
use codendum_core::error::{ConfigError, Error};
use codendum_core::profile::Profile;
use codendum_core::results::schema::{PLAN_KIND, SEARCH_SCHEMA_VERSION};

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
    /// One sentence for people: "classroom-64k carries 45 students; the
    /// limit is seats …".
    pub summary: String,
}

/// What a search found (`plan.json`'s `search`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResults {
    /// The range searched.
    pub parameters: SearchParameters,
    /// One answer per server variant, in report order.
    pub variants: Vec<VariantSearch>,
}

/// Called once per probe on a bisection's path, in path order: the
/// variant's name, the judged cell, and whether it met the ceilings.
pub type ProbeHook<'a> = &'a (dyn Fn(&str, &JudgedCell, bool) + Sync);

/// A variant's search in progress.
struct State {
    template: CellSpec,
    targets: ClassroomTargets,
    bisection: Bisection,
    known: BTreeMap<u32, Outcome>,
    cells: BTreeMap<u32, JudgedCell>,
    path: Vec<u32>,
}

/// Searches the largest class of every variant (`config.max_users` must
/// be set). A profile without `[targets.classroom]` is an error of
/// `--profile` naming it.
pub fn run_search(config: &PlanConfig, on_probe: ProbeHook<'_>) -> Result<PlanResults, Error> {
    let max = config
        .max_users
        .ok_or_else(|| ConfigError::invalid("--max-users", "a search needs an upper bound"))?;
    let (profiles, fleets) = config.validate_fleets()?;
    let mut states = start(config, &profiles, max)?;
    bisect_all(config, &profiles, &mut states, on_probe)?;
    let probes = seats_probes(config, &profiles, &states)?;
    let variants: Vec<VariantSearch> = states
        .iter()
        .zip(probes)
        .map(|(s, probe)| answer(s, max, probe))
        .collect();
    let verdicts = states
        .iter()
        .zip(&variants)
        .map(|(s, v)| verdict_of(v, &s.targets))
        .collect();
    let cells = states
        .into_iter()
        .flat_map(|mut s| {
            let mut path = s.path.clone();
            path.sort_unstable();
            path.into_iter()
                .filter_map(move |u| s.cells.remove(&u))
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>();
    let mut params = parameters(config);
    params.users = cells.iter().map(|c| c.result.spec.users).collect();
    params.users.sort_unstable();
    params.users.dedup();
    let mut results = PlanResults {
        kind: PLAN_KIND.into(),
        schema_version: SEARCH_SCHEMA_VERSION,
        parameters: params,
        cells,
        verdicts,
        search: Some(SearchResults {
            parameters: SearchParameters {
                min_users: 1,
                max_users: max,
            },
            variants,
        }),
        fleet: None,
        region_warnings: Vec::new(),
    };
    results.region_warnings = super::run::region_warnings(&profiles, &results.cells);
    results.fleet = super::fleet::plan_fleet(config, fleets, &results);
    Ok(results)
}

/// One state per variant; refuses profiles without classroom targets.
fn start(config: &PlanConfig, profiles: &[Profile], max: u32) -> Result<Vec<State>, Error> {
    let mut targets = Vec::new();
    for p in profiles {
        let t = classroom_targets(&p.name, &p.targets)?;
        if t.is_empty() {
            return Err(ConfigError::invalid(
                "--profile",
                format!(
                    "{} has no [targets.classroom] to search against; give --users to try class sizes",
                    p.name
                ),
            )
            .into());
        }
        targets.push(t);
    }
    let one = PlanConfig {
        users: vec![1],
        ..config.clone()
    };
    Ok(cells(&one, profiles)
        .into_iter()
        .map(|template| {
            let i = profiles
                .iter()
                .position(|p| p.name == template.profile)
                .unwrap_or(0);
            State {
                template,
                targets: targets[i].clone(),
                bisection: Bisection::new(max),
                known: BTreeMap::new(),
                cells: BTreeMap::new(),
                path: Vec::new(),
            }
        })
        .collect())
}

/// Threads per active variant this round: one each (the first `jobs` when
/// there are more variants than threads), spare threads to the first.
fn allot(jobs: usize, active: usize) -> Vec<usize> {
    (0..active)
        .map(|i| {
            if jobs <= active {
                usize::from(i < jobs)
            } else {
                jobs / active + usize::from(i < jobs % active)
            }
        })
        .collect()
}

/// Runs rounds until every variant's bisection is closed.
fn bisect_all(
    config: &PlanConfig,
    profiles: &[Profile],
    states: &mut [State],
    on_probe: ProbeHook<'_>,
) -> Result<(), Error> {
    loop {
        let active: Vec<usize> = (0..states.len())
            .filter(|i| !states[*i].bisection.is_done())
            .collect();
        if active.is_empty() {
            return Ok(());
        }
        let mut specs = Vec::new();
        for (i, slots) in active.iter().zip(allot(config.jobs, active.len())) {
            let s = &states[*i];
            for users in s.bisection.speculate(slots, &s.known) {
                specs.push((
                    *i,
                    CellSpec {
                        users,
                        ..s.template.clone()
                    },
                ));
            }
        }
        let only: Vec<CellSpec> = specs.iter().map(|(_, c)| c.clone()).collect();
        let results = run_cells(config, profiles, &only, &|_| {})?;
        for ((i, _), result) in specs.into_iter().zip(results) {
            let s = &mut states[i];
            let cell = judge(&s.targets, result);
            s.known.insert(
                cell.result.spec.users,
                Outcome::from_met(meets_ceilings(&cell)),
            );
            s.cells.insert(cell.result.spec.users, cell);
        }
        for i in active {
            let s = &mut states[i];
            for users in s.bisection.advance(&s.known) {
                s.path.push(users);
                let cell = &s.cells[&users];
                on_probe(&s.template.variant(), cell, s.known[&users].is_met());
            }
        }
    }
}

/// Runs the seats probe of every variant whose first failure had its
/// seats pinned, all at once; one entry per state.
fn seats_probes(
    config: &PlanConfig,
    profiles: &[Profile],
    states: &[State],
) -> Result<Vec<Option<JudgedCell>>, Error> {
    let wanted: Vec<Option<CellSpec>> = states
        .iter()
        .map(|s| {
            let failed = s.cells.get(&s.bisection.hi)?;
            let seats = probe_seats(s.template.max_num_seqs)?;
            wants_seats_probe(failed).then(|| CellSpec {
                users: s.bisection.hi,
                max_num_seqs: seats,
                overridden: true,
                ..s.template.clone()
            })
        })
        .collect();
    let specs: Vec<CellSpec> = wanted.iter().flatten().cloned().collect();
    let mut results = run_cells(config, profiles, &specs, &|_| {})?.into_iter();
    Ok(states
        .iter()
        .zip(wanted)
        .map(|(s, w)| w.and_then(|_| results.next()).map(|r| judge(&s.targets, r)))
        .collect())
}

/// The answer of one closed search.
fn answer(s: &State, max: u32, seats: Option<JudgedCell>) -> VariantSearch {
    let carries = s.bisection.answer();
    let at_least = s.bisection.reached_max();
    let floors_missed: Vec<String> = s
        .cells
        .get(&carries)
        .map(|c| {
            super::limit::floors(&c.checks)
                .filter(|k| !k.met)
                .map(|k| k.key.clone())
                .collect()
        })
        .unwrap_or_default();
    let failed = (!at_least).then(|| s.cells.get(&s.bisection.hi)).flatten();
    let seats_probe = seats.as_ref().map(|c| SeatsProbe {
        users: c.result.spec.users,
        max_num_seqs: c.result.spec.max_num_seqs,
        meets_ceilings: meets_ceilings(c),
        server_output_tok_per_s: c.result.server_output_tok_per_s,
        ttft_p95_s: c.result.ttft_p95_s,
    });
    let limit = failed.map(|f| classify(f, seats_probe.as_ref().map(|p| p.meets_ceilings)));
    let probes = s
        .path
        .iter()
        .map(|u| {
            let c = &s.cells[u];
            Probe {
                users: *u,
                meets_ceilings: s.known[u].is_met(),
                meets_targets: c.meets_targets,
                missed: super::limit::missed_keys(c),
            }
        })
        .collect();
    let mut v = VariantSearch {
        variant: s.template.variant(),
        profile: s.template.profile.clone(),
        max_num_seqs: s.template.max_num_seqs,
        carries,
        at_least,
        meets_floors: carries > 0 && floors_missed.is_empty(),
        floors_missed,
        first_failure: failed.map(|f| f.result.spec.users),
        failed_targets: failed.map(super::limit::missed_keys).unwrap_or_default(),
        limit,
        seats_probe,
        probes,
        summary: String::new(),
    };
    v.summary = search_summary(&v, max, s.cells.get(&carries), failed);
    v
}
