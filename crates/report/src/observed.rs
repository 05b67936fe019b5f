//! Reports of a real class: a `codendum capture` folder of a whole class,
//! or sessions imported from the students' tools ([`Trace`]), with the
//! server's side when a host timeline is given. The class becomes the
//! classroom's records ([`codendum_core::observed`]), so its figures are the
//! classroom's figures, read the same way and comparable with a simulated
//! class or a replay; what only a real class has (each student's own
//! figures, calls the students abandoned, what the recording lost) is in
//! [`ObservedClass`].

use std::path::Path;

use super::from_results::points;
use super::model::{ClassroomReport, ObservedClass, Parameter, RunInfo, StudentRow};
use codendum_core::capture::{read_capture, CaptureFolder};
use codendum_core::error::{ConfigError, Error};
use codendum_core::observed::server::server_side;
use codendum_core::observed::{class_records, ClassRecords, ObservedCall};
use codendum_core::prom::{align_timeline, read_timeline, TimelineSample};
use codendum_core::results::classroom_records::{TaskOutcome, TaskRecord};
use codendum_core::results::verdict::{class_verdict, DEFAULT_MAX_ERROR_RATE};
use codendum_core::results::ClassroomSummary;
use codendum_core::stats::{percentile, sorted_finite};
use codendum_core::trace::Trace;

fn param(name: &str, value: impl ToString) -> Parameter {
    Parameter {
        name: name.into(),
        value: value.to_string(),
    }
}

/// Each student's figures, from the class's records: numbered students
/// (`student 3`) in their number's order, then the others in order of
/// their first call.
pub fn student_rows(r: &ClassRecords) -> Vec<StudentRow> {
    let mut rows: Vec<StudentRow> = (0..r.students.len())
        .map(|user| {
            let calls: Vec<_> = r
                .requests
                .iter()
                .filter(|c| c.user == user)
                .cloned()
                .collect();
            let tasks: Vec<TaskRecord> =
                r.tasks.iter().filter(|t| t.user == user).cloned().collect();
            let s = ClassroomSummary::from_records(1, &calls, &tasks);
            let done = sorted_finite(
                tasks
                    .iter()
                    .filter(|t| t.outcome == TaskOutcome::Completed)
                    .map(|t| t.end - t.start),
            );
            StudentRow {
                student: r.students[user].clone(),
                coding_requests: s.coding_requests,
                completed: s.completed,
                coding_request_p50_s: s.task_time_p50_s,
                coding_request_max_s: done.last().copied(),
                calls: s.requests,
                errors: s.errors,
                retries: s.retries,
                ttft_p50_s: s.ttft_p50_s,
                ttft_p95_s: s.ttft_p95_s,
                output_speed_p50_tok_s: s.output_speed_p50_tok_s,
                abandoned: r.abandoned.iter().filter(|a| a.user == user).count() as u64,
            }
        })
        .collect();
    rows.sort_by_key(|row| {
        row.student
            .strip_prefix("student ")
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(u64::MAX)
    });
    rows
}

/// Where a real class came from, for its report.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassSource {
    /// How it was recorded, in a few words.
    pub recorded_by: String,
    /// The server the students used, when known.
    pub target_url: Option<String>,
    /// The model the students asked for, when known.
    pub model: Option<String>,
    /// When the recording's clock started (its 0 s), UTC.
    pub clock_utc: Option<chrono::DateTime<chrono::Utc>>,
    /// What the recording lost or cannot see.
    pub notes: Vec<String>,
    /// Parameters stated before the class's own (the source folder, …).
    pub parameters: Vec<Parameter>,
}

