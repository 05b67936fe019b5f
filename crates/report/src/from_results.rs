//! The report models filled from what a results folder holds: the run's
//! identity, parameters, figures and the server timeline as chart points.

use super::model::{
    BenchReport, ClassroomReport, FleetWindow, LevelBoundary, Parameter, ReplicaLine, RunInfo,
    TimelinePoint, Verdict,
};
use codendum_core::openai::TokenSource;
use codendum_core::prom::TimelineSample;
use codendum_core::results::classroom_records::{CallRecord, TaskRecord};
use codendum_core::results::{self, BenchSummary, ClassroomRunSummary, RunHeader};

/// Each replica's samples as chart points, in order of first appearance.
pub fn replica_lines(samples: &[codendum_core::prom::ReplicaSample]) -> Vec<ReplicaLine> {
    codendum_core::prom::replicas::replica_order(samples)
        .into_iter()
        .map(|name| ReplicaLine {
            points: points(&codendum_core::prom::replicas::replica_timeline(
                samples, &name,
            )),
            replica: name,
        })
        .collect()
}

/// A timeline's samples as chart points.
pub(crate) fn points(timeline: &[TimelineSample]) -> Vec<TimelinePoint> {
    timeline
        .iter()
        .map(|s| TimelinePoint {
            t_s: s.t,
            running: s.snapshot.as_ref().and_then(|x| x.running),
            waiting: s.snapshot.as_ref().and_then(|x| x.waiting),
            kv_usage: s.snapshot.as_ref().and_then(|x| x.kv_usage),
        })
        .collect()
}

fn run_info(
    header: &RunHeader,
    provenance: &codendum_core::access::Provenance,
    server: &results::ServerDescription,
) -> RunInfo {
    RunInfo {
        provenance: provenance.clone(),
        server_version: server.server_version.clone(),
        model: Some(server.model.clone()),
        target_url: Some(server.url.clone()),
        started_utc: Some(header.started_utc),
        finished_utc: Some(header.finished_utc),
        codendum_version: env!("CARGO_PKG_VERSION").to_string(),
        interrupted: header.interrupted,
    }
}

fn param(name: &str, value: impl ToString) -> Parameter {
    Parameter {
        name: name.into(),
        value: value.to_string(),
    }
}

/// Fills a [`BenchReport`] from a bench summary and its timeline.
pub fn bench_report(s: &BenchSummary, timeline: &[TimelineSample]) -> BenchReport {
    let p = &s.parameters;
    // A run of rate levels only names its rates; its concurrency list is the
    // unused default.
    let mut rates: Vec<String> = Vec::new();
    for r in s.levels.iter().filter_map(|l| l.rate.as_ref()) {
        let label = format!("{}/s {}", r.rate_per_s, r.arrival);
        if !rates.contains(&label) {
            rates.push(label);
        }
    }
    let closed = s.levels.iter().any(|l| l.rate.is_none());
    let levels_text: Vec<String> = p.concurrency.iter().map(u32::to_string).collect();
    let mut parameters = Vec::new();
    if closed || rates.is_empty() {
        parameters.push(param("concurrency", levels_text.join(",")));
    }
    if !rates.is_empty() {
        parameters.push(param("rates", rates.join(", ")));
    }
    parameters.extend([
        param("shapes", p.shapes.join(",")),
        param("output tokens", p.output_tokens),
        param("endpoint", format!("{:?}", p.endpoint).to_lowercase()),
        param(
            "prompt sizing",
            format!("{:?}", s.prompt_sizing.method).to_lowercase(),
        ),
        param("clock scale", p.clock_scale),
        param("seed", p.seed),
    ]);
    if p.calibration {
        parameters.push(param(
            "workload",
            "calibration (bench --calibration): cells for codendum calibrate",
        ));
    }
    let t0 = s.levels.first().map_or(0.0, |l| l.started_at_s);
    let levels = s.levels.clone();
    // The timeline is on the run's axis (seconds since started_utc); level
    // starts are on the clock's axis: shift them by the first level's start.
    let boundaries = s
        .levels
        .iter()
        .map(|l| LevelBoundary {
            t_s: l.started_at_s - t0,
            label: format!("{} {}", l.shape, l.load_label()),
        })
        .collect();
    BenchReport {
        run: run_info(&s.header, &s.provenance, &s.server),
        parameters,
        levels,
        run_verdict: s.verdict.clone(),
        timeline: points(timeline),
        boundaries,
        verdicts: Vec::new(),
        not_run: s.skipped_shapes.iter().map(|k| k.reason()).collect(),
        replica_timelines: Vec::new(),
        fleets: s
            .levels
            .iter()
            .filter_map(|l| {
                Some(FleetWindow {
                    label: format!("{} {}", l.shape, l.load_label()),
                    fleet: l.fleet.clone()?,
                })
            })
            .collect(),
        metrics_continuity: s.metrics_continuity.clone(),
        router: s.router.clone(),
        searched_shapes: s.rate_search.iter().map(|r| r.shape.clone()).collect(),
    }
}

