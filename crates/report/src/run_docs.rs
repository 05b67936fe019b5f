//! The content of report.md / report.html for one benchmark or classroom run.

use super::charts::{bench_charts, classroom_charts};
use super::doc::{push_run_blocks, push_verdicts, timeline_sentence, Doc};
use super::format::{class_row, level_cell, shorten, upper_first};
use super::model::{BenchReport, ClassroomReport};
use super::svg::Chart;
use codendum_core::results::metrics::{class_summary_rows, level_metrics_in, View};
use codendum_core::results::{ClassroomSummary, LevelSummary};

fn profile_name(p: &Option<String>) -> String {
    p.clone().unwrap_or_else(|| "unnamed profile".to_string())
}

/// Said where output tokens are the client's count of stream chunks.
const CHUNK_COUNTED: &str = "Output tokens were counted by the client, one per stream chunk: the \
    server sent no usage, and a chunk can carry several tokens (vLLM 0.32 sent six tokens in two \
    chunks), so these token counts and the output tok/s built on them are lower bounds.";

/// Said once in every report that shows intervals.
const INTERVALS: &str = "Figures in parentheses are 95 % confidence intervals: percentiles from \
    order statistics (exact binomial ranks, widened for requests that wait alike), shares by \
    Wilson's interval, means and rates by batch means, coding requests per hour by Poisson's. \
    (≥ x) has no upper bound: too few requests to bound that percentile from above (P95 needs \
    72, P99 368). A target whose interval straddles its limit is indeterminate.";

/// Whether any level of a report carries an interval.
fn has_intervals(levels: &[LevelSummary]) -> bool {
    levels.iter().any(|l| !l.intervals.is_empty())
}

/// The benchmark report document.
pub(crate) fn bench_doc(r: &BenchReport) -> Doc {
    let mut doc = Doc::new(format!(
        "Benchmark report: {}, {}",
        profile_name(&r.run.provenance.profile),
        super::doc::title_date(&r.run)
    ));
    push_run_blocks(&mut doc, &r.run, &r.parameters, r.run_verdict.as_ref());
    let after_restart: Vec<String> = r
        .levels
        .iter()
        .filter(|l| l.server_restarted)
        .map(|l| format!("{} {}", l.shape, l.load_label()))
        .collect();
    super::doc::push_continuity(&mut doc, &r.metrics_continuity, &after_restart);
    if !r.not_run.is_empty() {
        doc.paragraph("Not run:");
        doc.blocks.push(super::doc::Block::List(r.not_run.clone()));
    }
    let mut charts = bench_charts(r).into_iter();
    let throughput_chart = charts.next();
    if has_intervals(&r.levels) {
        doc.paragraph(INTERVALS);
    }
    for shape in r.shapes() {
        doc.heading(format!("{} prompts", upper_first(&shape)));
        let levels: Vec<&LevelSummary> = r.levels.iter().filter(|l| l.shape == shape).collect();
        push_shape_levels(&mut doc, &levels);
        push_steady_windows(&mut doc, &levels);
        if let Some(chart) = charts.next().filter(|c| !c.is_empty_lines()) {
            doc.chart(chart);
        }
    }
    push_throughput(&mut doc, &r.levels);
    let counted: Vec<String> = r
        .levels
        .iter()
        .filter(|l| l.tokens_client_counted)
        .map(|l| format!("{} {}", l.shape, l.load_label()))
        .collect();
    if !counted.is_empty() {
        doc.paragraph(format!(
            "{CHUNK_COUNTED} Levels counted this way: {}.",
            counted.join(", ")
        ));
    }
    let splits: Vec<_> = r
        .levels
        .iter()
        .map(|l| (format!("{} {}", l.shape, l.load_label()), l.time_split))
        .collect();
    super::time_split_doc::push_time_split(&mut doc, &splits);
    doc.paragraph(timeline_sentence(&r.timeline));
    for chart in throughput_chart.into_iter().chain(charts) {
        if !chart.is_empty_lines() {
            doc.chart(chart);
        }
    }
    super::replicas_doc::push_fleet(&mut doc, &r.fleets);
    for chart in super::replicas_doc::replica_charts(&r.replica_timelines) {
        doc.chart(chart);
    }
    super::replicas_doc::push_router(&mut doc, r.router.as_ref(), None);
    push_verdicts(&mut doc, &r.verdicts);
    doc
}