/// The report of a real class from its observed calls and, when given, a
/// host timeline (unaligned: it is put on the class's axis by its UTC
/// times, so it needs `source.clock_utc`).
pub fn observed_report(
    calls: &[ObservedCall],
    source: ClassSource,
    timeline: Option<Vec<TimelineSample>>,
) -> ClassroomReport {
    let records = class_records(calls);
    let mut summary =
        ClassroomSummary::from_records(records.students.len(), &records.requests, &records.tasks);
    let start = source
        .clock_utc
        .map(|t| t + chrono::Duration::milliseconds((records.origin_s * 1000.0).round() as i64));
    let span = records.tasks.iter().map(|t| t.end).fold(0.0f64, f64::max);
    let finished = start.map(|t| t + chrono::Duration::milliseconds((span * 1000.0) as i64));
    let (aligned, server_missing) = match (timeline, start) {
        (None, _) => (Vec::new(), None),
        (Some(_), None) => (
            Vec::new(),
            Some("the recording has no UTC start to place the timeline on".to_string()),
        ),
        (Some(samples), Some(t0)) => (align_timeline(samples, t0), None),
    };
    // To the first reading at or after the last answer, so the counters
    // cover every call of the class.
    let end = aligned
        .iter()
        .filter(|s| s.snapshot.is_some())
        .map(|s| s.t)
        .find(|t| *t >= span)
        .unwrap_or(span);
    let server = server_side(&aligned, 0.0, end);
    let server_missing = server_missing.or_else(|| {
        (!aligned.is_empty() && server.is_none()).then(|| {
            "the host timeline holds no reading during the class (another day, or /metrics failed)"
                .to_string()
        })
    });
    if let Some(s) = &server {
        summary.server = s.figures.clone();
        if let Some(split) = summary.server.time_split.as_mut() {
            // The recording's own times: the path is what lies between it
            // and the server.
            let ok = records.requests.iter().filter(|r| r.is_ok());
            split.client_ttft_mean_s =
                codendum_core::stats::mean(ok.clone().filter_map(|r| r.ttft_s));
            split.client_e2e_mean_s = codendum_core::stats::mean(ok.map(|r| r.e2e_s));
        }
    }
    let abandoned_waits = sorted_finite(records.abandoned.iter().map(|a| a.waited_s));
    let mut parameters = source.parameters.clone();
    parameters.extend([
        param("students", records.students.len()),
        param(
            "span",
            format!("{:.1} min, first call to last answer", span / 60.0),
        ),
        param(
            "server figures from",
            match (&server, aligned.is_empty()) {
                (Some(_), _) => "the host timeline",
                (None, false) => "the host timeline (no reading during the class)",
                (None, true) => "none (give --server-timeline)",
            },
        ),
    ]);
    ClassroomReport {
        replay: false,
        run: RunInfo {
            target_url: source.target_url.clone(),
            model: source.model.clone(),
            started_utc: start,
            finished_utc: finished,
            codendum_version: env!("CARGO_PKG_VERSION").to_string(),
            ..RunInfo::default()
        },
        parameters,
        run_verdict: Some(class_verdict(
            &records.requests,
            &records.tasks,
            DEFAULT_MAX_ERROR_RATE,
        )),
        calls_client_counted: records
            .requests
            .iter()
            .filter(|r| {
                r.is_ok() && r.tokens_counted_by == codendum_core::openai::TokenSource::Client
            })
            .count() as u64,
        ttft_s: records.requests.iter().filter_map(|r| r.ttft_s).collect(),
        user_output_tok_per_s: super::from_results::speed_per_user(&records.requests),
        coding_request_s: records
            .tasks
            .iter()
            .filter(|t| t.outcome == TaskOutcome::Completed)
            .map(|t| t.end - t.start)
            .collect(),
        timeline: points(
            &aligned
                .iter()
                .filter(|s| s.t >= 0.0 && s.t <= end)
                .cloned()
                .collect::<Vec<_>>(),
        ),
        observed: Some(ObservedClass {
            errors_by_kind: summary
                .errors_by_kind
                .iter()
                .map(|(k, n)| (k.as_str().to_string(), *n))
                .collect(),
            retried_by_kind: records
                .requests
                .iter()
                .flat_map(|r| r.retried_kinds.iter())
                .fold(Default::default(), |mut m, k| {
                    *m.entry(k.as_str().to_string()).or_default() += 1;
                    m
                }),
            recorded_by: source.recorded_by,
            students: student_rows(&records),
            abandoned: records.abandoned.len() as u64,
            abandoned_wait_p50_s: percentile(&abandoned_waits, 50.0),
            notes: source.notes,
            server,
            server_missing,
        }),
        summary,
        ..ClassroomReport::default()
    }
}

