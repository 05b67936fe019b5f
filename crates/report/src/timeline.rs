//! The report of a host timeline alone: the lines `codendum metrics --watch
//! 5 --json` wrote on the GPU host during a class (or any
//! `server-timeline.jsonl`), as the server saw the day: its peaks, what it
//! processed and finished, where the time went, and its queue and output
//! over time. Written beside the file as `<stem>-report.md` and
//! `<stem>-report.html`.

use std::path::Path;

use chrono::{DateTime, Utc};

use super::doc::{push_run_blocks, timeline_sentence, Doc};
use super::format::{fixed, opt_fixed, opt_percent, MISSING};
use super::from_results::points;
use super::model::{Parameter, RunInfo, TimelinePoint};
use super::svg::{AxisTitle, Chart, LineChart, Series, TimelineChart};
use codendum_core::error::{ConfigError, Error};
use codendum_core::observed::server::{server_side, ServerSide};
use codendum_core::prom::window::{window_stats, IntervalRates, WindowStats};
use codendum_core::prom::{align_timeline, TimelineSample};

/// Everything a timeline report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineReport {
    /// The file's name.
    pub source: String,
    /// First and last sample, UTC.
    pub span_utc: (DateTime<Utc>, DateTime<Utc>),
    /// The figures over the whole timeline.
    pub whole: WindowStats,
    /// The same as the class figures of a real class, and what the server
    /// finished with an error or aborted.
    pub server: Option<ServerSide>,
    /// Server output between successive samples: (minutes from the first
    /// sample, tokens/s).
    pub output_tok_per_s: Vec<(f64, f64)>,
    /// The samples as chart points (seconds from the first sample).
    pub points: Vec<TimelinePoint>,
    /// The served model, KV capacity (tokens) and block size the server
    /// stated.
    pub model: Option<String>,
    /// KV-cache capacity, tokens.
    pub kv_capacity_tokens: Option<u64>,
    /// Distinct process start times seen (more than one: a restart, or
    /// several servers behind one URL).
    pub process_starts: usize,
}

/// Reads a timeline file into its report.
pub fn timeline_report(path: &Path) -> Result<TimelineReport, Error> {
    let samples = super::observed::read_host_timeline(path)?;
    let bad = |reason: &str| {
        Error::Config(ConfigError::BadFile {
            what: "server timeline",
            path: path.to_path_buf(),
            reason: reason.into(),
        })
    };
    let first = samples
        .iter()
        .map(|s| s.utc)
        .min()
        .ok_or_else(|| bad("holds no sample"))?;
    let last = samples.iter().map(|s| s.utc).max().unwrap_or(first);
    if samples.iter().all(|s| s.snapshot.is_none()) {
        return Err(bad(
            "every sample failed: /metrics was never read (see each line's error)",
        ));
    }
    let aligned: Vec<TimelineSample> = align_timeline(samples, first);
    let span = aligned.last().map_or(0.0, |s| s.t);
    let mut starts: Vec<f64> = aligned
        .iter()
        .filter_map(|s| s.snapshot.as_ref()?.process_start_time_s)
        .collect();
    starts.sort_by(f64::total_cmp);
    starts.dedup();
    let snapshot = |get: fn(&codendum_core::prom::ServerSnapshot) -> Option<String>| {
        aligned.iter().rev().find_map(|s| get(s.snapshot.as_ref()?))
    };
    Ok(TimelineReport {
        source: path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        span_utc: (first, last),
        whole: window_stats(&aligned, 0.0, span),
        server: server_side(&aligned, 0.0, span),
        output_tok_per_s: aligned
            .windows(2)
            .filter_map(|w| {
                let r = IntervalRates::between(&w[0], &w[1])?;
                Some((w[1].t / 60.0, r.generation_tokens_per_s?))
            })
            .collect(),
        points: points(&aligned),
        model: snapshot(|s| s.model_name.clone()),
        kv_capacity_tokens: aligned
            .iter()
            .rev()
            .find_map(|s| s.snapshot.as_ref()?.kv_capacity_tokens),
        process_starts: starts.len(),
    })
}

