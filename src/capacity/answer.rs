//! Each tier's answer from a finished search: the largest class met, the
//! range when sizes above it were too close to call or not tried, whether
//! a second hold confirmed it, the floors missed at it, and what more
//! server time would buy (plain functions).

use super::engine::Ended;
use super::judge::floors_missed;
use super::search::{Search, SearchBounds};
use super::text::{check_text, minutes, misses_text};
use codendum_core::bound::Outcome;
use codendum_core::results::capacity::{CapacityStep, PredictedTier, StepKind, TierAnswer};
use codendum_core::targets::ClassroomKey;

/// What the answers are made from.
pub struct Finished<'a> {
    /// The search as it ended.
    pub search: &'a Search,
    /// Its bounds.
    pub bounds: SearchBounds,
    /// Every step.
    pub steps: &'a [CapacityStep],
    /// The twin's answers, in the tiers' order.
    pub predicted: &'a [PredictedTier],
    /// Why the steps ended.
    pub ended: Ended,
    /// A step's cost (settling, window, its calls finishing), seconds.
    pub step_s: f64,
}

/// The answer of every tier, in the tiers' order.
pub fn answers(f: &Finished<'_>) -> Vec<TierAnswer> {
    f.search
        .tiers()
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let b = &t.bisection;
            let carries = b.answer();
            let at_least = b.reached_max();
            let first_miss = (b.hi <= b.max).then_some(b.hi);
            let judged_at = |users: u32| {
                f.steps
                    .iter()
                    .rev()
                    .filter(|s| s.users == users)
                    .find_map(|s| s.tier(&t.name))
            };
            let floors = judged_at(carries).map(floors_missed).unwrap_or_default();
            let mut a = TierAnswer {
                tier: t.name.clone(),
                carries,
                upper: if at_least { carries } else { b.upper() },
                at_least,
                confirmed: t.confirmed == Some(true),
                undecided: b.undecided(),
                first_miss,
                floors_missed: floors,
                predicted: f.predicted.get(i).map(|p| p.carries),
                sentence: String::new(),
                more_time: None,
            };
            a.sentence = sentence(&a, t.confirmed, first_miss.and_then(judged_at), f);
            a.more_time = more_time(&a, b.is_done(), f);
            a
        })
        .collect()
}

fn students(n: u32) -> String {
    if n == 1 {
        "1 student".into()
    } else {
        format!("{n} students")
    }
}

/// One sentence: `interactive: carries 23 students, confirmed by a second
/// hold; 24 missed TTFT P95 10.8 s (target ≤ 10.0 s); the twin predicted
/// 24.`
fn sentence(
    a: &TierAnswer,
    confirmed: Option<bool>,
    miss: Option<&codendum_core::results::capacity::TierStep>,
    f: &Finished<'_>,
) -> String {
    let mut s = format!("{}: ", a.tier);
    if a.at_least {
        s.push_str(&format!(
            "carries at least {} (the most the search considered)",
            students(a.carries)
        ));
    } else if a.carries == 0 && a.upper == 0 {
        s.push_str("even 1 student does not meet it");
    } else if a.upper > a.carries {
        s.push_str(&format!("carries {} to {}", a.carries, students(a.upper)));
        if a.carries > 0 {
            s.push_str(&format!(": {} met it", a.carries));
        }
        if !a.undecided.is_empty() {
            let list: Vec<String> = a.undecided.iter().map(u32::to_string).collect();
            s.push_str(&format!(
                "; {} too close to a target to call",
                list.join(", ")
            ));
        }
    } else {
        s.push_str(&format!("carries {}", students(a.carries)));
    }
    match confirmed {
        Some(true) if a.upper > a.carries => {
            s.push_str(&format!(", {} confirmed by a second hold", a.carries))
        }
        Some(true) => s.push_str(", confirmed by a second hold"),
        Some(false) => s.push_str(&format!(
            " (a second hold of the first answer did not meet it again, so the answer fell back to {})",
            a.carries
        )),
        None => {}
    }
    if let (Some(n), Some(step)) = (a.first_miss, miss) {
        let why = misses_text(step);
        if !why.is_empty() {
            s.push_str(&format!("; {n} missed {why}"));
        }
    }
    if !a.floors_missed.is_empty() && a.carries > 0 {
        let at = f
            .steps
            .iter()
            .rev()
            .filter(|st| st.users == a.carries)
            .find_map(|st| st.tier(&a.tier));
        let text: Vec<String> = at
            .map(|t| {
                t.checks
                    .iter()
                    .filter(|c| a.floors_missed.contains(&c.key))
                    .map(check_text)
                    .collect()
            })
            .unwrap_or_default();
        s.push_str(&format!(
            "; at {} it stays below its floor: {}",
            a.carries,
            text.join(", ")
        ));
    }
    if let Some(p) = a.predicted {
        s.push_str(&format!("; the twin predicted {p}"));
    }
    s.push('.');
    s
}

