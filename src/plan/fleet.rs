//! `plan` over fleets (`--replicas 1,2,4 --router session,round-robin`):
//! every profile becomes one server variant per fleet (replicas × router),
//! a profile whose `[fleet]` says how many replicas run behind which router.
//! A fleet of one replica keeps the profile's own name and runs the single
//! server path of [`super::cell`] unchanged, so its figures are exactly
//! those of the single server. The variants come from [`super::variants`];
//! this file holds what a plan answers about them. With `--users`,
//! [`answers`] gives for each router the fewest replicas that meet the
//! targets; without, the search finds the largest class of every fleet as
//! of any variant.

use serde::{Deserialize, Serialize};

use super::config::PlanConfig;
use super::variants::FleetVariant;
use super::verdicts::JudgedCell;

/// The fewest replicas meeting the targets for one router and class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetAnswer {
    /// The base profile.
    pub profile: String,
    /// `max_num_seqs` per replica.
    pub max_num_seqs: u32,
    /// Students.
    pub users: u32,
    /// The router's name.
    pub router: String,
    /// Fewest replicas tried whose cell met every target; `None` when none did.
    pub replicas_needed: Option<u32>,
    /// The most replicas tried under this router.
    pub most_tried: u32,
}

/// The fleets of a plan and, with `--users`, the answers per router
/// (`plan.json`'s `fleet`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetPlan {
    /// Every fleet variant, in report order.
    pub variants: Vec<FleetVariant>,
    /// Fewest replicas per (profile, seats, class, router); empty in a search.
    pub answers: Vec<FleetAnswer>,
    /// One line per profile, seats and class:
    /// `120 students (classroom-64k): session needs 3 replicas, round-robin 4`.
    pub lines: Vec<String>,
}

/// The note for `--router` given where every fleet has one replica (as
/// `serve` says it), else `None`.
pub fn router_note(config: &PlanConfig) -> Option<String> {
    let single = config.replicas.iter().all(|r| *r == 1);
    (!config.routers.is_empty() && single).then(|| {
        let names: Vec<&str> = config.routers.iter().map(|r| r.name()).collect();
        format!(
            "note: --router {} has no effect with one replica (the single server)",
            names.join(",")
        )
    })
}

/// The fleet section of a plan of `cells`: `None` when every variant is
/// one replica and no flag asked for fleets. A search (`searched`) has no
/// fewest-replicas answers.
pub fn plan_fleet(
    config: &PlanConfig,
    variants: Vec<FleetVariant>,
    cells: &[JudgedCell],
    searched: bool,
) -> Option<FleetPlan> {
    let asked = !config.replicas.is_empty() || !config.routers.is_empty();
    if !asked && variants.iter().all(|v| v.replicas == 1) {
        return None;
    }
    let answers = if searched {
        Vec::new()
    } else {
        answers(&variants, cells)
    };
    let lines = lines(&answers);
    Some(FleetPlan {
        variants,
        answers,
        lines,
    })
}

/// The routers of the variants of `base`, in order of appearance.
fn routers_of(variants: &[FleetVariant], base: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in variants.iter().filter(|v| v.base == base) {
        if let Some(r) = &v.router {
            if !out.contains(r) {
                out.push(r.clone());
            }
        }
    }
    out
}

/// For each profile, seats, class and router: the fewest replicas whose
/// cell met every target (a one-replica cell counts for every router).
/// Plain function.
pub fn answers(variants: &[FleetVariant], cells: &[JudgedCell]) -> Vec<FleetAnswer> {
    let mut keys: Vec<(String, u32, u32)> = Vec::new();
    for c in cells {
        let s = &c.result.spec;
        if let Some(v) = variants.iter().find(|v| v.name == s.profile) {
            let key = (v.base.clone(), s.max_num_seqs, s.users);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    let mut out = Vec::new();
    for (base, seqs, users) in keys {
        for router in routers_of(variants, &base) {
            let mut tried: Vec<(u32, bool)> = cells
                .iter()
                .filter(|c| c.result.spec.max_num_seqs == seqs && c.result.spec.users == users)
                .filter_map(|c| {
                    let v = variants.iter().find(|v| v.name == c.result.spec.profile)?;
                    let mine = v.base == base
                        && (v.replicas == 1 || v.router.as_deref() == Some(router.as_str()));
                    mine.then_some((v.replicas, c.meets_targets))
                })
                .collect();
            tried.sort_unstable();
            out.push(FleetAnswer {
                profile: base.clone(),
                max_num_seqs: seqs,
                users,
                router,
                replicas_needed: tried.iter().find(|(_, met)| *met).map(|(r, _)| *r),
                most_tried: tried.last().map_or(0, |(r, _)| *r),
            });
        }
    }
    out
}

/// One line per profile, seats and class from [`answers`] (plain function):
/// `120 students (classroom-64k @ 16 seqs): session needs 3 replicas,
/// round-robin more than 4`.
pub fn lines(answers: &[FleetAnswer]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut done: Vec<(String, u32, u32)> = Vec::new();
    for a in answers {
        let key = (a.profile.clone(), a.max_num_seqs, a.users);
        if done.contains(&key) {
            continue;
        }
        let parts: Vec<String> = answers
            .iter()
            .filter(|b| (b.profile.clone(), b.max_num_seqs, b.users) == key)
            .enumerate()
            .map(|(i, b)| {
                let n = match b.replicas_needed {
                    Some(1) if i == 0 => "needs 1 replica".to_string(),
                    Some(r) if i == 0 => format!("needs {r} replicas"),
                    Some(r) => r.to_string(),
                    None if i == 0 => format!("needs more than {}", b.most_tried),
                    None => format!("more than {}", b.most_tried),
                };
                format!("{} {n}", b.router)
            })
            .collect();
        out.push(format!(
            "{} students ({} @ {} seqs): {}",
            a.users,
            a.profile,
            a.max_num_seqs,
            parts.join(", ")
        ));
        done.push(key);
    }
    out
}
