//! Which class size the search tries next, for every tier at once (plain,
//! no I/O).
//!
//! Each tier has a bisection ([`crate::plan::bisect::Bisection`]) around
//! its predicted answer. A step is one class size measured once and judged
//! by every tier, so every tier learns from every step. The tiers are
//! searched one after the other, the one predicted to carry the fewest
//! first (the class grows as the search goes); a tier whose bisection is
//! closed waits. Once every bisection is closed, each tier's answer is held
//! once more to confirm it (the largest first, so the class shrinks): met
//! again confirms it; otherwise the answer falls back to the size met
//! below it, which may reopen the search.

use codendum_core::bound::Outcome;
use codendum_core::results::capacity::StepKind;

use crate::plan::bisect::Bisection;

/// How a search is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchBounds {
    /// The largest class considered, students.
    pub max_users: u32,
    /// The widest gap left between a size met and one missed, students.
    pub resolution: u32,
    /// Whether each tier's answer is held once more at the end.
    pub confirm: bool,
}

/// The resolution for a class predicted at `students`: exact up to 20
/// students, else a twentieth of the class (40 → 2).
pub fn default_resolution(students: u32) -> u32 {
    if students <= 20 {
        1
    } else {
        students.div_ceil(20)
    }
}

/// The first bracketing step around a guess: a tenth of it, at least the
/// resolution.
pub fn bracket_step(guess: u32, resolution: u32) -> u32 {
    (guess / 10).max(resolution).max(1)
}

/// One tier's search.
#[derive(Debug, Clone, PartialEq)]
pub struct TierSearch {
    /// The tier's name.
    pub name: String,
    /// Its bisection.
    pub bisection: Bisection,
    /// Its answer's confirmation: `None` not held again yet.
    pub confirmed: Option<bool>,
}

/// The search over every tier.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    tiers: Vec<TierSearch>,
    /// Tier indices, the smallest guess first.
    order: Vec<usize>,
    confirm: bool,
}

impl Search {
    /// A search around each tier's guess (`tiers`: name and predicted
    /// answer, students).
    pub fn around(tiers: &[(String, u32)], bounds: SearchBounds) -> Search {
        let searches: Vec<TierSearch> = tiers
            .iter()
            .map(|(name, guess)| {
                let guess = (*guess).clamp(1, bounds.max_users.max(1));
                TierSearch {
                    name: name.clone(),
                    bisection: Bisection::around(
                        guess,
                        bracket_step(guess, bounds.resolution),
                        bounds.max_users,
                        bounds.resolution,
                    ),
                    confirmed: None,
                }
            })
            .collect();
        let mut order: Vec<usize> = (0..searches.len()).collect();
        order.sort_by_key(|i| tiers[*i].1);
        Search {
            tiers: searches,
            order,
            confirm: bounds.confirm,
        }
    }

    /// A bounded search over `1..=max_users` for each tier, exact and
    /// without confirmations (the twin's own search, which has no guess).
    pub fn bounded(names: &[String], max_users: u32) -> Search {
        Search {
            tiers: names
                .iter()
                .map(|name| TierSearch {
                    name: name.clone(),
                    bisection: Bisection::new(max_users),
                    confirmed: None,
                })
                .collect(),
            order: (0..names.len()).collect(),
            confirm: false,
        }
    }

    /// Every tier's search, in the tiers' order.
    pub fn tiers(&self) -> &[TierSearch] {
        &self.tiers
    }

    /// The next step: a size a tier's bisection needs, else an answer to
    /// hold again; `None` when the search is over.
    pub fn next(&self) -> Option<(u32, StepKind)> {
        for &i in &self.order {
            if let Some(n) = self.tiers[i].bisection.next() {
                return Some((n, StepKind::Probe));
            }
        }
        if !self.confirm {
            return None;
        }
        self.tiers
            .iter()
            .filter(|t| t.confirmed.is_none() && t.bisection.answer() > 0)
            .map(|t| t.bisection.answer())
            .max()
            .map(|n| (n, StepKind::Confirm))
    }

    /// For each tier (in the tiers' order), whether the outcome of a step
    /// of `users` students moves its search: a size inside its open
    /// bracket, or its answer held again.
    pub fn decides(&self, users: u32, kind: StepKind) -> Vec<bool> {
        self.tiers
            .iter()
            .map(|t| {
                let b = &t.bisection;
                let held_again =
                    kind == StepKind::Confirm && t.confirmed.is_none() && b.answer() == users;
                held_again || (users > b.lo && users < b.hi)
            })
            .collect()
    }

