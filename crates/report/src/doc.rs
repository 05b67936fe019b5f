//! A tiny document model between the report models and the writers, so
//! that report.md and report.html always hold the same text and tables.

use super::format::{fixed, MISSING};
use super::model::{Parameter, RunInfo, Verdict};
use super::svg::Chart;
use codendum_core::bound::Outcome;
use codendum_core::results::Verdict as RunVerdict;

/// The one sentence every report carries.
pub const DISCLAIMER: &str =
    "These figures are measurements on one server, not guarantees of future performance.";

/// A block of a report.
#[derive(Debug, Clone)]
pub(crate) enum Block {
    /// A heading of level 2 or 3.
    Heading(u8, String),
    /// A paragraph of plain text.
    Paragraph(String),
    /// A table; columns from `numeric_from` on are right-aligned.
    Table {
        header: Vec<String>,
        rows: Vec<Vec<String>>,
        numeric_from: usize,
    },
    /// A bulleted list of plain text.
    List(Vec<String>),
    /// A chart (HTML only).
    Chart(Box<Chart>),
    /// Blocks shown in HTML only.
    HtmlOnly(Vec<Block>),
}

/// A titled list of blocks.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Doc {
    pub fn new(title: String) -> Self {
        Doc {
            title,
            blocks: vec![Block::Paragraph(DISCLAIMER.to_string())],
        }
    }

    pub fn heading(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Heading(2, text.into()));
    }

    pub fn paragraph(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Paragraph(text.into()));
    }

    pub fn table(&mut self, header: &[&str], rows: Vec<Vec<String>>, numeric_from: usize) {
        self.blocks.push(Block::Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
            numeric_from,
        });
    }

    pub fn chart(&mut self, chart: Chart) {
        self.blocks.push(Block::Chart(Box::new(chart)));
    }
}

/// Text for an optional string.
pub(crate) fn or_missing(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| MISSING.to_string())
}

/// The date part of a title, e.g. `2026-09-29 14:05 UTC`.
pub(crate) fn title_date(run: &RunInfo) -> String {
    run.started_utc
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "undated".to_string())
}

/// The provenance rows every report starts with.
pub(crate) fn provenance_rows(run: &RunInfo) -> Vec<Vec<String>> {
    let p = &run.provenance;
    let time = |t: &Option<chrono::DateTime<chrono::Utc>>| {
        t.map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
            .unwrap_or_else(|| MISSING.to_string())
    };
    let row = |k: &str, v: String| vec![k.to_string(), v];
    vec![
        row("Profile", or_missing(&p.profile)),
        row("Image digest", or_missing(&p.image_digest)),
        row("Model", or_missing(&run.model)),
        row("Model revision", or_missing(&p.model_revision)),
        row("Server", or_missing(&run.server_version)),
        row("DGX OS", or_missing(&p.dgx_os_version)),
        row("Driver", or_missing(&p.driver_version)),
        row("Target", or_missing(&run.target_url)),
        row("Started", time(&run.started_utc)),
        row("Finished", time(&run.finished_utc)),
        row(
            "Measured with",
            format!("codendum {}", run.codendum_version),
        ),
    ]
}

/// Provenance, interruption note and parameters.
pub(crate) fn push_run_blocks(
    doc: &mut Doc,
    run: &RunInfo,
    parameters: &[Parameter],
    verdict: Option<&RunVerdict>,
) {
    if run.interrupted {
        doc.paragraph(
            "The run was interrupted: the results cover only what finished before it stopped.",
        );
    }
    if let Some(v) = verdict {
        push_run_verdict(doc, v);
    }
    doc.heading("Provenance");
    doc.table(&["Field", "Value"], provenance_rows(run), 2);
    if !parameters.is_empty() {
        doc.heading("Parameters");
        let rows = parameters
            .iter()
            .map(|p| vec![p.name.clone(), p.value.clone()])
            .collect();
        doc.table(&["Parameter", "Value"], rows, 2);
    }
}

