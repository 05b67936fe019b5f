//! The sections only a real class's report has: each student's figures,
//! what the recording lost or cannot see, and the server's side from the
//! host timeline.

use super::doc::{Block, Doc};
use super::format::{fixed, opt_fixed, MISSING};
use super::model::ObservedClass;

/// Minutes with one decimal, or an en dash.
fn minutes(v: Option<f64>) -> String {
    opt_fixed(v.map(|s| s / 60.0), 1)
}

/// The per-student table.
pub(crate) fn push_students(doc: &mut Doc, o: &ObservedClass) {
    doc.heading("Students");
    doc.paragraph(format!(
        "What each of the {} students experienced. A student is one API key of the class (in the order the capture first saw them; the key itself is never recorded), or one session where the recording knows no key. Coding requests completed of those started; the median and the longest time to complete one, in minutes, from the student's message to the agent's final answer; model calls, those that failed for good and the retries; time to first token; output speed while answering; calls the student abandoned.",
        o.students.len()
    ));
    let rows = o
        .students
        .iter()
        .map(|s| {
            vec![
                s.student.clone(),
                format!("{} / {}", s.completed, s.coding_requests),
                minutes(s.coding_request_p50_s),
                minutes(s.coding_request_max_s),
                s.calls.to_string(),
                s.errors.to_string(),
                s.retries.to_string(),
                opt_fixed(s.ttft_p50_s, 2),
                opt_fixed(s.ttft_p95_s, 2),
                opt_fixed(s.output_speed_p50_tok_s, 1),
                s.abandoned.to_string(),
            ]
        })
        .collect();
    doc.table(
        &[
            "Student",
            "Completed / started",
            "P50 (min)",
            "Longest (min)",
            "Calls",
            "Failed",
            "Retries",
            "TTFT P50 (s)",
            "TTFT P95 (s)",
            "Speed P50 (tok/s)",
            "Abandoned",
        ],
        rows,
        1,
    );
}

/// `http_503 × 3, connect × 1`.
fn by_kind(kinds: &std::collections::BTreeMap<String, u64>) -> String {
    kinds
        .iter()
        .map(|(k, n)| format!("{k} × {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The errors the students met: what failed for good, and what the clients
/// retried, by kind.
pub(crate) fn push_errors(doc: &mut Doc, o: &ObservedClass) {
    if o.errors_by_kind.is_empty() && o.retried_by_kind.is_empty() {
        return;
    }
    let mut items = Vec::new();
    if !o.errors_by_kind.is_empty() {
        items.push(format!(
            "Failed for good (after the clients' retries): {}.",
            by_kind(&o.errors_by_kind)
        ));
    }
    if !o.retried_by_kind.is_empty() {
        items.push(format!(
            "Retried by the clients (each a failed attempt the student waited through): {}.",
            by_kind(&o.retried_by_kind)
        ));
    }
    doc.paragraph("Errors the students met:");
    doc.blocks.push(Block::List(items));
}

/// How the class was recorded, and what the recording lost or cannot see.
pub(crate) fn push_recording(doc: &mut Doc, o: &ObservedClass) {
    doc.heading("The recording");
    let mut items = vec![format!("Recorded by {}.", o.recorded_by)];
    if o.abandoned > 0 {
        items.push(format!(
            "{} calls were abandoned by the students before their answer ended (stopped, or given up after a median wait of {} s); they are not counted among the calls or the errors.",
            o.abandoned,
            opt_fixed(o.abandoned_wait_p50_s, 1)
        ));
    }
    items.extend(o.notes.iter().cloned());
    doc.blocks.push(Block::List(items));
}

/// The server's side: what the timeline adds to the summary's server rows.
pub(crate) fn push_server_side(doc: &mut Doc, o: &ObservedClass) {
    let count = |v: Option<f64>| v.map_or(MISSING.to_string(), |v| fixed(v, 0));
    match (&o.server, &o.server_missing) {
        (Some(s), _) => doc.paragraph(format!(
            "The server's side comes from the host timeline: {} samples during the class ({} failed). Over the class the server finished {} requests with an error and {} as aborted (the client went away); server output is its generated tokens over the class's span, first call to last answer. In the time split, the client columns are what the recording measured, so the path is what lies between it and the server.",
            s.samples,
            s.failed_samples,
            count(s.finished_with_error),
            count(s.aborted)
        )),
        (None, Some(why)) => doc.paragraph(format!(
            "No server figures: {why}."
        )),
        (None, None) => doc.paragraph(
            "No server figures: give the timeline recorded on the GPU host during the class (`codendum metrics --watch 5 --json > tl.jsonl`) with --server-timeline.",
        ),
    }
}