/// The classroom report document (a simulated class, a replay, or a real
/// class with its own sections).
pub(crate) fn classroom_doc(r: &ClassroomReport) -> Doc {
    let mut doc = Doc::new(match &r.observed {
        Some(_) => format!(
            "Class report: {}, {}",
            r.run.target_url.as_deref().unwrap_or("imported sessions"),
            super::doc::title_date(&r.run)
        ),
        None => format!(
            "{} report: {}, {}",
            if r.replay { "Replay" } else { "Classroom" },
            profile_name(&r.run.provenance.profile),
            super::doc::title_date(&r.run)
        ),
    });
    push_run_blocks(&mut doc, &r.run, &r.parameters, r.run_verdict.as_ref());
    let after_restart = if r.summary.server.server_restarted {
        vec!["the class's server figures".to_string()]
    } else {
        Vec::new()
    };
    super::doc::push_continuity(&mut doc, &r.metrics_continuity, &after_restart);
    let mut rows = summary_rows(&r.summary);
    if let (Some(o), Some(first)) = (&r.observed, rows.first_mut()) {
        // A real class's students are not simulated.
        first[0] = "Students".to_string();
        super::observed_doc::push_recording(&mut doc, o);
    }
    doc.heading("Summary");
    if !r.summary.intervals.is_empty() {
        doc.paragraph(INTERVALS);
    }
    doc.table(&["Figure", "Value"], rows, 1);
    if r.calls_client_counted > 0 {
        doc.paragraph(format!(
            "{CHUNK_COUNTED} Model calls counted this way: {}.",
            r.calls_client_counted
        ));
    }
    super::time_split_doc::push_time_split(
        &mut doc,
        &[("class".to_string(), r.summary.server.time_split)],
    );
    if let Some(o) = &r.observed {
        super::observed_doc::push_errors(&mut doc, o);
        super::observed_doc::push_students(&mut doc, o);
    }
    let mut charts = classroom_charts(r).into_iter();
    doc.heading("Distributions");
    doc.paragraph(format!(
        "{} requests with a first token, {} users with an output speed, {} completed coding requests.",
        r.ttft_s.len(),
        r.user_output_tok_per_s.len(),
        r.coding_request_s.len()
    ));
    let mut queue: Option<Chart> = None;
    for chart in charts.by_ref() {
        if matches!(chart, Chart::Timeline(_)) {
            queue = Some(chart);
        } else {
            doc.chart(chart);
        }
    }
    doc.heading("Server queue");
    if let Some(o) = &r.observed {
        super::observed_doc::push_server_side(&mut doc, o);
    }
    doc.paragraph(timeline_sentence(&r.timeline));
    if let Some(chart) = queue {
        doc.chart(chart);
    }
    super::replicas_doc::push_fleet(&mut doc, &r.fleets);
    for chart in super::replicas_doc::replica_charts(&r.replica_timelines) {
        doc.chart(chart);
    }
    let server_errors = codendum_core::results::metrics::server_errors(&r.summary);
    super::replicas_doc::push_router(&mut doc, r.router.as_ref(), Some(server_errors));
    push_verdicts(&mut doc, &r.verdicts);
    doc
}

/// The classroom's summary table: one row per row of the class figures
/// ([`class_summary_rows`]), the table the lab asked for first.
fn summary_rows(summary: &ClassroomSummary) -> Vec<Vec<String>> {
    class_summary_rows()
        .into_iter()
        .map(|(row, figures)| vec![row.to_string(), class_row(&figures, summary)])
        .collect()
}

/// One shape's level table and its errors by kind.
fn push_shape_levels(doc: &mut Doc, levels: &[&LevelSummary]) {
    push_level_table(doc, View::LevelTable, levels, 0);
    let errors: Vec<String> = levels
        .iter()
        .flat_map(|l| {
            l.errors.iter().map(move |(kind, e)| {
                let sample = if e.sample_message.is_empty() {
                    String::new()
                } else {
                    format!(", e.g. \"{}\"", shorten(&e.sample_message, 160))
                };
                format!("{}: {kind} × {}{sample}", level_name(l), e.count)
            })
        })
        .collect();
    if !errors.is_empty() {
        doc.paragraph("Errors by kind:");
        doc.blocks.push(super::doc::Block::List(errors));
    }
}

/// Where each closed-loop level's steady window lay, what it held, and
/// which levels were too short to judge.
fn push_steady_windows(doc: &mut Doc, levels: &[&LevelSummary]) {
    let lines: Vec<String> = levels
        .iter()
        .filter_map(|l| {
            let w = l.steady?;
            let name = l.load_label();
            Some(if w.used {
                format!(
                    "{name}: {:.1}–{:.1} s, {} requests (ramp-up {} and drain {} left out)",
                    w.start_s, w.end_s, w.requests, w.ramp_up, w.drain
                )
            } else {
                format!(
                    "{name}: too short to judge ({} requests between {:.1} and {:.1} s; ramp-up {}, \
                     drain {}): its figures are over the whole level",
                    w.requests, w.start_s, w.end_s, w.ramp_up, w.drain
                )
            })
        })
        .collect();
    if !lines.is_empty() {
        doc.paragraph(
            "Steady windows (each level's N requests in flight, replaced as they finished; \
             latencies from the requests inside, rates from those that ended inside):",
        );
        doc.blocks.push(super::doc::Block::List(lines));
    }
}

/// The throughput and server-side table of every level.
fn push_throughput(doc: &mut Doc, levels: &[LevelSummary]) {
    doc.heading("Throughput and server-side figures");
    let levels: Vec<&LevelSummary> = levels.iter().collect();
    push_level_table(doc, View::ThroughputTable, &levels, 1);
}

/// A table of `levels` with a column per level figure of `view`; the first
/// `label_columns` columns are labels (left-aligned).
fn push_level_table(doc: &mut Doc, view: View, levels: &[&LevelSummary], label_columns: usize) {
    // A column no level has (the rate columns of a closed-loop run) is left out.
    let metrics: Vec<_> = level_metrics_in(view)
        .filter(|m| m.shown_for(levels))
        .collect();
    let headers: Vec<String> = metrics.iter().map(|m| m.header()).collect();
    let rows = levels
        .iter()
        .map(|l| metrics.iter().map(|m| level_cell(m, l)).collect())
        .collect();
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    doc.table(&headers, rows, label_columns);
}

/// A level as the errors list names it: `16 concurrent`, `0.8 requests/s`.
fn level_name(l: &LevelSummary) -> String {
    match &l.rate {
        Some(r) => format!(
            "{} requests/s",
            codendum_core::results::records::trim_rate(r.rate_per_s)
        ),
        None => format!("{} concurrent", l.concurrency),
    }
}
