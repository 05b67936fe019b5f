//! The report of a `codendum capacity` search (`report.md` / `report.html`
//! of a `capacity-<UTC>/` folder) and the comparison of two or more
//! searches (before and after a profile switch): the answers per tier,
//! every step measured beside the twin's prediction for it with the error,
//! and a chart of class size against TTFT P95 with each tier's line.

use codendum_core::bound::Outcome;
use codendum_core::results::capacity::{
    CapacityResults, CapacityStep, StepKind, TierSpec, STEP_FIGURES,
};
use codendum_core::results::metrics::{class_metric, Shown};
use codendum_core::results::ClassroomSummary;
use codendum_core::targets::ClassroomKey;

use super::doc::{Block, Doc};
use super::format::{fixed, show_with_unit, MISSING};
use super::svg::{AxisTitle, Chart, LineChart, Series};

/// A class figure by its key, as people read it: `17.5 s`, `96.2 %`.
pub fn figure(key: &str, summary: &ClassroomSummary) -> String {
    match class_metric(key) {
        Some(m) => show_with_unit(m.shown, m.unit, (m.read)(summary)),
        None => MISSING.into(),
    }
}

/// An answer as people write it: `24`, `40–42`, `≥ 200`.
pub fn range(carries: u32, upper: u32, at_least: bool) -> String {
    if at_least {
        format!("≥ {carries}")
    } else if upper > carries {
        format!("{carries}–{upper}")
    } else {
        carries.to_string()
    }
}

/// The twin's error on a figure: (predicted − measured) ÷ measured, in
/// percent with no decimals; an en dash when either is missing or the
/// measured figure is 0.
pub fn error_pct(key: &str, measured: &ClassroomSummary, predicted: &ClassroomSummary) -> String {
    let Some(m) = class_metric(key) else {
        return MISSING.into();
    };
    match ((m.read)(measured), (m.read)(predicted)) {
        (Some(a), Some(b)) if a != 0.0 && a.is_finite() && b.is_finite() => {
            let e = (b - a) / a.abs() * 100.0;
            let s = fixed(e, 0);
            if e > 0.0 && s != "0" {
                format!("+{s} %")
            } else {
                format!("{s} %")
            }
        }
        _ => MISSING.into(),
    }
}

fn outcome_mark(o: Outcome) -> &'static str {
    match o {
        Outcome::Met => "met",
        Outcome::Missed => "missed",
        Outcome::Indeterminate => "too close to call",
    }
}

fn minutes(s: f64) -> String {
    format!("{} min", fixed(s / 60.0, 1))
}

/// The report's document.
pub(crate) fn capacity_doc(r: &CapacityResults) -> Doc {
    let mut doc = Doc::new(format!(
        "Capacity search {} — {}",
        r.header.started_utc.format("%Y-%m-%d %H:%M UTC"),
        r.summary
    ));
    if r.header.interrupted {
        doc.paragraph("The search was interrupted: the answers cover only the steps judged before it stopped.");
    }
    doc.heading("Students carried");
    doc.blocks.push(Block::List(
        r.answers
            .iter()
            .flat_map(|a| std::iter::once(a.sentence.clone()).chain(a.more_time.clone()))
            .collect(),
    ));
    doc.paragraph(format!(
        "Server time: {} for {} steps; the plan estimated {} (up to {} if the server carried a fifth fewer than predicted).",
        minutes(r.server_time_s),
        r.steps.len(),
        minutes(r.prediction.server_time_s),
        minutes(r.prediction.server_time_if_off_s)
    ));
    let rows = r
        .answers
        .iter()
        .map(|a| {
            let spec = r.parameters.tiers.iter().find(|t| t.name == a.tier);
            let targets = spec.map(tier_targets).unwrap_or_default();
            vec![
                a.tier.clone(),
                targets,
                range(a.carries, a.upper, a.at_least),
                if a.confirmed { "yes" } else { "no" }.into(),
                a.predicted.map_or(MISSING.into(), |p| p.to_string()),
            ]
        })
        .collect();
    doc.table(
        &[
            "Tier",
            "Targets",
            "Students carried",
            "Confirmed",
            "Twin predicted",
        ],
        rows,
        2,
    );
    push_steps(&mut doc, r);
    doc.chart(ttft_chart(&[("measured", r)], true));
    push_parameters(&mut doc, r);
    doc
}

