//! From results folders to report files: reads `summary.json`, the JSONL
//! files and the server timeline (files only: no driver, client or twin),
//! fills the report models and writes `report.md` / `report.html`, or
//! `compare.md` / `compare.html` for several folders.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::from_results::{bench_report, classroom_report};
use super::model::{BenchReport, ClassroomReport, Verdict};
use super::{html, markdown, Comparison, RepeatColumn};
use codendum_core::error::{ConfigError, Error};
use codendum_core::prom::{align_timeline, read_timeline, TimelineSample};
use codendum_core::results::classroom_records::{CallRecord, TaskRecord};
use codendum_core::results::{self, BenchSummary, ClassroomRunSummary, RunSummary};

/// A results folder read back.
#[derive(Debug, Clone)]
pub enum LoadedRun {
    /// A `codendum bench` folder.
    Bench(Box<BenchReport>, Box<BenchSummary>),
    /// A `codendum classroom` folder.
    Classroom(Box<ClassroomReport>, Box<ClassroomRunSummary>),
    /// A real class: a `codendum capture` folder.
    Observed(Box<ClassroomReport>),
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
    if codendum_core::capture::is_capture(folder) {
        let report = super::observed::capture_report(folder, server_timeline)?;
        return Ok(LoadedRun::Observed(Box::new(report)));
    }
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
    match results::read_summary(folder).map_err(|e| bad_folder(folder, e.to_string()))? {
        RunSummary::Bench(summary) => {
            let timeline = timeline_for(folder, server_timeline, summary.header.started_utc)?;
            let mut report = bench_report(&summary, &timeline);
            report.replica_timelines = replica_lines_in(folder, summary.header.started_utc);
            Ok(LoadedRun::Bench(Box::new(report), summary))
        }
        RunSummary::Classroom(summary) => {
            let timeline = timeline_for(folder, server_timeline, summary.header.started_utc)?;
            let requests: Vec<CallRecord> = read_lines(folder, results::REQUESTS_JSONL);
            let tasks: Vec<TaskRecord> = read_lines(folder, results::TASKS_JSONL);
            let mut report = classroom_report(&summary, &timeline, &requests, &tasks);
            report.replica_timelines = replica_lines_in(folder, summary.header.started_utc);
            Ok(LoadedRun::Classroom(Box::new(report), summary))
        }
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

/// Each replica's samples of the folder's `replica-timeline.jsonl` (none
/// without the file), on the run's axis.
fn replica_lines_in(
    folder: &Path,
    started: chrono::DateTime<chrono::Utc>,
) -> Vec<super::model::ReplicaLine> {
    let mut samples: Vec<codendum_core::prom::ReplicaSample> =
        read_lines(folder, codendum_core::prom::REPLICA_TIMELINE_JSONL);
    for s in &mut samples {
        let one = align_timeline(vec![s.sample.clone()], started);
        s.sample.t = one[0].t;
    }
    super::from_results::replica_lines(&samples)
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
    if results::capacity::is_capacity(folder) {
        let r = results::capacity::read_capacity(folder)
            .map_err(|e| bad_folder(folder, e.to_string()))?;
        return write_doc(folder, &super::capacity::capacity_doc(&r));
    }
    if results::repeat_folder::is_repeat(folder) {
        let r = results::repeat_folder::read_repeat(folder)
            .map_err(|e| bad_folder(folder, e.to_string()))?;
        return write_doc(folder, &super::repeat::repeat_doc(&r));
    }
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
        LoadedRun::Classroom(mut r, _) | LoadedRun::Observed(mut r) => {
            r.verdicts = verdicts.to_vec();
            markdown::write_classroom(&r, &mut md).map_err(io)?;
            html::write_classroom(&r, &mut html_out).map_err(io)?;
        }
    }
    finish(md, &md_path)?;
    finish(html_out, &html_path)?;
    Ok(vec![md_path, html_path])
}

/// Writes `report.md` and `report.html` into `folder`; for a host
/// timeline file, `<stem>-report.md` and `<stem>-report.html` beside it.
pub fn write_report(folder: &Path, server_timeline: Option<&Path>) -> Result<Vec<PathBuf>, Error> {
    if folder.is_file() {
        if server_timeline.is_some() {
            return Err(ConfigError::invalid(
                "--server-timeline",
                format!(
                    "{} is a timeline itself; --server-timeline goes with a results or capture folder",
                    folder.display()
                ),
            )
            .into());
        }
        return write_timeline_report(folder);
    }
    write_report_with(folder, server_timeline, &[])
}

/// Writes the report of a class recorded elsewhere (sessions read from the
/// students' tools) into `out`, made if missing: `report.md` and
/// `report.html`; the two paths.
pub fn write_class_report_to(report: &ClassroomReport, out: &Path) -> Result<Vec<PathBuf>, Error> {
    std::fs::create_dir_all(out)
        .map_err(|e| Error::io(format!("cannot create {}", out.display()), e))?;
    write_pair(
        [out.join("report.md"), out.join("report.html")],
        "cannot write the report",
        |md, h| {
            markdown::write_classroom(report, md)?;
            html::write_classroom(report, h)
        },
    )
}

/// Writes the report of a host timeline file beside it.
pub fn write_timeline_report(path: &Path) -> Result<Vec<PathBuf>, Error> {
    let report = super::timeline::timeline_report(path)?;
    let stem = path.file_stem().map_or_else(
        || "timeline".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let dir = path.parent().unwrap_or(Path::new("."));
    write_pair(
        [
            dir.join(format!("{stem}-report.md")),
            dir.join(format!("{stem}-report.html")),
        ],
        "cannot write the report",
        |md, h| {
            markdown::write_timeline(&report, md)?;
            html::write_timeline(&report, h)
        },
    )
}

/// Writes a Markdown file and an HTML file with `write` (Markdown first);
/// the two paths.
/// Writes `doc` as `report.md` and `report.html` into `folder`.
fn write_doc(folder: &Path, doc: &super::doc::Doc) -> Result<Vec<PathBuf>, Error> {
    write_pair(
        [folder.join("report.md"), folder.join("report.html")],
        "cannot write the report",
        |md, h| {
            markdown::render(doc, md)?;
            html::render(doc, h)
        },
    )
}

fn write_pair(
    [md_path, html_path]: [PathBuf; 2],
    context: &str,
    write: impl FnOnce(&mut dyn Write, &mut dyn Write) -> std::io::Result<()>,
) -> Result<Vec<PathBuf>, Error> {
    let mut md = create(&md_path)?;
    let mut h = create(&html_path)?;
    write(&mut md, &mut h).map_err(|e| Error::io(context, e))?;
    finish(md, &md_path)?;
    finish(h, &html_path)?;
    Ok(vec![md_path, html_path])
}

/// Writes `compare.md` / `compare.html` of capacity searches into `out`.
fn write_capacity_comparison(
    folders: &[PathBuf],
    out: &Path,
    label: impl Fn(&PathBuf) -> String,
) -> Result<Vec<PathBuf>, Error> {
    let runs = folders
        .iter()
        .map(|f| {
            results::capacity::read_capacity(f)
                .map(|r| (label(f), r))
                .map_err(|e| bad_folder(f, e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let doc = super::capacity::capacity_compare_doc(&runs);
    write_compare_files(out, |md, h| {
        markdown::render(&doc, md)?;
        html::render(&doc, h)
    })
}

/// Creates `out` and writes `compare.md` and `compare.html` into it.
fn write_compare_files(
    out: &Path,
    write: impl FnOnce(&mut dyn Write, &mut dyn Write) -> std::io::Result<()>,
) -> Result<Vec<PathBuf>, Error> {
    std::fs::create_dir_all(out)
        .map_err(|e| Error::io(format!("cannot create {}", out.display()), e))?;
    write_pair(
        [out.join("compare.md"), out.join("compare.html")],
        "cannot write the comparison",
        write,
    )
}

/// The workload settings that must match for a fair comparison.
fn workload(run: &LoadedRun) -> Vec<(String, String)> {
    match run {
        LoadedRun::Bench(_, s) => {
            let p = &s.parameters;
            // Open-loop levels are named by their rate; the concurrency
            // list of such a run is the unused default. A sweep's rates
            // follow what the run measured at its ends, so a sweep is
            // named by its shape and arrival, not by its rates (compare
            // pairs its levels by place or nearest rate).
            let searched: Vec<&str> = s.rate_search.iter().map(|r| r.shape.as_str()).collect();
            let swept = |shape: &str| {
                !searched.contains(&shape)
                    && s.levels
                        .iter()
                        .any(|l| l.shape == shape && l.rate.is_none())
            };
            let mut rates: Vec<String> = Vec::new();
            for l in s.levels.iter() {
                let Some(r) = &l.rate else { continue };
                let label = if swept(&l.shape) {
                    format!("{} swept, {}", l.shape, r.arrival)
                } else {
                    format!("{} {}", l.load_label(), r.arrival)
                };
                if !rates.contains(&label) {
                    rates.push(label);
                }
            }
            let sweep = s.levels.iter().any(|l| l.rate.is_some() && swept(&l.shape));
            let mut items = vec![("kind".into(), "bench".into())];
            if sweep {
                items.push(("concurrency".into(), format!("{:?}", p.concurrency)));
            }
            if rates.is_empty() {
                items.push(("concurrency".into(), format!("{:?}", p.concurrency)));
                items.push((
                    "requests per level".into(),
                    format!("{:?}", p.requests_by_concurrency),
                ));
            } else {
                items.push(("rates".into(), rates.join(", ")));
            }
            items.extend([
                ("shapes".into(), p.shapes.join(",")),
                ("output tokens".into(), p.output_tokens.to_string()),
                ("endpoint".into(), format!("{:?}", p.endpoint)),
            ]);
            items
        }
        LoadedRun::Observed(r) => vec![
            ("kind".into(), "captured class".into()),
            ("students".into(), r.summary.users.to_string()),
        ],
        LoadedRun::Classroom(_, s) => {
            let p = &s.parameters;
            // Tenths of a second: a replay's span is measured, not set.
            let seconds = |x: f64| format!("{} s", (x * 10.0).round() / 10.0);
            vec![
                ("kind".into(), "classroom".into()),
                ("users".into(), p.users.to_string()),
                ("duration".into(), seconds(p.duration_s)),
                ("scenario".into(), p.scenario.clone()),
                ("ramp-up".into(), seconds(p.ramp_up_s)),
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
    let value = |items: &[(String, String)], name: &str| {
        items
            .iter()
            .find(|(n, _)| n == name)
            .map_or_else(|| "none".to_string(), |(_, v)| v.clone())
    };
    for (i, run) in runs.iter().enumerate().skip(1) {
        let other = workload(run);
        let mut names: Vec<&String> = first.iter().map(|(n, _)| n).collect();
        for (n, _) in &other {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        for name in names {
            let (a, b) = (value(&first, name), value(&other, name));
            if a != b {
                out.push(format!("{name}: {a} (run 1) vs {b} (run {})", i + 1));
            }
        }
    }
    out
}

/// Each finished run's own figures of a repetition: its levels (a bench
/// run, with its number) or its class figures.
type RunFigures = (
    Vec<(u32, Vec<codendum_core::results::LevelSummary>)>,
    Vec<codendum_core::results::ClassroomSummary>,
);

/// Reads every finished run's `summary.json` of the repetition in
/// `folder`; a run whose summary cannot be read is left out of the sums.
fn runs_figures(folder: &Path, r: &results::repeat_folder::RepeatSummary) -> RunFigures {
    let (mut levels, mut classes) = (Vec::new(), Vec::new());
    for run in r.runs.iter().filter(|x| !x.interrupted) {
        match results::read_summary(&folder.join(&run.folder)) {
            Ok(RunSummary::Bench(s)) => levels.push((run.index, s.levels)),
            Ok(RunSummary::Classroom(s)) => classes.push(s.summary),
            Err(_) => {}
        }
    }
    (levels, classes)
}

/// Compares folders (the first is the baseline) and writes `compare.md` and
/// `compare.html` into `out`. Refuses runs of different workloads unless
/// `force`. A repetition's folder (`--repeat`) compares by its figures
/// pooled over its runs.
pub fn write_comparison(
    folders: &[PathBuf],
    force: bool,
    out: &Path,
) -> Result<Vec<PathBuf>, Error> {
    if folders.len() < 2 {
        return Err(ConfigError::invalid("compare", "needs at least two results folders").into());
    }
    let label = |f: &PathBuf| {
        f.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let searches = folders
        .iter()
        .filter(|f| results::capacity::is_capacity(f))
        .count();
    if searches == folders.len() {
        return write_capacity_comparison(folders, out, label);
    }
    if searches > 0 {
        return Err(ConfigError::invalid(
            "compare",
            "compares capacity searches with each other only, not with a bench run or a class",
        )
        .into());
    }
    // A repetition's folder stands in by its first finished run (its
    // workload, server and provenance), its pooled figures and every
    // finished run's own figures (to sum counts over).
    let mut repeats: Vec<Option<(results::repeat_folder::RepeatSummary, RunFigures)>> = Vec::new();
    let mut runs = Vec::new();
    for f in folders {
        if results::repeat_folder::is_repeat(f) {
            let r =
                results::repeat_folder::read_repeat(f).map_err(|e| bad_folder(f, e.to_string()))?;
            let first = r
                .first_finished()
                .ok_or_else(|| bad_folder(f, "no run of the repetition finished"))?;
            runs.push(load_run(&f.join(&first.folder), None)?);
            let each = runs_figures(f, &r);
            repeats.push(Some((r, each)));
        } else {
            runs.push(load_run(f, None)?);
            repeats.push(None);
        }
    }
    let columns: Vec<Option<RepeatColumn<'_>>> = repeats
        .iter()
        .map(|r| {
            r.as_ref().map(|(summary, (levels, classes))| RepeatColumn {
                summary,
                levels: levels.clone(),
                classes: classes.clone(),
            })
        })
        .collect();
    let pooled: Vec<Option<&RepeatColumn<'_>>> = columns.iter().map(Option::as_ref).collect();
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
    let comparison = if runs.iter().all(|r| matches!(r, LoadedRun::Bench(..))) {
        let reports: Vec<(String, &BenchReport)> = folders
            .iter()
            .zip(&runs)
            .filter_map(|(f, r)| match r {
                LoadedRun::Bench(b, _) => Some((label(f), b.as_ref())),
                LoadedRun::Classroom(..) | LoadedRun::Observed(_) => None,
            })
            .collect();
        Comparison::of_bench_pooled(&reports, &pooled)
    } else if runs.iter().all(|r| !matches!(r, LoadedRun::Bench(..))) {
        // Simulated, replayed and real classes share their figures.
        let reports: Vec<(String, &ClassroomReport)> = folders
            .iter()
            .zip(&runs)
            .filter_map(|(f, r)| match r {
                LoadedRun::Classroom(c, _) | LoadedRun::Observed(c) => Some((label(f), c.as_ref())),
                LoadedRun::Bench(..) => None,
            })
            .collect();
        Comparison::of_classroom_pooled(&reports, &pooled)
    } else {
        return Err(ConfigError::invalid(
            "compare",
            "cannot compare a bench run with a class (simulated, replayed or captured)",
        )
        .into());
    }
    .map_err(|e| Error::Failed(e.to_string()))?;
    write_compare_files(out, |md, h| {
        markdown::write_comparison(&comparison, md)?;
        html::write_comparison(&comparison, h)
    })
}
