//! The content of report.md / report.html for one benchmark or classroom run.

use super::charts::{bench_charts, classroom_charts};
use super::doc::{push_run_blocks, push_verdicts, timeline_sentence, Doc};
use super::format::{
    fixed, opt_count, opt_fixed, opt_percent, seconds, shorten, upper_first, MISSING,
};
use super::model::{BenchReport, ClassroomFigures, ClassroomReport, LevelRow};
use super::svg::Chart;

fn opt_seconds(v: Option<f64>) -> String {
    v.map_or_else(|| MISSING.to_string(), seconds)
}

fn profile_name(p: &Option<String>) -> String {
    p.clone().unwrap_or_else(|| "unnamed profile".to_string())
}

/// Said where output tokens are the client's count of stream chunks.
const CHUNK_COUNTED: &str = "Output tokens were counted by the client, one per stream chunk: the \
    server sent no usage, and a chunk can carry several tokens (vLLM 0.32 sent six tokens in two \
    chunks), so these token counts and the output tok/s built on them are lower bounds.";

/// The benchmark report document.
pub(crate) fn bench_doc(r: &BenchReport) -> Doc {
    let mut doc = Doc::new(format!(
        "Benchmark report: {}, {}",
        profile_name(&r.run.provenance.profile),
        super::doc::title_date(&r.run)
    ));
    push_run_blocks(&mut doc, &r.run, &r.parameters);
    if !r.not_run.is_empty() {
        doc.paragraph("Not run:");
        doc.blocks.push(super::doc::Block::List(r.not_run.clone()));
    }
    let mut charts = bench_charts(r).into_iter();
    let throughput_chart = charts.next();
    for shape in r.shapes() {
        doc.heading(format!("{} prompts", upper_first(&shape)));
        let levels: Vec<&LevelRow> = r.levels.iter().filter(|l| l.shape == shape).collect();
        push_shape_levels(&mut doc, &levels);
        if let Some(chart) = charts.next() {
            doc.chart(chart);
        }
    }
    push_throughput(&mut doc, &r.levels);
    let counted: Vec<String> = r
        .levels
        .iter()
        .filter(|l| l.tokens_client_counted)
        .map(|l| format!("{} c{}", l.shape, l.concurrency))
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
        .map(|l| (format!("{} c{}", l.shape, l.concurrency), l.time_split))
        .collect();
    super::time_split_doc::push_time_split(&mut doc, &splits);
    doc.paragraph(timeline_sentence(&r.timeline));
    for chart in throughput_chart.into_iter().chain(charts) {
        doc.chart(chart);
    }
    super::replicas_doc::push_fleet(&mut doc, &r.fleets);
    for chart in super::replicas_doc::replica_charts(&r.replica_timelines) {
        doc.chart(chart);
    }
    push_verdicts(&mut doc, &r.verdicts);
    doc
}

/// The classroom report document.
pub(crate) fn classroom_doc(r: &ClassroomReport) -> Doc {
    let f = &r.figures;
    let mut doc = Doc::new(format!(
        "Classroom report: {}, {}",
        profile_name(&r.run.provenance.profile),
        super::doc::title_date(&r.run)
    ));
    push_run_blocks(&mut doc, &r.run, &r.parameters);
    doc.heading("Summary");
    doc.table(&["Figure", "Value"], summary_rows(f), 1);
    if f.calls_client_counted > 0 {
        doc.paragraph(format!(
            "{CHUNK_COUNTED} Model calls counted this way: {}.",
            f.calls_client_counted
        ));
    }
    super::time_split_doc::push_time_split(&mut doc, &[("class".to_string(), f.time_split)]);
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
    doc.paragraph(timeline_sentence(&r.timeline));
    if let Some(chart) = queue {
        doc.chart(chart);
    }
    super::replicas_doc::push_fleet(&mut doc, &r.fleets);
    for chart in super::replicas_doc::replica_charts(&r.replica_timelines) {
        doc.chart(chart);
    }
    push_verdicts(&mut doc, &r.verdicts);
    doc
}

