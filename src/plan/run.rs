//! Runs every cell of a plan over `jobs` OS threads (one current-thread
//! runtime each) and judges the results against the profiles' targets.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::cell::run_cell;
use super::config::{cells, variant_name, CellSpec, PlanConfig};
use super::figures::CellResult;
use super::limit::{classify, meets_ceilings};
use super::results::{PlanParameters, PlanResults, VariantVerdict};
use super::verdicts::{classroom_targets, judge, Bottleneck, JudgedCell};
use super::wording::{agree, missed_floors, students, students_do};
use codendum_core::error::Error;
use codendum_core::profile::Profile;
use codendum_core::results::schema::{PLAN_KIND, PLAN_SCHEMA_VERSION};
use codendum_core::results::target_list::TargetList;
use codendum_core::targets::ClassroomTargets;

/// For each fitted profile (`[calibration]`), a warning when its cells'
/// prompts or running requests went beyond what its calibration measured.
pub fn region_warnings(profiles: &[Profile], cells: &[JudgedCell]) -> Vec<String> {
    profiles
        .iter()
        .filter_map(|p| {
            let mine = || cells.iter().filter(|c| c.result.spec.profile == p.name);
            let context = mine()
                .filter_map(|c| c.result.summary.prompt_tokens_max)
                .max();
            let batch = mine()
                .filter_map(|c| c.result.peak_running)
                .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))))
                .map(|v| v.round() as u32);
            p.region_warning(context, batch)
                .map(|w| format!("profile {}: {w}", p.name))
        })
        .collect()
}

/// Runs a plan of the class sizes given (`config.users`): validates
/// `config`, simulates every cell (in parallel over `config.jobs` threads;
/// the results do not depend on the number) and judges them. `on_cell` is
/// called as each cell finishes (from worker threads, in completion
/// order), e.g. for a progress line.
pub fn run_grid(
    config: &PlanConfig,
    on_cell: &(dyn Fn(&CellResult) + Sync),
) -> Result<PlanResults, Error> {
    let (profiles, fleets) = config.validate_fleets()?;
    let targets = profiles
        .iter()
        .map(|p| classroom_targets(&p.name, &p.targets))
        .collect::<Result<Vec<_>, _>>()?;
    let specs = cells(config, &profiles);
    let results = run_cells(config, &profiles, &specs, on_cell)?;
    let judged: Vec<JudgedCell> = results
        .into_iter()
        .map(|result| {
            let t = &targets[profile_index(&profiles, &result.spec.profile)];
            judge(t, result)
        })
        .collect();
    let verdicts = verdicts(&judged, &profiles, &targets);
    let mut results = PlanResults {
        kind: PLAN_KIND.into(),
        schema_version: PLAN_SCHEMA_VERSION,
        parameters: parameters(config),
        cells: judged,
        verdicts,
        search: None,
        fleet: None,
        region_warnings: Vec::new(),
    };
    results.region_warnings = region_warnings(&profiles, &results.cells);
    results.fleet = super::fleet::plan_fleet(config, fleets, &results.cells, false);
    Ok(results)
}

/// The index of the profile named `name` (the first when none is).
fn profile_index(profiles: &[Profile], name: &str) -> usize {
    profiles.iter().position(|p| p.name == name).unwrap_or(0)
}

/// What `config` asks for, as `plan.json` records it.
pub(super) fn parameters(config: &PlanConfig) -> PlanParameters {
    let mut users = config.users.clone();
    users.sort_unstable();
    users.dedup();
    PlanParameters {
        users,
        profiles: config.profiles.clone(),
        max_num_seqs: config.max_num_seqs.clone(),
        scenario: config.scenario.name().into(),
        duration_s: config.duration.as_secs_f64(),
        ramp_up_s: config.ramp_up().as_secs_f64(),
        seed: config.seed,
        seeds: if config.max_users.is_some() {
            config.seeds
        } else {
            1
        },
        max_users: config.max_users,
        replicas: config.replicas.clone(),
        routers: config
            .routers
            .iter()
            .map(|r| r.name().to_string())
            .collect(),
        class: Some(config.class.name.clone()),
    }
}

/// Simulates every cell over `config.jobs` threads; the results come back
/// in the order of `specs`. The first failure stops the others starting.
pub(super) fn run_cells(
    config: &PlanConfig,
    profiles: &[Profile],
    specs: &[CellSpec],
    on_cell: &(dyn Fn(&CellResult) + Sync),
) -> Result<Vec<CellResult>, Error> {
    // Largest classes first: they take longest, so the threads finish together.
    let mut order: Vec<usize> = (0..specs.len()).collect();
    order.sort_by_key(|i| std::cmp::Reverse(specs[*i].users));
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Mutex<Vec<Option<Result<CellResult, Error>>>> =
        Mutex::new((0..specs.len()).map(|_| None).collect());
    let worker = || loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        if k >= order.len() || failed.load(Ordering::Relaxed) {
            break;
        }
        let i = order[k];
        let spec = &specs[i];
        let result = run_cell(
            spec,
            &profiles[profile_index(profiles, &spec.profile)],
            config,
        );
        match &result {
            Ok(r) => on_cell(r),
            Err(_) => failed.store(true, Ordering::Relaxed),
        }
        if let Ok(mut s) = slots.lock() {
            s[i] = Some(result);
        }
    };
    let threads = config.jobs.clamp(1, specs.len().max(1));
    std::thread::scope(|scope| -> Result<(), Error> {
        let mut handles = Vec::with_capacity(threads);
        for n in 0..threads {
            let h = std::thread::Builder::new()
                .name(format!("plan-{n}"))
                .stack_size(16 * 1024 * 1024)
                .spawn_scoped(scope, worker)
                .map_err(|e| Error::io("cannot start a plan thread", e))?;
            handles.push(h);
        }
        for h in handles {
            h.join()
                .map_err(|_| Error::Failed("a plan thread stopped unexpectedly".into()))?;
        }
        Ok(())
    })?;
    let slots = slots
        .into_inner()
        .map_err(|_| Error::Failed("plan results were lost".into()))?;
    slots
        .into_iter()
        .map(|slot| match slot {
            Some(r) => r,
            None => Err(Error::Failed("a plan cell did not run".into())),
        })
        .collect()
}

