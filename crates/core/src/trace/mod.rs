//! Traces: recorded traffic as sizes, timing and prefix structure, without
//! a word of prompt text and without a key.
//!
//! A [`Trace`] is a list of calls in arrival order. Each call has its
//! prompt and output length (tokens), the prompt's KV blocks as `hash_ids`
//! (equal ids at the start of two prompts mean an equal prefix, block by
//! block, at [`Trace::block_size`] tokens a block, as Mooncake traces put
//! it), and how it is timed:
//! - a call with a [`Dependency`] is sent a recorded gap after the call it
//!   waited for ended (an agent's next step waits for the previous answer
//!   plus the client time);
//! - a call without one is sent at its recorded arrival `at_s` (open loop).
//!
//! - [`mooncake`]: Mooncake-style JSONL (`timestamp` ms, `input_length`,
//!   `output_length`, `hash_ids`) and the sessions AIPerf reads from the
//!   same lines (`session_id`, `delay` ms);
//! - [`prefix`]: the `hash_ids` of recorded sessions that kept no text (a
//!   shared system prefix, each session's growing conversation);
//! - [`text`]: the synthetic prompt a replay sends for a call's blocks;
//! - [`timing`]: which call waits for which, and more or fewer sessions.

pub mod mooncake;
pub mod prefix;
pub mod text;
pub mod timing;

use serde::{Deserialize, Serialize};

use crate::results::classroom_records::CallKind;

/// The block size Mooncake-style traces assume here unless told otherwise,
/// tokens (vLLM's default KV block).
pub const DEFAULT_BLOCK_SIZE: u32 = 16;

/// What a call waits for before it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Dependency {
    /// Index (in [`Trace::calls`]) of the call whose end it waits for; always
    /// an earlier call.
    pub call: usize,
    /// Recorded time from that call's end to this call's start, seconds
    /// (the client time).
    pub gap_s: f64,
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceCall {
    /// The session (`x-session-id`), when the recording knew it.
    pub session: Option<String>,
    /// The parent session of a subagent.
    pub parent: Option<String>,
    /// Why the call was made, when the recording knew it.
    pub kind: Option<CallKind>,
    /// Which coding request of its root session the call served (0 = the
    /// first), when the recording tells.
    pub task: Option<usize>,
    /// Recorded arrival, seconds since the trace's first call.
    pub at_s: f64,
    /// Prompt length, tokens.
    pub input_tokens: u64,
    /// Output length, tokens.
    pub output_tokens: u64,
    /// The prompt's blocks (`ceil(input_tokens / block_size)` ids; the last
    /// may be partial).
    pub hash_ids: Vec<u64>,
    /// What the call waited for; `None`: open loop at `at_s`.
    pub after: Option<Dependency>,
    /// Recorded time to first token, seconds.
    pub ttft_s: Option<f64>,
    /// Recorded duration (arrival → end of the answer), seconds.
    pub duration_s: Option<f64>,
}

impl TraceCall {
    /// A call of `input_tokens` → `output_tokens` at `at_s`, open loop,
    /// nothing else known.
    pub fn open(at_s: f64, input_tokens: u64, output_tokens: u64, hash_ids: Vec<u64>) -> Self {
        TraceCall {
            session: None,
            parent: None,
            kind: None,
            task: None,
            at_s,
            input_tokens,
            output_tokens,
            hash_ids,
            after: None,
            ttft_s: None,
            duration_s: None,
        }
    }

    /// Whether this call carries on the conversation of `previous`: the same
    /// session, its blocks start with all of `previous`'s full prompt blocks,
    /// and it is longer than `previous`'s prompt and answer together. Such a
    /// call is `previous`'s messages, its answer, and a new message of
    /// [`TraceCall::new_tokens`].
    pub fn carries_on(&self, previous: &TraceCall, block_size: u32) -> bool {
        let full = (previous.input_tokens / u64::from(block_size.max(1))) as usize;
        previous.session.is_some()
            && previous.session == self.session
            && self.input_tokens > previous.input_tokens + previous.output_tokens
            && full > 0
            && self.hash_ids.len() > full
            && previous.hash_ids.get(..full) == self.hash_ids.get(..full)
    }

    /// What a call that carries on `previous` adds: its tokens past
    /// `previous`'s prompt and answer, and as many of its blocks from there
    /// on as those tokens fill.
    pub fn new_tokens(&self, previous: &TraceCall, block_size: u32) -> (u64, &[u64]) {
        let b = u64::from(block_size.max(1));
        let covered = previous.input_tokens + previous.output_tokens;
        let tokens = self.input_tokens.saturating_sub(covered).max(1);
        let skip = ((covered / b) as usize).min(self.hash_ids.len());
        let rest = &self.hash_ids[skip..];
        // The new message's own blocks, counted from its start.
        (tokens, &rest[..rest.len().min(tokens.div_ceil(b) as usize)])
    }

    /// Recorded end (arrival + duration), seconds, when the duration is known.
    pub fn end_s(&self) -> Option<f64> {
        self.duration_s.map(|d| self.at_s + d)
    }
}

/// A recorded workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// Tokens per block of `hash_ids`.
    pub block_size: u32,
    /// The calls, in arrival order.
    pub calls: Vec<TraceCall>,
}

