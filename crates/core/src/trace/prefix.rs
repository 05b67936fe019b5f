//! The `hash_ids` of recorded sessions that kept no text: which blocks of
//! each prompt are shared with which earlier prompt, rebuilt from the
//! sessions, the kinds and the token counts alone.
//!
//! The model (OpenCode's request shapes):
//! - every prompt of one *group* starts with the group's common prefix: the
//!   main agent's system prompt and tools (`agent`, and a session's first
//!   `compaction`), the subagents' (`subagent`), the title generator's
//!   (`title`). Its length is the shortest first prompt of the group's
//!   sessions (their first user message included, which a class typing the
//!   same exercise shares too), or `system_tokens` for the agent group when
//!   the caller knows it;
//! - a session's next prompt starts with its previous prompt and answer
//!   (the conversation grows): `min(previous prompt + answer, this prompt)`
//!   tokens are shared;
//! - after a compaction the conversation starts again from the summary: the
//!   session's next prompt shares the group prefix only;
//! - a title shares the title group's prefix and leaves the session's
//!   conversation alone; a failed call leaves it alone too (its retry
//!   resends the same prompt);
//! - only whole blocks are shared; the rest of a prompt gets new ids.

use std::collections::HashMap;

use super::{Trace, TraceCall};
use crate::results::classroom_records::CallKind;

/// What the model needs of one recorded call (in arrival order).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionCall {
    /// The session, if the recording knew it (none: nothing is shared).
    pub session: Option<String>,
    /// Why the call was made.
    pub kind: CallKind,
    /// Prompt, tokens.
    pub input_tokens: u64,
    /// Answer, tokens.
    pub output_tokens: u64,
    /// Whether the call succeeded.
    pub ok: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Group {
    Title,
    Agent,
    Subagent,
}

fn group_of(kind: CallKind) -> Group {
    match kind {
        CallKind::Title => Group::Title,
        CallKind::Subagent => Group::Subagent,
        CallKind::Agent | CallKind::Compaction => Group::Agent,
    }
}

struct Ids {
    next: u64,
}

impl Ids {
    fn take(&mut self, n: u64) -> Vec<u64> {
        let out = (self.next..self.next + n).collect();
        self.next += n;
        out
    }
}

/// A session's conversation so far: its blocks and the tokens they cover.
#[derive(Debug, Clone, Default)]
struct Context {
    blocks: Vec<u64>,
    tokens: u64,
}

/// The `hash_ids` of every call (see the module's model), `block_size`
/// tokens a block; `system_tokens` overrides the agent group's common
/// prefix (tokens).
pub fn rebuild_hash_ids(
    calls: &[SessionCall],
    block_size: u32,
    system_tokens: Option<u64>,
) -> Vec<Vec<u64>> {
    let b = u64::from(block_size.max(1));
    // The common prefix of each group: the shortest first prompt.
    let mut first_seen: HashMap<&str, ()> = HashMap::new();
    let mut group_len: HashMap<Group, u64> = HashMap::new();
    for c in calls {
        let g = group_of(c.kind);
        let first = match (&c.session, g) {
            (_, Group::Title) => true,
            (Some(s), _) => first_seen.insert(s.as_str(), ()).is_none(),
            (None, _) => false,
        };
        if first {
            let len = group_len.entry(g).or_insert(u64::MAX);
            *len = (*len).min(c.input_tokens);
        }
    }
    if let Some(s) = system_tokens {
        group_len.insert(Group::Agent, s);
    }
    let mut ids = Ids { next: 1 };
    let mut group_blocks: HashMap<Group, Vec<u64>> = HashMap::new();
    for (g, len) in &group_len {
        if *len != u64::MAX {
            group_blocks.insert(*g, ids.take(len / b));
        }
    }
    let group_context = |g: Group| Context {
        blocks: group_blocks.get(&g).cloned().unwrap_or_default(),
        tokens: group_len
            .get(&g)
            .copied()
            .filter(|l| *l != u64::MAX)
            .unwrap_or(0),
    };
    let mut sessions: HashMap<String, Context> = HashMap::new();
    let mut out = Vec::with_capacity(calls.len());
    for c in calls {
        let g = group_of(c.kind);
        let base = match (&c.session, g) {
            (_, Group::Title) => group_context(g),
            (Some(s), _) => sessions.get(s).cloned().unwrap_or_else(|| group_context(g)),
            (None, _) => Context::default(),
        };
        let shared = base.tokens.min(c.input_tokens) / b;
        let shared = (shared as usize).min(base.blocks.len());
        let total = c.input_tokens.div_ceil(b);
        let mut hash_ids: Vec<u64> = base.blocks[..shared].to_vec();
        hash_ids.extend(ids.take(total.saturating_sub(shared as u64)));
        if let (Some(s), true, false) = (&c.session, c.ok, g == Group::Title) {
            let next = if c.kind == CallKind::Compaction {
                group_context(g)
            } else {
                let full = (c.input_tokens / b) as usize;
                let covered = c.input_tokens + c.output_tokens;
                let mut blocks = hash_ids[..full.min(hash_ids.len())].to_vec();
                blocks.extend(ids.take((covered / b).saturating_sub(blocks.len() as u64)));
                Context {
                    blocks,
                    tokens: covered,
                }
            };
            sessions.insert(s.clone(), next);
        }
        out.push(hash_ids);
    }
    out
}