/// A tier's targets in words: "TTFT P95 ≤ 10 s, ...".
fn tier_targets(t: &TierSpec) -> String {
    t.targets
        .targets
        .iter()
        .map(|x| {
            let v = ClassroomKey::from_name(&x.key).map_or(x.value.to_string(), |k| {
                let m = k.metric();
                show_with_unit(m.shown, m.unit, Some(x.value))
            });
            format!("{} {} {v}", label(&x.key), x.bound.sign())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn label(key: &str) -> &'static str {
    ClassroomKey::from_name(key).map_or("?", |k| k.label())
}

/// The steps, measured beside predicted.
fn push_steps(doc: &mut Doc, r: &CapacityResults) {
    doc.heading("Steps");
    doc.paragraph(format!(
        "Each step set the class to its size (new students joining over {:.0} s, students retired after their call in flight), settled, and was judged over its steady window alone: the model calls started in the window, each to its end (judged as soon as those still running could no longer change the outcome, a call already streaming with its TTFT known), and the coding requests completed in it (those still running at the window's end are counted apart: only a lower bound of their time is known). The twin's figures come from the same steps run again on the twin of profile {} in virtual time: the same sizes at the same times.",
        r.parameters.join_over_s, r.parameters.profile
    ));
    let mut header: Vec<String> = vec![
        "Step".into(),
        "Kind".into(),
        "Settle (s)".into(),
        "Window (s)".into(),
        "Judged (s after the window)".into(),
        "Calls still streaming".into(),
    ];
    header.extend(r.parameters.tiers.iter().map(|t| t.name.clone()));
    let rows: Vec<Vec<String>> = r
        .steps
        .iter()
        .map(|s| {
            let mut row = vec![
                s.index.to_string(),
                match s.kind {
                    StepKind::Probe => "probe".into(),
                    StepKind::Confirm => "held again".into(),
                },
                fixed(s.settle_s, 0),
                format!(
                    "{}–{}",
                    fixed(s.window_start_s, 0),
                    fixed(s.window_end_s, 0)
                ),
                fixed((s.ended_s - s.window_end_s).max(0.0), 0),
                s.unfinished.to_string(),
            ];
            row.extend(r.parameters.tiers.iter().map(|t| {
                s.tier(&t.name)
                    .map_or(MISSING.into(), |j| outcome_mark(j.outcome).into())
            }));
            row
        })
        .collect();
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    doc.table(&header_refs, rows, 2);
    doc.paragraph("Measured, the twin's prediction for the same step, and the twin's error ((predicted − measured) ÷ measured):");
    let mut header: Vec<String> = vec!["Step".into()];
    for key in STEP_FIGURES {
        let Some(m) = class_metric(key) else { continue };
        if key == "students" {
            header.push("Students".into());
            continue;
        }
        header.push(m.header());
        header.push("twin".into());
        header.push("error".into());
    }
    let rows = r
        .steps
        .iter()
        .map(|s| {
            let mut row = vec![s.index.to_string()];
            for key in STEP_FIGURES {
                if key == "students" {
                    row.push(s.users.to_string());
                    continue;
                }
                let shown = class_metric(key).map(|m| m.shown);
                let number = |summary: &ClassroomSummary| {
                    class_metric(key).map_or(MISSING.into(), |m| {
                        super::format::show(shown.unwrap_or(Shown::Decimals(1)), (m.read)(summary))
                    })
                };
                row.push(number(&s.measured));
                match &s.predicted {
                    Some(p) => {
                        row.push(number(p));
                        row.push(error_pct(key, &s.measured, p));
                    }
                    None => {
                        row.push(MISSING.into());
                        row.push(MISSING.into());
                    }
                }
            }
            row
        })
        .collect();
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    doc.table(&header_refs, rows, 1);
    let censored: Vec<String> = r
        .steps
        .iter()
        .filter(|s| s.censoring.running > 0)
        .map(|s| {
            format!(
                "step {}: {} coding requests completed in the window, {} still running at its end{}",
                s.index,
                s.censoring.completed,
                s.censoring.running,
                s.censoring.p50_bounds_s.map_or(String::new(), |b| format!(
                    " (so their median lies between {} and {})",
                    minutes(b.lo),
                    b.hi.map_or("no bound".into(), minutes)
                ))
            )
        })
        .collect();
    if !censored.is_empty() {
        doc.paragraph("Coding requests a window could not see end:");
        doc.blocks.push(Block::List(censored));
    }
}

/// The search's parameters and the prediction.
fn push_parameters(doc: &mut Doc, r: &CapacityResults) {
    doc.heading("Parameters");
    let p = &r.parameters;
    let row = |k: &str, v: String| vec![k.to_string(), v];
    let mut rows = vec![
        row("Server", r.server.url.clone()),
        row("Model", r.server.model.clone()),
        row(
            "Server version",
            r.server
                .server_version
                .clone()
                .unwrap_or_else(|| MISSING.into()),
        ),
        row("Profile the twin predicted with", p.profile.clone()),
        row("Tiers from", p.tiers_from.clone()),
        row("Largest class considered", p.max_users.to_string()),
        row("Window per step", format!("{} s", fixed(p.hold_s, 0))),
        row(
            "Students join over",
            format!("{} s", fixed(p.join_over_s, 0)),
        ),
        row("Resolution", format!("{} students", p.resolution)),
        row("Budget", p.budget_s.map_or("none".into(), minutes)),
        row(
            "Workload",
            match (&p.replayed_from, p.replayed_sessions) {
                (Some(from), Some(n)) => format!(
                    "{n} recorded sessions from {from}, replayed as users (text salted with seed {})",
                    p.seed
                ),
                _ => format!("{} ({} scenario, seed {})", p.workload, p.scenario, p.seed),
            },
        ),
        row("Clock", format!("{}× real time", p.clock_scale)),
        row(
            "Twin's prediction",
            r.prediction
                .tiers
                .iter()
                .map(|t| format!("{} {}", t.tier, range(t.carries, t.upper, false)))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        row(
            "Steps planned",
            r.prediction
                .planned
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" → "),
        ),
    ];
    rows.extend(p.left_out.iter().map(|w| row("Left out", w.clone())));
    doc.table(&["Parameter", "Value"], rows, 2);
}

/// Class size against TTFT P95: each search's steps (`twin`: with the
/// twin's figures for the same steps) and each tier's TTFT P95 ceiling.
fn ttft_chart(runs: &[(&str, &CapacityResults)], twin: bool) -> Chart {
    let mut series = Vec::new();
    let points = |steps: &[CapacityStep], predicted: bool| {
        let mut p: Vec<(f64, f64)> = steps
            .iter()
            .filter(|s| s.kind == StepKind::Probe)
            .filter_map(|s| {
                let summary = if predicted {
                    s.predicted.as_ref()?
                } else {
                    &s.measured
                };
                Some((f64::from(s.users), summary.ttft_p95_s?))
            })
            .collect();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        p
    };
    for (name, r) in runs {
        series.push(Series::new(*name, points(&r.steps, false)));
        if twin {
            series.push(Series::new("twin, the same steps", points(&r.steps, true)));
        }
    }
    let xs: Vec<f64> = runs
        .iter()
        .flat_map(|(_, r)| r.steps.iter().map(|s| f64::from(s.users)))
        .collect();
    let (lo, hi) = xs
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(*x), b.max(*x)));
    if let Some((_, r)) = runs.first() {
        for t in &r.parameters.tiers {
            let limit = t
                .targets
                .targets
                .iter()
                .find(|x| x.key == ClassroomKey::TtftP95.name());
            if let (Some(l), true) = (limit, lo.is_finite()) {
                series.push(Series::new(
                    format!("{}: TTFT P95 ≤ {} s", t.name, fixed(l.value, 0)),
                    vec![(lo, l.value), (hi, l.value)],
                ));
            }
        }
    }
    Chart::Line(LineChart::new(
        "Class size against TTFT P95",
        AxisTitle::new("Students", ""),
        AxisTitle::new("TTFT P95", "s"),
        series,
    ))
}

