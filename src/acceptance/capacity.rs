//! The suite's capacity trials, `<profile>::capacity-<tier>::students`:
//! one capacity search per profile (every tier of its `[targets.capacity]`
//! judged on the same steps), against the embedded twin of the profile in
//! virtual time ([`capacity_on_twin`], seconds) or, with a live server,
//! `codendum capacity`'s own run ([`crate::app::capacity::run`]). Each
//! target is judged on its tier's answer by
//! [`codendum_core::targets::capacity::judge_students`]: met, missed, or
//! indeterminate when the answer's range straddles the class size.

use std::time::Duration;

use super::judge::TrialPass;
use super::profile::SuiteProfile;
use super::settings::Settings;
use super::workload::{classroom_config, Mode, REQUEST_TIMEOUT};
use crate::capacity::answer::{answers, Finished};
use crate::capacity::on_twin::capacity_on_twin;
use crate::capacity::settings::{
    judgeable_in_window, mean_step_s, CapacitySettings, TiersFrom, DEFAULT_HOLD, DEFAULT_JOIN_OVER,
};
use codendum_core::bound::Outcome;
use codendum_core::results::capacity::TierAnswer;
use codendum_core::targets::bench::ModeTargets;
use codendum_core::targets::capacity::{judge_students, CapacityTarget};
use codendum_core::targets::Tier;

/// Each step's steady window in quick mode, simulated seconds: long
/// enough for a class of a few dozen students to start a few hundred calls.
pub const QUICK_HOLD: Duration = Duration::from_secs(120);
/// The spread over which new students join in quick mode.
pub const QUICK_JOIN_OVER: Duration = Duration::from_secs(20);

/// A finished search: each tier's answer and where it ran.
#[derive(Debug, Clone)]
pub struct CapacityFound {
    /// The answers, in the order of the profile's capacity targets.
    pub answers: Vec<TierAnswer>,
    /// Where the search ran, for messages: `the embedded twin in virtual
    /// time` or its results folder.
    pub place: String,
}

/// The search the suite runs for a profile's capacity targets: every tier
/// at once, up to twice the largest class asked for (so the answer says
/// how much room there is), with the mode's class and windows. A tier
/// without targets of its own takes the mode's `[targets.classroom]`, less
/// what a window cannot judge.
pub fn search_settings(
    settings: &Settings,
    p: &SuiteProfile,
    targets: &ModeTargets,
) -> Result<CapacitySettings, String> {
    let (hold, join_over) = match settings.mode {
        Mode::Quick => (QUICK_HOLD, QUICK_JOIN_OVER),
        Mode::Full => (DEFAULT_HOLD, DEFAULT_JOIN_OVER),
    };
    let mut left_out = Vec::new();
    let mut tiers = Vec::new();
    for t in &targets.capacity {
        let own = match (&t.targets, &targets.classroom) {
            (Some(own), _) => own.clone(),
            (None, Some(class)) => class.clone(),
            (None, None) => {
                return Err(format!(
                    "profile {}: the capacity tier {} has no targets of its own and the profile has no [targets.classroom] to judge it by",
                    p.profile.name, t.tier
                ))
            }
        };
        let (own, why) = judgeable_in_window(own, hold);
        left_out.extend(why);
        if own.is_empty() {
            return Err(format!(
                "profile {}: the capacity tier {} has no target a {:.0} s window can judge",
                p.profile.name,
                t.tier,
                hold.as_secs_f64()
            ));
        }
        tiers.push(Tier {
            name: t.tier.clone(),
            targets: own,
        });
    }
    let largest = targets
        .capacity
        .iter()
        .map(|t| t.students)
        .max()
        .unwrap_or(1);
    let mut class = classroom_config(settings.mode);
    class.api_keys = settings.api_keys.clone();
    Ok(CapacitySettings {
        replay: None,
        class,
        tiers,
        tiers_from: TiersFrom::Profile,
        left_out,
        profile: p.profile.clone(),
        max_users: largest.saturating_mul(2).max(2),
        hold,
        join_over,
        settle: None,
        resolution: None,
        budget: None,
    })
}