    /// Records a step of `users` students and each tier's outcome (in the
    /// tiers' order).
    pub fn record(&mut self, users: u32, kind: StepKind, outcomes: &[Outcome]) {
        for (t, &outcome) in self.tiers.iter_mut().zip(outcomes) {
            let held_again =
                kind == StepKind::Confirm && t.confirmed.is_none() && t.bisection.answer() == users;
            if held_again {
                t.confirmed = Some(t.bisection.confirm(users, outcome));
            } else {
                t.bisection.record_outcome(users, outcome);
            }
        }
    }
}

/// The steps a search takes when each tier's outcome at each size is
/// `truth(tier, users)`, at most `cap` of them.
pub fn rehearse(
    mut search: Search,
    truth: impl Fn(usize, u32) -> Outcome,
    cap: usize,
) -> Vec<(u32, StepKind)> {
    let mut steps = Vec::new();
    while let Some((n, kind)) = search.next() {
        if steps.len() >= cap {
            break;
        }
        let outcomes: Vec<Outcome> = (0..search.tiers.len()).map(|i| truth(i, n)).collect();
        search.record(n, kind, &outcomes);
        steps.push((n, kind));
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(max_users: u32, resolution: u32) -> SearchBounds {
        SearchBounds {
            max_users,
            resolution,
            confirm: true,
        }
    }

    fn tiers(list: &[(&str, u32)]) -> Vec<(String, u32)> {
        list.iter().map(|(n, g)| (n.to_string(), *g)).collect()
    }

    #[test]
    fn two_tiers_share_their_steps_and_confirm_each_answer() {
        // interactive truly carries 23, relaxed 41; predicted 24 and 40.
        let truth = |tier: usize, n: u32| Outcome::from_met(n <= [23, 41][tier]);
        let s = Search::around(
            &tiers(&[("interactive", 24), ("relaxed", 40)]),
            bounds(200, 1),
        );
        let steps = rehearse(s.clone(), truth, 50);
        let sizes: Vec<u32> = steps.iter().map(|(n, _)| *n).collect();
        assert_eq!(sizes, [24, 22, 23, 40, 44, 42, 41, 41, 23]);
        assert_eq!(steps[7].1, StepKind::Confirm);
        // Replayed to its end: the answers and their confirmations.
        let mut s = s;
        for (n, kind) in &steps {
            let o: Vec<Outcome> = (0..2).map(|t| truth(t, *n)).collect();
            s.record(*n, *kind, &o);
        }
        assert!(s.next().is_none());
        let answers: Vec<(u32, Option<bool>)> = s
            .tiers()
            .iter()
            .map(|t| (t.bisection.answer(), t.confirmed))
            .collect();
        assert_eq!(answers, [(23, Some(true)), (41, Some(true))]);
    }

    #[test]
    fn a_forty_student_class_takes_few_steps() {
        for truth in [30, 36, 38, 40, 42, 44, 50] {
            let s = Search::around(&tiers(&[("t", 40)]), bounds(200, default_resolution(40)));
            let steps = rehearse(s, |_, n| Outcome::from_met(n <= truth), 50);
            assert!(steps.len() <= 7, "truth {truth}: {steps:?}");
        }
    }

    #[test]
    fn a_failed_confirmation_is_not_held_again() {
        // 10 meets on its first hold and misses on its second.
        let mut s = Search::around(&tiers(&[("t", 10)]), bounds(50, 1));
        let mut held = 0;
        let mut steps = 0;
        while let Some((n, kind)) = s.next() {
            steps += 1;
            assert!(steps < 30, "the search ends");
            let met = if n == 10 {
                held += 1;
                held == 1
            } else {
                n < 10
            };
            s.record(n, kind, &[Outcome::from_met(met)]);
        }
        let t = &s.tiers()[0];
        assert_eq!((t.bisection.answer(), t.confirmed), (9, Some(false)));
    }

    #[test]
    fn resolutions_and_steps_follow_the_class_size() {
        assert_eq!(default_resolution(12), 1);
        assert_eq!(default_resolution(40), 2);
        assert_eq!(default_resolution(200), 10);
        assert_eq!(bracket_step(40, 2), 4);
        assert_eq!(bracket_step(8, 1), 1);
    }
}