/// Fills a [`ClassroomReport`] from a classroom summary, its timeline and its
/// records (`requests.jsonl`, `tasks.jsonl`).
pub fn classroom_report(
    s: &ClassroomRunSummary,
    timeline: &[TimelineSample],
    requests: &[CallRecord],
    tasks: &[TaskRecord],
) -> ClassroomReport {
    let parameters = classroom_parameters(s);
    ClassroomReport {
        replay: s.replay.is_some(),
        run: run_info(&s.header, &s.provenance, &s.server),
        parameters,
        summary: s.summary.clone(),
        run_verdict: s.verdict.clone(),
        calls_client_counted: requests
            .iter()
            .filter(|r| r.error_kind.is_none() && r.tokens_counted_by == TokenSource::Client)
            .count() as u64,
        ttft_s: requests.iter().filter_map(|r| r.ttft_s).collect(),
        user_output_tok_per_s: speed_per_user(requests),
        coding_request_s: tasks
            .iter()
            .filter(|t| {
                matches!(
                    t.outcome,
                    codendum_core::results::classroom_records::TaskOutcome::Completed
                )
            })
            .map(|t| t.end - t.start)
            .collect(),
        timeline: points(timeline),
        verdicts: Vec::<Verdict>::new(),
        replica_timelines: Vec::new(),
        fleets: s
            .summary
            .server_fleet
            .iter()
            .map(|f| FleetWindow {
                label: "class".into(),
                fleet: f.clone(),
            })
            .collect(),
        metrics_continuity: s.metrics_continuity.clone(),
        router: s.router.clone(),
        observed: None,
    }
}

/// The parameters a classroom report states.
fn classroom_parameters(s: &ClassroomRunSummary) -> Vec<Parameter> {
    let p = &s.parameters;
    if let Some(r) = &s.replay {
        return vec![
            param("replayed", format!("{} ({})", r.source, r.source_kind)),
            param("sessions", r.sessions),
            param("calls", r.calls),
            param("speed", r.speed),
            param("block size", format!("{} tokens", r.block_size)),
            // The recorded sharing with a cache that keeps everything,
            // beside what the server's cache served: the gap is eviction.
            param(
                "prefix-cache hit rate, theoretical / measured",
                format!(
                    "{} / {}",
                    r.theoretical_hit_rate
                        .map_or("–".into(), |f| format!("{:.1} %", f * 100.0)),
                    s.summary
                        .server
                        .prefix_cache_hit_rate
                        .map_or("–".into(), |f| format!("{:.1} %", f * 100.0))
                ),
            ),
            param(
                "prompt sizes as the server counted them",
                format!(
                    "{} of {} calls within 1 % of the recorded size (largest difference {:.2} %)",
                    r.sizes_within_1_pct, r.sizes_counted, r.size_error_max_pct
                ),
            ),
            param(
                "sessions started",
                match r.users {
                    Some(u) => format!("as {u} users"),
                    None => "at their recorded offsets".into(),
                },
            ),
            param("timing", &r.timing),
            param(
                "calls beyond the context",
                match r.max_model_len {
                    Some(m) => format!(
                        "{} skipped, {} shortened (max_model_len {m})",
                        r.too_long_skipped, r.too_long_shortened
                    ),
                    None => "not checked".into(),
                },
            ),
            param("chat template", format!("{} tokens", r.template_tokens)),
            // The stretch server output is averaged over: a classroom
            // source's own ramp-up to the end of its window, else the
            // whole replay.
            param(
                "steady window",
                if p.ramp_up_s > 0.0 {
                    format!("{:.0}–{:.0} s (the class's own)", p.ramp_up_s, p.duration_s)
                } else {
                    "the whole replay".to_string()
                },
            ),
            param("clock scale", p.clock_scale),
            param("seed", p.seed),
            param("server figures from", &s.server_figures_source),
        ];
    }
    let mut out = vec![
        param("users", p.users),
        param("scenario", &p.scenario),
        param("duration", format!("{} s", p.duration_s)),
        param("ramp-up", format!("{} s", p.ramp_up_s)),
        param("pauses", format!("{}–{} s", p.pause_min_s, p.pause_max_s)),
        param("follow-ups", p.follow_ups),
        param(
            "context limit",
            p.context_limit
                .map_or("none".into(), |c| format!("{c} tokens")),
        ),
        param("output limit", format!("{} tokens", p.output_limit)),
        param(
            "client times",
            p.client_times
                .as_deref()
                .map_or("built-in model".into(), |f| format!("measured ({f})")),
        ),
        param("clock scale", p.clock_scale),
        param("seed", p.seed),
        param("server figures from", &s.server_figures_source),
    ];
    if let Some(w) = s.summary.steady_window {
        out.push(param(
            "steady window",
            format!("{:.0}–{:.0} s (server output over it)", w.start_s, w.end_s),
        ));
    }
    out
}

/// Output speed of each student, tokens/s: the student's output tokens over
/// the time its successful calls spent generating (E2E − TTFT).
pub(crate) fn speed_per_user(requests: &[CallRecord]) -> Vec<f64> {
    let mut per_user: std::collections::BTreeMap<usize, (f64, f64)> = Default::default();
    for r in requests {
        if let (Some(_), Some(ttft)) = (r.output_speed(), r.ttft_s) {
            let e = per_user.entry(r.user).or_default();
            e.0 += r.output_tokens as f64;
            e.1 += r.e2e_s - ttft;
        }
    }
    per_user
        .values()
        .filter(|(_, t)| *t > 0.0)
        .map(|(n, t)| n / t)
        .collect()
}