/// The timeline report's document.
pub(crate) fn timeline_doc(r: &TimelineReport) -> Doc {
    let (from, to) = r.span_utc;
    let mut doc = Doc::new(format!(
        "Server timeline: {}, {}",
        r.source,
        from.format("%Y-%m-%d %H:%M UTC")
    ));
    let span_s = (to - from).num_milliseconds() as f64 / 1000.0;
    let run = RunInfo {
        model: r.model.clone(),
        started_utc: Some(from),
        finished_utc: Some(to),
        codendum_version: env!("CARGO_PKG_VERSION").to_string(),
        ..RunInfo::default()
    };
    let parameters = vec![
        Parameter {
            name: "timeline".into(),
            value: r.source.clone(),
        },
        Parameter {
            name: "span".into(),
            value: format!("{:.1} min", span_s / 60.0),
        },
        Parameter {
            name: "KV-cache capacity".into(),
            value: r
                .kv_capacity_tokens
                .map_or(MISSING.to_string(), |t| format!("{t} tokens")),
        },
    ];
    push_run_blocks(&mut doc, &run, &parameters, None);
    if r.process_starts > 1 {
        doc.paragraph(format!(
            "The server's process start time changed {} times: it restarted, or the URL answered for several servers. Counter increases are summed per process.",
            r.process_starts - 1
        ));
    }
    doc.heading("Over the whole timeline");
    let w = &r.whole;
    let count = |v: Option<f64>| v.map_or(MISSING.to_string(), |v| fixed(v, 0));
    let s = r.server.as_ref();
    let highest = r
        .output_tok_per_s
        .iter()
        .map(|p| p.1)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let rows = vec![
        vec![
            "Samples / failed".to_string(),
            format!("{} / {}", w.samples, w.failed_scrapes),
        ],
        vec![
            "Peak running / waiting requests".to_string(),
            format!("{} / {}", count(w.peak_running), count(w.peak_waiting)),
        ],
        vec![
            "Peak KV-cache usage (%)".to_string(),
            opt_percent(w.peak_kv_usage),
        ],
        vec!["Preemptions".to_string(), count(w.preemptions)],
        vec![
            "Prompt / generated tokens".to_string(),
            format!(
                "{} / {}",
                count(w.prompt_tokens),
                count(w.generation_tokens)
            ),
        ],
        vec![
            "Server output, mean / highest between two samples (tok/s)".to_string(),
            format!(
                "{} / {}",
                opt_fixed(s.and_then(|s| s.figures.output_tokens_per_s), 1),
                opt_fixed(highest, 1)
            ),
        ],
        vec![
            "Prefix-cache hit rate (%)".to_string(),
            opt_percent(w.prefix_hit_rate),
        ],
        vec![
            "Requests finished / with an error / aborted".to_string(),
            format!(
                "{} / {} / {}",
                count(w.requests_finished),
                count(s.and_then(|s| s.finished_with_error)),
                count(s.and_then(|s| s.aborted))
            ),
        ],
    ];
    doc.table(&["Figure", "Value"], rows, 1);
    super::time_split_doc::push_time_split(
        &mut doc,
        &[("whole timeline".to_string(), w.time_split)],
    );
    doc.heading("Over time");
    doc.paragraph(timeline_sentence(&r.points));
    doc.chart(Chart::Timeline(TimelineChart {
        title: "Server queue over time".to_string(),
        samples: r.points.clone(),
        shaded: Vec::new(),
        markers: Vec::new(),
    }));
    if !r.output_tok_per_s.is_empty() {
        let mut chart = LineChart::new(
            "Server output over time",
            AxisTitle::new("Time since the first sample", "min"),
            AxisTitle::new("Output", "tok/s"),
            vec![Series::new("generated tokens", r.output_tok_per_s.clone())],
        );
        chart.markers = false;
        doc.chart(Chart::Line(chart));
    }
    doc
}
