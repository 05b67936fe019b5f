//! A step judged against a tier (plain functions): every target of the
//! tier by the targets module ([`codendum_core::targets::ClassroomTargets::judge`], as `plan` and
//! the capacity suite judge a class), each met, missed or indeterminate;
//! the step's outcome for the tier is the worst of the targets the search
//! steers on ([`ClassroomKey::harder_with_more_students`]).
//!
//! A figure with a 95 % interval (a percentile, a rate) is judged by the
//! one judging rule ([`codendum_core::bound::Bound::judge`]):
//! met when its whole interval is on the right side of the limit, missed
//! when the whole interval is on the wrong side, indeterminate when the
//! interval straddles the limit (the window's calls cannot tell which side
//! the server is on). An open bound (a percentile of too few calls to bound
//! it, as in a short window of a small class) reaches past any limit on its
//! side: a TTFT P95 with no upper bound cannot show its ceiling met, only
//! missed (when its lower bound is already past it) or too close to call,
//! and such a step is held longer like any other too close to call. A
//! figure without an interval (a peak, a count) is judged by its value.
//!
//! The coding-request P50 of a window is judged on its censoring bounds
//! ([`Censoring`]): met when even its highest value (no running request
//! ever ends) is within the ceiling, missed when even its lowest (every
//! running request ends now) is beyond it, indeterminate otherwise.
//!
//! A window in which no call started has no figure to judge: its checks
//! without a figure are indeterminate (the calls were long, or the window
//! short), not missed. A window whose calls all failed has no latency
//! either; that is missed, as it would be in `plan`.

use codendum_core::bound::{Bound, Outcome};
use codendum_core::results::capacity::{Censoring, StepCheck, TierStep};
use codendum_core::results::ClassroomSummary;
use codendum_core::targets::{ClassroomCheck, ClassroomKey, Tier};

/// The outcome of one check: by the targets module's rule on its figure
/// and its interval, except the coding-request P50, by its censoring
/// bounds.
pub fn outcome_of(check: &ClassroomCheck, censoring: &Censoring, calls: u64) -> Outcome {
    if calls == 0 && check.measured.is_none() && check.key != ClassroomKey::CodingRequestP50 {
        return Outcome::Indeterminate;
    }
    if check.key == ClassroomKey::CodingRequestP50 {
        return match censoring.p50_bounds_s {
            Some(b) if b.hi.is_some_and(|hi| hi <= check.limit) => Outcome::Met,
            Some(b) if b.lo > check.limit => Outcome::Missed,
            Some(_) => Outcome::Indeterminate,
            None => Outcome::Missed,
        };
    }
    check.outcome
}

/// The tier's judgement of a step with these figures.
pub fn judge_step(tier: &Tier, summary: &ClassroomSummary, censoring: &Censoring) -> TierStep {
    let checks: Vec<StepCheck> = tier
        .targets
        .judge(summary)
        .iter()
        .map(|c| StepCheck {
            key: c.key.name().to_string(),
            bound: c.key.bound(),
            limit: c.limit,
            measured: c.measured,
            interval: c.interval,
            outcome: outcome_of(c, censoring, summary.requests),
            steers: c.key.harder_with_more_students(),
        })
        .collect();
    let outcome = Outcome::worst(checks.iter().filter(|c| c.steers).map(|c| c.outcome));
    TierStep {
        tier: tier.name.clone(),
        outcome,
        checks,
    }
}

