//! A real class as it was observed: the calls of a capture, or of sessions
//! imported from the students' own tools, turned into the classroom's
//! records ([`CallRecord`], [`TaskRecord`]), so that one set of figures
//! ([`crate::results::ClassroomSummary`]) describes a simulated class, a
//! replay and a real one alike.
//!
//! Every source says what it knows as [`ObservedCall`]s: who (the student),
//! which session, why, when, how long, what came back, and as much of the
//! outcome as it recorded. [`class_records`] then
//! - numbers the students in order of their first call;
//! - folds a failed call and the client's retries of it into one record
//!   (the student waited through them all), as the classroom records do;
//! - groups calls into coding requests: a new one starts when the student
//!   writes a new message (the main agent's step after a final answer), or
//!   where the source numbers them;
//! - says how each coding request ended: completed (a final answer without
//!   tool calls, or a source that does not say), failed (its last main-agent
//!   call failed for good), or cut off (the agent was still working when
//!   the recording ended, or the student stopped it).
//!
//! Calls the client abandoned before their answer ended (the student
//! stopped the agent, or the client gave up) are not failures of the server:
//! they are left out of the records and counted apart ([`Abandoned`]).
//!
//! - [`capture`]: a `codendum capture` folder's calls;
//! - [`trace`]: an imported [`crate::trace::Trace`] (sizes and times only);
//! - [`server`]: the server's side over the class, from a host timeline.

pub mod capture;
pub mod server;
pub mod trace;

use std::collections::HashMap;

use crate::openai::{ErrorKind, TokenSource};
use crate::results::classroom_records::{CallKind, CallRecord, TaskOutcome, TaskRecord};

/// How a recorded call ended, as far as the recording knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// A whole answer.
    Ok,
    /// An error answer, or an answer cut short by the server side.
    Failed(ErrorKind),
    /// The client went away before the answer ended.
    Abandoned,
    /// The recording does not say (counted as a whole answer).
    Unknown,
}

/// One call of a real class, as its recording tells it. Times are seconds
/// on the recording's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedCall {
    /// Who made it: the student's label (`student 3`, or its root session).
    pub student: String,
    /// Its session.
    pub session: String,
    /// The session the student started (a subagent's parent's root; the
    /// call's own session otherwise).
    pub root: String,
    /// Why it was made.
    pub kind: CallKind,
    /// A main-agent step that starts a new coding request: the student
    /// wrote a new message after the agent's final answer.
    pub starts_request: bool,
    /// The coding request of its root session, when the source numbers
    /// them (0 = the first); `starts_request` is then not used.
    pub task: Option<usize>,
    /// When the request arrived.
    pub at_s: f64,
    /// Prompt tokens, as the server counted them.
    pub prompt_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: u64,
    /// Who counted the output tokens.
    pub token_source: TokenSource,
    /// Request → first generated token.
    pub ttft_s: Option<f64>,
    /// Request → end of the answer.
    pub duration_s: f64,
    /// How it ended.
    pub outcome: CallOutcome,
    /// The client sent it again because its session's previous call failed.
    pub retry: bool,
    /// Tool calls in the answer, when the recording knows.
    pub tool_calls: Option<usize>,
}

/// A call the client abandoned before its answer ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Abandoned {
    /// The student (index into [`ClassRecords::students`]).
    pub user: usize,
    /// How long the student had waited, seconds.
    pub waited_s: f64,
}

/// A real class as the classroom's records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClassRecords {
    /// Each student's label, by index.
    pub students: Vec<String>,
    /// One record per model call after its retries, in arrival order; times
    /// from the first call (0 s).
    pub requests: Vec<CallRecord>,
    /// One record per coding request.
    pub tasks: Vec<TaskRecord>,
    /// Calls the client abandoned (not in `requests`).
    pub abandoned: Vec<Abandoned>,
    /// The first call's arrival on the recording's clock, seconds: where
    /// the records' 0 is.
    pub origin_s: f64,
}

struct TaskState {
    user: usize,
    index: usize,
    start: f64,
    end: f64,
    calls: Vec<usize>,
    /// The last main-agent call, or the last call.
    last_main: Option<usize>,
    last_any: usize,
    /// The last call of the task was abandoned.
    abandoned_last: bool,
}