impl Trace {
    /// Sessions of the trace in order of their first call (calls without a
    /// session are left out).
    pub fn sessions(&self) -> Vec<&str> {
        let mut seen = std::collections::HashSet::new();
        self.calls
            .iter()
            .filter_map(|c| c.session.as_deref())
            .filter(|s| seen.insert(*s))
            .collect()
    }

    /// The root session of every call: its own session, or for a subagent
    /// its parent's root; `None` for calls without a session.
    pub fn roots(&self) -> Vec<Option<String>> {
        let mut parent_of = std::collections::HashMap::new();
        for c in &self.calls {
            if let (Some(s), Some(p)) = (&c.session, &c.parent) {
                parent_of.entry(s.clone()).or_insert_with(|| p.clone());
            }
        }
        self.calls
            .iter()
            .map(|c| {
                let mut s = c.session.clone()?;
                // A parent chain never loops in a recording; bound it anyway.
                for _ in 0..64 {
                    match parent_of.get(&s) {
                        Some(p) if *p != s => s = p.clone(),
                        _ => break,
                    }
                }
                Some(s)
            })
            .collect()
    }

    /// For every call, the earlier call whose conversation it carries on
    /// ([`TraceCall::carries_on`]): the latest earlier call of its own
    /// session that is not a title, when the blocks say so. Independent of
    /// what the call waits for: a main agent's step after a subagent waits
    /// for the subagent's answer but carries on its own previous step.
    pub fn conversations(&self) -> Vec<Option<usize>> {
        let mut latest: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        self.calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let s = c.session.as_deref()?;
                let title = c.kind == Some(CallKind::Title);
                let carried = latest
                    .get(s)
                    .copied()
                    .filter(|&j| !title && c.carries_on(&self.calls[j], self.block_size));
                if !title {
                    latest.insert(s, i);
                }
                carried
            })
            .collect()
    }

    /// The fraction of all prompt tokens that a prefix cache holding every
    /// earlier block (never evicting) serves: per call, the leading blocks
    /// whose id an earlier call already had, full blocks only, over the sum
    /// of `input_tokens`. What a server's prefix-cache hit rate tends to
    /// when its cache is big enough and calls do not overlap.
    pub fn shared_block_fraction(&self) -> Option<f64> {
        let mut seen = std::collections::HashSet::new();
        let (mut hit, mut total) = (0u64, 0u64);
        let b = u64::from(self.block_size.max(1));
        for c in &self.calls {
            total += c.input_tokens;
            let full = (c.input_tokens / b) as usize;
            let lead = c
                .hash_ids
                .iter()
                .take(full)
                .take_while(|h| seen.contains(*h))
                .count();
            hit += lead as u64 * b;
            seen.extend(c.hash_ids.iter().take(full).copied());
        }
        (total > 0).then(|| hit as f64 / total as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_blocks_count_full_leading_blocks_seen_before() {
        let t = Trace {
            block_size: 4,
            calls: vec![
                TraceCall::open(0.0, 10, 1, vec![1, 2, 3]),
                // Two leading blocks seen (8 tokens), then a new one.
                TraceCall::open(1.0, 12, 1, vec![1, 2, 4]),
                // First block new: nothing after it counts.
                TraceCall::open(2.0, 8, 1, vec![9, 2]),
            ],
        };
        let f = t.shared_block_fraction().expect("some tokens");
        assert!((f - 8.0 / 30.0).abs() < 1e-12, "{f}");
        assert_eq!(
            Trace {
                block_size: 4,
                calls: vec![]
            }
            .shared_block_fraction(),
            None
        );
    }

    #[test]
    fn a_step_carries_on_its_own_session_whatever_it_waits_for() {
        let call = |session: &str, kind: CallKind, input: u64, ids: Vec<u64>| {
            let mut c = TraceCall::open(0.0, input, 8, ids);
            c.session = Some(session.into());
            c.kind = Some(kind);
            c
        };
        let t = Trace {
            block_size: 4,
            calls: vec![
                call("m", CallKind::Agent, 8, vec![1, 2]),
                call("m", CallKind::Title, 8, vec![9, 10]),
                call("s", CallKind::Subagent, 8, vec![5, 6]),
                // After the subagent: the main agent's prompt and answer and more.
                call("m", CallKind::Agent, 20, vec![1, 2, 3, 4, 7]),
                // Its next step starts over (a compaction's summary, say).
                call(
                    "m",
                    CallKind::Agent,
                    40,
                    vec![1, 8, 11, 12, 13, 14, 15, 16, 17, 18],
                ),
            ],
        };
        assert_eq!(t.conversations(), vec![None, None, None, Some(0), None]);
    }

    #[test]
    fn subagents_belong_to_their_parents_root() {
        let mut a = TraceCall::open(0.0, 1, 1, vec![]);
        a.session = Some("main".into());
        let mut b = a.clone();
        b.session = Some("sub".into());
        b.parent = Some("main".into());
        let mut c = b.clone();
        c.session = Some("subsub".into());
        c.parent = Some("sub".into());
        let t = Trace {
            block_size: 16,
            calls: vec![a, b, c, TraceCall::open(3.0, 1, 1, vec![])],
        };
        assert_eq!(
            t.roots(),
            vec![
                Some("main".to_string()),
                Some("main".to_string()),
                Some("main".to_string()),
                None
            ]
        );
        assert_eq!(t.sessions(), vec!["main", "sub", "subsub"]);
    }
}
