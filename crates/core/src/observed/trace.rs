//! An imported class ([`Trace`]: sessions read from the students' own
//! tools) as observed calls: the root session is the student, the trace's
//! coding-request numbers are kept, and the outcome is unknown (a stored
//! session keeps what was answered, not what failed on the way).

use super::{CallOutcome, ObservedCall};
use crate::openai::TokenSource;
use crate::results::classroom_records::CallKind;
use crate::trace::Trace;

/// The calls of `trace` as observed calls.
pub fn observed_calls(trace: &Trace) -> Vec<ObservedCall> {
    let roots = trace.roots();
    trace
        .calls
        .iter()
        .zip(roots)
        .enumerate()
        .map(|(i, (c, root))| {
            let session = c.session.clone().unwrap_or_else(|| format!("call {i}"));
            let root = root.unwrap_or_else(|| session.clone());
            ObservedCall {
                student: root.clone(),
                session,
                root,
                kind: c.kind.unwrap_or(CallKind::Agent),
                starts_request: false,
                task: c.task,
                at_s: c.at_s,
                prompt_tokens: Some(c.input_tokens),
                output_tokens: c.output_tokens,
                token_source: TokenSource::Server,
                ttft_s: c.ttft_s,
                duration_s: c.duration_s.unwrap_or(0.0),
                outcome: CallOutcome::Unknown,
                retry: false,
                tool_calls: None,
            }
        })
        .collect()
}
