//! From results folders to report files: reads `summary.json`, the JSONL
//! files and the server timeline (files only: no driver, client or twin),
//! fills the report models and writes `report.md` / `report.html`, or
//! `compare.md` / `compare.html` for several folders.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::model::{
    BenchReport, ClassroomFigures, ClassroomReport, ErrorCount, LevelBoundary, LevelRow, Parameter,
    RunInfo, TimelinePoint, Verdict,
};
use super::{html, markdown, Comparison};
use crate::error::{ConfigError, Error};
use crate::prom::{align_timeline, read_timeline, TimelineSample};
use crate::results::{self, BenchSummary, ClassroomRunSummary};

/// A results folder read back.
#[derive(Debug, Clone)]
pub enum LoadedRun {
    /// A `codendum bench` folder.
    Bench(Box<BenchReport>, Box<BenchSummary>),
    /// A `codendum classroom` folder.
    Classroom(Box<ClassroomReport>, Box<ClassroomRunSummary>),
}

fn bad_folder(folder: &Path, reason: impl Into<String>) -> Error {
    Error::Config(ConfigError::BadFile {
        what: "results folder",
        path: folder.to_path_buf(),
        reason: reason.into(),
    })
}

/// Reads a results folder (and optionally a host timeline to use instead of
/// the folder's own).
pub fn load_run(folder: &Path, server_timeline: Option<&Path>) -> Result<LoadedRun, Error> {
    if super::rebuild::is_bench_without_summary(folder) {
        let summary = super::rebuild::bench_summary_from_requests(folder)
            .map_err(|e| bad_folder(folder, e))?;
        let timeline = timeline_for(folder, server_timeline, summary.header.started_utc)?;
        let mut report = bench_report(&summary, &timeline);
        report.parameters = super::rebuild::known_parameters(&summary);
        report.run.model = None;
        report.run.target_url = None;
        return Ok(LoadedRun::Bench(Box::new(report), Box::new(summary)));
    }
    let path = folder.join(results::SUMMARY_JSON);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        bad_folder(
            folder,
            format!("cannot read {}: {e}", results::SUMMARY_JSON),
        )
    })?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        bad_folder(
            folder,
            format!("{} is not JSON: {e}", results::SUMMARY_JSON),
        )
    })?;
    let kind = results::summary_kind(&value).unwrap_or("").to_string();
    match kind.as_str() {
        "bench" => {
            let summary = results::read_summary_json(text.as_bytes())
                .map_err(|e| bad_folder(folder, e.to_string()))?;
            let timeline = timeline_for(folder, server_timeline, summary.header.started_utc)?;
            let report = bench_report(&summary, &timeline);
            Ok(LoadedRun::Bench(Box::new(report), Box::new(summary)))
        }
        "classroom" => {
            let summary = results::read_classroom_summary(text.as_bytes())
                .map_err(|e| bad_folder(folder, e.to_string()))?;
            let timeline = timeline_for(folder, server_timeline, summary.header.started_utc)?;
            let report = classroom_report(folder, &summary, &timeline);
            Ok(LoadedRun::Classroom(Box::new(report), Box::new(summary)))
        }
        other => Err(bad_folder(
            folder,
            format!("summary.json has kind {other:?}; expected \"bench\" or \"classroom\""),
        )),
    }
}

