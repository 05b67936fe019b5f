use super::*;
use crate::capture::{CallLine, CaptureKind, RequestInfo, ToolCallLine};
use crate::results::ClassroomSummary;

/// A captured call of `student` in `session` at `at`, lasting `dur`.
fn line(seq: u64, student: u32, session: &str, kind: CaptureKind, at: f64, dur: f64) -> CallLine {
    CallLine {
        seq,
        started_at_s: at,
        started_utc: chrono::DateTime::UNIX_EPOCH,
        method: "POST".into(),
        path: "/v1/chat/completions".into(),
        student: Some(student),
        request: RequestInfo {
            session: Some(session.into()),
            parent: None,
            kind,
            body_json: true,
            stream: Some(true),
            model: Some("m".into()),
            max_tokens: None,
            tools_offered: 3,
            messages: 2,
        },
        request_bytes: 100,
        status: 200,
        prompt_tokens: Some(1000),
        output_tokens: Some(50),
        tokens_counted_by: Some(TokenSource::Server),
        ttft_s: Some(0.5),
        duration_s: dur,
        finish_reason: Some("stop".into()),
        tool_calls: Vec::new(),
        client_time_s: None,
        client_time_kind: None,
        response_bytes: 100,
        error: None,
    }
}

fn tools(mut l: CallLine, n: usize) -> CallLine {
    l.tool_calls = (0..n)
        .map(|_| ToolCallLine {
            name: "read".into(),
            argument_bytes: 10,
        })
        .collect();
    l.finish_reason = Some("tool_calls".into());
    l
}

fn after(mut l: CallLine, kind: &str) -> CallLine {
    l.client_time_kind = Some(kind.into());
    l.client_time_s = Some(1.0);
    l
}

fn failed(mut l: CallLine, status: u16) -> CallLine {
    l.status = status;
    l.ttft_s = None;
    l.output_tokens = None;
    l
}

#[test]
fn a_captured_class_becomes_the_classrooms_records() {
    let a = CaptureKind::Agent;
    let lines = vec![
        // Student 1: a title beside the first step, three steps to an answer.
        line(1, 1, "s1", CaptureKind::Title, 10.0, 1.0),
        tools(line(2, 1, "s1", a, 10.0, 4.0), 1),
        after(tools(line(3, 1, "s1", a, 15.0, 4.0), 1), "file_tool"),
        after(line(4, 1, "s1", a, 20.0, 5.0), "build_test"),
        // A new message: a 429, then the retry answers.
        after(failed(line(5, 1, "s1", a, 60.0, 0.1), 429), "user_pause"),
        after(line(6, 1, "s1", a, 62.0, 3.0), "retry"),
        // Student 2: two 503s before the answer; a subagent of its session.
        failed(line(7, 2, "s2", a, 12.0, 0.2), 503),
        after(failed(line(8, 2, "s2", a, 13.0, 0.2), 503), "retry"),
        after(tools(line(9, 2, "s2", a, 15.0, 2.0), 1), "retry"),
        {
            let mut l = line(10, 2, "s2-sub", CaptureKind::Subagent, 18.0, 2.0);
            l.request.parent = Some("s2".into());
            l
        },
        after(line(11, 2, "s2", a, 21.0, 2.0), "task"),
        // The student stops an answer, then writes again.
        after(
            {
                let mut l = line(12, 2, "s2", a, 40.0, 6.0);
                l.error = Some("the client went away before the end".into());
                l
            },
            "user_pause",
        ),
        after(line(13, 2, "s2", a, 50.0, 2.0), "retry"),
        // Not a model call.
        {
            let mut l = line(14, 1, "s1", CaptureKind::Other, 1.0, 0.01);
            l.path = "/v1/models".into();
            l
        },
    ];
    let r = class_records(&capture::observed_calls(&lines));
    assert_eq!(r.students, vec!["student 1", "student 2"]);
    assert_eq!(r.origin_s, 10.0, "the first model call is 0 s");
    assert_eq!(r.abandoned.len(), 1);
    assert_eq!(r.abandoned[0].user, 1);
    // 13 model calls, one abandoned, three retries folded.
    assert_eq!(r.requests.len(), 9);
    let retried: Vec<&CallRecord> = r.requests.iter().filter(|c| c.retries > 0).collect();
    assert_eq!(retried.len(), 2);
    assert_eq!(
        retried[0].retried_kinds,
        vec![ErrorKind::Http503, ErrorKind::Http503]
    );
    assert!(
        (retried[0].wait_s - (15.0 + 2.0 - 12.0)).abs() < 1e-9,
        "waited through the retries"
    );
    assert_eq!(retried[1].retried_kinds, vec![ErrorKind::Http429]);
    assert!(r.requests.iter().all(|c| c.error_kind.is_none()));
    let by_user =
        |u: usize| -> Vec<&TaskRecord> { r.tasks.iter().filter(|t| t.user == u).collect() };
    let one = by_user(0);
    assert_eq!(one.len(), 2, "{one:?}");
    assert!(one.iter().all(|t| t.outcome == TaskOutcome::Completed));
    assert_eq!((one[0].start, one[0].end), (0.0, 15.0));
    assert_eq!(one[0].calls, 4, "the title belongs to the first request");
    assert_eq!(one[1].index, 1);
    let two = by_user(1);
    assert_eq!(two.len(), 3, "{two:?}");
    assert_eq!(two[0].calls, 3, "main steps and the subagent's");
    assert_eq!(two[0].outcome, TaskOutcome::Completed);
    assert_eq!(
        two[1].outcome,
        TaskOutcome::CutOff,
        "stopped by the student"
    );
    assert_eq!(
        two[2].outcome,
        TaskOutcome::Completed,
        "written again after the stop"
    );
    let s = ClassroomSummary::from_records(r.students.len(), &r.requests, &r.tasks);
    assert_eq!(
        (s.users, s.completed, s.retries, s.retries_after_429_503),
        (2, 4, 3, 3)
    );
    assert_eq!(s.errors, 0);
}