/// The classroom's summary table: one row per figure the seed lists.
fn summary_rows(f: &ClassroomFigures) -> Vec<Vec<String>> {
    let pair = |a: Option<f64>, b: Option<f64>, show: fn(f64) -> String, unit: &str| {
        let s = |v: Option<f64>| v.map_or_else(|| MISSING.to_string(), show);
        format!("{} / {} {unit}", s(a), s(b))
    };
    let row = |k: &str, v: String| vec![k.to_string(), v];
    vec![
        row("Simulated students", f.users.to_string()),
        row(
            "Model requests / failed / retries after 429 or 503",
            format!("{} / {} / {}", f.requests, f.request_errors, f.retries),
        ),
        row(
            "Server output, steady state",
            format!("{} tok/s", opt_fixed(f.server_output_tok_per_s, 1)),
        ),
        row(
            "Time to first token, P50 / P95",
            pair(f.ttft_p50_s, f.ttft_p95_s, seconds, "s"),
        ),
        row(
            "Output speed per user, P50",
            format!("{} tok/s", opt_fixed(f.user_output_tok_per_s_p50, 1)),
        ),
        row(
            "Time to complete a coding request, P50 / P95",
            pair(
                f.coding_request_p50_s,
                f.coding_request_p95_s,
                |s| fixed(s / 60.0, 1),
                "min",
            ),
        ),
        row(
            "Model time per coding request, P50 / P95",
            pair(f.model_time_p50_s, f.model_time_p95_s, seconds, "s"),
        ),
        row(
            "Request time, P50 / P95",
            pair(f.request_time_p50_s, f.request_time_p95_s, seconds, "s"),
        ),
        row(
            "Coding requests completed",
            format!(
                "{} ({} per hour)",
                f.coding_requests_completed,
                opt_fixed(f.coding_requests_per_hour, 0)
            ),
        ),
        row(
            "Prompt tokens, P50 / P95 / max",
            format!(
                "{} / {} / {}",
                opt_fixed(f.prompt_tokens_p50, 0),
                opt_fixed(f.prompt_tokens_p95, 0),
                opt_count(f.prompt_tokens_max)
            ),
        ),
        row(
            "Compactions / tool errors",
            format!("{} / {}", f.compactions, f.tool_errors),
        ),
        row("Peak waiting requests", opt_count(f.peak_waiting)),
        row(
            "Peak KV cache usage",
            format!("{} %", opt_percent(f.peak_kv_usage)),
        ),
        row(
            "Preemptions / server errors",
            format!("{} / {}", opt_count(f.preemptions), f.server_errors),
        ),
        row(
            "Prefix-cache hit rate",
            format!("{} %", opt_percent(f.prefix_hit_rate)),
        ),
    ]
}

/// One shape's level table and its errors by kind.
fn push_shape_levels(doc: &mut Doc, levels: &[&LevelRow]) {
    let rows = levels
        .iter()
        .map(|l| {
            vec![
                l.concurrency.to_string(),
                l.requests.to_string(),
                l.successes.to_string(),
                l.error_total().to_string(),
                fixed(l.output_tok_per_s, 1),
                opt_seconds(l.ttft_p50_s),
                opt_seconds(l.ttft_p95_s),
                opt_seconds(l.ttft_p99_s),
                opt_seconds(l.e2e_p50_s),
                opt_seconds(l.e2e_p95_s),
                opt_fixed(l.mean_tpot_s.map(|s| s * 1000.0), 1),
                opt_count(l.preemptions),
                opt_percent(l.peak_kv_usage),
                opt_count(l.peak_running),
                opt_count(l.peak_waiting),
            ]
        })
        .collect();
    doc.table(
        &[
            "Concurrency",
            "Requests",
            "OK",
            "Errors",
            "Output tok/s",
            "TTFT P50 (s)",
            "TTFT P95 (s)",
            "TTFT P99 (s)",
            "E2E P50 (s)",
            "E2E P95 (s)",
            "TPOT (ms)",
            "Preemptions",
            "Peak KV (%)",
            "Peak running",
            "Peak waiting",
        ],
        rows,
        0,
    );
    let errors: Vec<String> = levels
        .iter()
        .flat_map(|l| {
            l.errors.iter().map(move |e| {
                let sample = e
                    .sample_message
                    .as_deref()
                    .map(|m| format!(", e.g. \"{}\"", shorten(m, 160)))
                    .unwrap_or_default();
                format!(
                    "{} concurrent: {} × {}{sample}",
                    l.concurrency, e.kind, e.count
                )
            })
        })
        .collect();
    if !errors.is_empty() {
        doc.paragraph("Errors by kind:");
        doc.blocks.push(super::doc::Block::List(errors));
    }
}

/// The throughput and server-side table of every level.
fn push_throughput(doc: &mut Doc, levels: &[LevelRow]) {
    doc.heading("Throughput and server-side figures");
    let rows = levels
        .iter()
        .map(|l| {
            vec![
                l.shape.clone(),
                l.concurrency.to_string(),
                seconds(l.wall_time_s),
                fixed(l.requests_per_s, 2),
                opt_fixed(l.mean_input_tokens, 0),
                opt_fixed(l.mean_output_tokens, 0),
                fixed(l.output_tok_per_s, 1),
                fixed(l.total_tok_per_s, 1),
                opt_percent(l.prefix_hit_rate),
            ]
        })
        .collect();
    doc.table(
        &[
            "Shape",
            "Concurrency",
            "Wall time (s)",
            "Requests/s",
            "Mean input tokens",
            "Mean output tokens",
            "Output tok/s",
            "Total tok/s",
            "Prefix-cache hits (%)",
        ],
        rows,
        1,
    );
}