/// The comparison of two or more searches (the first is the baseline).
pub(crate) fn capacity_compare_doc(runs: &[(String, CapacityResults)]) -> Doc {
    let mut doc = Doc::new(format!("Comparison of {} capacity searches", runs.len()));
    doc.heading("Students carried");
    let mut tiers: Vec<String> = Vec::new();
    for (_, r) in runs {
        for a in &r.answers {
            if !tiers.contains(&a.tier) {
                tiers.push(a.tier.clone());
            }
        }
    }
    let mut header: Vec<String> = vec!["Tier".into()];
    for (label, _) in runs {
        header.push(label.clone());
    }
    header.push("Change".into());
    let rows = tiers
        .iter()
        .map(|tier| {
            let mut row = vec![tier.clone()];
            let answers: Vec<Option<&codendum_core::results::capacity::TierAnswer>> = runs
                .iter()
                .map(|(_, r)| r.answers.iter().find(|a| &a.tier == tier))
                .collect();
            row.extend(
                answers
                    .iter()
                    .map(|a| a.map_or(MISSING.into(), |a| range(a.carries, a.upper, a.at_least))),
            );
            let change = match (
                answers.first().copied().flatten(),
                answers.last().copied().flatten(),
            ) {
                (Some(a), Some(b)) if answers.len() > 1 => {
                    let d = i64::from(b.carries) - i64::from(a.carries);
                    let pct = if a.carries > 0 {
                        format!(" ({} %)", fixed(d as f64 / f64::from(a.carries) * 100.0, 0))
                    } else {
                        String::new()
                    };
                    format!("{}{d} students{pct}", if d > 0 { "+" } else { "" })
                }
                _ => MISSING.into(),
            };
            row.push(change);
            row
        })
        .collect();
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    doc.table(&header_refs, rows, 1);
    doc.heading("What differs between the searches");
    let field = |f: &dyn Fn(&CapacityResults) -> String| -> Vec<String> {
        runs.iter().map(|(_, r)| f(r)).collect()
    };
    let mut tiers: Vec<&str> = Vec::new();
    for (_, r) in runs {
        for t in &r.parameters.tiers {
            if !tiers.contains(&t.name.as_str()) {
                tiers.push(&t.name);
            }
        }
    }
    let targets_rows: Vec<(String, Vec<String>)> = tiers
        .iter()
        .map(|name| {
            let values = runs
                .iter()
                .map(|(_, r)| {
                    r.parameters
                        .tiers
                        .iter()
                        .find(|t| t.name == *name)
                        .map_or(MISSING.into(), tier_targets)
                })
                .collect();
            (format!("Targets of {name}"), values)
        })
        .collect();
    let mut fields: Vec<(String, Vec<String>)> = targets_rows;
    fields.extend(
        [
            ("Server", field(&|r| r.server.url.clone())),
            ("Model", field(&|r| r.server.model.clone())),
            (
                "Profile predicted with",
                field(&|r| r.parameters.profile.clone()),
            ),
            (
                "Window per step (s)",
                field(&|r| fixed(r.parameters.hold_s, 0)),
            ),
            (
                "Resolution",
                field(&|r| r.parameters.resolution.to_string()),
            ),
            ("Steps", field(&|r| r.steps.len().to_string())),
            ("Server time", field(&|r| minutes(r.server_time_s))),
        ]
        .map(|(name, values)| (name.to_string(), values)),
    );
    let mut header: Vec<String> = vec!["Field".into()];
    header.extend(runs.iter().map(|(l, _)| l.clone()));
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let rows = fields
        .into_iter()
        .map(|(name, values)| {
            let mut row = vec![name];
            row.extend(values);
            row
        })
        .collect();
    doc.table(&header_refs, rows, 1);
    doc.heading("Class sizes measured in every search");
    let sizes: Vec<u32> = {
        let mut all: Vec<u32> = runs
            .first()
            .map(|(_, r)| r.steps.iter().map(|s| s.users).collect())
            .unwrap_or_default();
        all.sort_unstable();
        all.dedup();
        all.retain(|n| {
            runs.iter()
                .all(|(_, r)| r.steps.iter().any(|s| s.users == *n))
        });
        all
    };
    if sizes.is_empty() {
        doc.paragraph("No class size was measured in every search.");
    } else {
        let mut header: Vec<String> = vec!["Students".into()];
        for key in ["ttft_p95_s", "output_speed_p50_tok_per_s"] {
            for (label, _) in runs {
                header.push(format!(
                    "{} ({label})",
                    class_metric(key).map_or(key, |m| m.label)
                ));
            }
        }
        let rows = sizes
            .iter()
            .map(|n| {
                let mut row = vec![n.to_string()];
                for key in ["ttft_p95_s", "output_speed_p50_tok_per_s"] {
                    for (_, r) in runs {
                        let step = r.steps.iter().find(|s| s.users == *n);
                        row.push(step.map_or(MISSING.into(), |s| figure(key, &s.measured)));
                    }
                }
                row
            })
            .collect();
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        doc.table(&header_refs, rows, 1);
    }
    let named: Vec<(&str, &CapacityResults)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
    doc.chart(ttft_chart(&named, false));
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_signed_percentages_of_the_measured_figure() {
        let m = ClassroomSummary {
            ttft_p95_s: Some(40.0),
            ..Default::default()
        };
        let p = ClassroomSummary {
            ttft_p95_s: Some(44.0),
            ..Default::default()
        };
        assert_eq!(error_pct("ttft_p95_s", &m, &p), "+10 %");
        assert_eq!(error_pct("ttft_p95_s", &p, &m), "-9 %");
        assert_eq!(error_pct("ttft_p50_s", &m, &p), MISSING);
        assert_eq!(range(40, 42, false), "40–42");
    }
}
