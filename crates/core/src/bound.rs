//! The one judging rule of a figure against a limit, below everything that
//! judges (a level's SLO share, a run's verdict, `[targets]`, `plan`, the
//! capacity suite, `calibrate --check`):
//!
//! - [`Bound`]: whether a limit is a ceiling or a floor;
//! - [`Bound::judge`]: a figure with its 95 % interval is **met** when the
//!   whole interval is on the right side of the limit, **missed** when the
//!   whole interval is on the wrong side, and **indeterminate** when the
//!   interval straddles the limit (the data cannot tell which side the true
//!   value is on). A figure without an interval (a count, a peak) is judged
//!   by its value alone; a figure that was not measured is missed;
//! - [`Outcome`]: met, indeterminate or missed, ordered by how bad.

use serde::{Deserialize, Serialize};

/// Whether a target is a ceiling or a floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The figure must not exceed the limit.
    Max,
    /// The figure must not fall below the limit.
    Min,
}

/// How a figure fares against a limit ([`Bound::judge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The figure, and its whole interval, are on the right side.
    Met,
    /// The interval straddles the limit: the data cannot tell.
    Indeterminate,
    /// The figure, and its whole interval, are on the wrong side (or it
    /// was not measured).
    Missed,
}

impl Outcome {
    /// `met`, `indeterminate` or `missed`.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Met => "met",
            Outcome::Indeterminate => "indeterminate",
            Outcome::Missed => "missed",
        }
    }

    /// Whether the outcome is [`Outcome::Met`].
    pub fn is_met(self) -> bool {
        self == Outcome::Met
    }

    /// The worst of several outcomes (missed over indeterminate over met);
    /// met for none.
    pub fn worst(outcomes: impl IntoIterator<Item = Outcome>) -> Outcome {
        outcomes.into_iter().fold(Outcome::Met, |a, b| a.max(b))
    }
}

impl PartialOrd for Outcome {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Outcome {
    /// Met < indeterminate < missed: the order of how bad it is.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let rank = |o: &Outcome| match o {
            Outcome::Met => 0,
            Outcome::Indeterminate => 1,
            Outcome::Missed => 2,
        };
        rank(self).cmp(&rank(other))
    }
}

impl Outcome {
    /// Met when `met`, else missed: a judgement by the value alone.
    pub fn from_met(met: bool) -> Outcome {
        if met {
            Outcome::Met
        } else {
            Outcome::Missed
        }
    }
}

impl Bound {
    /// Whether `figure` meets `limit` (both in the target's unit) by its
    /// value alone. A figure that could not be measured (`None`) does not
    /// meet its target.
    pub fn is_met(self, figure: Option<f64>, limit: f64) -> bool {
        figure.is_some_and(|v| match self {
            Bound::Max => v <= limit,
            Bound::Min => v >= limit,
        })
    }

    /// The one judging rule (see the module documentation): `figure` with
    /// its 95 % `interval` against `limit`. Without an interval the value
    /// decides (met or missed); an open bound reaches past any limit on its
    /// side. Not measured: missed.
    pub fn judge(
        self,
        figure: Option<f64>,
        interval: Option<crate::stats::Interval>,
        limit: f64,
    ) -> Outcome {
        let Some(value) = figure else {
            return Outcome::Missed;
        };
        let Some(i) = interval else {
            return if self.is_met(Some(value), limit) {
                Outcome::Met
            } else {
                Outcome::Missed
            };
        };
        // The bound on the limit's side, and the one away from it.
        let (near, far) = match self {
            Bound::Max => (i.hi, i.lo),
            Bound::Min => (i.lo, i.hi),
        };
        let within = |x: f64| match self {
            Bound::Max => x <= limit,
            Bound::Min => x >= limit,
        };
        if near.is_some_and(within) && within(value) {
            Outcome::Met
        } else if far.is_some_and(|x| !within(x)) && !within(value) {
            Outcome::Missed
        } else {
            Outcome::Indeterminate
        }
    }