/// The trace of recorded calls (in arrival order, with their sessions,
/// kinds, sizes and durations) that kept no text: their blocks rebuilt
/// ([`rebuild_hash_ids`]; `ok[i]` says whether call `i` succeeded) and their
/// dependencies linked ([`super::timing::link_dependencies`]).
pub fn rebuilt_trace(mut calls: Vec<TraceCall>, ok: &[bool], block_size: u32) -> Trace {
    let inputs: Vec<SessionCall> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| SessionCall {
            session: c.session.clone(),
            kind: c.kind.unwrap_or(CallKind::Agent),
            input_tokens: c.input_tokens,
            output_tokens: c.output_tokens,
            ok: ok.get(i).copied().unwrap_or(true),
        })
        .collect();
    for (c, ids) in calls
        .iter_mut()
        .zip(rebuild_hash_ids(&inputs, block_size, None))
    {
        c.hash_ids = ids;
    }
    let mut trace = Trace::new(block_size, calls);
    super::timing::link_dependencies(&mut trace);
    trace
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(session: &str, kind: CallKind, input: u64, output: u64) -> SessionCall {
        SessionCall {
            session: Some(session.into()),
            kind,
            input_tokens: input,
            output_tokens: output,
            ok: true,
        }
    }

    fn common(a: &[u64], b: &[u64]) -> usize {
        a.iter().zip(b).take_while(|(x, y)| x == y).count()
    }

    #[test]
    fn sessions_share_the_system_prefix_and_grow_their_own() {
        let calls = [
            call("a", CallKind::Agent, 100, 20),
            call("b", CallKind::Agent, 104, 20),
            call("a", CallKind::Agent, 150, 10),
            call("a", CallKind::Title, 30, 5),
            call("b", CallKind::Agent, 130, 10),
        ];
        let ids = rebuild_hash_ids(&calls, 10, None);
        assert_eq!(
            ids.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![10, 11, 15, 3, 13]
        );
        // a and b share the 100-token first prompt (the shortest): 10 blocks.
        assert_eq!(common(&ids[0], &ids[1]), 10);
        // a's second prompt starts with its first prompt and answer: 120 tokens.
        assert_eq!(common(&ids[2], &ids[0]), 10);
        assert_eq!(common(&ids[2][10..], &ids[1][10..]), 0);
        // b's: min(104 + 20, 130) = 124 tokens → 12 blocks of its own.
        assert_eq!(common(&ids[4], &ids[1]), 10);
        assert_eq!(common(&ids[4][10..], &ids[2][10..]), 0);
        // The title shares nothing with the agents.
        assert_eq!(common(&ids[3], &ids[0]), 0);
        // a's second call: blocks 10 and 11 cover its first answer, shared
        // by nobody earlier.
        let after = rebuild_hash_ids(
            &[
                call("a", CallKind::Agent, 100, 20),
                call("a", CallKind::Agent, 150, 10),
                call("a", CallKind::Agent, 170, 10),
            ],
            10,
            None,
        );
        // The third shares all 15 blocks of the second's prompt (and the
        // answer's block after them).
        assert_eq!(common(&after[1], &after[2]), 15);
        assert_eq!(after[2].len(), 17);
    }

    #[test]
    fn a_compaction_restarts_the_conversation_and_failures_leave_it() {
        let mut failed = call("a", CallKind::Agent, 300, 0);
        failed.ok = false;
        let calls = [
            call("a", CallKind::Agent, 100, 50),
            failed,
            call("a", CallKind::Compaction, 400, 30),
            call("a", CallKind::Agent, 140, 10),
        ];
        let ids = rebuild_hash_ids(&calls, 10, Some(80));
        // The failed call shares the first call's prompt and answer (150).
        assert_eq!(common(&ids[1], &ids[0]), 10);
        // The compaction too (the failure changed nothing): 15 blocks.
        assert_eq!(common(&ids[2], &ids[1]), 15);
        // After it, only the 80-token system prefix.
        assert_eq!(common(&ids[3], &ids[0]), 8);
        assert_eq!(common(&ids[3], &ids[2]), 8);
    }

    #[test]
    fn subagents_share_their_own_group_and_sessionless_calls_nothing() {
        let mut lone = call("x", CallKind::Agent, 100, 1);
        lone.session = None;
        let calls = [
            call("s1", CallKind::Subagent, 60, 1),
            call("s2", CallKind::Subagent, 90, 1),
            lone.clone(),
            lone,
        ];
        let ids = rebuild_hash_ids(&calls, 10, None);
        assert_eq!(common(&ids[0], &ids[1]), 6);
        assert_eq!(common(&ids[2], &ids[3]), 0);
    }
}