/// The search against the embedded twin of the profile, in virtual time.
pub fn search_on_twin(
    search: &CapacitySettings,
    p: &SuiteProfile,
) -> Result<CapacityFound, String> {
    let found = capacity_on_twin(search, &p.profile, REQUEST_TIMEOUT)
        .map_err(|e| format!("the capacity search on the twin failed: {e}"))?;
    let steps = &found.twin.run.steps;
    let answers = answers(&Finished {
        search: &found.twin.search,
        bounds: found.bounds,
        steps,
        predicted: &found.predicted.answers,
        ended: found.twin.run.ended,
        step_s: mean_step_s(steps, &found.timing),
    });
    Ok(CapacityFound {
        answers,
        place: format!(
            "the embedded twin of {} in virtual time, {} steps",
            p.profile.name,
            steps.len()
        ),
    })
}

/// Judges one capacity target on the search's answer for its tier: `Ok`
/// met or indeterminate (with why), `Err` the failure message.
pub fn judge_target(t: &CapacityTarget, found: &CapacityFound) -> Result<TrialPass, String> {
    let a = found
        .answers
        .iter()
        .find(|a| a.tier == t.tier)
        .ok_or_else(|| format!("the search did not answer the tier {}", t.tier))?;
    let range = if a.upper > a.carries {
        format!("{} to {}", a.carries, a.upper)
    } else {
        a.carries.to_string()
    };
    let said = format!("{} ({})", a.sentence, found.place);
    let outcome = judge_students(a.carries, a.upper, t.students);
    if outcome == Outcome::Met && !a.floors_missed.is_empty() {
        return Err(format!(
            "carries {range} students by the tier's ceilings, but that class misses {}: {said}",
            a.floors_missed.join(", ")
        ));
    }
    match outcome {
        Outcome::Met => Ok(TrialPass::Met),
        Outcome::Missed => Err(format!(
            "fewer than the {} students asked for: {said}",
            t.students
        )),
        Outcome::Indeterminate => Ok(TrialPass::Indeterminate(format!(
            "indeterminate: the answer {range} straddles the {} students asked for: {said}",
            t.students
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(carries: u32, upper: u32) -> CapacityFound {
        CapacityFound {
            answers: vec![TierAnswer {
                tier: "relaxed".into(),
                carries,
                upper,
                at_least: false,
                confirmed: true,
                undecided: Vec::new(),
                first_miss: Some(upper + 1),
                floors_missed: Vec::new(),
                predicted: Some(carries),
                sentence: format!("relaxed: carries {carries} to {upper} students"),
                more_time: None,
            }],
            place: "the embedded twin of x in virtual time, 7 steps".into(),
        }
    }

    fn target(students: u32) -> CapacityTarget {
        CapacityTarget {
            tier: "relaxed".into(),
            students,
            targets: None,
        }
    }

    #[test]
    fn a_range_straddling_the_class_is_indeterminate_not_passed_or_failed() {
        assert_eq!(
            judge_target(&target(38), &found(38, 41)),
            Ok(TrialPass::Met)
        );
        let Ok(TrialPass::Indeterminate(why)) = judge_target(&target(40), &found(38, 41)) else {
            panic!("not indeterminate");
        };
        assert!(
            why.starts_with("indeterminate: the answer 38 to 41 straddles the 40 students asked for: relaxed: carries 38 to 41 students (the embedded twin of x in virtual time, 7 steps)"),
            "{why}"
        );
        let missed = judge_target(&target(42), &found(38, 41)).expect_err("missed");
        assert!(
            missed.starts_with("fewer than the 42 students asked for: relaxed: carries 38"),
            "{missed}"
        );
        let mut floors = found(40, 40);
        floors.answers[0].floors_missed = vec!["server output".into()];
        assert!(judge_target(&target(40), &floors).is_err());
    }
}