    /// The sign written before a limit: `≤` or `≥`.
    pub fn sign(self) -> &'static str {
        match self {
            Bound::Max => "≤",
            Bound::Min => "≥",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_meet_at_the_limit_and_never_without_a_figure() {
        assert!(Bound::Max.is_met(Some(3.0), 3.0));
        assert!(!Bound::Max.is_met(Some(3.1), 3.0));
        assert!(Bound::Min.is_met(Some(3.0), 3.0));
        assert!(!Bound::Min.is_met(Some(2.9), 3.0));
        assert!(!Bound::Max.is_met(None, 3.0) && !Bound::Min.is_met(None, 0.0));
        assert_eq!((Bound::Max.sign(), Bound::Min.sign()), ("≤", "≥"));
    }

    #[test]
    fn the_interval_decides_between_met_missed_and_indeterminate() {
        use crate::stats::Interval;
        let i = |lo: f64, hi: f64| Some(Interval::closed(lo, hi));
        // TTFT P95 29.5 s (27.8–31.3) against ≤ 30 s: indeterminate.
        assert_eq!(
            Bound::Max.judge(Some(29.5), i(27.8, 31.3), 30.0),
            Outcome::Indeterminate
        );
        assert_eq!(
            Bound::Max.judge(Some(29.5), i(28.0, 29.9), 30.0),
            Outcome::Met
        );
        assert_eq!(
            Bound::Max.judge(Some(31.0), i(30.2, 32.0), 30.0),
            Outcome::Missed
        );
        // Floors mirror ceilings.
        assert_eq!(
            Bound::Min.judge(Some(120.0), i(112.0, 125.0), 110.0),
            Outcome::Met
        );
        assert_eq!(
            Bound::Min.judge(Some(112.0), i(105.0, 118.0), 110.0),
            Outcome::Indeterminate
        );
        assert_eq!(
            Bound::Min.judge(Some(100.0), i(95.0, 105.0), 110.0),
            Outcome::Missed
        );
        // An open upper bound cannot show a ceiling met.
        let open = Some(Interval {
            lo: Some(0.29),
            hi: None,
        });
        assert_eq!(
            Bound::Max.judge(Some(0.3), open, 1.0),
            Outcome::Indeterminate
        );
        assert_eq!(
            Bound::Max.judge(
                Some(1.4),
                open.map(|o| Interval { lo: Some(1.2), ..o }),
                1.0
            ),
            Outcome::Missed
        );
        // Open below: a ceiling is met by its upper bound, a floor never.
        let below = |hi: f64| {
            Some(Interval {
                lo: None,
                hi: Some(hi),
            })
        };
        assert_eq!(Bound::Max.judge(Some(0.5), below(0.8), 1.0), Outcome::Met);
        assert_eq!(
            Bound::Max.judge(Some(0.9), below(1.3), 1.0),
            Outcome::Indeterminate
        );
        assert_eq!(
            Bound::Min.judge(Some(12.0), below(14.0), 10.0),
            Outcome::Indeterminate
        );
        assert_eq!(
            Bound::Min.judge(Some(6.0), below(8.0), 10.0),
            Outcome::Missed
        );
        // Open above: a floor is met by its lower bound.
        let above = |lo: f64| {
            Some(Interval {
                lo: Some(lo),
                hi: None,
            })
        };
        assert_eq!(
            Bound::Min.judge(Some(14.0), above(11.0), 10.0),
            Outcome::Met
        );
        assert_eq!(
            Bound::Min.judge(Some(11.0), above(9.0), 10.0),
            Outcome::Indeterminate
        );
        // No interval: the value alone; not measured: missed.
        assert_eq!(Bound::Max.judge(Some(0.0), None, 0.0), Outcome::Met);
        assert_eq!(Bound::Max.judge(Some(1.0), None, 0.0), Outcome::Missed);
        assert_eq!(Bound::Min.judge(None, i(1.0, 2.0), 0.0), Outcome::Missed);
        assert_eq!(
            Outcome::worst([Outcome::Met, Outcome::Indeterminate, Outcome::Met]),
            Outcome::Indeterminate
        );
        assert_eq!(Outcome::worst([]), Outcome::Met);
    }
}