/// The timeline on the run's axis (seconds since the run started).
fn timeline_for(
    folder: &Path,
    external: Option<&Path>,
    started: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<TimelineSample>, Error> {
    let path = match external {
        Some(p) => p.to_path_buf(),
        None => folder.join(results::SERVER_TIMELINE_JSONL),
    };
    if external.is_none() && !path.exists() {
        return Ok(Vec::new());
    }
    let samples = read_timeline(&path).map_err(|e| {
        Error::Config(ConfigError::BadFile {
            what: "server timeline",
            path: path.clone(),
            reason: e.to_string(),
        })
    })?;
    Ok(align_timeline(samples, started))
}

fn points(timeline: &[TimelineSample]) -> Vec<TimelinePoint> {
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
    provenance: &crate::target::Provenance,
    server: &results::ServerDescription,
    started: chrono::DateTime<chrono::Utc>,
    finished: chrono::DateTime<chrono::Utc>,
    interrupted: bool,
) -> RunInfo {
    RunInfo {
        provenance: provenance.clone(),
        server_version: server.server_version.clone(),
        model: Some(server.model.clone()),
        target_url: Some(server.url.clone()),
        started_utc: Some(started),
        finished_utc: Some(finished),
        codendum_version: env!("CARGO_PKG_VERSION").to_string(),
        interrupted,
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
    let levels_text: Vec<String> = p.concurrency.iter().map(u32::to_string).collect();
    let parameters = vec![
        param("concurrency", levels_text.join(",")),
        param("shapes", p.shapes.join(",")),
        param("output tokens", p.output_tokens),
        param("endpoint", format!("{:?}", p.endpoint).to_lowercase()),
        param(
            "prompt sizing",
            format!("{:?}", s.prompt_sizing.method).to_lowercase(),
        ),
        param("clock scale", p.clock_scale),
        param("seed", p.seed),
    ];
    let t0 = s.levels.first().map_or(0.0, |l| l.started_at_s);
    let levels = s
        .levels
        .iter()
        .map(|l| LevelRow {
            shape: l.shape.clone(),
            concurrency: l.concurrency,
            requests: l.requests,
            successes: l.successes,
            errors: l
                .errors
                .iter()
                .map(|(kind, g)| ErrorCount {
                    kind: kind.clone(),
                    count: g.count,
                    sample_message: Some(g.sample_message.clone()),
                })
                .collect(),
            mean_input_tokens: l.mean_input_tokens,
            mean_output_tokens: l.mean_output_tokens,
            wall_time_s: l.wall_time_s,
            requests_per_s: l.requests_per_s,
            output_tok_per_s: l.output_tok_per_s,
            total_tok_per_s: l.total_tok_per_s,
            ttft_p50_s: l.ttft_p50_s,
            ttft_p95_s: l.ttft_p95_s,
            ttft_p99_s: l.ttft_p99_s,
            e2e_p50_s: l.e2e_p50_s,
            e2e_p95_s: l.e2e_p95_s,
            mean_tpot_s: l.tpot_mean_s,
            preemptions: l.preemptions.map(|x| x.round() as u64),
            peak_kv_usage: l.peak_kv_usage,
            peak_running: l.peak_running.map(|x| x.round() as u64),
            peak_waiting: l.peak_waiting.map(|x| x.round() as u64),
            prefix_hit_rate: l.prefix_hit_rate,
        })
        .collect();
    // The timeline is on the run's axis (seconds since started_utc); level
    // starts are on the clock's axis: shift them by the first level's start.
    let boundaries = s
        .levels
        .iter()
        .map(|l| LevelBoundary {
            t_s: l.started_at_s - t0,
            label: format!("{} c{}", l.shape, l.concurrency),
        })
        .collect();
    BenchReport {
        run: run_info(
            &s.provenance,
            &s.server,
            s.header.started_utc,
            s.header.finished_utc,
            s.header.interrupted,
        ),
        parameters,
        levels,
        timeline: points(timeline),
        boundaries,
        verdicts: Vec::new(),
    }
}

/// Fills a [`ClassroomReport`] from a classroom folder.
pub fn classroom_report(
    folder: &Path,
    s: &ClassroomRunSummary,
    timeline: &[TimelineSample],
) -> ClassroomReport {
    let m = &s.summary;
    let p = &s.parameters;
    let requests: Vec<crate::classroom::RequestRecord> =
        read_lines(folder, results::REQUESTS_JSONL);
    let tasks: Vec<crate::classroom::TaskRecord> = read_lines(folder, results::TASKS_JSONL);
    let server_errors = m
        .errors_by_kind
        .iter()
        .filter(|(k, _)| matches!(k.as_str(), "http_503" | "http_5xx"))
        .map(|(_, n)| *n)
        .sum();
    let figures = ClassroomFigures {
        users: p.users,
        requests: m.requests,
        request_errors: m.errors,
        retries: m.retries_after_429_503,
        server_output_tok_per_s: m.server.output_tokens_per_s,
        ttft_p50_s: m.ttft_p50_s,
        ttft_p95_s: m.ttft_p95_s,
        user_output_tok_per_s_p50: m.output_speed_p50_tok_s,
        coding_request_p50_s: m.task_time_p50_s,
        coding_request_p95_s: m.task_time_p95_s,
        coding_requests_completed: m.completed,
        peak_waiting: m.server.peak_waiting.map(|x| x.round() as u64),
        peak_kv_usage: m.server.peak_kv_cache_usage,
        preemptions: m.server.preemptions,
        server_errors,
        prefix_hit_rate: m.server.prefix_cache_hit_rate,
    };
    let parameters = vec![
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
        param("clock scale", p.clock_scale),
        param("seed", p.seed),
        param("server figures from", &s.server_figures_source),
    ];
    ClassroomReport {
        run: run_info(
            &s.provenance,
            &s.server,
            s.header.started_utc,
            s.header.finished_utc,
            s.header.interrupted,
        ),
        parameters,
        figures,
        ttft_s: requests.iter().filter_map(|r| r.ttft_s).collect(),
        user_output_tok_per_s: speed_per_user(&requests),
        coding_request_s: tasks
            .iter()
            .filter(|t| matches!(t.outcome, crate::classroom::TaskOutcome::Completed))
            .map(|t| t.end - t.start)
            .collect(),
        timeline: points(timeline),
        verdicts: Vec::<Verdict>::new(),
    }
}

/// Output speed of each student, tokens/s: the student's output tokens over
/// the time its successful calls spent generating (duration − TTFT).
fn speed_per_user(requests: &[crate::classroom::RequestRecord]) -> Vec<f64> {
    let mut per_user: std::collections::BTreeMap<usize, (f64, f64)> = Default::default();
    for r in requests {
        if let (Some(_), Some(ttft)) = (r.output_speed(), r.ttft_s) {
            let e = per_user.entry(r.user).or_default();
            e.0 += r.output_tokens as f64;
            e.1 += r.duration_s - ttft;
        }
    }
    per_user
        .values()
        .filter(|(_, t)| *t > 0.0)
        .map(|(n, t)| n / t)
        .collect()
}

fn read_lines<T: serde::de::DeserializeOwned>(folder: &Path, name: &'static str) -> Vec<T> {
    match File::open(folder.join(name)) {
        Ok(f) => results::read_jsonl(BufReader::new(f), name)
            .map(|c| c.items)
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

fn create(path: &Path) -> Result<BufWriter<File>, Error> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}

fn finish(mut w: BufWriter<File>, path: &Path) -> Result<(), Error> {
    w.flush()
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}

/// Writes `report.md` and `report.html` into `folder`, with verdicts when
/// given. Returns the two paths.
pub fn write_report_with(
    folder: &Path,
    server_timeline: Option<&Path>,
    verdicts: &[Verdict],
) -> Result<Vec<PathBuf>, Error> {
    let run = load_run(folder, server_timeline)?;
    let md_path = folder.join("report.md");
    let html_path = folder.join("report.html");
    let mut md = create(&md_path)?;
    let mut html_out = create(&html_path)?;
    let io = |e: std::io::Error| Error::io("cannot write the report", e);
    match run {
        LoadedRun::Bench(mut r, _) => {
            r.verdicts = verdicts.to_vec();
            markdown::write_bench(&r, &mut md).map_err(io)?;
            html::write_bench(&r, &mut html_out).map_err(io)?;
        }
        LoadedRun::Classroom(mut r, _) => {
            r.verdicts = verdicts.to_vec();
            markdown::write_classroom(&r, &mut md).map_err(io)?;
            html::write_classroom(&r, &mut html_out).map_err(io)?;
        }
    }
    finish(md, &md_path)?;
    finish(html_out, &html_path)?;
    Ok(vec![md_path, html_path])
}

/// Writes `report.md` and `report.html` into `folder`.
pub fn write_report(folder: &Path, server_timeline: Option<&Path>) -> Result<Vec<PathBuf>, Error> {
    write_report_with(folder, server_timeline, &[])
}

/// The workload settings that must match for a fair comparison.
fn workload(run: &LoadedRun) -> Vec<(String, String)> {
    match run {
        LoadedRun::Bench(_, s) => {
            let p = &s.parameters;
            vec![
                ("kind".into(), "bench".into()),
                ("concurrency".into(), format!("{:?}", p.concurrency)),
                ("shapes".into(), p.shapes.join(",")),
                ("output tokens".into(), p.output_tokens.to_string()),
                ("endpoint".into(), format!("{:?}", p.endpoint)),
                (
                    "requests per level".into(),
                    format!("{:?}", p.requests_by_concurrency),
                ),
            ]
        }
        LoadedRun::Classroom(_, s) => {
            let p = &s.parameters;
            vec![
                ("kind".into(), "classroom".into()),
                ("users".into(), p.users.to_string()),
                ("duration".into(), format!("{} s", p.duration_s)),
                ("scenario".into(), p.scenario.clone()),
                ("ramp-up".into(), format!("{} s", p.ramp_up_s)),
                ("follow-ups".into(), p.follow_ups.to_string()),
            ]
        }
    }
}

/// Differences in workload between the first run and the others, as
/// `name: a vs b` lines.
pub fn workload_differences(runs: &[LoadedRun]) -> Vec<String> {
    let Some(first) = runs.first().map(workload) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, run) in runs.iter().enumerate().skip(1) {
        for ((name, a), (_, b)) in first.iter().zip(workload(run)) {
            if *a != b {
                out.push(format!("{name}: {a} (run 1) vs {b} (run {})", i + 1));
            }
        }
    }
    out
}

/// Compares folders (the first is the baseline) and writes `compare.md` and
/// `compare.html` into `out`. Refuses runs of different workloads unless
/// `force`.
pub fn write_comparison(
    folders: &[PathBuf],
    force: bool,
    out: &Path,
) -> Result<Vec<PathBuf>, Error> {
    if folders.len() < 2 {
        return Err(ConfigError::invalid("compare", "needs at least two results folders").into());
    }
    let runs = folders
        .iter()
        .map(|f| load_run(f, None))
        .collect::<Result<Vec<_>, _>>()?;
    let diffs = workload_differences(&runs);
    if !diffs.is_empty() && !force {
        return Err(Error::Config(ConfigError::invalid(
            "compare",
            format!(
                "the runs measured different workloads ({}); pass --force to compare anyway",
                diffs.join("; ")
            ),
        )));
    }
    let label = |f: &PathBuf| {
        f.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let comparison = if runs.iter().all(|r| matches!(r, LoadedRun::Bench(..))) {
        let reports: Vec<(String, &BenchReport)> = folders
            .iter()
            .zip(&runs)
            .filter_map(|(f, r)| match r {
                LoadedRun::Bench(b, _) => Some((label(f), b.as_ref())),
                LoadedRun::Classroom(..) => None,
            })
            .collect();
        Comparison::of_bench(&reports)
    } else if runs.iter().all(|r| matches!(r, LoadedRun::Classroom(..))) {
        let reports: Vec<(String, &ClassroomReport)> = folders
            .iter()
            .zip(&runs)
            .filter_map(|(f, r)| match r {
                LoadedRun::Classroom(c, _) => Some((label(f), c.as_ref())),
                LoadedRun::Bench(..) => None,
            })
            .collect();
        Comparison::of_classroom(&reports)
    } else {
        return Err(ConfigError::invalid(
            "compare",
            "cannot compare a bench run with a classroom run",
        )
        .into());
    }
    .map_err(|e| Error::Failed(e.to_string()))?;
    std::fs::create_dir_all(out)
        .map_err(|e| Error::io(format!("cannot create {}", out.display()), e))?;
    let md_path = out.join("compare.md");
    let html_path = out.join("compare.html");
    let mut md = create(&md_path)?;
    let mut h = create(&html_path)?;
    let io = |e: std::io::Error| Error::io("cannot write the comparison", e);
    markdown::write_comparison(&comparison, &mut md).map_err(io)?;
    html::write_comparison(&comparison, &mut h).map_err(io)?;
    finish(md, &md_path)?;
    finish(h, &html_path)?;
    Ok(vec![md_path, html_path])
}
