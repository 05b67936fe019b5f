//! A capture's calls as observed calls: each key's student ordinal (else
//! the root session) is the student, `other` calls (`/v1/models`, …) are
//! left out, and the outcome is read off the status and the recorded error.

use std::collections::HashMap;

use super::{CallOutcome, ObservedCall};
use crate::capture::CallLine;
use crate::openai::{ErrorKind, TokenSource};

/// The `error` a capture records when the client went away mid-answer.
const CLIENT_WENT_AWAY: &str = "the client went away";
/// The `error` a capture records when the upstream could not be reached.
const UNREACHABLE: &str = "unreachable";

/// How a captured call ended.
pub fn outcome(line: &CallLine) -> CallOutcome {
    match (&line.error, line.status) {
        (Some(e), _) if e.contains(CLIENT_WENT_AWAY) => CallOutcome::Abandoned,
        (Some(e), 502) if e.contains(UNREACHABLE) => CallOutcome::Failed(ErrorKind::Connect),
        (_, s) if !(200..300).contains(&s) => CallOutcome::Failed(ErrorKind::from_status(s)),
        // A 2xx whose stream broke or carried error events.
        (Some(_), _) => CallOutcome::Failed(ErrorKind::StreamError),
        (None, _) => CallOutcome::Ok,
    }
}

/// The student a captured call stands for: its key's ordinal, else its
/// root session, else its own number.
fn student_label(line: &CallLine, root: &str) -> String {
    match line.student {
        Some(n) => format!("student {n}"),
        None => root.to_string(),
    }
}

/// The model calls of a capture as observed calls.
pub fn observed_calls(lines: &[CallLine]) -> Vec<ObservedCall> {
    let parent_of: HashMap<&str, &str> = lines
        .iter()
        .filter_map(|l| Some((l.request.session.as_deref()?, l.request.parent.as_deref()?)))
        .collect();
    let root_of = |session: &str| {
        let mut s = session;
        // A parent chain never loops in a recording; bound it anyway.
        for _ in 0..64 {
            match parent_of.get(s) {
                Some(p) if *p != s => s = p,
                _ => break,
            }
        }
        s.to_string()
    };
    lines
        .iter()
        .filter_map(|l| {
            let kind = l.request.kind.call_kind()?;
            let session = match &l.request.session {
                Some(s) => s.clone(),
                None => l
                    .student
                    .map_or_else(|| format!("call {}", l.seq), |n| format!("student {n}")),
            };
            let root = root_of(&session);
            let outcome = outcome(l);
            Some(ObservedCall {
                student: student_label(l, &root),
                root,
                session,
                kind,
                starts_request: l.client_time_kind.as_deref() == Some("user_pause"),
                task: None,
                at_s: l.started_at_s,
                prompt_tokens: l.prompt_tokens,
                output_tokens: l.output_tokens.unwrap_or(0),
                token_source: l.tokens_counted_by.unwrap_or(TokenSource::Server),
                ttft_s: l.ttft_s,
                duration_s: l.duration_s,
                outcome,
                retry: l.client_time_kind.as_deref() == Some("retry"),
                tool_calls: Some(if outcome == CallOutcome::Ok {
                    l.tool_calls.len()
                } else {
                    0
                }),
            })
        })
        .collect()
}
