//! The content of compare.md / compare.html.

use super::compare::{lower_first, ComparedFigure, Comparison, Difference, RunKind};
use super::compare_pairs::RATE_TOLERANCE;
use super::doc::{title_date, Block, Doc};
use super::format::{fixed, with_interval, MISSING};

/// The comparison document.
pub(crate) fn compare_doc(c: &Comparison) -> Doc {
    let what = match c.kind {
        RunKind::Bench => "Benchmark comparison",
        RunKind::Classroom => "Classroom comparison",
    };
    let mut doc = Doc::new(format!("{what} – {}", c.heading()));
    doc.heading("Runs");
    runs_table(&mut doc, c);
    doc.paragraph(provenance_summary(c));
    if !c.pairings.is_empty() {
        doc.paragraph(pairing_summary(c));
    }
    figure_sections(&mut doc, c);
    if !c.charts.is_empty() {
        let mut blocks = vec![
            Block::Heading(2, "Charts".to_string()),
            Block::Paragraph("One series per run.".to_string()),
        ];
        blocks.extend(c.charts.iter().map(|ch| Block::Chart(Box::new(ch.clone()))));
        doc.blocks.push(Block::HtmlOnly(blocks));
    }
    doc
}

/// The runs side by side: the fields that differ, those that are the same,
/// the start and whether each was interrupted.
fn runs_table(doc: &mut Doc, c: &Comparison) {
    let mut header = vec!["Field"];
    header.extend(c.labels.iter().map(String::as_str));
    let mut rows: Vec<Vec<String>> = c
        .differences
        .iter()
        .chain(&c.same)
        .map(|d| {
            let mut row = vec![d.field.clone()];
            row.extend(d.values.iter().cloned());
            row
        })
        .collect();
    let mut started = vec!["Started".to_string()];
    started.extend(c.runs.iter().map(title_date));
    rows.push(started);
    let mut interrupted = vec!["Interrupted".to_string()];
    interrupted.extend(
        c.runs
            .iter()
            .map(|r| if r.interrupted { "yes" } else { "no" }.to_string()),
    );
    rows.push(interrupted);
    let text_only = header.len();
    doc.table(&header, rows, text_only);
}

/// What differs between the runs, what is the same, and what changes are
/// relative to.
fn provenance_summary(c: &Comparison) -> String {
    let names = |ds: &[Difference]| {
        ds.iter()
            .map(|d| lower_first(&d.field))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut summary = String::new();
    if c.differences.is_empty() {
        summary.push_str("The runs have the same provenance.");
    } else {
        summary.push_str(&format!("What differs: {}.", names(&c.differences)));
        if !c.same.is_empty() {
            summary.push_str(&format!(" Same in all runs: {}.", names(&c.same)));
        }
    }
    let base = c
        .labels
        .first()
        .map(String::as_str)
        .unwrap_or("the first run");
    let pooled: Vec<String> = c
        .labels
        .iter()
        .zip(&c.pooled_runs)
        .filter_map(|(label, n)| n.map(|n| format!("{label} ({n} runs)")))
        .collect();
    if !pooled.is_empty() {
        summary.push_str(&format!(
            " Repeated runs: {}; their columns hold each figure pooled over every finished run, \
             with its pooled interval (\"–\" where a figure is not pooled); counts (errors, \
             preemptions, failed requests) are summed over the runs and peaks (peak KV-cache \
             usage) are the largest of the runs', so they are compared only between columns of \
             as many runs; their provenance is their first run's.",
            pooled.join(", ")
        ));
    }
    summary.push_str(&format!(
        " Changes are relative to {base}. Figures in parentheses are 95 % intervals; a change is \
         \"better\" or \"worse\" only when the two runs' intervals do not overlap, else it is \
         \"within noise\" (what repeating the same run would give). Figures without intervals: \
         \"same\" means a change under 0.5 %."
    ));
    summary
}

/// How rate levels were paired across the runs, and why they need
/// pairing at all.
fn pairing_summary(c: &Comparison) -> String {
    let mut text = format!(
        "Rate levels: a sweep places its rates between the throughputs each run measured, so the \
         same sweep lands on slightly different rates from run to run; levels are paired by their \
         place when two sweeps have as many rates, else by nearest rate within {} %, and each \
         heading gives every run's rate.",
        (RATE_TOLERANCE * 100.0).round()
    );
    if c.pooled_runs.iter().any(Option::is_some) {
        text.push_str(" A repeated run's rate is the mean of its runs' rates at that level.");
    }
    for p in &c.pairings {
        text.push(' ');
        text.push_str(p);
    }
    text
}

/// One table per section: each figure's values and, for every run after
/// the first, its change and what that change is.
fn figure_sections(doc: &mut Doc, c: &Comparison) {
    let mut header: Vec<String> = vec!["Figure".to_string()];
    header.extend(c.labels.iter().cloned());
    for label in c.labels.iter().skip(1) {
        header.push(format!("Change, {label}"));
        header.push(format!("{label} is"));
    }
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    for section in &c.sections {
        doc.heading(section.title.clone());
        if let Some(note) = &section.note {
            doc.paragraph(note.clone());
        }
        let rows = section
            .figures
            .iter()
            .map(|f| figure_row(f, c.labels.len()))
            .collect();
        doc.table(&header_refs, rows, 1);
    }
}

/// One figure's row over `runs` runs.
fn figure_row(f: &ComparedFigure, runs: usize) -> Vec<String> {
    let mut row = vec![f.name.clone()];
    row.extend(f.values.iter().enumerate().map(|(run, v)| {
        v.map_or_else(
            || MISSING.to_string(),
            |v| with_interval(f.show(v), f.shown, f.interval(run)),
        )
    }));
    for run in 1..runs {
        match f.change(run) {
            Some(ch) => {
                let pct = ch.percent.map(|p| {
                    let sign = if p > 0.0 && fixed(p, 1) != "0.0" {
                        "+"
                    } else {
                        ""
                    };
                    format!(" ({sign}{} %)", fixed(p, 1))
                });
                row.push(format!(
                    "{}{}",
                    f.show_delta(ch.delta),
                    pct.unwrap_or_default()
                ));
                row.push(ch.assessment.word().to_string());
            }
            None => {
                row.push(MISSING.to_string());
                row.push(MISSING.to_string());
            }
        }
    }
    row
}
