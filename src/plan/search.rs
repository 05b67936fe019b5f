//! `codendum plan` without `--users`: the largest class each server
//! variant carries, found by bisection over `1..=--max-users`
//! ([`super::bisect`]), and where its limit comes from
//! ([`super::limit::classify`]).
//!
//! With several seeds (`--seeds`, default 5) the answer is what the seeds
//! support ([`SeedsAnswer`]): the first seed is searched in full (its
//! bracket starting from a guess of [`STUDENTS_PER_SEAT`] students per
//! seat), each further seed from the first one's answer, two students
//! either side of it ([`super::bisect::hints_around`]), all further seeds
//! at once over `--jobs` threads; the limit and the seats probe are the
//! first seed's.
//!
//! The bisection is steered by the profile's ceilings (the `Max` targets of
//! `[targets.classroom]`); its floors (server output) are judged at the
//! answer. Rounds run over `--jobs` threads: every variant still searching
//! gets a probe per round, spare threads compute the sizes the bisection
//! may need next ([`super::bisect::Bisection::speculate`]). Only the probes
//! on the bisection's path are reported, so the results do not depend on
//! `--jobs`.

use super::bisect::{hints_around, Bisection};
use super::config::{cells, CellSpec, PlanConfig};
use super::limit::{classify, meets_ceilings, probe_seats, wants_seats_probe};
use super::results::PlanResults;
use super::run::{parameters, region_warnings};
use super::schedule::{run_searches, Grown, Search};
use super::search_results::{
    Probe, SearchParameters, SearchResults, SeatsProbe, SeedsAnswer, VariantSearch,
};
use super::search_text::{search_summary, seeds_summary, verdict_of};
use super::verdicts::{classroom_targets, JudgedCell};
use codendum_core::error::{ConfigError, Error};
use codendum_core::profile::Profile;
use codendum_core::results::schema::{PLAN_KIND, SEARCH_SCHEMA_VERSION};

/// The first seed's first guess, students per seat of the variant: a
/// class keeps its seats busy at about two and a half students each
/// (students spend most of their time reading, typing and running tools;
/// classroom-64k's 16 seats carry 36–42 students). Only where the bracket
/// starts: the answer of a search does not depend on it.
pub const STUDENTS_PER_SEAT: f64 = 2.5;

/// Called once per probe on a bisection's path, in path order: the
/// variant's name (with its seed when there are several: `classroom-64k,
/// seed 2`), the judged cell, and whether it met the ceilings.
pub type ProbeHook<'a> = &'a (dyn Fn(&str, &JudgedCell, bool) + Sync);

/// A variant's search in progress (for one seed).
type State = Search;

/// Searches the largest class of every variant (`config.max_users` must
/// be set). A profile without `[targets.classroom]` is an error of
/// `--profile` naming it.
pub fn run_search(config: &PlanConfig, on_probe: ProbeHook<'_>) -> Result<PlanResults, Error> {
    let max = config
        .max_users
        .ok_or_else(|| ConfigError::invalid("--max-users", "a search needs an upper bound"))?;
    let (profiles, fleets) = config.validate_fleets()?;
    // The first seed of every variant (and, with several seeds, the second
    // beside it, so two threads have a search each without guessing) start
    // from the first guess; when a variant's first seed closes, its seats
    // probe and its further seeds start, bracketed from its answer.
    let firsts = start(config, &profiles, max)?;
    let variants_n = firsts.len();
    let seconds = if config.seeds >= 2 {
        seed_states(config, &firsts, 1..2, |s| s.bisection.hints.clone())
    } else {
        Vec::new()
    };
    let searches: Vec<State> = firsts.into_iter().chain(seconds).collect();
    let mut grow = |all: &[State], closed: usize| -> Grown {
        if closed >= variants_n {
            return (Vec::new(), Vec::new());
        }
        let first = &all[closed];
        let seats = seats_probe_spec(first)
            .map(|spec| (closed, spec))
            .into_iter()
            .collect();
        let around = first.bisection.answer().max(1);
        let later = seed_states(
            config,
            std::slice::from_ref(first),
            2..u64::from(config.seeds),
            |_| hints_around(around, max),
        );
        (later, seats)
    };
    let (mut states, singles) = run_searches(config, &profiles, searches, on_probe, &mut grow)?;
    let rest = states.split_off(variants_n);
    let mut variants: Vec<VariantSearch> = states
        .iter()
        .enumerate()
        .map(|(i, s)| answer(s, max, singles.get(&i).cloned()))
        .collect();
    if config.seeds > 1 {
        for (i, v) in variants.iter_mut().enumerate() {
            let mut mine: Vec<&State> = rest
                .iter()
                .filter(|s| s.template.variant() == states[i].template.variant())
                .collect();
            mine.sort_by_key(|s| s.template.seed);
            let seeds = std::iter::once(config.seed)
                .chain(mine.iter().filter_map(|s| s.template.seed))
                .collect();
            let carries = std::iter::once(v.carries)
                .chain(mine.iter().map(|s| s.bisection.answer()))
                .collect();
            let at_least = std::iter::once(v.at_least)
                .chain(mine.iter().map(|s| s.bisection.reached_max()))
                .collect();
            let probes = mine.iter().map(|s| path_probes(s)).collect();
            let answer = SeedsAnswer::new(seeds, carries, at_least, probes);
            v.summary = format!("{} {}", v.variant, seeds_summary(&answer, v));
            v.seeds = Some(answer);
        }
    }
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
    results.region_warnings = region_warnings(&profiles, &results.cells);
    results.fleet = super::fleet::plan_fleet(config, fleets, &results.cells, true);
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
            let guess = (f64::from(template.max_num_seqs) * STUDENTS_PER_SEAT).round() as u32;
            Search::new(
                template.variant(),
                template.clone(),
                targets[i].clone(),
                Bisection::with_hints(max, hints_around(guess.max(1), max)),
            )
        })
        .collect())
}

/// The searches of the seeds `offsets` after the first (`--seed` + each)
/// of every variant of `first`, seed by seed (for each seed, the variants
/// in order), each bisection starting from `hints` of its variant's first
/// search.
fn seed_states(
    config: &PlanConfig,
    first: &[State],
    offsets: std::ops::Range<u64>,
    hints: impl Fn(&State) -> Vec<u32>,
) -> Vec<State> {
    let max = config.max_users.unwrap_or(super::config::DEFAULT_MAX_USERS);
    offsets
        .flat_map(|k| {
            let seed = config.seed.wrapping_add(k);
            first
                .iter()
                .map(|s| {
                    Search::new(
                        format!("{}, seed {seed}", s.template.variant()),
                        CellSpec {
                            seed: Some(seed),
                            ..s.template.clone()
                        },
                        s.targets.clone(),
                        Bisection::with_hints(max, hints(s)),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A state's probes on its bisection's path, in order.
fn path_probes(s: &State) -> Vec<Probe> {
    s.path
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
        .collect()
}

/// The seats probe a closed first search wants: its first failure again
/// with twice the seats, when that failure had its seats pinned.
fn seats_probe_spec(s: &State) -> Option<CellSpec> {
    let failed = s.cells.get(&s.bisection.hi)?;
    let seats = probe_seats(s.template.max_num_seqs)?;
    wants_seats_probe(failed).then(|| CellSpec {
        users: s.bisection.hi,
        max_num_seqs: seats,
        overridden: true,
        ..s.template.clone()
    })
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
    let probes = path_probes(s);
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
        seeds: None,
        summary: String::new(),
    };
    v.summary = search_summary(&v, max, s.cells.get(&carries), failed);
    v
}
