//! Which rate level of one bench run stands beside which of another's in a
//! comparison.
//!
//! A `--rate` level keeps its rate from run to run, but a sweep places its
//! rates between the throughputs it measured at one request in flight and
//! at full concurrency, so the same sweep run twice (or on another day)
//! lands on slightly different rates. Keying levels by their exact rate
//! would leave every level of two sweeps alone. Instead:
//!
//! - two sweeps with as many rates each pair by their place in the sweep
//!   (the 1st rate with the 1st, …);
//! - otherwise each rate pairs with the other run's nearest rate when it is
//!   within [`RATE_TOLERANCE`] of the baseline's rate, nearest pairs first;
//! - a rate with no partner stays, listed on its own.

/// How far apart two rates may be and still pair by nearness, as a
/// fraction of the baseline's rate (0.10 = 10 %).
pub const RATE_TOLERANCE: f64 = 0.10;

/// How the rate levels of two runs were paired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RatePairing {
    /// Both runs are sweeps with the same number of rates: the k-th rate
    /// of one with the k-th of the other.
    ByPlace,
    /// Each rate with the other run's nearest rate within
    /// [`RATE_TOLERANCE`].
    Nearest,
}

impl RatePairing {
    /// How the report says it, e.g. `by their place in the sweep`.
    pub fn words(self) -> String {
        match self {
            RatePairing::ByPlace => "by their place in the sweep".to_string(),
            RatePairing::Nearest => format!(
                "by nearest rate, within {} % of the baseline's rate",
                (RATE_TOLERANCE * 100.0).round()
            ),
        }
    }
}

/// The rate levels of a baseline and another run, paired.
#[derive(Debug, Clone, PartialEq)]
pub struct RatePairs {
    /// How they were paired.
    pub pairing: RatePairing,
    /// `(baseline index, other index)` into the two rate lists; one side is
    /// `None` for a level without a partner. Ordered by place (by place) or
    /// by rate (nearest), each unpaired level at its own rate.
    pub pairs: Vec<(Option<usize>, Option<usize>)>,
}

/// Pairs the baseline's rates `base` with another run's rates `other`
/// (requests per second, each in its run's order). `both_sweeps`: both
/// runs' rates are a sweep's.
pub fn pair_rates(base: &[f64], other: &[f64], both_sweeps: bool) -> RatePairs {
    if both_sweeps && base.len() == other.len() {
        return RatePairs {
            pairing: RatePairing::ByPlace,
            pairs: (0..base.len()).map(|k| (Some(k), Some(k))).collect(),
        };
    }
    // Every candidate pair within the tolerance, nearest first; each rate
    // takes the nearest partner still free.
    let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
    for (i, a) in base.iter().enumerate() {
        for (j, b) in other.iter().enumerate() {
            let apart = (b - a).abs() / a.abs().max(f64::MIN_POSITIVE);
            if apart <= RATE_TOLERANCE + 1e-12 {
                candidates.push((apart, i, j));
            }
        }
    }
    candidates.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    let mut partner_of_base: Vec<Option<usize>> = vec![None; base.len()];
    let mut taken = vec![false; other.len()];
    for (_, i, j) in candidates {
        if partner_of_base[i].is_none() && !taken[j] {
            partner_of_base[i] = Some(j);
            taken[j] = true;
        }
    }
    let mut pairs: Vec<(f64, Option<usize>, Option<usize>)> = partner_of_base
        .iter()
        .enumerate()
        .map(|(i, j)| (base[i], Some(i), *j))
        .collect();
    pairs.extend(
        taken
            .iter()
            .enumerate()
            .filter(|(_, t)| !**t)
            .map(|(j, _)| (other[j], None, Some(j))),
    );
    pairs.sort_by(|x, y| x.0.total_cmp(&y.0));
    RatePairs {
        pairing: RatePairing::Nearest,
        pairs: pairs.into_iter().map(|(_, i, j)| (i, j)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_sweeps_of_as_many_rates_pair_by_place() {
        // The second sweep measured a faster server: every rate is higher,
        // its 1st rate even above the baseline's 2nd, yet the places pair.
        let p = pair_rates(&[1.0, 2.0, 3.0], &[2.1, 3.2, 4.3], true);
        assert_eq!(p.pairing, RatePairing::ByPlace);
        assert_eq!(
            p.pairs,
            [(Some(0), Some(0)), (Some(1), Some(1)), (Some(2), Some(2))]
        );
        assert_eq!(p.pairing.words(), "by their place in the sweep");
    }

    #[test]
    fn different_counts_pair_by_nearest_rate_within_the_tolerance() {
        // A sweep stopped at its first saturated level (two rates) against
        // a full one (three): 2.31 and 2.40 are 3.9 % apart.
        let p = pair_rates(&[1.2, 2.31, 3.4], &[1.25, 2.40], true);
        assert_eq!(p.pairing, RatePairing::Nearest);
        assert_eq!(
            p.pairs,
            [(Some(0), Some(0)), (Some(1), Some(1)), (Some(2), None)]
        );
        // Fixed rates (not sweeps) pair by nearness even with equal counts;
        // 2.05 goes to the nearer of 2.0 (2.5 % off) and 2.1 (2.4 %), and
        // one partner is never shared.
        let p = pair_rates(&[2.0, 2.1], &[2.05, 4.0], false);
        assert_eq!(p.pairing, RatePairing::Nearest);
        assert_eq!(
            p.pairs,
            [(Some(0), None), (Some(1), Some(0)), (None, Some(1))]
        );
        assert_eq!(
            p.pairing.words(),
            "by nearest rate, within 10 % of the baseline's rate"
        );
    }

    #[test]
    fn rates_further_apart_than_the_tolerance_stay_unpaired_and_listed() {
        // 2.0 and 2.25 are 12.5 % apart: neither is dropped, each has its
        // own row, in rate order.
        let p = pair_rates(&[2.0, 5.0], &[2.25], false);
        assert_eq!(p.pairs, [(Some(0), None), (None, Some(0)), (Some(1), None)]);
        // Exactly at the tolerance still pairs.
        let p = pair_rates(&[2.0], &[2.2], false);
        assert_eq!(p.pairs, [(Some(0), Some(0))]);
        // Nothing on one side: every level of the other is listed alone.
        let p = pair_rates(&[], &[1.0, 2.0], true);
        assert_eq!(p.pairs, [(None, Some(0)), (None, Some(1))]);
    }
}
