//! Bracketing and bisection over class sizes, as plain functions: the
//! largest `n` in `1..=max` whose targets are met, assuming they are met
//! up to some size and missed beyond it (more students only make a
//! ceiling harder to meet). `plan`'s search and `codendum capacity`'s live
//! search both use it.
//!
//! Each probe has one of three outcomes ([`Outcome`]): **met**, **missed**,
//! or **indeterminate** (the figures sit too close to a target for the
//! calls measured to tell). The bisection keeps `lo`, the largest size
//! met, `hi`, the smallest size missed above it, and the indeterminate
//! sizes between them; it closes when every gap between known sizes is at
//! most its resolution (1: exact). Its answer is `lo` for sure, and the
//! sizes up to `hi − 1` when those are undecided: a range.
//!
//! It starts one of two ways:
//!
//! - **Bounded** ([`Bisection::new`], `plan`): the bracket is `(0, max + 1)`
//!   from the start, as if zero students met every target and `max + 1`
//!   missed one, so `1..=200` takes at most 8 probes. When it closes at
//!   `(n, n + 1)` both ends were probed (unless they are the virtual 0 or
//!   `max + 1`): `n` met and `n + 1` did not.
//! - **Around a guess** ([`Bisection::around`], a predicted answer): the
//!   first probe is the guess (unless what is known already decides it:
//!   probes shared with another search); while no size has missed, the next probe
//!   goes up from the largest probed by the step, then by the distance
//!   from the guess (doubling: `g`, `g + d`, `g + 2d`, `g + 4d`, …), and
//!   while none has met it goes down the same way; once both sides are
//!   known it bisects. A good guess closes the search in a few probes.
//!
//! Which sizes are probed depends only on the outcomes, never on how many
//! probes run at once: [`Bisection::speculate`] only proposes sizes the
//! bisection *may* need next, so extra workers shorten the wall time
//! without changing the path.
//!
//! A bounded bisection may start from **hints** ([`Bisection::with_hints`]):
//! sizes probed before any midpoint while they lie inside the bracket, such
//! as an answer found already for another seed, two students either side
//! of it, then further out. The next probe is a pure function of what is
//! known, so the path still depends only on the outcomes; for a monotone
//! predicate the answer is the same as without hints, found with fewer (and
//! smaller) probes when the hints are close.

use std::collections::{BTreeMap, BTreeSet};

use codendum_core::bound::Outcome;

/// How a bisection starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// `(0, max + 1)` taken as known.
    Bounded,
    /// The first probe is `guess`; the bracket is found by steps of at
    /// least `step`.
    Around { guess: u32, step: u32 },
}

/// A bisection in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bisection {
    /// Largest size known to meet the targets; 0 when none is known.
    pub lo: u32,
    /// Smallest size above `lo` known to miss them; `max + 1` when none
    /// is known.
    pub hi: u32,
    /// The upper end of the search, students.
    pub max: u32,
    /// Indeterminate sizes between `lo` and `hi`.
    unsure: BTreeSet<u32>,
    /// Every size met so far, for a confirmation that falls through.
    met: BTreeSet<u32>,
    start: Start,
    /// The widest gap left open when the search closes (1: exact).
    resolution: u32,
    /// Sizes to probe first, in order, while they lie inside the bracket.
    pub hints: Vec<u32>,
}

impl Bisection {
    /// A bounded search over `1..=max` (`max` at least 1), exact.
    pub fn new(max: u32) -> Self {
        let max = max.max(1);
        Bisection {
            lo: 0,
            hi: max + 1,
            max,
            unsure: BTreeSet::new(),
            met: BTreeSet::new(),
            start: Start::Bounded,
            resolution: 1,
            hints: Vec::new(),
        }
    }

    /// A bounded, exact search over `1..=max` that probes `hints` first
    /// (see the module documentation).
    pub fn with_hints(max: u32, hints: Vec<u32>) -> Self {
        Bisection {
            hints,
            ..Bisection::new(max)
        }
    }

    /// A search over `1..=max` that starts at `guess` and finds its bracket
    /// in steps of at least `step` students, closing when every gap is at
    /// most `resolution` students wide (each at least 1).
    pub fn around(guess: u32, step: u32, max: u32, resolution: u32) -> Self {
        let max = max.max(1);
        Bisection {
            start: Start::Around {
                guess: guess.clamp(1, max),
                step: step.max(1),
            },
            resolution: resolution.max(1),
            ..Bisection::new(max)
        }
    }