/// What more server time would buy, when the answer is not exact: more
/// steps to close a bracket left open at the budget, or a longer window
/// for a size too close to call.
fn more_time(a: &TierAnswer, closed: bool, f: &Finished<'_>) -> Option<String> {
    if !closed && !a.at_least {
        let gap = a.upper.saturating_sub(a.carries) + 1;
        let steps = f64::from(gap.max(2) / f.bounds.resolution.max(1))
            .log2()
            .ceil()
            .max(1.0) as u32;
        let why = match f.ended {
            Ended::Budget => "the search stopped at its server-time budget",
            Ended::StepCap => "the search stopped at its step limit",
            _ => "the search stopped early",
        };
        return Some(format!(
            "{why} with {}–{} open; about {steps} more steps ({}) would narrow it to {}",
            a.carries,
            a.upper,
            minutes(f64::from(steps) * f.step_s),
            match f.bounds.resolution {
                1 => "one student".to_string(),
                r => format!("{r} students"),
            }
        ));
    }
    let size = *a.undecided.first()?;
    let step = f
        .steps
        .iter()
        .rev()
        .find(|s| s.users == size && s.kind == StepKind::Probe)?;
    let tier = step.tier(&a.tier)?;
    let coding = tier.checks.iter().find(|c| {
        c.outcome == Outcome::Indeterminate && c.key == ClassroomKey::CodingRequestP50.name()
    });
    if let (Some(c), Some(b)) = (coding, step.censoring.p50_bounds_s) {
        // Half the coding requests of a window end within it once it is
        // about twice their median long.
        let window = (2.0 * b.lo.max(c.limit)).max(step.window_end_s - step.window_start_s);
        return Some(format!(
            "at {size} students {} of the window's coding requests were still running, so their median is only known to be at least {}; a window of about {} would decide it",
            step.censoring.running,
            minutes(b.lo),
            minutes(window)
        ));
    }
    Some(format!(
        "at {size} students a figure sat too close to its target to call with the calls measured; holding {size} students longer would narrow it"
    ))
}

#[cfg(test)]
mod tests {
    use super::super::search::rehearse;
    use super::*;
    use codendum_core::bound::Bound;
    use codendum_core::results::capacity::{Censoring, StepCheck, TierStep};
    use codendum_core::results::ClassroomSummary;

    fn step(index: u32, users: u32, kind: StepKind, met: bool) -> CapacityStep {
        let outcome = Outcome::from_met(met);
        CapacityStep {
            index,
            users,
            kind,
            changed_s: 0.0,
            settle_s: 60.0,
            window_start_s: 60.0,
            window_end_s: 240.0,
            ended_s: 260.0,
            unfinished: 0,
            holds: 1,
            measured: ClassroomSummary::default(),
            predicted: None,
            censoring: Censoring {
                completed: 0,
                running: 0,
                p50_bounds_s: None,
            },
            tiers: vec![TierStep {
                tier: "t".into(),
                outcome,
                checks: vec![StepCheck {
                    key: "ttft_p95_s".into(),
                    bound: Bound::Max,
                    limit: 10.0,
                    measured: Some(if met { 8.0 } else { 12.5 }),
                    interval: None,
                    outcome,
                    steers: true,
                }],
            }],
        }
    }

    #[test]
    fn an_exact_answer_names_its_first_miss_and_the_prediction() {
        let bounds = SearchBounds {
            max_users: 100,
            resolution: 1,
            confirm: true,
        };
        let mut search = Search::around(&[("t".to_string(), 24)], bounds);
        let plan = rehearse(search.clone(), |_, n| Outcome::from_met(n <= 23), 20);
        let mut steps = Vec::new();
        for (i, (n, kind)) in plan.iter().enumerate() {
            search.record(*n, *kind, &[Outcome::from_met(*n <= 23)]);
            steps.push(step(i as u32 + 1, *n, *kind, *n <= 23));
        }
        let predicted = [PredictedTier {
            tier: "t".into(),
            carries: 24,
            upper: 24,
        }];
        let a = answers(&Finished {
            search: &search,
            bounds,
            steps: &steps,
            predicted: &predicted,
            ended: Ended::Answered,
            step_s: 300.0,
        });
        assert_eq!((a[0].carries, a[0].upper, a[0].confirmed), (23, 23, true));
        assert_eq!(
            a[0].sentence,
            "t: carries 23 students, confirmed by a second hold; 24 missed TTFT P95 12.5 s (target ≤ 10.0 s); the twin predicted 24."
        );
        assert!(a[0].more_time.is_none());
    }

    #[test]
    fn a_bracket_left_open_at_the_budget_says_what_more_steps_would_buy() {
        let bounds = SearchBounds {
            max_users: 100,
            resolution: 1,
            confirm: true,
        };
        let mut search = Search::around(&[("t".to_string(), 40)], bounds);
        search.record(40, StepKind::Probe, &[Outcome::Met]);
        search.record(44, StepKind::Probe, &[Outcome::Missed]);
        let steps = [
            step(1, 40, StepKind::Probe, true),
            step(2, 44, StepKind::Probe, false),
        ];
        let a = answers(&Finished {
            search: &search,
            bounds,
            steps: &steps,
            predicted: &[],
            ended: Ended::Budget,
            step_s: 300.0,
        });
        assert_eq!((a[0].carries, a[0].upper), (40, 43));
        let more = a[0].more_time.clone().expect("what more time buys");
        assert!(
            more.contains("budget")
                && more.contains("2 more steps (10 min)")
                && more.contains("one student"),
            "{more}"
        );
        assert!(
            a[0].sentence
                .starts_with("t: carries 40 to 43 students: 40 met it"),
            "{}",
            a[0].sentence
        );
    }
}
