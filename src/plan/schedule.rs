//! Runs many bisections at once over `--jobs` threads without rounds: each
//! search's next probe is started as soon as its last one is back, a thread
//! left without such a probe computes one a search *may* need next
//! ([`super::bisect::Bisection::speculate`]), and a search that closes can
//! start others (a variant's further seeds) and single cells (its seats
//! probe).
//!
//! Which sizes a search probes depends only on its cells' results, never
//! on the threads or the order results come back in, so the answers are
//! those of one probe at a time; only the wall time changes.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::mpsc;
use std::sync::Mutex;

use super::bisect::Bisection;
use super::cell::run_cell;
use super::config::{CellSpec, PlanConfig};
use super::figures::CellResult;
use super::limit::meets_ceilings;
use super::verdicts::{judge, JudgedCell};
use codendum_core::bound::Outcome;
use codendum_core::error::Error;
use codendum_core::profile::Profile;
use codendum_core::targets::ClassroomTargets;

/// One search for the largest class: a variant (and seed), its targets,
/// its bisection and the cells it has.
pub(super) struct Search {
    /// How its probes are named: the variant, and its seed after the first.
    pub label: String,
    /// The cell of its variant and seed, at any size.
    pub template: CellSpec,
    /// What its cells must meet.
    pub targets: ClassroomTargets,
    /// Its bracket.
    pub bisection: Bisection,
    /// Whether each size simulated met the ceilings.
    pub known: BTreeMap<u32, Outcome>,
    /// Each size simulated, judged.
    pub cells: BTreeMap<u32, JudgedCell>,
    /// The sizes on the bisection's path, in order.
    pub path: Vec<u32>,
}

impl Search {
    /// A search of `template`'s variant and seed from `bisection`.
    pub fn new(
        label: String,
        template: CellSpec,
        targets: ClassroomTargets,
        bisection: Bisection,
    ) -> Self {
        Search {
            label,
            template,
            targets,
            bisection,
            known: BTreeMap::new(),
            cells: BTreeMap::new(),
            path: Vec::new(),
        }
    }
}

/// What closing a search starts: more searches, and single cells (keyed by
/// the caller's own number) whose results come back by that number.
pub(super) type Grown = (Vec<Search>, Vec<(usize, CellSpec)>);

/// What a probe on a search's path is reported with: the search's label,
/// the judged cell, and whether it met the ceilings.
pub(super) type OnProbe<'a> = &'a (dyn Fn(&str, &JudgedCell, bool) + Sync);

/// What a thread is asked to simulate.
enum Work {
    /// A probe of search `.0`.
    Probe(usize, CellSpec),
    /// A single cell, the caller's number `.0`.
    Single(usize, CellSpec),
}