/// The records of a real class (see the module).
pub fn class_records(calls: &[ObservedCall]) -> ClassRecords {
    let mut order: Vec<&ObservedCall> = calls.iter().collect();
    order.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    let origin = order.first().map_or(0.0, |c| c.at_s);
    let mut out = ClassRecords {
        origin_s: origin,
        ..ClassRecords::default()
    };
    let mut user_of: HashMap<&str, usize> = HashMap::new();
    // Per root session: its current coding request (local number).
    let mut current: HashMap<&str, usize> = HashMap::new();
    // (user, root, local number) → index into `tasks`.
    let mut task_of: HashMap<(usize, &str, usize), usize> = HashMap::new();
    let mut tasks: Vec<TaskState> = Vec::new();
    // Per session: the record its next retry folds into.
    let mut retry_into: HashMap<&str, usize> = HashMap::new();
    // Sessions whose last call the client abandoned: the student's next
    // message there starts a new coding request.
    let mut stopped: std::collections::HashSet<&str> = Default::default();
    let mut tool_calls: Vec<Option<usize>> = Vec::new();
    for c in order {
        let next_user = user_of.len();
        let user = *user_of.entry(c.student.as_str()).or_insert_with(|| {
            out.students.push(c.student.clone());
            next_user
        });
        let main = c.session == c.root && c.kind == CallKind::Agent;
        let starts = c.starts_request || (main && stopped.remove(c.session.as_str()));
        let local = match (c.task, current.get(c.root.as_str()).copied()) {
            (Some(t), _) => t,
            (None, None) => 0,
            (None, Some(cur)) if main && starts => cur + 1,
            (None, Some(cur)) => cur,
        };
        current.insert(c.root.as_str(), local);
        let next_task = tasks.len();
        let t = *task_of
            .entry((user, c.root.as_str(), local))
            .or_insert(next_task);
        if t == next_task {
            let index = tasks.iter().filter(|s| s.user == user).count();
            tasks.push(TaskState {
                user,
                index,
                start: c.at_s - origin,
                end: c.at_s - origin,
                calls: Vec::new(),
                last_main: None,
                last_any: 0,
                abandoned_last: false,
            });
        }
        let state = &mut tasks[t];
        let end = c.at_s - origin + c.duration_s.max(0.0);
        state.end = state.end.max(end);
        if c.outcome == CallOutcome::Abandoned {
            out.abandoned.push(Abandoned {
                user,
                waited_s: c.duration_s,
            });
            state.abandoned_last = true;
            // What the student does next is a new start, not a retry.
            retry_into.remove(c.session.as_str());
            stopped.insert(c.session.as_str());
            continue;
        }
        state.abandoned_last = false;
        let error_kind = match c.outcome {
            CallOutcome::Failed(k) => Some(k),
            _ => None,
        };
        if let Some(&r) = retry_into.get(c.session.as_str()).filter(|_| c.retry) {
            let rec: &mut CallRecord = &mut out.requests[r];
            if let Some(k) = rec.error_kind {
                rec.retried_kinds.push(k);
            }
            rec.retries += 1;
            rec.prompt_tokens = c.prompt_tokens;
            rec.output_tokens = c.output_tokens;
            rec.tokens_counted_by = c.token_source;
            rec.ttft_s = c.ttft_s;
            rec.e2e_s = c.duration_s;
            rec.wait_s = (end - rec.started_at).max(c.duration_s);
            rec.error_kind = error_kind;
            tool_calls[r] = c.tool_calls;
            if error_kind.is_none() {
                retry_into.remove(c.session.as_str());
            }
            continue;
        }
        let r = out.requests.len();
        out.requests.push(CallRecord {
            user,
            session: c.session.clone(),
            task: state.index,
            kind: c.kind,
            started_at: c.at_s - origin,
            prompt_tokens: c.prompt_tokens,
            output_tokens: c.output_tokens,
            tokens_counted_by: c.token_source,
            ttft_s: c.ttft_s,
            e2e_s: c.duration_s,
            wait_s: c.duration_s,
            retries: 0,
            retried_kinds: Vec::new(),
            error_kind,
            tool_calls: c.tool_calls.unwrap_or(0),
        });
        tool_calls.push(c.tool_calls);
        if error_kind.is_some() {
            retry_into.insert(c.session.as_str(), r);
        } else {
            retry_into.remove(c.session.as_str());
        }
        state.calls.push(r);
        state.last_any = r;
        if main {
            state.last_main = Some(r);
        }
    }
    out.tasks = tasks
        .into_iter()
        .map(|s| task_record(&s, &out.requests, &tool_calls))
        .collect();
    out.tasks.sort_by_key(|t| (t.user, t.index));
    out
}

fn task_record(s: &TaskState, requests: &[CallRecord], tool_calls: &[Option<usize>]) -> TaskRecord {
    let calls: Vec<&CallRecord> = s.calls.iter().map(|&i| &requests[i]).collect();
    let last = s.last_main.unwrap_or(s.last_any);
    let (outcome, error_kind) = match requests.get(last) {
        _ if s.abandoned_last || s.calls.is_empty() => (TaskOutcome::CutOff, None),
        Some(r) if r.error_kind.is_some() => (TaskOutcome::Failed, r.error_kind),
        Some(_) if tool_calls.get(last).copied().flatten().unwrap_or(0) > 0 => {
            (TaskOutcome::CutOff, None)
        }
        _ => (TaskOutcome::Completed, None),
    };
    TaskRecord {
        user: s.user,
        index: s.index,
        start: s.start,
        end: s.end,
        model_time_s: TaskRecord::model_time_of(calls.iter().copied()),
        calls: calls.len(),
        output_tokens: calls.iter().map(|r| r.output_tokens).sum(),
        tool_calls: calls.iter().map(|r| r.tool_calls).sum(),
        // A recording of the wire does not see what a tool returned.
        tool_errors: 0,
        compactions: calls
            .iter()
            .filter(|r| r.kind == CallKind::Compaction)
            .count(),
        outcome,
        error_kind,
    }
}

#[cfg(test)]
mod tests;