    /// The widest gap the search leaves open, students.
    pub fn resolution(&self) -> u32 {
        self.resolution
    }

    /// Whether a size is known to meet the targets (the virtual 0 of a
    /// bounded search counts).
    fn lo_known(&self) -> bool {
        self.lo > 0 || self.start == Start::Bounded
    }

    /// Whether a size is known to miss them (the virtual `max + 1` of a
    /// bounded search counts).
    fn hi_known(&self) -> bool {
        self.hi <= self.max || self.start == Start::Bounded
    }

    /// The size to probe next; `None` when the search is closed.
    pub fn next(&self) -> Option<u32> {
        if let Start::Around { guess, step } = self.start {
            let probed_top = self.unsure.last().copied().unwrap_or(0).max(self.lo);
            let probed_bottom = self.unsure.first().copied().unwrap_or(self.hi).min(self.hi);
            // The guess first, while nothing known decides it.
            if guess > self.lo && guess < self.hi && !self.unsure.contains(&guess) {
                return Some(guess);
            }
            if !self.hi_known() && probed_top > 0 && probed_top < self.max {
                let by = step.max(probed_top.saturating_sub(guess));
                return Some(probed_top.saturating_add(by).min(self.max));
            }
            if !self.lo_known() && probed_bottom <= self.max && probed_bottom > 1 {
                let by = step.max(guess.saturating_sub(probed_bottom));
                return Some(probed_bottom.saturating_sub(by).max(1));
            }
        }
        if let Some(h) = self.hint_in(self.lo, self.hi) {
            if !self.unsure.contains(&h) {
                return Some(h);
            }
        }
        self.next_in_gaps()
    }

    /// The first hint inside the bracket `(lo, hi)`, if any.
    fn hint_in(&self, lo: u32, hi: u32) -> Option<u32> {
        self.hints.iter().copied().find(|h| *h > lo && *h < hi)
    }

    /// The size to probe in the bracket `(lo, hi)`: the first hint inside
    /// it, else its midpoint; `None` when it is closed.
    fn next_in(&self, lo: u32, hi: u32) -> Option<u32> {
        midpoint(lo, hi)?;
        self.hint_in(lo, hi).or_else(|| midpoint(lo, hi))
    }

    /// The midpoint of the widest gap between known sizes that is wider
    /// than the resolution (the lower one of two alike).
    fn next_in_gaps(&self) -> Option<u32> {
        let mut edges = vec![self.lo];
        edges.extend(self.unsure.iter().copied());
        edges.push(self.hi);
        let mut best: Option<(u32, u32)> = None;
        for w in edges.windows(2) {
            let (a, b) = (w[0], w[1]);
            // An unknown end of an unbounded search is no gap to bisect:
            // the bracketing above has already closed that side.
            if (a == 0 && !self.lo_known()) || (b > self.max && !self.hi_known()) {
                continue;
            }
            if b - a > self.resolution && best.is_none_or(|(x, y)| b - a > y - x) {
                best = Some((a, b));
            }
        }
        best.and_then(|(a, b)| midpoint(a, b))
    }

    /// Records the outcome for `users`; a size outside `(lo, hi)` says
    /// nothing new and is left out. Returns whether it was used.
    pub fn record_outcome(&mut self, users: u32, outcome: Outcome) -> bool {
        if users <= self.lo || users >= self.hi {
            return false;
        }
        match outcome {
            Outcome::Met => {
                self.lo = users;
                self.met.insert(users);
                self.unsure.retain(|u| *u > users);
            }
            Outcome::Missed => {
                self.hi = users;
                self.unsure.retain(|u| *u < users);
            }
            Outcome::Indeterminate => {
                self.unsure.insert(users);
            }
        }
        true
    }

    /// Records whether `users` met the targets (met or missed).
    pub fn record(&mut self, users: u32, meets: bool) {
        self.record_outcome(users, Outcome::from_met(meets));
    }

    /// Records a second hold of the answer `lo`: met confirms it; otherwise
    /// the answer falls back to the largest size met below it (none: 0),
    /// and `lo` becomes undecided (indeterminate) or the first miss
    /// (missed), which may reopen the search. Returns whether it confirmed.
    pub fn confirm(&mut self, users: u32, outcome: Outcome) -> bool {
        if users != self.lo || users == 0 {
            return false;
        }
        if outcome == Outcome::Met {
            return true;
        }
        self.met.remove(&users);
        self.lo = self.met.last().copied().unwrap_or(0);
        match outcome {
            Outcome::Missed => {
                self.hi = users;
                self.unsure.retain(|u| *u < users);
            }
            _ => {
                self.unsure.insert(users);
            }
        }
        false
    }

