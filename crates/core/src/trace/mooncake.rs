//! Mooncake-style JSONL traces, read and written, and the sessions AIPerf
//! replays from the same kind of lines.
//!
//! One JSON object a line:
//! - `timestamp`: arrival, milliseconds (any origin; the first becomes 0);
//! - `input_length`, `output_length`: tokens;
//! - `hash_ids`: the prompt's blocks, `block_size` tokens each (the last
//!   may be partial); equal leading ids mean an equal prefix;
//! - `session_id` and `delay` (AIPerf's `mooncake_trace` dataset): lines of
//!   one session are its turns in file order; a turn with `delay` is sent
//!   that many milliseconds after the previous turn's answer, a turn with
//!   `timestamp` at its time. As AIPerf sends them, a later turn's prompt is
//!   the session's history (the previous turn's prompt and answer) and
//!   then the line's `input_length` tokens: read as one call of that whole
//!   length, whose blocks start with the previous prompt's.
//!
//! [`write_mooncake`] writes the open-loop form (timestamps only, in
//! arrival order); [`write_aiperf_sessions`] writes every session's turns
//! together, the first with its `timestamp`, the next with their `delay`.
//! Neither writes anything but these fields: no text, no key.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

use super::{Dependency, Trace, TraceCall, Unread};

/// One line of a Mooncake-style trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MooncakeLine {
    /// The session (AIPerf multi-turn), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Arrival, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
    /// Wait after the session's previous answer, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<f64>,
    /// Prompt length, tokens.
    pub input_length: u64,
    /// Output length, tokens.
    #[serde(default)]
    pub output_length: u64,
    /// The prompt's blocks.
    #[serde(default)]
    pub hash_ids: Vec<u64>,
}

/// What is wrong with a trace file: the line (1-based) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct TraceError {
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

fn bad(line: usize, reason: impl Into<String>) -> TraceError {
    TraceError {
        line,
        reason: reason.into(),
    }
}

/// Checks one line of a Mooncake-style trace.
fn parse_line(line: &str, n: usize, block_size: u32) -> Result<MooncakeLine, TraceError> {
    let b = u64::from(block_size.max(1));
    let l: MooncakeLine =
        serde_json::from_str(line).map_err(|e| bad(n, format!("not a trace line ({e})")))?;
    if l.output_length > super::MAX_PROMPT_TOKENS {
        return Err(bad(
            n,
            format!("output_length above {} tokens", super::MAX_PROMPT_TOKENS),
        ));
    }
    if l.input_length == 0 || l.input_length > super::MAX_PROMPT_TOKENS {
        return Err(bad(
            n,
            format!(
                "input_length must be 1 to {} tokens",
                super::MAX_PROMPT_TOKENS
            ),
        ));
    }
    let blocks = l.input_length.div_ceil(b);
    if l.hash_ids.len() as u64 > blocks {
        return Err(bad(
            n,
            format!(
                "{} hash_ids for {} tokens at {block_size} tokens a block (at most {blocks}); is the block size right?",
                l.hash_ids.len(),
                l.input_length
            ),
        ));
    }
    for (what, v) in [("timestamp", l.timestamp), ("delay", l.delay)] {
        if v.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
            return Err(bad(
                n,
                format!("{what} must be a number of milliseconds ≥ 0"),
            ));
        }
    }
    if l.delay.is_some() && l.session_id.is_none() {
        return Err(bad(
            n,
            "a delay needs a session_id (it follows the session's previous turn)",
        ));
    }
    Ok(l)
}

