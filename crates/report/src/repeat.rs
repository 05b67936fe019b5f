//! The report of a repeated run (`--repeat N`): per level or class, each
//! figure pooled over every run with its 95 % interval, its mean ± standard
//! deviation, min–max and coefficient of variation across runs, and each
//! run's value; the targets judged on the pooled figures; the runs and
//! their own folders. The same table, narrower, is what the command prints
//! at its end ([`text_table`]).

use std::fmt::Write as _;

use super::doc::{Block, Doc};
use super::format::{fixed, interval_text, show, MISSING};
use codendum_core::results::metrics::{
    class_metric, level_metrics_in, Shown, Unit, View, LEVEL_METRICS,
};
use codendum_core::results::repeat::RepeatGroup;
use codendum_core::results::repeat::Repeated;
use codendum_core::results::repeat_folder::RepeatSummary;
use codendum_core::results::repeat_levels::FIND_RATE_ANSWER;

/// How a figure is named and shown: its label with its unit, its shown
/// form and its unit.
fn figure_format(class: bool, key: &str) -> (String, Shown, Unit) {
    if class {
        if let Some(m) = class_metric(key) {
            return (m.header(), m.shown, m.unit);
        }
    } else if let Some(m) = LEVEL_METRICS.iter().find(|m| m.key() == key) {
        return (m.header(), m.shown, m.unit);
    }
    if key == FIND_RATE_ANSWER {
        let shown = Shown::of(Unit::RequestsPerSecond);
        let label = format!(
            "Highest rate meeting the SLO ({})",
            shown.symbol(Unit::RequestsPerSecond)
        );
        return (label, shown, Unit::RequestsPerSecond);
    }
    (key.to_string(), Shown::Decimals(2), Unit::None)
}

fn is_class(group: &RepeatGroup) -> bool {
    group.label == "class"
}

/// The pooled figure with its interval: `2.76 (2.70–2.80)`.
fn pooled_cell(f: &Repeated, shown: Shown) -> String {
    let v = show(shown, f.pooled);
    match interval_text(shown, f.pooled_interval.filter(|_| f.pooled.is_some())) {
        i if i.is_empty() => v,
        i => format!("{v} {i}"),
    }
}

/// `2.71 ± 0.05`.
fn mean_sd(f: &Repeated, shown: Shown) -> String {
    match f.sd {
        Some(sd) => format!("{} ± {}", show(shown, Some(f.mean)), show(shown, Some(sd))),
        None => show(shown, Some(f.mean)),
    }
}

/// `2.66–2.78`.
fn min_max(f: &Repeated, shown: Shown) -> String {
    format!("{}–{}", show(shown, Some(f.min)), show(shown, Some(f.max)))
}

/// `4.2`, with ` unstable` when above the summary's bound.
fn cv_cell(f: &Repeated) -> String {
    match f.cv {
        Some(cv) if f.is_unstable() => format!("{} unstable", fixed(cv * 100.0, 1)),
        Some(cv) => fixed(cv * 100.0, 1),
        None => MISSING.to_string(),
    }
}