/// Runs `searches` to their end over `config.jobs` threads. When a search
/// closes, `grow` is called with every search so far and the index of the
/// one that closed, and what it returns is started. Returns every search
/// (those given first, then those grown, in the order grown) and the
/// single cells by their number.
pub(super) fn run_searches(
    config: &PlanConfig,
    profiles: &[Profile],
    mut searches: Vec<Search>,
    on_probe: OnProbe<'_>,
    grow: &mut dyn FnMut(&[Search], usize) -> Grown,
) -> Result<(Vec<Search>, BTreeMap<usize, JudgedCell>), Error> {
    let jobs = config.jobs.max(1);
    let queue: Mutex<VecDeque<Option<Work>>> = Mutex::new(VecDeque::new());
    let ready = std::sync::Condvar::new();
    let (done_tx, done_rx) = mpsc::channel::<(Work, Result<CellResult, Error>)>();
    let profile_of = |spec: &CellSpec| {
        profiles
            .iter()
            .find(|p| p.name == spec.profile)
            .or_else(|| profiles.first())
    };
    let mut singles: BTreeMap<usize, JudgedCell> = BTreeMap::new();
    let mut single_targets: BTreeMap<usize, ClassroomTargets> = BTreeMap::new();
    std::thread::scope(|scope| -> Result<(), Error> {
        for n in 0..jobs {
            let done_tx = done_tx.clone();
            let (queue, ready) = (&queue, &ready);
            std::thread::Builder::new()
                .name(format!("plan-{n}"))
                .stack_size(16 * 1024 * 1024)
                .spawn_scoped(scope, move || loop {
                    let work = {
                        let Ok(mut q) = queue.lock() else { return };
                        loop {
                            match q.pop_front() {
                                Some(w) => break w,
                                None => match ready.wait(q) {
                                    Ok(g) => q = g,
                                    Err(_) => return,
                                },
                            }
                        }
                    };
                    let Some(work) = work else { return };
                    let spec = match &work {
                        Work::Probe(_, s) | Work::Single(_, s) => s.clone(),
                    };
                    let result = match profile_of(&spec) {
                        Some(p) => run_cell(&spec, p, config),
                        None => Err(Error::Failed("a plan cell without a profile".into())),
                    };
                    if done_tx.send((work, result)).is_err() {
                        return;
                    }
                })
                .map_err(|e| Error::io("cannot start a plan thread", e))?;
        }
        let push = |w: Work| {
            if let Ok(mut q) = queue.lock() {
                q.push_back(Some(w));
            }
            ready.notify_one();
        };
        // Sizes each search has running.
        let mut running: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); searches.len()];
        let mut busy = 0usize;
        let outcome = (|| -> Result<(), Error> {
            loop {
                // Fill the threads: every search's next probe first, then
                // what a search may need after it.
                while busy < jobs {
                    let next = needed(&searches, &running)
                        .or_else(|| speculative(&searches, &running, jobs));
                    let Some((i, users)) = next else { break };
                    running[i].insert(users);
                    busy += 1;
                    push(Work::Probe(
                        i,
                        CellSpec {
                            users,
                            ..searches[i].template.clone()
                        },
                    ));
                }
                if busy == 0 {
                    return Ok(());
                }
                let (work, result) = done_rx
                    .recv()
                    .map_err(|_| Error::Failed("a plan thread stopped unexpectedly".into()))?;
                busy -= 1;
                let result = result?;
                let i = match work {
                    Work::Single(n, _) => {
                        let t = single_targets.remove(&n).unwrap_or_default();
                        singles.insert(n, judge(&t, result));
                        continue;
                    }
                    Work::Probe(i, _) => i,
                };
                let s = &mut searches[i];
                running[i].remove(&result.spec.users);
                let cell = judge(&s.targets, result);
                s.known.insert(
                    cell.result.spec.users,
                    Outcome::from_met(meets_ceilings(&cell)),
                );
                s.cells.insert(cell.result.spec.users, cell);
                let was_open = !s.bisection.is_done();
                for users in s.bisection.advance(&s.known) {
                    s.path.push(users);
                    on_probe(&s.label, &s.cells[&users], s.known[&users].is_met());
                }
                if was_open && s.bisection.is_done() {
                    let targets = s.targets.clone();
                    let (more, cells) = grow(&searches, i);
                    for (n, spec) in cells {
                        single_targets.insert(n, targets.clone());
                        busy += 1;
                        push(Work::Single(n, spec));
                    }
                    running.extend(more.iter().map(|_| BTreeSet::new()));
                    searches.extend(more);
                }
            }
        })();
        // Let every thread go, whatever happened.
        if let Ok(mut q) = queue.lock() {
            q.clear();
            q.extend((0..jobs).map(|_| None));
        }
        ready.notify_all();
        outcome
    })?;
    Ok((searches, singles))
}

/// The first search (in order) whose next probe is neither known nor
/// running, with that probe.
fn needed(searches: &[Search], running: &[BTreeSet<u32>]) -> Option<(usize, u32)> {
    searches.iter().enumerate().find_map(|(i, s)| {
        let n = s.bisection.next()?;
        (!s.known.contains_key(&n) && !running[i].contains(&n)).then_some((i, n))
    })
}

/// A size some open search may need after its next probe, neither known
/// nor running: the first of each search's speculation, searches in order.
fn speculative(
    searches: &[Search],
    running: &[BTreeSet<u32>],
    depth: usize,
) -> Option<(usize, u32)> {
    searches.iter().enumerate().find_map(|(i, s)| {
        if s.bisection.is_done() {
            return None;
        }
        let mut seen = s.known.clone();
        seen.extend(running[i].iter().map(|u| (*u, Outcome::Missed)));
        s.bisection
            .speculate(depth + running[i].len(), &seen)
            .into_iter()
            .next()
            .map(|u| (i, u))
    })
}