/// Reads a Mooncake-style (or AIPerf session) trace whose `hash_ids` are
/// `block_size` tokens a block. Blank lines are skipped. A line that is not
/// such a line ends the reading: with calls read before it, the trace keeps
/// them and names the line in [`Trace::unread`] (its `file` left empty for
/// the caller); without, it is the error.
pub fn read_trace<R: BufRead>(input: R, block_size: u32) -> Result<Trace, TraceError> {
    let b = u64::from(block_size.max(1));
    let mut lines = Vec::new();
    let mut stopped: Option<TraceError> = None;
    for (i, line) in input.lines().enumerate() {
        let n = i + 1;
        let parsed = line
            .map_err(|e| bad(n, format!("cannot read: {e}")))
            .and_then(|line| {
                if line.trim().is_empty() {
                    Ok(None)
                } else {
                    parse_line(&line, n, block_size).map(Some)
                }
            });
        match parsed {
            Ok(Some(l)) => lines.push((n, l)),
            Ok(None) => {}
            Err(e) => {
                stopped = Some(e);
                break;
            }
        }
    }
    if let (Some(e), true) = (&stopped, lines.is_empty()) {
        return Err(e.clone());
    }
    if lines.is_empty() {
        return Err(bad(0, "no trace lines"));
    }
    let origin = lines
        .iter()
        .filter_map(|(_, l)| l.timestamp)
        .fold(f64::INFINITY, f64::min);
    let origin = if origin.is_finite() { origin } else { 0.0 };
    // Blocks of the answers a later turn's history holds: ids no line uses.
    let mut fresh = lines
        .iter()
        .flat_map(|(_, l)| l.hash_ids.iter().copied())
        .max()
        .unwrap_or(0)
        + 1;
    // File order first: a delayed turn follows its session's previous line.
    let mut calls: Vec<TraceCall> = Vec::with_capacity(lines.len());
    let mut last_of: HashMap<String, usize> = HashMap::new();
    for (n, l) in lines {
        let previous = l.session_id.as_ref().and_then(|s| last_of.get(s).copied());
        let (at_s, after) = match (l.timestamp, l.delay, previous) {
            (Some(ts), _, _) => ((ts - origin) / 1000.0, None),
            (None, Some(d), Some(p)) => (
                calls[p].at_s + d / 1000.0,
                Some(Dependency::after(p, d / 1000.0)),
            ),
            (None, Some(_), None) => {
                let e = bad(n, "a delay on a session's first turn (give it a timestamp)");
                if calls.is_empty() {
                    return Err(e);
                }
                stopped = Some(e);
                break;
            }
            (None, None, Some(p)) => (calls[p].at_s, Some(Dependency::after(p, 0.0))),
            (None, None, None) => (0.0, None),
        };
        let (input, hash_ids) = match previous {
            // The history, then the turn.
            Some(p) => {
                let p = &calls[p];
                let covered = p.input_tokens + p.output_tokens;
                let full = (p.input_tokens / b) as usize;
                let mut ids: Vec<u64> = p.hash_ids[..full.min(p.hash_ids.len())].to_vec();
                let answer_blocks = (covered / b).saturating_sub(ids.len() as u64);
                ids.extend(fresh..fresh + answer_blocks);
                fresh += answer_blocks;
                ids.extend(l.hash_ids.iter().copied());
                (covered + l.input_length, ids)
            }
            None => (l.input_length, l.hash_ids),
        };
        let mut call = TraceCall::open(at_s, input, l.output_length, hash_ids);
        call.after = after;
        if let Some(s) = &l.session_id {
            last_of.insert(s.clone(), calls.len());
        }
        call.session = l.session_id;
        calls.push(call);
    }
    let mut trace = Trace::new(block_size, in_arrival_order(calls));
    if let Some(e) = stopped {
        trace.unread.push(Unread {
            file: String::new(),
            line: e.line,
            reason: format!(
                "{}; the calls before it are kept, the rest is not read",
                e.reason
            ),
        });
    }
    Ok(trace)
}

