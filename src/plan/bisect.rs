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

use std::collections::BTreeMap;

/// A bisection in progress: `lo` met the predicate (0: none tried yet),
/// `hi` failed it (`max + 1`: none tried yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bisection {
    /// Largest size known to meet the predicate; 0 when none is known.
    pub lo: u32,
    /// Smallest size known to fail it; `max + 1` when none is known.
    pub hi: u32,
    /// The upper end of the search, students.
    pub max: u32,
}

impl Bisection {
    /// A search over `1..=max` (`max` at least 1).
    pub fn new(max: u32) -> Self {
        let max = max.max(1);
        Bisection {
            lo: 0,
            hi: max + 1,
            max,
        }
    }

    /// The size to probe next; `None` when the bracket is closed.
    pub fn next(&self) -> Option<u32> {
        midpoint(self.lo, self.hi)
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
            let Some(m) = midpoint(lo, hi) else { continue };
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