/// How the run ended: its verdict line, its outages, and which part of the
/// run the figures over time cover.
fn push_run_verdict(doc: &mut Doc, v: &RunVerdict) {
    doc.heading("Verdict");
    doc.paragraph(upper_first_char(&v.line) + ".");
    if !v.outages.is_empty() {
        doc.paragraph("Outages (shaded on the timeline):");
        doc.blocks.push(Block::List(
            v.outages
                .iter()
                .map(|o| upper_first_char(&o.describe()))
                .collect(),
        ));
    }
    if let Some(t) = v.answered_until_s {
        doc.paragraph(format!(
            "The server last answered {t:.1} s into the run: the figures over time (server output, steady state) cover the run up to there."
        ));
    }
}

/// What the run's `/metrics` reads showed, when a URL was not one steady
/// server: a note per URL, and the figures that span a restart (`marked`:
/// level labels, or the class's figures).
pub(crate) fn push_continuity(
    doc: &mut Doc,
    found: &[codendum_core::results::MetricsContinuity],
    marked: &[String],
) {
    if found.is_empty() {
        return;
    }
    doc.heading("The server's /metrics");
    doc.blocks.push(Block::List(
        found
            .iter()
            .map(|m| upper_first_char(&m.note) + ".")
            .collect(),
    ));
    if !marked.is_empty() {
        doc.paragraph(format!(
            "Figures that reach past the restart (their peaks are the restarted server's): {}.",
            marked.join(", ")
        ));
    }
}

fn upper_first_char(text: &str) -> String {
    super::format::upper_first(text)
}

/// The targets section, when any verdict exists.
pub(crate) fn push_verdicts(doc: &mut Doc, verdicts: &[Verdict]) {
    if verdicts.is_empty() {
        return;
    }
    doc.heading("Targets");
    let outcome = |v: &Verdict| {
        v.outcome.unwrap_or(if v.passed {
            Outcome::Met
        } else {
            Outcome::Missed
        })
    };
    let met = verdicts
        .iter()
        .filter(|v| outcome(v) == Outcome::Met)
        .count();
    let open = verdicts
        .iter()
        .filter(|v| outcome(v) == Outcome::Indeterminate)
        .count();
    let undecided = if open > 0 {
        format!(
            " {open} indeterminate: the figure's 95 % interval straddles the target, so this run cannot tell which side it is on (measure longer, or repeat the run)."
        )
    } else {
        String::new()
    };
    doc.paragraph(format!(
        "{met} of {} targets met.{undecided}",
        verdicts.len()
    ));
    let rows = verdicts
        .iter()
        .map(|v| {
            let result = match outcome(v) {
                Outcome::Met => "PASS",
                Outcome::Missed => "FAIL",
                Outcome::Indeterminate => "INDETERMINATE",
            };
            vec![
                v.name.clone(),
                v.figure.clone(),
                v.target.clone(),
                result.to_string(),
            ]
        })
        .collect();
    doc.table(&["Check", "Measured", "Target", "Result"], rows, 1);
}

/// A count of timeline samples and the peaks they show.
pub(crate) fn timeline_sentence(timeline: &[super::model::TimelinePoint]) -> String {
    if timeline.is_empty() {
        return "No server samples were recorded (/metrics not reachable or not asked for)."
            .to_string();
    }
    let failed = timeline.iter().filter(|p| p.running.is_none()).count();
    let peak = |f: fn(&super::model::TimelinePoint) -> Option<f64>| {
        timeline
            .iter()
            .filter_map(f)
            .filter(|v| v.is_finite())
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
    };
    let show = |v: Option<f64>, scale: f64, d: usize| {
        v.map_or(MISSING.to_string(), |v| fixed(v * scale, d))
    };
    format!(
        "The server timeline holds {} samples ({failed} failed). Peaks: {} running, {} waiting, KV cache {} %.",
        timeline.len(),
        show(peak(|p| p.running), 1.0, 0),
        show(peak(|p| p.waiting), 1.0, 0),
        show(peak(|p| p.kv_usage), 100.0, 1),
    )
}