/// The floors of a tier (judged at the answer) a step missed, by key.
pub fn floors_missed(step: &TierStep) -> Vec<String> {
    step.checks
        .iter()
        .filter(|c| !c.steers && c.bound == Bound::Min && c.outcome != Outcome::Met)
        .map(|c| c.key.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use codendum_core::stats::censored::CensoredBounds;
    use codendum_core::targets::parse_tiers;

    fn tiers() -> Vec<Tier> {
        parse_tiers(
            "fast:ttft_p95=10s,speed_p50=10,server_output=500,slow:ttft_p95=60s,coding_request_p50=10m",
        )
        .expect("tiers")
    }

    fn summary(ttft_p95: f64, speed: f64) -> ClassroomSummary {
        ClassroomSummary {
            users: 20,
            requests: 100,
            ttft_p95_s: Some(ttft_p95),
            output_speed_p50_tok_s: Some(speed),
            ..Default::default()
        }
    }

    fn censoring(lo: f64, hi: Option<f64>) -> Censoring {
        Censoring {
            completed: 5,
            running: 5,
            p50_bounds_s: Some(CensoredBounds { lo, hi }),
        }
    }

    #[test]
    fn a_step_is_as_bad_as_its_worst_steering_target() {
        let t = tiers();
        let c = censoring(300.0, Some(400.0));
        let fast = judge_step(&t[0], &summary(8.0, 12.0), &c);
        // The server output floor is missed (no /metrics) but does not steer.
        assert_eq!(fast.outcome, Outcome::Met);
        assert_eq!(floors_missed(&fast), ["server_output_tok_per_s"]);
        let fast = judge_step(&t[0], &summary(8.0, 9.0), &c);
        assert_eq!(fast.outcome, Outcome::Missed, "speed below its floor");
        let slow = judge_step(&t[1], &summary(30.0, 9.0), &c);
        assert_eq!(slow.outcome, Outcome::Met);
    }

    #[test]
    fn a_figure_whose_interval_straddles_the_ceiling_is_too_close_to_call() {
        let t = tiers();
        let c = censoring(300.0, Some(400.0));
        let with = |lo, hi| {
            let mut s = summary(9.5, 12.0);
            s.intervals.insert(
                "ttft_p95_s".into(),
                codendum_core::stats::Interval::closed(lo, hi),
            );
            judge_step(&t[0], &s, &c)
        };
        // 9.5 s under a 10 s ceiling, but its interval reaches past it.
        let unsure = with(8.8, 10.6);
        assert_eq!(unsure.outcome, Outcome::Indeterminate);
        assert_eq!(
            unsure.checks[0].interval,
            Some(codendum_core::stats::Interval::closed(8.8, 10.6))
        );
        assert_eq!(with(8.8, 9.9).outcome, Outcome::Met);
    }

    #[test]
    fn an_open_bound_on_the_limits_side_is_too_close_to_call() {
        use codendum_core::stats::Interval;
        let t = tiers();
        let c = censoring(300.0, Some(400.0));
        let with = |value: f64, lo: Option<f64>, hi: Option<f64>| {
            let mut s = summary(value, 12.0);
            s.intervals.insert("ttft_p95_s".into(), Interval { lo, hi });
            judge_step(&t[0], &s, &c).outcome
        };
        // Too few calls for an upper bound: 4 s under a 10 s ceiling
        // could still be above it.
        assert_eq!(with(4.0, Some(2.0), None), Outcome::Indeterminate);
        // Its lower bound already past the ceiling: missed however few.
        assert_eq!(with(14.0, Some(11.0), None), Outcome::Missed);
        // Open below only: the open side cannot cross a ceiling.
        assert_eq!(with(4.0, None, Some(6.0)), Outcome::Met);
        assert_eq!(with(12.0, None, Some(15.0)), Outcome::Indeterminate);
    }

    #[test]
    fn the_coding_request_median_is_judged_on_its_bounds() {
        let t = tiers();
        let s = summary(30.0, 9.0);
        let at = |lo, hi| judge_step(&t[1], &s, &censoring(lo, hi)).outcome;
        assert_eq!(at(300.0, Some(590.0)), Outcome::Met);
        assert_eq!(at(300.0, None), Outcome::Indeterminate);
        assert_eq!(at(650.0, None), Outcome::Missed);
        let none = Censoring {
            completed: 0,
            running: 0,
            p50_bounds_s: None,
        };
        assert_eq!(judge_step(&t[1], &s, &none).outcome, Outcome::Missed);
    }

    #[test]
    fn a_window_without_calls_is_too_close_to_call_but_one_of_failed_calls_misses() {
        let t = tiers();
        let c = censoring(300.0, Some(400.0));
        let empty = ClassroomSummary {
            users: 1,
            ..Default::default()
        };
        assert_eq!(
            judge_step(&t[0], &empty, &c).outcome,
            Outcome::Indeterminate
        );
        let failed = ClassroomSummary {
            users: 1,
            requests: 4,
            failed: 4,
            ..Default::default()
        };
        assert_eq!(judge_step(&t[0], &failed, &c).outcome, Outcome::Missed);
    }
}