/// What a capture folder's header says about its recording: lost records
/// and a capture that did not end cleanly.
fn capture_notes(c: &CaptureFolder) -> Vec<String> {
    let mut notes = Vec::new();
    let other = c
        .calls
        .iter()
        .filter(|l| l.request.kind == codendum_core::capture::CaptureKind::Other)
        .count();
    if other > 0 {
        notes.push(format!(
            "{other} of the {} recorded requests were not model calls (/v1/models, /metrics, …) and are left out.",
            c.calls.len()
        ));
    }
    if let Some(lost) = c.header.calls_not_recorded {
        notes.push(format!(
            "The capture passed {} calls on but could not record {lost} of them ({}): their figures are missing here.",
            c.header.calls.unwrap_or_default(),
            c.header.loss.as_deref().unwrap_or("the disk refused them")
        ));
    }
    if c.header.ended_utc.is_none() {
        notes.push(
            "The capture did not end cleanly (killed, or still running): the calls recorded so far are reported."
                .to_string(),
        );
    }
    if c.truncated_last_line {
        notes.push("The last line of calls.jsonl was cut short and is left out.".to_string());
    }
    notes.push(
        "A capture sees the model calls, not what the tools returned: tool errors are not counted."
            .to_string(),
    );
    notes
}

fn bad_timeline(path: &Path, e: impl ToString) -> Error {
    Error::Config(ConfigError::BadFile {
        what: "server timeline",
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// Reads a host timeline (`codendum metrics --watch 5 --json` lines).
pub fn read_host_timeline(path: &Path) -> Result<Vec<TimelineSample>, Error> {
    read_timeline(path).map_err(|e| bad_timeline(path, e))
}

/// The report of the capture folder `dir`, with the host timeline at
/// `server_timeline` when given.
pub fn capture_report(
    dir: &Path,
    server_timeline: Option<&Path>,
) -> Result<ClassroomReport, Error> {
    let capture = read_capture(dir)?;
    let timeline = server_timeline.map(read_host_timeline).transpose()?;
    let calls = codendum_core::observed::capture::observed_calls(&capture.calls);
    if calls.is_empty() {
        return Err(Error::Config(ConfigError::BadFile {
            what: "capture",
            path: dir.to_path_buf(),
            reason: "holds no model call to report".into(),
        }));
    }
    let mut models: std::collections::BTreeMap<&str, usize> = Default::default();
    for m in capture
        .calls
        .iter()
        .filter_map(|c| c.request.model.as_deref())
    {
        *models.entry(m).or_default() += 1;
    }
    let model = models
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(m, _)| m.to_string());
    let source = ClassSource {
        recorded_by: format!("codendum capture in front of {}", capture.header.upstream),
        target_url: Some(capture.header.upstream.clone()),
        model,
        clock_utc: Some(capture.header.started_utc),
        notes: capture_notes(&capture),
        parameters: vec![param(
            "captured",
            format!("{} ({} calls recorded)", dir.display(), capture.calls.len()),
        )],
    };
    Ok(observed_report(&calls, source, timeline))
}

/// The report of an imported class: `trace` (sessions read from the
/// students' tools), described by `recorded_by`, whose clock's 0 s is
/// `clock_utc` when known.
pub fn trace_report(
    trace: &Trace,
    recorded_by: &str,
    clock_utc: Option<chrono::DateTime<chrono::Utc>>,
    timeline: Option<Vec<TimelineSample>>,
) -> ClassroomReport {
    let calls = codendum_core::observed::trace::observed_calls(trace);
    let source = ClassSource {
        recorded_by: recorded_by.to_string(),
        target_url: None,
        model: None,
        clock_utc,
        notes: vec![
            "Imported sessions keep what was answered, not what failed on the way: errors, retries and abandoned calls are not counted, and every coding request counts as completed."
                .to_string(),
        ],
        parameters: Vec::new(),
    };
    observed_report(&calls, source, timeline)
}

#[cfg(test)]
mod tests {
    use super::*;
    use codendum_core::prom::ServerSnapshot;
    use codendum_core::trace::TraceCall;

    fn imported() -> Trace {
        let call = |session: &str, task: usize, at: f64| {
            let mut c = TraceCall::open(at, 2000, 100, Vec::new());
            c.session = Some(session.into());
            c.task = Some(task);
            c.ttft_s = Some(1.0);
            c.duration_s = Some(5.0);
            c
        };
        Trace::new(
            16,
            vec![
                call("ses_b", 0, 0.0),
                call("ses_a", 0, 1.0),
                call("ses_b", 0, 8.0),
                call("ses_b", 1, 100.0),
            ],
        )
    }

    #[test]
    fn an_imported_class_has_its_students_and_says_what_it_cannot_know() {
        let r = trace_report(
            &imported(),
            "OpenCode's stored sessions",
            None,
            Some(Vec::new()),
        );
        let o = r.observed.expect("a real class");
        let names: Vec<&str> = o.students.iter().map(|s| s.student.as_str()).collect();
        assert_eq!(names, vec!["ses_b", "ses_a"], "first call's order");
        assert_eq!(
            (o.students[0].coding_requests, o.students[0].completed),
            (2, 2)
        );
        assert_eq!(o.students[0].coding_request_max_s, Some(13.0));
        assert!(o.notes[0].contains("errors, retries and abandoned calls are not counted"));
        assert_eq!(r.summary.users, 2);
        assert_eq!(r.summary.completed, 3);
        assert!(
            o.server.is_none() && o.server_missing.is_some(),
            "a timeline cannot be placed without a UTC start"
        );
    }

    #[test]
    fn a_timeline_of_another_day_gives_no_server_figures() {
        let start = chrono::DateTime::parse_from_rfc3339("2026-12-01T09:00:00Z")
            .expect("utc")
            .with_timezone(&chrono::Utc);
        let sample = |minutes: i64| TimelineSample {
            utc: start - chrono::Duration::days(1) + chrono::Duration::minutes(minutes),
            t: 0.0,
            snapshot: Some(ServerSnapshot {
                running: Some(3.0),
                ..ServerSnapshot::default()
            }),
            error: None,
        };
        let r = trace_report(
            &imported(),
            "x",
            Some(start),
            Some(vec![sample(0), sample(1)]),
        );
        let o = r.observed.expect("a real class");
        assert!(o.server.is_none());
        assert!(o
            .server_missing
            .expect("said")
            .contains("no reading during the class"));
        assert_eq!(r.summary.server.peak_running, None, "not zero: unknown");
        let r = trace_report(
            &imported(),
            "x",
            Some(start),
            Some(vec![
                TimelineSample {
                    utc: start,
                    ..sample(0)
                },
                TimelineSample {
                    utc: start + chrono::Duration::seconds(50),
                    ..sample(0)
                },
            ]),
        );
        assert_eq!(r.summary.server.peak_running, Some(3.0));
    }

    #[test]
    fn numbered_students_read_in_their_order() {
        let r = ClassRecords {
            students: vec!["student 10".into(), "student 2".into(), "ses_x".into()],
            ..ClassRecords::default()
        };
        let names: Vec<String> = student_rows(&r).into_iter().map(|s| s.student).collect();
        assert_eq!(names, vec!["student 2", "student 10", "ses_x"]);
    }
}