/// The answer per server variant, from judged cells (plain function).
/// `targets[i]` belongs to `profiles[i]`.
pub fn verdicts(
    cells: &[JudgedCell],
    profiles: &[Profile],
    targets: &[ClassroomTargets],
) -> Vec<VariantVerdict> {
    let mut variants: Vec<(String, u32, bool)> = Vec::new();
    for c in cells {
        let s = &c.result.spec;
        let key = (s.profile.clone(), s.max_num_seqs, s.overridden);
        if !variants.contains(&key) {
            variants.push(key);
        }
    }
    variants
        .into_iter()
        .map(|(profile, seqs, overridden)| {
            let mut mine: Vec<&JudgedCell> = cells
                .iter()
                .filter(|c| c.result.spec.profile == profile && c.result.spec.max_num_seqs == seqs)
                .collect();
            mine.sort_by_key(|c| c.result.spec.users);
            let miss = mine.iter().find(|c| !c.meets_targets);
            let largest_class = mine
                .iter()
                .take_while(|c| c.meets_targets)
                .last()
                .map(|c| c.result.spec.users);
            // The limit is judged at the first class that missed a ceiling
            // (a floor such as server output is not a limit a larger class
            // runs into: a small class cannot produce a large output).
            let ceiling_miss = mine.iter().find(|c| !meets_ceilings(c));
            let limit = ceiling_miss.map(|m| {
                // The same class with more seats: met (`Some(true)`), tried
                // and missed (`Some(false)`), or not tried (`None`).
                let more_seats: Vec<&JudgedCell> = cells
                    .iter()
                    .filter(|o| {
                        let s = &o.result.spec;
                        s.profile == profile
                            && s.users == m.result.spec.users
                            && s.max_num_seqs > seqs
                    })
                    .collect();
                let more_seats_met =
                    (!more_seats.is_empty()).then(|| more_seats.iter().any(|o| o.meets_targets));
                classify(m, more_seats_met)
            });
            let t = profiles
                .iter()
                .position(|p| p.name == profile)
                .and_then(|i| targets.get(i))
                .cloned()
                .unwrap_or_default();
            let variant = variant_name(&profile, seqs, overridden);
            let first_miss = miss.map(|m| m.result.spec.users);
            let summary = sentence(
                &variant,
                &t,
                largest_class,
                miss.copied(),
                ceiling_miss.map(|c| c.result.spec.users),
                limit,
            );
            VariantVerdict {
                variant,
                profile,
                max_num_seqs: seqs,
                targets: TargetList::from(&t),
                largest_class,
                first_miss,
                limit,
                summary,
            }
        })
        .collect()
}

fn sentence(
    variant: &str,
    targets: &ClassroomTargets,
    largest: Option<u32>,
    miss: Option<&JudgedCell>,
    ceiling_miss: Option<u32>,
    limit: Option<Bottleneck>,
) -> String {
    // `limit` is judged at `ceiling_miss`.
    let no_targets = if targets.is_empty() {
        " (the profile has no [targets.classroom]: nothing was judged)"
    } else {
        ""
    };
    let limited = limit
        .map(|l| format!(", limited by {}", l.describe()))
        .unwrap_or_default();
    let Some(m) = miss else {
        return match largest {
            Some(l) => format!(
                "{variant}: every class size tried met the targets, up to {}{no_targets}.",
                students(l)
            ),
            None => format!("{variant}: no cells."),
        };
    };
    let users = m.result.spec.users;
    let start = match largest {
        Some(l) => format!(
            "{variant}: {} the targets; ",
            students_do(l, "meets", "meet")
        ),
        None => format!(
            "{variant}: even the smallest class tried ({}) ",
            students(users)
        ),
    };
    if ceiling_miss == Some(users) {
        let missed = if largest.is_some() {
            format!("{users} do not")
        } else {
            "misses the targets".to_string()
        };
        return format!("{start}{missed}{limited}.");
    }
    // The first miss is a floor only.
    let floors = missed_floors(&m.checks);
    let floor = if largest.is_some() {
        format!(
            "{} within the ceilings but {} the floor ({floors})",
            students_do(users, "stays", "stay"),
            agree(users, "misses", "miss")
        )
    } else {
        format!("stays within the ceilings but misses the floor ({floors})")
    };
    match ceiling_miss {
        Some(c) => format!(
            "{start}{floor}; {} the ceilings{limited}.",
            students_do(c, "misses", "miss")
        ),
        None => format!("{start}{floor}; no class tried missed a ceiling."),
    }
}
