//! TraceLab's round rows (`uw-syfi/TraceLab`; its release is the same
//! rows gzipped): one JSON object a model call.
//!
//! What is read of a row: `session_id` (with `user`, when present, the
//! session's key), `round_index`, `trace_key`, `provider`, `model`,
//! `project`, `input_tokens_total`, `prefix_tokens` (what the provider's
//! cache served), `output_tokens` (reasoning included), and the times of
//! `timing_events` (ISO-8601 UTC).
//!
//! Grouping: no row id is unique across the file (`round_index` counts
//! from 0 in every session, and merged exports repeat rows), so a session
//! is every row of one `session_id` (and `user`), its calls ordered by
//! `round_index`, then by start; a row whose `trace_key` (else session,
//! `round_index` and `round_id`) was already read is a duplicate, left out
//! and named. A subagent is a session of its own (the rows carry no parent
//! link).
//!
//! Timing: a call starts at its last input event (the person's message or
//! the last tool result: the client sends once they are in) and ends at
//! its last output event; it waits for its session's previous call, the
//! gap between that call's end and its start, a person's wait when its
//! first input is a `user_message` and a tool's when it is a
//! `tool_result`. Every session starts at 0 (`at_s` from its own first
//! start): TraceLab's sessions come from many people over months, and the
//! weeks between them say nothing of a class's load (`replay --users` puts
//! them back to back). A new coding request starts at each person's
//! message.
//!
//! Blocks (the rows keep no text and no block hashes), at the caller's
//! block size:
//! - a session's first prompt starts with the first `prefix_tokens` of a
//!   head shared by the sessions of one provider, model and project (what
//!   the provider's cache already held: the tools, the system prompt, the
//!   project's instructions);
//! - a later prompt at least as long as the session's previous prompt and
//!   answer carries that conversation on: it starts with all of it;
//! - a shorter one (a compaction, reasoning dropped from the history)
//!   starts with the first `prefix_tokens` of the previous prompt.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use serde::Deserialize;

use super::{Dependency, Trace, TraceCall, Unread, WaitReason};
use crate::results::classroom_records::CallKind;

/// Blocks a reading may hold before it asks for fewer sessions or larger
/// blocks (8 bytes each: 400 MB).
pub const MAX_BLOCKS: u64 = 50_000_000;

#[derive(Debug, Clone, Deserialize)]
struct Event {
    event_type: String,
    timestamp: String,
}

#[derive(Debug, Clone, Deserialize)]
struct Row {
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    user: Option<String>,
    session_id: String,
    round_index: u64,
    #[serde(default)]
    round_id: Option<String>,
    #[serde(default)]
    trace_key: Option<String>,
    #[serde(default)]
    model: Option<String>,
    input_tokens_total: u64,
    #[serde(default)]
    prefix_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    first_input_event_type: Option<String>,
    #[serde(default)]
    timing_events: Vec<Event>,
}

/// A row as kept: its session, order, sizes and times (seconds since the
/// Unix epoch).
#[derive(Debug, Clone)]
struct Round {
    session: String,
    group: (String, String, String),
    round_index: u64,
    line: usize,
    input_tokens: u64,
    prefix_tokens: u64,
    output_tokens: u64,
    start_s: f64,
    end_s: f64,
    reason: WaitReason,
}

fn seconds(timestamp: &str) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(timestamp)
        .ok()
        .map(|t| t.timestamp_micros() as f64 / 1e6)
}

