//! What the search says to people: its plan, a line per step, the
//! answers, and the table at the end (plain functions).

use std::fmt::Write as _;

use codendum_core::bound::{Bound, Outcome};
use codendum_core::results::capacity::{
    CapacityStep, PredictedTier, StepCheck, StepKind, TierAnswer, TierStep, STEP_FIGURES,
};
use codendum_core::results::metrics::class_metric;
use codendum_core::targets::{ClassroomKey, Tier};
use codendum_report::format::show_with_unit;

use codendum_report::capacity::{figure, range};

/// A value of a target key with its unit.
fn value(key: &str, v: Option<f64>) -> String {
    match ClassroomKey::from_name(key) {
        Some(k) => {
            let m = k.metric();
            show_with_unit(m.shown, m.unit, v)
        }
        None => v.map_or("–".into(), |v| v.to_string()),
    }
}

/// A label of a target key: `TTFT P95`.
fn label(key: &str) -> &'static str {
    ClassroomKey::from_name(key).map_or("?", |k| k.label())
}

/// A tier's targets: `TTFT P95 ≤ 10.00 s, Output speed per user P50 ≥ 10.0 tok/s`.
pub fn targets_text(tier: &Tier) -> String {
    tier.targets
        .limits()
        .iter()
        .map(|(k, limit)| {
            format!(
                "{} {} {}",
                k.label(),
                k.bound().sign(),
                value(k.name(), Some(*limit))
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A check as people read it: `TTFT P95 12.4 s (target ≤ 10.00 s)`; one
/// too close to call says its interval: `TTFT P95 9.8 s, 95 % interval
/// 8.9–10.7 s (target ≤ 10.0 s)`.
pub fn check_text(c: &StepCheck) -> String {
    let interval = match c.interval {
        Some(i) if c.outcome == Outcome::Indeterminate => {
            let end = |b: Option<f64>| b.map_or("open".to_string(), |x| value(&c.key, Some(x)));
            format!(", 95 % interval {} to {}", end(i.lo), end(i.hi))
        }
        _ => String::new(),
    };
    format!(
        "{} {}{interval} (target {} {})",
        label(&c.key),
        value(&c.key, c.measured),
        c.bound.sign(),
        value(&c.key, Some(c.limit))
    )
}

/// Whether a check's interval is open on the side of its limit: a
/// percentile of too few calls to bound it there (a TTFT P95 of fewer than
/// about 59 independent calls has no upper bound), whatever its value.
fn open_towards_limit(c: &StepCheck) -> bool {
    c.interval.is_some_and(|i| match c.bound {
        Bound::Max => i.hi.is_none(),
        Bound::Min => i.lo.is_none(),
    })
}

/// The targets of a tier a step missed or could not call, as text: those
/// too close to call apart from those with too few calls to bound.
pub fn misses_text(t: &TierStep) -> String {
    let part = |o: Outcome, open: bool| {
        t.checks
            .iter()
            .filter(|c| c.steers && c.outcome == o)
            .filter(|c| o != Outcome::Indeterminate || open_towards_limit(c) == open)
            .map(check_text)
            .collect::<Vec<_>>()
    };
    let mut parts = Vec::new();
    let missed = part(Outcome::Missed, false);
    if !missed.is_empty() {
        parts.push(missed.join(", "));
    }
    for (open, what) in [
        (false, "too close to call"),
        (true, "too few calls to bound"),
    ] {
        let unsure = part(Outcome::Indeterminate, open);
        if !unsure.is_empty() {
            parts.push(format!("{what}: {}", unsure.join(", ")));
        }
    }
    parts.join("; ")
}

/// A step's line, written when the step is judged (its calls still running
/// can no longer change an outcome): `step 3, 23 students: interactive met,
/// relaxed met; when judged (142 calls ended, …): TTFT P95 8.2 s, …`. The
/// steps table, written once every call has ended, may differ.
pub fn step_line(step: &CapacityStep) -> String {
    let mut what = match step.kind {
        StepKind::Probe => String::new(),
        StepKind::Confirm => " (held again)".to_string(),
    };
    if step.holds > 1 {
        let _ = write!(
            what,
            " (held {} windows: too close to call after the first)",
            step.holds
        );
    }
    let tiers: Vec<String> = step
        .tiers
        .iter()
        .map(|t| format!("{} {}", t.tier, t.outcome.word()))
        .collect();
    let m = &step.measured;
    let mut line = format!(
        "step {}, {} students{what}: {}; when judged ({} calls ended, {} coding requests completed, {} running at the window's end): TTFT P95 {}, speed P50 {}, error rate {}",
        step.index,
        step.users,
        tiers.join(", "),
        m.requests,
        step.censoring.completed,
        step.censoring.running,
        figure("ttft_p95_s", m),
        figure("output_speed_p50_tok_per_s", m),
        figure("error_rate", m),
    );
    let misses: Vec<String> = step
        .tiers
        .iter()
        .filter(|t| t.outcome != Outcome::Met)
        .map(|t| format!("{}: {}", t.tier, misses_text(t)))
        .collect();
    if !misses.is_empty() {
        let _ = write!(line, "; {}", misses.join("; "));
    }
    line
}

/// The predicted answers: `interactive 24, relaxed 40`.
pub fn predicted_text(answers: &[PredictedTier]) -> String {
    answers
        .iter()
        .map(|a| format!("{} {}", a.tier, range(a.carries, a.upper, false)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `students carried: interactive 23, relaxed 40–42`.
pub fn summary_line(answers: &[TierAnswer]) -> String {
    let parts: Vec<String> = answers
        .iter()
        .map(|a| format!("{} {}", a.tier, range(a.carries, a.upper, a.at_least)))
        .collect();
    format!("students carried: {}", parts.join(", "))
}

/// Minutes for people: `27 min`, `1.5 min`.
pub fn minutes(s: f64) -> String {
    let m = s / 60.0;
    if m < 10.0 {
        format!("{m:.1} min")
    } else {
        format!("{m:.0} min")
    }
}

/// The table at the end: one row per step, measured beside predicted.
pub fn steps_table(steps: &[CapacityStep]) -> String {
    let mut header: Vec<String> = vec!["step".into(), "tiers".into()];
    header.extend(
        STEP_FIGURES
            .iter()
            .filter_map(|k| class_metric(k))
            .map(|m| m.label.to_string()),
    );
    let mut rows = vec![header];
    for s in steps {
        let tiers: String = s
            .tiers
            .iter()
            .map(|t| match t.outcome {
                Outcome::Met => '✓',
                Outcome::Missed => '✗',
                Outcome::Indeterminate => '?',
            })
            .collect();
        let mut row = vec![s.index.to_string(), tiers];
        row.extend(STEP_FIGURES.iter().map(|k| {
            let measured = figure(k, &s.measured);
            match &s.predicted {
                Some(p) if *k != "students" => format!("{measured} ({})", figure(k, p)),
                _ => measured,
            }
        }));
        rows.push(row);
    }
    let mut out = aligned(&rows);
    out.push_str("(the twin's figure for the same step in brackets; tiers: ✓ met, ✗ missed, ? too close to call)\n");
    out
}

/// `rows` as text columns, each as wide as its widest cell (counted in
/// characters) and two spaces apart.
fn aligned(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(&widths) {
            let pad = width - cell.chars().count();
            line.push_str(cell);
            line.extend(std::iter::repeat_n(' ', pad + 2));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use codendum_core::targets::parse_tiers;

    #[test]
    fn targets_and_minutes_read_as_people_write_them() {
        let t = parse_tiers("interactive:ttft_p95=10s,speed_p50=10,errors=1%").expect("tiers");
        assert_eq!(
            targets_text(&t[0]),
            "TTFT P95 ≤ 10.0 s, Output speed per user P50 ≥ 10.0 tok/s, Error rate ≤ 1.0 %"
        );
        assert_eq!(minutes(1620.0), "27 min");
        assert_eq!(minutes(90.0), "1.5 min");
    }

    #[test]
    fn a_figure_of_too_few_calls_is_said_apart_from_one_too_close_to_call() {
        let check = |key: &str, bound, measured, (lo, hi), outcome| StepCheck {
            key: key.into(),
            bound,
            limit: 20.0,
            measured: Some(measured),
            interval: Some(codendum_core::stats::interval::Interval { lo, hi }),
            outcome,
            steers: true,
        };
        let tier = |checks| TierStep {
            tier: "relaxed".into(),
            outcome: Outcome::Indeterminate,
            checks,
        };
        let few = check(
            "ttft_p95_s",
            Bound::Max,
            0.54,
            (Some(0.31), None),
            Outcome::Indeterminate,
        );
        let close = check(
            "ttft_p95_s",
            Bound::Max,
            19.0,
            (Some(17.0), Some(22.0)),
            Outcome::Indeterminate,
        );
        let missed = check(
            "ttft_p95_s",
            Bound::Max,
            30.0,
            (Some(25.0), None),
            Outcome::Missed,
        );
        assert_eq!(
            misses_text(&tier(vec![few.clone()])),
            "too few calls to bound: TTFT P95 0.54 s, 95 % interval 0.31 s to open (target ≤ 20.0 s)"
        );
        assert_eq!(
            misses_text(&tier(vec![close.clone()])),
            "too close to call: TTFT P95 19.0 s, 95 % interval 17.0 s to 22.0 s (target ≤ 20.0 s)"
        );
        assert_eq!(
            misses_text(&tier(vec![missed, close, few])),
            "TTFT P95 30.0 s (target ≤ 20.0 s); too close to call: TTFT P95 19.0 s, 95 % interval 17.0 s to 22.0 s (target ≤ 20.0 s); too few calls to bound: TTFT P95 0.54 s, 95 % interval 0.31 s to open (target ≤ 20.0 s)"
        );
    }

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_in_characters() {
        let rows = vec![
            vec![
                "step".to_string(),
                "Output speed per user P50".into(),
                "x".into(),
            ],
            vec!["1".to_string(), "– min (– min)".into(), "✓✗".into()],
        ];
        let text = aligned(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "step  Output speed per user P50  x");
        assert_eq!(lines[1], "1     – min (– min)              ✓✗");
    }
}