#[test]
fn a_request_whose_last_step_failed_for_good_failed() {
    let a = CaptureKind::Agent;
    let lines = vec![
        tools(line(1, 1, "s", a, 0.0, 1.0), 1),
        after(failed(line(2, 1, "s", a, 2.0, 0.1), 500), "file_tool"),
        after(failed(line(3, 1, "s", a, 4.0, 0.1), 400), "retry"),
        // A student whose agent was still at work when the capture ended.
        tools(line(4, 2, "t", a, 1.0, 1.0), 2),
    ];
    let r = class_records(&capture::observed_calls(&lines));
    assert_eq!(r.tasks.len(), 2);
    assert_eq!(r.tasks[0].outcome, TaskOutcome::Failed);
    assert_eq!(r.tasks[0].error_kind, Some(ErrorKind::Http400));
    assert_eq!(r.tasks[1].outcome, TaskOutcome::CutOff);
    let failed: Vec<&CallRecord> = r.requests.iter().filter(|c| !c.is_ok()).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].retried_kinds, vec![ErrorKind::Http5xx]);
}

#[test]
fn captures_without_keys_or_sessions_still_have_students() {
    let mut l = line(1, 1, "s", CaptureKind::Agent, 0.0, 1.0);
    l.student = None;
    let mut m = line(2, 1, "x", CaptureKind::Agent, 0.5, 1.0);
    m.student = None;
    m.request.session = None;
    let calls = capture::observed_calls(&[l, m]);
    assert_eq!(calls[0].student, "s");
    assert_eq!(calls[1].student, "call 2");
    let outcome = |status: u16, error: Option<&str>| {
        let mut l = line(1, 1, "s", CaptureKind::Agent, 0.0, 1.0);
        l.status = status;
        l.error = error.map(String::from);
        capture::outcome(&l)
    };
    assert_eq!(outcome(200, None), CallOutcome::Ok);
    assert_eq!(
        outcome(502, Some("upstream http://gpu:8000 unreachable: refused")),
        CallOutcome::Failed(ErrorKind::Connect)
    );
    assert_eq!(
        outcome(200, Some("upstream stream broke: reset")),
        CallOutcome::Failed(ErrorKind::StreamError)
    );
    assert_eq!(outcome(503, None), CallOutcome::Failed(ErrorKind::Http503));
}

#[test]
fn an_imported_class_keeps_its_coding_requests() {
    use crate::trace::{Trace, TraceCall};
    let call = |session: &str, parent: Option<&str>, task: usize, at: f64| {
        let mut c = TraceCall::open(at, 1000, 40, Vec::new());
        c.session = Some(session.into());
        c.parent = parent.map(String::from);
        c.kind = Some(if parent.is_some() {
            CallKind::Subagent
        } else {
            CallKind::Agent
        });
        c.task = Some(task);
        c.duration_s = Some(3.0);
        c.ttft_s = Some(0.4);
        c
    };
    let t = Trace::new(
        16,
        vec![
            call("a", None, 0, 0.0),
            call("a-sub", Some("a"), 0, 4.0),
            call("a", None, 1, 60.0),
            call("b", None, 0, 5.0),
        ],
    );
    let r = class_records(&trace::observed_calls(&t));
    assert_eq!(r.students, vec!["a", "b"]);
    assert_eq!(r.tasks.len(), 3);
    assert_eq!(
        r.tasks[0].calls, 2,
        "the subagent's call is its parent's request"
    );
    assert!(r.tasks.iter().all(|t| t.outcome == TaskOutcome::Completed));
}

#[test]
fn the_server_side_is_read_over_the_class() {
    use crate::prom::{ServerSnapshot, TimelineSample};
    let sample = |t: f64, gen: f64, err: f64, running: f64| TimelineSample {
        utc: chrono::DateTime::UNIX_EPOCH,
        t,
        snapshot: Some(ServerSnapshot {
            running: Some(running),
            waiting: Some(0.0),
            kv_usage: Some(running / 100.0),
            generation_tokens: Some(gen),
            finished_requests: Some(
                [("stop".to_string(), 10.0), ("error".to_string(), err)]
                    .into_iter()
                    .collect(),
            ),
            ..ServerSnapshot::default()
        }),
        error: None,
    };
    let timeline = vec![
        sample(-5.0, 100.0, 1.0, 0.0),
        sample(5.0, 600.0, 1.0, 12.0),
        sample(10.0, 1100.0, 3.0, 16.0),
        sample(20.0, 9000.0, 9.0, 1.0),
    ];
    let s = server::server_side(&timeline, 0.0, 10.0).expect("readings");
    assert_eq!(s.samples, 2);
    assert_eq!(s.figures.peak_running, Some(16.0));
    assert_eq!(
        s.figures.output_tokens_per_s,
        Some(100.0),
        "1000 tokens in 10 s"
    );
    assert_eq!(s.finished_with_error, Some(2.0));
    assert_eq!(s.aborted, Some(0.0));
    assert!(server::server_side(&timeline, 100.0, 200.0).is_none());
}