fn round(row: Row, line: usize) -> Result<Round, String> {
    if row.input_tokens_total == 0 || row.input_tokens_total > super::MAX_PROMPT_TOKENS {
        return Err(format!(
            "input_tokens_total must be 1 to {} tokens",
            super::MAX_PROMPT_TOKENS
        ));
    }
    if row.output_tokens.unwrap_or(0) > super::MAX_PROMPT_TOKENS {
        return Err(format!(
            "output_tokens above {} tokens",
            super::MAX_PROMPT_TOKENS
        ));
    }
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for e in &row.timing_events {
        let t = seconds(&e.timestamp)
            .ok_or_else(|| format!("timestamp {:?} is not ISO-8601", e.timestamp))?;
        match e.event_type.as_str() {
            "user_message" | "tool_result" => inputs.push(t),
            _ => outputs.push(t),
        }
    }
    let first = inputs
        .iter()
        .chain(&outputs)
        .copied()
        .reduce(f64::min)
        .ok_or("no timing_events")?;
    let start_s = inputs.iter().copied().reduce(f64::max).unwrap_or(first);
    let end_s = outputs
        .iter()
        .copied()
        .reduce(f64::max)
        .unwrap_or(start_s)
        .max(start_s);
    let first_input = row.first_input_event_type.clone().or_else(|| {
        row.timing_events
            .iter()
            .find(|e| matches!(e.event_type.as_str(), "user_message" | "tool_result"))
            .map(|e| e.event_type.clone())
    });
    let reason = match first_input.as_deref() {
        Some("user_message") => WaitReason::Person,
        Some("tool_result") => WaitReason::Tool,
        _ => WaitReason::Unknown,
    };
    let session = match &row.user {
        Some(u) => format!("{u}/{}", row.session_id),
        None => row.session_id.clone(),
    };
    Ok(Round {
        session,
        group: (
            row.provider.unwrap_or_default(),
            row.model.unwrap_or_default(),
            row.project.unwrap_or_default(),
        ),
        round_index: row.round_index,
        line,
        input_tokens: row.input_tokens_total,
        prefix_tokens: row.prefix_tokens.unwrap_or(0).min(row.input_tokens_total),
        output_tokens: row.output_tokens.unwrap_or(0),
        start_s,
        end_s,
        reason,
    })
}

/// Whether a JSON line looks like a TraceLab row.
pub fn looks_like(v: &serde_json::Value) -> bool {
    v.get("session_id").is_some()
        && v.get("round_index").is_some()
        && v.get("input_tokens_total").is_some()
}

/// Reads TraceLab rows from `input` into a trace of `block_size`-token
/// blocks, keeping the first `max_sessions` sessions (by their first row)
/// when given. A line that is not a row ends the reading: with sessions
/// read before it the trace keeps them and names the line in its
/// `unread` (`file` left empty for the caller); without, it is the error.
pub fn read_rows<R: BufRead>(
    input: R,
    block_size: u32,
    max_sessions: Option<usize>,
) -> Result<Trace, Unread> {
    let bad = |line: usize, reason: String| Unread {
        file: String::new(),
        line,
        reason,
    };
    let mut rounds: Vec<Round> = Vec::new();
    let mut unread = Vec::new();
    let mut keys: HashMap<String, usize> = HashMap::new();
    let mut sessions: Vec<String> = Vec::new();
    let mut known: HashSet<String> = HashSet::new();
    for (i, line) in input.lines().enumerate() {
        let n = i + 1;
        let parsed = line
            .map_err(|e| format!("cannot read ({e})"))
            .and_then(|l| {
                if l.trim().is_empty() {
                    return Ok(None);
                }
                let row: Row =
                    serde_json::from_str(&l).map_err(|e| format!("not a TraceLab row ({e})"))?;
                let key = row.trace_key.clone().unwrap_or_else(|| {
                    format!(
                        "{}\u{1f}{}\u{1f}{}",
                        row.session_id,
                        row.round_index,
                        row.round_id.as_deref().unwrap_or("")
                    )
                });
                let key = format!("{}\u{1f}{key}", row.user.as_deref().unwrap_or(""));
                round(row, n).map(|r| Some((key, r)))
            });
        match parsed {
            Ok(None) => {}
            Ok(Some((key, r))) => {
                if let Some(first) = keys.get(&key) {
                    unread.push(bad(
                        n,
                        format!("a duplicate of line {first} (the same row key); left out"),
                    ));
                    continue;
                }
                keys.insert(key, n);
                if !known.contains(&r.session) {
                    if max_sessions.is_some_and(|m| sessions.len() >= m) {
                        continue;
                    }
                    known.insert(r.session.clone());
                    sessions.push(r.session.clone());
                }
                rounds.push(r);
            }
            Err(reason) if rounds.is_empty() => return Err(bad(n, reason)),
            Err(reason) => {
                unread.push(bad(
                    n,
                    format!(
                        "{reason}; the {} sessions read before it are kept (the last may be cut short), the rest is not read",
                        sessions.len()
                    ),
                ));
                break;
            }
        }
    }
    if rounds.is_empty() {
        return Err(bad(0, "no TraceLab rows".into()));
    }
    let b = u64::from(block_size.max(1));
    let blocks: u64 = rounds.iter().map(|r| r.input_tokens.div_ceil(b)).sum();
    if blocks > MAX_BLOCKS {
        return Err(bad(
            0,
            format!(
                "{} sessions of {blocks} blocks at {block_size} tokens a block are more than this reading holds ({MAX_BLOCKS}); pass --sessions N or a larger --block-size",
                sessions.len()
            ),
        ));
    }
    let mut trace = to_trace(rounds, block_size);
    trace.unread.extend(unread);
    Ok(trace)
}