fn runs_text(group: &RepeatGroup) -> String {
    group
        .runs
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The report's document.
pub(crate) fn repeat_doc(r: &RepeatSummary) -> Doc {
    let mut doc = Doc::new(format!(
        "{} repeated {} times — {}",
        r.of,
        r.runs.len(),
        r.started_utc.format("%Y-%m-%d %H:%M UTC")
    ));
    if let Some(why) = &r.stop_reason {
        doc.paragraph(format!(
            "{} of {} runs made: {why}. The figures across runs cover the runs that finished.",
            r.runs.len(),
            r.runs_asked
        ));
    }
    doc.paragraph(format!(
        "The same workload run {} times against the same server, each run with its own seed, the server let drain between runs. \"Pooled\" is the figure over every finished run's records with its 95 % interval (percentiles by order statistics, shares by Wilson, means and rates by Student's t over the runs); mean ± sd, min–max and the coefficient of variation (CV = sd / mean) are across the runs' own values. A CV above {} % is flagged unstable across runs: a single run of this workload does not pin the figure down.",
        r.runs_asked,
        fixed(r.unstable_cv * 100.0, 0)
    ));
    doc.heading("Verdict");
    doc.paragraph(upper(&r.verdict.line));
    if !r.judgements.is_empty() {
        let rows = r
            .judgements
            .iter()
            .map(|j| {
                let (label, shown, _) = figure_format(j.group == "class", &j.figure);
                let value = show(shown, j.pooled);
                let interval = interval_text(shown, j.interval.filter(|_| j.pooled.is_some()));
                vec![
                    j.group.clone(),
                    label,
                    format!("{} {}", j.bound.sign(), show(shown, Some(j.limit))),
                    format!("{value} {interval}").trim().to_string(),
                    j.outcome.word().to_string(),
                ]
            })
            .collect();
        doc.table(
            &[
                "Level",
                "Figure",
                "Target",
                "Pooled (95 % interval)",
                "Outcome",
            ],
            rows,
            3,
        );
    }
    let unstable = r.unstable();
    if !unstable.is_empty() {
        doc.blocks.push(Block::List(
            unstable
                .iter()
                .map(|(g, f)| {
                    let (label, _, _) = figure_format(*g == "class", &f.key);
                    format!(
                        "Unstable across runs: {g}, {label} (CV {} %)",
                        fixed(f.cv.unwrap_or(0.0) * 100.0, 1)
                    )
                })
                .collect(),
        ));
    }
    for group in &r.groups {
        doc.heading(format!("{} (runs {})", group.label, runs_text(group)));
        let mut header: Vec<String> = [
            "Figure",
            "Pooled (95 % interval)",
            "Mean ± sd",
            "Min–max",
            "CV %",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        header.extend(group.runs.iter().map(|i| format!("Run {i}")));
        let class = is_class(group);
        let rows = group
            .figures
            .iter()
            .map(|f| {
                let (label, shown, _) = figure_format(class, &f.key);
                let mut row = vec![
                    label,
                    pooled_cell(f, shown),
                    mean_sd(f, shown),
                    min_max(f, shown),
                    cv_cell(f),
                ];
                row.extend(f.values.iter().map(|v| show(shown, *v)));
                row
            })
            .collect();
        doc.blocks.push(Block::Table {
            header,
            rows,
            numeric_from: 1,
        });
    }
    doc.heading("Runs");
    let rows = r
        .runs
        .iter()
        .map(|run| {
            vec![
                run.index.to_string(),
                run.seed.to_string(),
                format!("{}/", run.folder),
                if run.interrupted {
                    "interrupted (left out)".to_string()
                } else {
                    run.verdict.clone().unwrap_or_else(|| MISSING.to_string())
                },
            ]
        })
        .collect();
    doc.table(&["Run", "Seed", "Folder", "Verdict"], rows, 4);
    doc
}

fn upper(text: &str) -> String {
    super::format::upper_first(text)
}

/// The table a repeated run prints at its end: per level or class, the
/// figures most read (a level's `compare` figures, every class figure with
/// an interval), pooled with their interval, mean ± sd, min–max and CV.
pub fn text_table(r: &RepeatSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Across {} runs (pooled with its 95 % interval; mean ± sd, min–max and CV across runs):",
        r.runs.iter().filter(|x| !x.interrupted).count()
    );
    for group in &r.groups {
        let class = is_class(group);
        let _ = writeln!(out, "\n  {} (runs {})", group.label, runs_text(group));
        let rows: Vec<[String; 5]> = group
            .figures
            .iter()
            .filter(|f| {
                // A sweep's rate and a search's answer move between runs
                // by design: shown with the compared figures.
                class
                    || f.key == FIND_RATE_ANSWER
                    || f.key == "rate_per_s"
                    || level_metrics_in(View::Compare).any(|m| m.key() == f.key)
            })
            .map(|f| {
                let (label, shown, _) = figure_format(class, &f.key);
                [
                    label,
                    pooled_cell(f, shown),
                    mean_sd(f, shown),
                    min_max(f, shown),
                    cv_cell(f),
                ]
            })
            .collect();
        let head = [
            "figure".to_string(),
            "pooled".to_string(),
            "mean ± sd".to_string(),
            "min–max".to_string(),
            "CV %".to_string(),
        ];
        let width = |c: usize| {
            std::iter::once(&head)
                .chain(rows.iter())
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..5).map(width).collect();
        for row in std::iter::once(&head).chain(rows.iter()) {
            let mut line = String::from("   ");
            for (c, cell) in row.iter().enumerate() {
                let pad = widths[c].saturating_sub(cell.chars().count());
                if c == 0 {
                    line.push_str(&format!(" {cell}{}", " ".repeat(pad)));
                } else {
                    line.push_str(&format!("  {}{cell}", " ".repeat(pad)));
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    out
}