/// Sorts calls by arrival (stable) and renumbers their dependencies.
pub fn in_arrival_order(calls: Vec<TraceCall>) -> Vec<TraceCall> {
    let mut order: Vec<usize> = (0..calls.len()).collect();
    order.sort_by(|&a, &b| calls[a].at_s.total_cmp(&calls[b].at_s));
    let mut new_index = vec![0; calls.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let mut slots: Vec<Option<TraceCall>> = calls.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    for &old in &order {
        let Some(mut c) = slots[old].take() else {
            continue;
        };
        let me = new_index[old];
        // A dependency on a later call (never written by codendum) is dropped:
        // the call then keeps its arrival time.
        c.after = c
            .after
            .map(|d| Dependency {
                call: new_index[d.call],
                ..d
            })
            .filter(|d| d.call < me);
        out.push(c);
    }
    out
}

fn ms(seconds: f64) -> f64 {
    (seconds.max(0.0) * 1000.0).round()
}

fn write_line<W: Write>(out: &mut W, line: &MooncakeLine) -> std::io::Result<()> {
    // Whole milliseconds are written as integers (Mooncake's form).
    let mut v = serde_json::to_value(line).map_err(std::io::Error::other)?;
    for key in ["timestamp", "delay"] {
        if let Some(x) = v.get(key).and_then(serde_json::Value::as_f64) {
            v[key] = serde_json::Value::from(x as u64);
        }
    }
    serde_json::to_writer(&mut *out, &v).map_err(std::io::Error::other)?;
    out.write_all(b"\n")
}

/// Writes the open-loop Mooncake form: a line per call in arrival order
/// with `timestamp` (ms since the first call), `input_length`,
/// `output_length` and `hash_ids`.
pub fn write_mooncake<W: Write>(trace: &Trace, mut out: W) -> std::io::Result<()> {
    for c in &trace.calls {
        write_line(
            &mut out,
            &MooncakeLine {
                session_id: None,
                timestamp: Some(ms(c.at_s)),
                delay: None,
                input_length: c.input_tokens,
                output_length: c.output_tokens,
                hash_ids: c.hash_ids.clone(),
            },
        )?;
    }
    out.flush()
}

/// Writes the sessions as AIPerf's `mooncake_trace` dataset replays them:
/// every session's turns together in order, its first turn with the
/// `timestamp` of its arrival, each later turn with the `delay` after the
/// previous turn's recorded end (its arrival when the end is unknown); a
/// call without a session is a one-turn session of its own. AIPerf sends a
/// session's turns with the history before them (the earlier turns and
/// the server's answers), so a turn that carries on the previous one
/// ([`TraceCall::carries_on`]) is written as what it adds
/// ([`TraceCall::new_tokens`]); any other turn whole (AIPerf then sends it
/// longer than recorded).
pub fn write_aiperf_sessions<W: Write>(trace: &Trace, mut out: W) -> std::io::Result<()> {
    let mut order: Vec<String> = Vec::new();
    let mut turns: HashMap<String, Vec<&TraceCall>> = HashMap::new();
    for (i, c) in trace.calls.iter().enumerate() {
        let key = c
            .session
            .clone()
            .unwrap_or_else(|| format!("codendum-call-{i}"));
        let entry = turns.entry(key.clone()).or_default();
        if entry.is_empty() {
            order.push(key);
        }
        entry.push(c);
    }
    for key in order {
        let mut previous: Option<&TraceCall> = None;
        for c in turns.get(&key).map(Vec::as_slice).unwrap_or(&[]) {
            let (timestamp, delay) = match previous {
                None => (Some(ms(c.at_s)), None),
                Some(p) => (None, Some(ms(c.at_s - p.end_s().unwrap_or(p.at_s)))),
            };
            let (input_length, hash_ids) = match previous {
                Some(p) if c.carries_on(p, trace.block_size) => c.new_tokens(p, trace.block_size),
                _ => (c.input_tokens, c.hash_ids.as_slice()),
            };
            write_line(
                &mut out,
                &MooncakeLine {
                    session_id: Some(key.clone()),
                    timestamp,
                    delay,
                    input_length,
                    output_length: c.output_tokens,
                    hash_ids: hash_ids.to_vec(),
                },
            )?;
            previous = Some(c);
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mooncake_lines_from_their_first_timestamp() {
        let text = r#"{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48]}

{"timestamp": 27000, "input_length": 10, "output_length": 4, "hash_ids": [1]}
"#;
        let t = read_trace(text.as_bytes(), 512).expect("reads");
        assert_eq!(t.calls.len(), 2);
        assert_eq!(t.calls[0].input_tokens, 10, "sorted by arrival");
        assert!((t.calls[1].at_s - 0.482).abs() < 1e-9);
        assert_eq!(t.calls[1].hash_ids, vec![46, 47, 48]);
        assert!(t.calls.iter().all(|c| c.after.is_none()));
    }

    #[test]
    fn bad_lines_are_named() {
        let e = read_trace(&b"{\"timestamp\": 1, \"input_length\": 0}\n"[..], 16).unwrap_err();
        assert_eq!(e.line, 1);
        let e =
            read_trace(&b"\n{\"input_length\": 10, \"hash_ids\": [1,2]}\n"[..], 16).unwrap_err();
        assert!(e.line == 2 && e.reason.contains("block size"), "{e}");
        let e = read_trace(&b"not json\n"[..], 16).unwrap_err();
        assert_eq!(e.line, 1);
        let e = read_trace(&b"{\"input_length\": 100000000}\n"[..], 16).unwrap_err();
        assert!(e.reason.contains("1 to 16777216"), "{e}");
        assert!(read_trace(&b"\n\n"[..], 16).is_err());
        let e = read_trace(&b"{\"input_length\": 3, \"delay\": 5}\n"[..], 16).unwrap_err();
        assert!(e.reason.contains("session_id"), "{e}");
    }

    #[test]
    fn a_bad_line_after_good_ones_keeps_them_and_is_named() {
        let text = "{\"timestamp\": 0, \"input_length\": 10}\n\
                    {\"timestamp\": 5, \"input_length\": 12}\n\
                    {\"timestamp\": 9, \"input_len\n\
                    {\"timestamp\": 12, \"input_length\": 14}\n";
        let t = read_trace(text.as_bytes(), 16).expect("a partial read");
        assert_eq!(t.calls.len(), 2, "the calls before the bad line");
        assert_eq!(t.unread.len(), 1);
        assert_eq!(t.unread[0].line, 3);
        assert!(
            t.unread[0].reason.contains("not a trace line"),
            "{:?}",
            t.unread
        );
    }

    fn session_call(s: &str, at: f64, dur: f64, input: u64, ids: Vec<u64>) -> TraceCall {
        let mut c = TraceCall::open(at, input, 7, ids);
        c.session = Some(s.into());
        c.duration_s = Some(dur);
        c
    }

    #[test]
    fn sessions_round_trip_through_the_aiperf_form() {
        let trace = Trace::new(
            16,
            vec![
                session_call("a", 0.0, 1.0, 40, vec![1, 2, 3]),
                session_call("b", 0.5, 1.0, 20, vec![1, 9]),
                session_call("a", 3.0, 1.0, 60, vec![1, 2, 4, 5]),
            ],
        );
        let mut out = Vec::new();
        write_aiperf_sessions(&trace, &mut out).expect("writes");
        let text = String::from_utf8(out).expect("utf8");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(lines[0]["session_id"], "a");
        assert_eq!(lines[1]["session_id"], "a", "a session's turns together");
        assert_eq!(lines[1]["delay"], 2000, "after the previous answer's end");
        assert_eq!(
            (
                lines[1]["input_length"].as_u64(),
                lines[1]["hash_ids"].clone()
            ),
            (Some(13), serde_json::json!([4])),
            "what the turn adds to the history (60 - 40 - 7 tokens)"
        );
        assert!(lines[1].get("timestamp").is_none());
        assert_eq!(lines[2]["timestamp"], 500);
        let back = read_trace(text.as_bytes(), 16).expect("reads back");
        assert_eq!(back.calls.len(), 3);
        let third = &back.calls[2];
        assert_eq!(third.input_tokens, 60, "the history and the turn");
        assert_eq!(third.hash_ids, vec![1, 2, 4]);
        assert_eq!(third.after, Some(Dependency::after(0, 2.0)));
        assert_eq!(back.calls[1].session.as_deref(), Some("b"));
    }

    #[test]
    fn the_mooncake_form_holds_only_sizes_times_and_blocks() {
        let mut c = session_call("ses_secret", 1.2345, 1.0, 33, vec![5, 6, 7]);
        c.kind = Some(crate::results::classroom_records::CallKind::Agent);
        let trace = Trace::new(16, vec![c]);
        let mut out = Vec::new();
        write_mooncake(&trace, &mut out).expect("writes");
        let text = String::from_utf8(out).expect("utf8");
        assert_eq!(
            text,
            "{\"hash_ids\":[5,6,7],\"input_length\":33,\"output_length\":7,\"timestamp\":1235}\n"
        );
    }
}