/// A conversation so far: its blocks and the tokens they cover.
#[derive(Debug, Clone, Default)]
struct Context {
    blocks: Vec<u64>,
    tokens: u64,
}

fn to_trace(mut rounds: Vec<Round>, block_size: u32) -> Trace {
    let b = u64::from(block_size.max(1));
    // Sessions in order of their first row; rows by round index, then start.
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for r in &rounds {
        first_line.entry(r.session.clone()).or_insert(r.line);
    }
    rounds.sort_by(|x, y| {
        first_line[&x.session]
            .cmp(&first_line[&y.session])
            .then(x.round_index.cmp(&y.round_index))
            .then(x.start_s.total_cmp(&y.start_s))
            .then(x.line.cmp(&y.line))
    });
    let mut origin_of: HashMap<String, f64> = HashMap::new();
    for r in &rounds {
        let o = origin_of.entry(r.session.clone()).or_insert(r.start_s);
        *o = o.min(r.start_s);
    }
    let mut next = 0u64;
    let mut fresh = |n: u64| {
        let out: Vec<u64> = (next + 1..=next + n).collect();
        next += n;
        out
    };
    let mut heads: HashMap<(String, String, String), Vec<u64>> = HashMap::new();
    let mut contexts: HashMap<String, (Context, usize)> = HashMap::new();
    let mut tasks: HashMap<String, usize> = HashMap::new();
    let mut calls = Vec::with_capacity(rounds.len());
    for r in &rounds {
        let total = r.input_tokens.div_ceil(b) as usize;
        let origin = origin_of[&r.session];
        let previous = contexts.get(&r.session).cloned();
        let (shared, after) = match &previous {
            None => {
                let want = (r.prefix_tokens / b) as usize;
                let head = heads.entry(r.group.clone()).or_default();
                while head.len() < want {
                    head.extend(fresh(1));
                }
                (head[..want].to_vec(), None)
            }
            Some((ctx, p)) => {
                let carried = r.input_tokens >= ctx.tokens;
                let tokens = if carried { ctx.tokens } else { r.prefix_tokens };
                let n = ((tokens.min(r.input_tokens) / b) as usize).min(ctx.blocks.len());
                let before: &TraceCall = &calls[*p];
                let end = before.end_s().unwrap_or(before.at_s);
                let at = r.start_s - origin;
                (
                    ctx.blocks[..n].to_vec(),
                    Some(Dependency {
                        call: *p,
                        gap_s: (at - end).max(0.0),
                        reason: r.reason,
                    }),
                )
            }
        };
        let mut hash_ids = shared;
        let own = total.saturating_sub(hash_ids.len()) as u64;
        hash_ids.extend(fresh(own));
        // The session's conversation after this call: its full prompt
        // blocks and its answer's.
        let full = (r.input_tokens / b) as usize;
        let covered = r.input_tokens + r.output_tokens;
        let mut blocks = hash_ids[..full.min(hash_ids.len())].to_vec();
        blocks.extend(fresh((covered / b).saturating_sub(blocks.len() as u64)));
        contexts.insert(
            r.session.clone(),
            (
                Context {
                    blocks,
                    tokens: covered,
                },
                calls.len(),
            ),
        );
        let task = tasks.entry(r.session.clone()).or_insert(0);
        if previous.is_some() && r.reason == WaitReason::Person {
            *task += 1;
        }
        calls.push(TraceCall {
            session: Some(r.session.clone()),
            parent: None,
            kind: Some(CallKind::Agent),
            task: Some(*task),
            at_s: r.start_s - origin,
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            hash_ids,
            after,
            ttft_s: None,
            duration_s: Some(r.end_s - r.start_s),
        });
    }
    Trace::new(block_size, super::mooncake::in_arrival_order(calls))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(session: &str, index: u64, input: u64, prefix: u64, out: u64, events: &str) -> String {
        format!(
            r#"{{"provider":"claude","project":"p","session_id":"{session}","round_index":{index},"round_id":"r{index}","model":"m","input_tokens_total":{input},"prefix_tokens":{prefix},"output_tokens":{out},"timing_events":[{events}]}}"#
        )
    }

    fn ev(kind: &str, at: &str) -> String {
        format!(r#"{{"event_type":"{kind}","timestamp":"2026-06-01T05:40:{at}Z"}}"#)
    }

    fn rows() -> Vec<String> {
        vec![
            row(
                "s1",
                0,
                400,
                256,
                20,
                &[ev("user_message", "00.000"), ev("text", "02.000")].join(","),
            ),
            // Another session of the same group, then s1 goes on.
            row(
                "s2",
                0,
                300,
                256,
                10,
                &[ev("user_message", "01.000"), ev("text", "03.500")].join(","),
            ),
            row(
                "s1",
                1,
                480,
                416,
                30,
                &[
                    ev("tool_result", "04.000"),
                    ev("tool_result", "05.000"),
                    ev("tool_call", "06.000"),
                ]
                .join(","),
            ),
            // Shorter than the conversation so far: the provider's prefix.
            row(
                "s1",
                2,
                200,
                160,
                5,
                &[ev("user_message", "20.000"), ev("text", "21.000")].join(","),
            ),
        ]
    }

    #[test]
    fn rows_become_sessions_with_waits_and_shared_heads() {
        let text = rows().join("\n");
        let t = read_rows(text.as_bytes(), 16, None).expect("reads");
        assert!(t.unread.is_empty(), "{:?}", t.unread);
        assert_eq!(t.sessions(), vec!["s1", "s2"]);
        let s1: Vec<&TraceCall> = t
            .calls
            .iter()
            .filter(|c| c.session.as_deref() == Some("s1"))
            .collect();
        assert_eq!(s1.len(), 3);
        assert_eq!(s1[1].at_s, 5.0, "after its last tool result");
        assert_eq!(s1[1].duration_s, Some(1.0));
        let dep = s1[1].after.expect("waits");
        assert_eq!((dep.gap_s, dep.reason), (3.0, WaitReason::Tool));
        assert_eq!(s1[2].after.map(|d| d.reason), Some(WaitReason::Person));
        assert_eq!(s1[2].task, Some(1));
        let common = |a: &[u64], b: &[u64]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let s2 = t
            .calls
            .iter()
            .find(|c| c.session.as_deref() == Some("s2"))
            .expect("s2");
        // Both first prompts hold the group's 256-token head.
        assert_eq!(common(&s1[0].hash_ids, &s2.hash_ids), 16);
        // The second carries the first's prompt and answer on (420 tokens).
        assert_eq!(common(&s1[1].hash_ids, &s1[0].hash_ids), 25);
        assert_eq!(s1[1].hash_ids.len(), 30);
        // The third: the first 160 tokens of the second's prompt.
        assert_eq!(common(&s1[2].hash_ids, &s1[1].hash_ids), 10);
        assert_eq!(t.conversations()[2].map(|c| c.answer), Some(true));
    }

    #[test]
    fn duplicates_are_left_out_and_a_bad_line_keeps_what_came_before() {
        let mut lines = rows();
        lines.insert(1, lines[0].clone());
        lines.push("{\"session_id\": \"s3\", \"round_ind".into());
        lines.push(lines[4].replace("\"s1\"", "\"s4\""));
        let t = read_rows(lines.join("\n").as_bytes(), 16, None).expect("partial");
        assert_eq!(t.calls.len(), 4);
        assert_eq!(t.unread.len(), 2);
        assert_eq!(t.unread[0].line, 2);
        assert!(t.unread[0].reason.contains("duplicate of line 1"));
        assert_eq!(t.unread[1].line, 6);
        assert!(
            t.unread[1]
                .reason
                .contains("the 2 sessions read before it are kept"),
            "{}",
            t.unread[1]
        );
        let e = read_rows(&b"{\"provider\": 1}\n"[..], 16, None).unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.reason.contains("not a TraceLab row"), "{e}");
    }

    #[test]
    fn the_first_sessions_only_when_asked() {
        let text = rows().join("\n");
        let t = read_rows(text.as_bytes(), 16, Some(1)).expect("reads");
        assert_eq!(t.sessions(), vec!["s1"]);
        assert_eq!(t.calls.len(), 3);
    }
}