    /// Whether the search is closed.
    pub fn is_done(&self) -> bool {
        self.next().is_none()
    }

    /// The answer: the largest size known to meet the targets (0: none,
    /// even one student does not surely meet them).
    pub fn answer(&self) -> u32 {
        self.lo
    }

    /// The largest size not known to miss: `hi − 1` (the answer's upper
    /// end when sizes between are undecided or not tried).
    pub fn upper(&self) -> u32 {
        self.hi.saturating_sub(1).max(self.lo)
    }

    /// The indeterminate sizes between the answer and the first miss.
    pub fn undecided(&self) -> Vec<u32> {
        self.unsure.iter().copied().collect()
    }

    /// Whether even `max` met the targets (the answer is "at least
    /// `max`").
    pub fn reached_max(&self) -> bool {
        self.lo >= self.max
    }

    /// Up to `slots` sizes the bisection may need, in the order it would
    /// need them: the next probe first, then the bisection tree below it
    /// breadth first, the smaller (cheaper) half before the larger. Sizes
    /// in `known` are skipped.
    pub fn speculate(&self, slots: usize, known: &BTreeMap<u32, Outcome>) -> Vec<u32> {
        let mut out = Vec::new();
        let Some(first) = self.next() else {
            return out;
        };
        if !known.contains_key(&first) {
            out.push(first);
        }
        let mut queue = std::collections::VecDeque::from([(self.lo, first), (first, self.hi)]);
        while let Some((lo, hi)) = queue.pop_front() {
            if out.len() >= slots {
                break;
            }
            let Some(m) = self.next_in(lo, hi) else {
                continue;
            };
            if !known.contains_key(&m) && !out.contains(&m) {
                out.push(m);
            }
            queue.push_back((lo, m));
            queue.push_back((m, hi));
        }
        out.truncate(slots);
        out
    }

    /// Records every known outcome the bisection needs next, in its order;
    /// returns the sizes consumed (the path's next steps).
    pub fn advance(&mut self, known: &BTreeMap<u32, Outcome>) -> Vec<u32> {
        let mut used = Vec::new();
        while let Some(m) = self.next() {
            let Some(&outcome) = known.get(&m) else { break };
            self.record_outcome(m, outcome);
            used.push(m);
        }
        used
    }
}

fn midpoint(lo: u32, hi: u32) -> Option<u32> {
    (hi > lo + 1).then(|| lo + (hi - lo) / 2)
}

/// Hints around a size `around` found already or guessed: two below,
/// three above, then further out on alternate sides, each step about twice
/// the last (5, 7, 11, 15, 23, 31, …), kept within `1..=max`. A size found
/// for one seed is usually within a few students of another seed's, so the
/// first two probes bracket it; a guess far off costs a probe per doubling.
pub fn hints_around(around: u32, max: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let (mut below, mut above) = (2u32, 3u32);
    while out.len() < 48 {
        let down = around.checked_sub(below).filter(|d| *d >= 1);
        let up = around.checked_add(above).filter(|u| *u <= max);
        if down.is_none() && up.is_none() {
            break;
        }
        out.extend(down);
        out.extend(up);
        below = below.saturating_mul(2).saturating_add(1);
        above = above.saturating_mul(2).saturating_add(1);
    }
    out
}

/// Bisects `1..=max` with `meets`, one probe at a time. Returns the answer
/// (0: even one fails) and the probes in order, each with its answer.
pub fn bisect(max: u32, mut meets: impl FnMut(u32) -> bool) -> (u32, Vec<(u32, bool)>) {
    let mut b = Bisection::new(max);
    let mut path = Vec::new();
    while let Some(m) = b.next() {
        let ok = meets(m);
        b.record(m, ok);
        path.push((m, ok));
    }
    (b.answer(), path)
}

