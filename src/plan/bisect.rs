//! Bisection over class sizes, as plain functions: the largest `n` in
//! `1..=max` whose predicate holds, assuming the predicate holds up to some
//! size and fails beyond it (more students only make the ceilings harder to
//! meet).
//!
//! The bracket starts as `(0, max + 1)`: zero students trivially meet every
//! ceiling, and `max + 1` is treated as failing without being tried. Each
//! probe halves it, so `1..=200` takes at most 8 probes. When the bracket
//! closes at `(n, n + 1)`, both ends were probed (unless they are the
//! virtual 0 or `max + 1`): `n` met the predicate and `n + 1` did not.
//!
//! Which sizes are probed depends only on the predicate's answers, never on
//! how many probes run at once: [`Bisection::speculate`] only proposes
//! sizes the bisection *may* need next, so extra workers shorten the wall
//! time without changing the path.
//!
//! A bisection may start from **hints** ([`Bisection::with_hints`]): sizes
//! probed before any midpoint while they lie inside the bracket, such as an
//! answer found already for another seed, two students either side of it,
//! then further out. The next probe is a pure function of the bracket, so
//! the path still depends only on the answers; for a monotone predicate the
//! answer is the same as without hints, found with fewer (and smaller)
//! probes when the hints are close.

use std::collections::BTreeMap;

/// A bisection in progress: `lo` met the predicate (0: none tried yet),
/// `hi` failed it (`max + 1`: none tried yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bisection {
    /// Largest size known to meet the predicate; 0 when none is known.
    pub lo: u32,
    /// Smallest size known to fail it; `max + 1` when none is known.
    pub hi: u32,
    /// The upper end of the search, students.
    pub max: u32,
    /// Sizes to probe first, in order, while they lie inside the bracket.
    pub hints: Vec<u32>,
}

impl Bisection {
    /// A search over `1..=max` (`max` at least 1).
    pub fn new(max: u32) -> Self {
        let max = max.max(1);
        Bisection {
            lo: 0,
            hi: max + 1,
            max,
            hints: Vec::new(),
        }
    }

    /// A search over `1..=max` that probes `hints` first (see the module
    /// documentation).
    pub fn with_hints(max: u32, hints: Vec<u32>) -> Self {
        Bisection {
            hints,
            ..Bisection::new(max)
        }
    }

    /// The size to probe next; `None` when the bracket is closed.
    pub fn next(&self) -> Option<u32> {
        self.next_in(self.lo, self.hi)
    }

    /// The size to probe in the bracket `(lo, hi)`: the first hint inside
    /// it, else its midpoint; `None` when it is closed.
    fn next_in(&self, lo: u32, hi: u32) -> Option<u32> {
        midpoint(lo, hi)?;
        self.hints
            .iter()
            .copied()
            .find(|h| *h > lo && *h < hi)
            .or_else(|| midpoint(lo, hi))
    }

    /// Records the answer for `users` (the size [`Bisection::next`] gave).
    pub fn record(&mut self, users: u32, meets: bool) {
        if users > self.lo && users < self.hi {
            if meets {
                self.lo = users;
            } else {
                self.hi = users;
            }
        }
    }

    /// Whether the bracket is closed.
    pub fn is_done(&self) -> bool {
        self.next().is_none()
    }

    /// The answer once closed: the largest size meeting the predicate
    /// (0: even one student fails).
    pub fn answer(&self) -> u32 {
        self.lo
    }

    /// Whether even `max` met the predicate (the answer is "at least
    /// `max`").
    pub fn reached_max(&self) -> bool {
        self.lo >= self.max
    }

    /// Up to `slots` sizes the bisection may need, in the order it would
    /// need them: the next probe first, then the bisection tree below it
    /// breadth first, the smaller (cheaper) half before the larger. Sizes
    /// in `known` are skipped.
    pub fn speculate(&self, slots: usize, known: &BTreeMap<u32, bool>) -> Vec<u32> {
        let mut out = Vec::new();
        let mut queue = std::collections::VecDeque::from([(self.lo, self.hi)]);
        while let Some((lo, hi)) = queue.pop_front() {
            if out.len() >= slots {
                break;
            }
            let Some(m) = self.next_in(lo, hi) else {
                continue;
            };
            if !known.contains_key(&m) {
                out.push(m);
            }
            queue.push_back((lo, m));
            queue.push_back((m, hi));
        }
        out
    }

    /// Records every known answer the bisection needs next, in its order;
    /// returns the sizes consumed (the path's next steps).
    pub fn advance(&mut self, known: &BTreeMap<u32, bool>) -> Vec<u32> {
        let mut used = Vec::new();
        while let Some(m) = self.next() {
            let Some(&meets) = known.get(&m) else { break };
            self.record(m, meets);
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
                known.insert(u, u <= limit);
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
                    known.insert(u, u <= limit);
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
}