/// Searches around `guess` with `probe`, one probe at a time. Returns the
/// closed bisection and the probes in order, each with its outcome.
pub fn search_around(
    mut b: Bisection,
    mut probe: impl FnMut(u32) -> Outcome,
) -> (Bisection, Vec<(u32, Outcome)>) {
    let mut path = Vec::new();
    while let Some(m) = b.next() {
        let o = probe(m);
        b.record_outcome(m, o);
        path.push((m, o));
    }
    (b, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_threshold_of_every_monotone_predicate() {
        for max in [1, 2, 3, 7, 200] {
            for limit in 0..=max + 3 {
                let (n, path) = bisect(max, |u| u <= limit);
                assert_eq!(n, limit.min(max), "max {max} limit {limit}");
                let probes = path.len() as f64;
                assert!(probes <= f64::from(max + 1).log2().ceil(), "{path:?}");
                let tried = |u: u32| path.iter().find(|(x, _)| *x == u).map(|(_, ok)| *ok);
                if n > 0 {
                    assert_eq!(tried(n), Some(true), "{path:?}");
                }
                if n < max {
                    assert_eq!(tried(n + 1), Some(false), "{path:?}");
                }
            }
        }
    }

    #[test]
    fn the_first_probes_of_one_to_two_hundred() {
        let (n, path) = bisect(200, |u| u <= 44);
        assert_eq!(n, 44);
        let sizes: Vec<u32> = path.iter().map(|(u, _)| *u).collect();
        assert_eq!(sizes, [100, 50, 25, 37, 43, 46, 44, 45]);
        let (n, path) = bisect(200, |_| false);
        assert_eq!((n, path.last().copied()), (0, Some((1, false))));
        let (n, path) = bisect(200, |_| true);
        assert_eq!((n, path.last().copied()), (200, Some((200, true))));
    }

    /// Bisects `1..=max` with hints, one probe at a time (as [`bisect`]).
    fn bisect_with(max: u32, hints: Vec<u32>, meets: impl Fn(u32) -> bool) -> (u32, Vec<u32>) {
        let mut b = Bisection::with_hints(max, hints);
        let mut path = Vec::new();
        while let Some(m) = b.next() {
            b.record(m, meets(m));
            path.push(m);
        }
        (b.answer(), path)
    }

    #[test]
    fn hints_give_the_same_answer_with_fewer_probes() {
        for limit in 0..=205 {
            let (plain, plain_path) = bisect(200, |u| u <= limit);
            let (hinted, path) = bisect_with(200, hints_around(40, 200), |u| u <= limit);
            assert_eq!(hinted, plain, "limit {limit}");
            let (far, _) = bisect_with(200, hints_around(150, 200), |u| u <= limit);
            assert_eq!(far, plain, "limit {limit}");
            if (38..=42).contains(&limit) {
                assert!(path.len() <= 5, "{limit}: {path:?}");
                assert!(path.len() < plain_path.len(), "{limit}: {path:?}");
            }
        }
        // 38 met and 43 missed close the bracket to four sizes.
        let (n, path) = bisect_with(200, hints_around(40, 200), |u| u <= 41);
        assert_eq!((n, &path[..2]), (41, &[38, 43][..]));
        assert_eq!(hints_around(40, 200)[..6], [38, 43, 35, 47, 29, 55]);
        assert_eq!(hints_around(1, 200)[..2], [4, 8]);
    }

    #[test]
    fn speculation_follows_the_hints() {
        let limit = 36;
        let mut b = Bisection::with_hints(200, hints_around(40, 200));
        let mut known = BTreeMap::new();
        let mut path = Vec::new();
        while !b.is_done() {
            for u in b.speculate(3, &known) {
                known.insert(u, Outcome::from_met(u <= limit));
            }
            path.extend(b.advance(&known));
        }
        let (n, plain) = bisect_with(200, hints_around(40, 200), |u| u <= limit);
        assert_eq!((b.answer(), path), (n, plain));
    }

    #[test]
    fn speculation_never_changes_the_path() {
        let limit = 61;
        for slots in 1..=7 {
            let mut b = Bisection::new(200);
            let mut known = BTreeMap::new();
            let mut path = Vec::new();
            let mut rounds = 0;
            while !b.is_done() {
                let probes = b.speculate(slots, &known);
                assert!(!probes.is_empty() && probes.len() <= slots);
                assert_eq!(probes[0], b.next().expect("open"));
                for u in probes {
                    known.insert(u, Outcome::from_met(u <= limit));
                }
                path.extend(b.advance(&known));
                rounds += 1;
            }
            let (n, plain) = bisect(200, |u| u <= limit);
            assert_eq!(b.answer(), n);
            assert_eq!(path, plain.iter().map(|(u, _)| *u).collect::<Vec<_>>());
            if slots >= 3 {
                assert!(rounds < plain.len(), "{slots} slots took {rounds} rounds");
            }
        }
    }

    fn sizes(path: &[(u32, Outcome)]) -> Vec<u32> {
        path.iter().map(|(u, _)| *u).collect()
    }

    #[test]
    fn a_good_guess_closes_in_a_few_probes() {
        // The truth is 42; guessed 40 with steps of 4.
        let (b, path) = search_around(Bisection::around(40, 4, 200, 1), |u| {
            Outcome::from_met(u <= 42)
        });
        assert_eq!(sizes(&path), [40, 44, 42, 43]);
        assert_eq!((b.answer(), b.upper()), (42, 42));
        // Guessed too high: down from the guess, doubling.
        let (b, path) = search_around(Bisection::around(40, 4, 200, 1), |u| {
            Outcome::from_met(u <= 29)
        });
        assert_eq!(sizes(&path), [40, 36, 32, 24, 28, 30, 29]);
        assert_eq!(b.answer(), 29);
        // Up by doubling distances from the guess.
        let (_, path) = search_around(Bisection::around(10, 2, 200, 1), |u| {
            Outcome::from_met(u <= 30)
        });
        assert_eq!(&sizes(&path)[..5], [10, 12, 14, 18, 26]);
    }

    #[test]
    fn an_around_search_finds_every_threshold_and_its_edges() {
        for guess in [1, 5, 17, 40, 60] {
            for truth in 0..=60 {
                let (b, path) = search_around(Bisection::around(guess, 3, 60, 1), |u| {
                    Outcome::from_met(u <= truth)
                });
                assert_eq!(b.answer(), truth, "guess {guess} truth {truth}: {path:?}");
                let tried = |u: u32| path.iter().find(|(x, _)| *x == u).map(|(_, o)| *o);
                if truth > 0 {
                    assert_eq!(tried(truth), Some(Outcome::Met));
                }
                if truth < 60 {
                    assert_eq!(tried(truth + 1), Some(Outcome::Missed));
                }
                assert_eq!(b.reached_max(), truth == 60);
            }
        }
    }

    #[test]
    fn a_coarser_resolution_leaves_a_range() {
        let (b, path) = search_around(Bisection::around(40, 4, 200, 2), |u| {
            Outcome::from_met(u <= 42)
        });
        assert_eq!(sizes(&path), [40, 44, 42]);
        assert_eq!((b.answer(), b.upper()), (42, 43));
    }

    #[test]
    fn indeterminate_sizes_are_bracketed_from_both_sides() {
        // 41..=43 cannot be called; 40 and below meet, 44 and above miss.
        let truth = |u: u32| match u {
            0..=40 => Outcome::Met,
            41..=43 => Outcome::Indeterminate,
            _ => Outcome::Missed,
        };
        let (b, path) = search_around(Bisection::around(42, 4, 200, 1), truth);
        assert_eq!(b.answer(), 40, "{path:?}");
        assert_eq!(b.upper(), 43);
        assert!(b.undecided().contains(&42));
        assert_eq!(path.first(), Some(&(42, Outcome::Indeterminate)));
        // Everything undecided: the answer is 0 and the range the whole span.
        let (b, _) = search_around(Bisection::around(5, 2, 10, 1), |_| Outcome::Indeterminate);
        assert_eq!((b.answer(), b.upper()), (0, 10));
    }

    #[test]
    fn a_confirmation_that_fails_falls_back_and_reopens() {
        let (mut b, _) = search_around(Bisection::around(40, 4, 200, 1), |u| {
            Outcome::from_met(u <= 42)
        });
        assert_eq!(b.answer(), 42);
        assert!(b.confirm(42, Outcome::Met));
        assert!(!b.confirm(42, Outcome::Missed));
        assert_eq!((b.answer(), b.hi), (40, 42));
        assert_eq!(b.next(), Some(41));
        let (mut b, _) = search_around(Bisection::around(40, 4, 200, 1), |u| {
            Outcome::from_met(u <= 42)
        });
        assert!(!b.confirm(42, Outcome::Indeterminate));
        assert_eq!((b.answer(), b.upper(), b.undecided()), (40, 42, vec![42]));
    }
}
