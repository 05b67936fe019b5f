//! Claude Code conversations in the WEKA/AgentX form (the traces of
//! `callanjfox/kv-cache-tester` and the SemiAnalysis AgentX set): one JSON
//! object a conversation.
//!
//! - `id`, `block_size` (tokens a hash block, 64), `hash_id_scope`
//!   (`local`: ids are numbered per conversation, a subagent sharing its
//!   parent's numbering; `global`: one numbering across conversations),
//!   `tool_tokens` and `system_tokens` (the tool definitions and the system
//!   prompt at the head of every prompt);
//! - `requests`, in time order: a model call `{"t": seconds since the
//!   conversation started, "in", "out", "hash_ids", "input_types",
//!   "api_time", "ttft", "think_time"}`, or a subagent `{"type":
//!   "subagent", "t", "agent_id", "requests", "tool_tokens",
//!   "system_tokens"}` whose own `t` count from its start.
//!
//! What a call becomes:
//! - its session is the conversation's `id` (the file's name without it; a
//!   second file with the same id gets `#2`), a subagent's
//!   `<conversation>/<agent_id>` with the conversation as parent;
//! - `at_s`: the conversation's `t` (a subagent's: its own `t` plus its
//!   start), every conversation starting at 0 (they share no clock);
//!   `duration_s` is `api_time`, `ttft_s` is `ttft`;
//! - each call after the first of a (sub)conversation waits for the one
//!   before it: `think_time` (else the gap between the previous call's end
//!   and this call's `t`), a tool's time when the call carries a
//!   `tool_result`, a person's when it carries only `text`; a subagent's
//!   first call waits for its parent's call that was running or last ended
//!   at the subagent's start (the call that asked for it), so subagents run
//!   beside their parent from their offset;
//! - a new coding request starts at each main-conversation call a person
//!   waited for.
//!
//! Blocks: a `local` conversation's ids are renumbered so that no two
//! conversations collide, except the head they share: conversations (and
//! subagents) with the same `tool_tokens` share the tool definitions'
//! full blocks, and those with the same `tool_tokens` and `system_tokens`
//! the system prompt's too (Anthropic's prompt puts the tools first, then
//! the system prompt): the tools and system prompt one Claude Code release
//! sends every session. `global` ids are kept as they are.

use std::collections::HashMap;
use std::io::Read;

use serde_json::Value;

use super::{Dependency, Trace, TraceCall, Unread, WaitReason};
use crate::results::classroom_records::CallKind;

/// The block size of the public WEKA/AgentX conversations, tokens.
pub const BLOCK_SIZE: u32 = 64;

/// One model call of a conversation, as recorded.
#[derive(Debug, Clone, PartialEq)]
struct Request {
    t_s: f64,
    input_tokens: u64,
    output_tokens: u64,
    hash_ids: Vec<u64>,
    reason: WaitReason,
    api_time_s: Option<f64>,
    ttft_s: Option<f64>,
    think_time_s: Option<f64>,
}

/// A conversation or a subagent: its head sizes and its steps in order.
#[derive(Debug, Clone, PartialEq)]
struct Agent {
    /// The subagent's id (`None`: the conversation itself).
    id: Option<String>,
    /// Start, seconds on its parent's clock (0 for the conversation).
    t_s: f64,
    tool_tokens: Option<u64>,
    system_tokens: Option<u64>,
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Call(Request),
    Sub(Agent),
}

/// One conversation file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The file it was read from (as the caller named it).
    pub file: String,
    /// Its `id` (else the file's stem).
    pub id: String,
    /// Tokens a block of its `hash_ids`.
    pub block_size: u32,
    /// Whether its ids are numbered across conversations (`global`).
    pub global_ids: bool,
    root: Agent,
}

impl Conversation {
    /// Model calls, its subagents' included.
    pub fn calls(&self) -> usize {
        fn count(a: &Agent) -> usize {
            a.steps
                .iter()
                .map(|s| match s {
                    Step::Call(_) => 1,
                    Step::Sub(sub) => count(sub),
                })
                .sum()
        }
        count(&self.root)
    }
}

fn unread(file: &str, line: usize, reason: impl Into<String>) -> Unread {
    Unread {
        file: file.to_string(),
        line,
        reason: reason.into(),
    }
}

fn number(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64).filter(|x| x.is_finite())
}

fn tokens(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// The request at `path` (for messages), or why it is not one.
fn request(v: &Value, block_size: u32) -> Result<Request, String> {
    let t_s = number(v, "t").ok_or("no time `t` (seconds)")?;
    let input_tokens = tokens(v, "in").ok_or("no prompt size `in` (tokens)")?;
    if input_tokens == 0 {
        return Err("a prompt of 0 tokens".into());
    }
    if input_tokens > super::MAX_PROMPT_TOKENS {
        return Err(format!(
            "a prompt of {input_tokens} tokens (more than {})",
            super::MAX_PROMPT_TOKENS
        ));
    }
    let output_tokens = tokens(v, "out").ok_or("no output size `out` (tokens)")?;
    if output_tokens > super::MAX_PROMPT_TOKENS {
        return Err(format!("an output of {output_tokens} tokens"));
    }
    let hash_ids: Vec<u64> = match v.get("hash_ids") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| x.as_u64().ok_or("a hash id that is not a whole number"))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`hash_ids` is not a list".into()),
    };
    let most = input_tokens.div_ceil(u64::from(block_size.max(1)));
    if hash_ids.len() as u64 > most {
        return Err(format!(
            "{} hash ids for {input_tokens} tokens at {block_size} tokens a block (at most {most})",
            hash_ids.len()
        ));
    }
    let types: Vec<&str> = v
        .get("input_types")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let reason = if types.contains(&"tool_result") {
        WaitReason::Tool
    } else if types.contains(&"text") {
        WaitReason::Person
    } else {
        WaitReason::Unknown
    };
    let seconds = |key: &str| number(v, key).filter(|x| *x >= 0.0);
    Ok(Request {
        t_s,
        input_tokens,
        output_tokens,
        hash_ids,
        reason,
        api_time_s: seconds("api_time"),
        ttft_s: seconds("ttft"),
        think_time_s: seconds("think_time"),
    })
}

/// The steps of `requests` (at `path`); a bad entry ends them, named in
/// `bad`.
fn agent(
    v: &Value,
    id: Option<String>,
    path: &str,
    block_size: u32,
    bad: &mut Option<String>,
) -> Agent {
    let mut steps = Vec::new();
    let entries = v
        .get("requests")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (i, e) in entries.iter().enumerate() {
        if bad.is_some() {
            break;
        }
        let here = format!("{path}requests[{i}]");
        if e.get("type").and_then(Value::as_str) == Some("subagent") {
            let sub_id = e
                .get("agent_id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("agent{i}"), String::from);
            let Some(t_s) = number(e, "t") else {
                *bad = Some(format!("{here}: a subagent without its start `t`"));
                break;
            };
            let mut sub = agent(e, Some(sub_id), &format!("{here}."), block_size, bad);
            sub.t_s = t_s;
            steps.push(Step::Sub(sub));
        } else {
            match request(e, block_size) {
                Ok(r) => steps.push(Step::Call(r)),
                Err(reason) => *bad = Some(format!("{here}: {reason}")),
            }
        }
    }
    Agent {
        id,
        t_s: 0.0,
        tool_tokens: tokens(v, "tool_tokens"),
        system_tokens: tokens(v, "system_tokens"),
        steps,
    }
}

/// Whether a JSON value looks like a WEKA/AgentX conversation (an object
/// with a `requests` list whose entries have `in`/`out` or are subagents).
pub fn looks_like(v: &Value) -> bool {
    v.get("requests")
        .and_then(Value::as_array)
        .is_some_and(|r| {
            r.iter().take(3).all(|e| {
                e.get("in").is_some() || e.get("type").and_then(Value::as_str) == Some("subagent")
            })
        })
}

/// Reads one conversation from `input`, `file` naming it in messages.
/// Returns the conversation and, when an entry was bad, the entries before
/// it with the bad one named; a file that is not such a conversation, or
/// whose first entry is bad, is the error.
pub fn read_conversation<R: Read>(
    input: R,
    file: &str,
) -> Result<(Conversation, Option<Unread>), Unread> {
    let v: Value = serde_json::from_reader(std::io::BufReader::new(input)).map_err(|e| {
        unread(
            file,
            e.line(),
            format!("not a JSON conversation ({e}); the file is left out"),
        )
    })?;
    if !v.is_object() || v.get("requests").and_then(Value::as_array).is_none() {
        return Err(unread(
            file,
            0,
            "not a Claude Code conversation (no `requests` list); the file is left out",
        ));
    }
    let block_size = match v.get("block_size") {
        None | Some(Value::Null) => BLOCK_SIZE,
        Some(b) => b
            .as_u64()
            .filter(|b| (1..=1 << 20).contains(b))
            .map(|b| b as u32)
            .ok_or_else(|| unread(file, 0, "`block_size` is not a block size in tokens"))?,
    };
    let stem = std::path::Path::new(file)
        .file_stem()
        .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned());
    let id = v
        .get("id")
        .and_then(Value::as_str)
        .map_or(stem, String::from);
    let global_ids = v.get("hash_id_scope").and_then(Value::as_str) == Some("global");
    let mut bad = None;
    let root = agent(&v, None, "", block_size, &mut bad);
    let conversation = Conversation {
        file: file.to_string(),
        id,
        block_size,
        global_ids,
        root,
    };
    match bad {
        Some(reason) if conversation.calls() == 0 => {
            Err(unread(file, 0, format!("{reason}; the file is left out")))
        }
        Some(reason) => {
            let kept = conversation.calls();
            Ok((
                conversation,
                Some(unread(
                    file,
                    0,
                    format!("{reason}; the {kept} calls before it are kept"),
                )),
            ))
        }
        None => Ok((conversation, None)),
    }
}

/// Renumbers block ids: per conversation (or one numbering for `global`
/// ones), the shared heads by their sizes.
struct Ids {
    next: u64,
    of: HashMap<(Option<usize>, u64), u64>,
    heads: HashMap<(u64, Option<u64>), Vec<u64>>,
}

impl Ids {
    fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// The shared blocks of a head: `count` blocks keyed by its sizes.
    fn head(&mut self, key: (u64, Option<u64>), count: usize) -> Vec<u64> {
        let mut chain = self.heads.remove(&key).unwrap_or_default();
        while chain.len() < count {
            chain.push(self.fresh());
        }
        let out = chain[..count].to_vec();
        self.heads.insert(key, chain);
        out
    }

    /// Maps the ids of an agent's first call that lie in its head (the
    /// tools, then the system prompt) to the shared heads.
    fn share_head(&mut self, scope: Option<usize>, agent: &Agent, first: &[u64], block: u64) {
        let Some(tools) = agent.tool_tokens.filter(|t| *t > 0) else {
            return;
        };
        // No more blocks than the first call has: a head is part of it.
        let tool_blocks = ((tools / block) as usize).min(first.len());
        let system_blocks = agent.system_tokens.map_or(tool_blocks, |s| {
            ((tools.saturating_add(s) / block) as usize).min(first.len())
        });
        let tool_head = self.head((tools, None), tool_blocks);
        let system_head = self.head(
            (tools, agent.system_tokens),
            system_blocks.saturating_sub(tool_blocks),
        );
        let shared = tool_head.iter().chain(&system_head);
        for (local, global) in first.iter().zip(shared) {
            self.of.entry((scope, *local)).or_insert(*global);
        }
    }

    fn map(&mut self, scope: Option<usize>, local: &[u64]) -> Vec<u64> {
        local
            .iter()
            .map(|h| {
                if let Some(g) = self.of.get(&(scope, *h)) {
                    return *g;
                }
                let g = self.fresh();
                self.of.insert((scope, *h), g);
                g
            })
            .collect()
    }
}

/// What the flattening of one conversation needs along the way.
struct Flat<'a> {
    ids: &'a mut Ids,
    scope: Option<usize>,
    block: u64,
    calls: Vec<TraceCall>,
    /// Per call (same index as `calls`): its (sub)conversation's previous
    /// call, the reason and gap of its wait, or its parent's call.
    links: Vec<Option<Dependency>>,
    task: usize,
}

impl Flat<'_> {
    fn agent(&mut self, a: &Agent, session: &str, parent: Option<&str>, start_s: f64, main: bool) {
        if let Some(first) = a.steps.iter().find_map(|s| match s {
            Step::Call(r) => Some(r),
            Step::Sub(_) => None,
        }) {
            if !self.global() {
                self.ids
                    .share_head(self.scope, a, &first.hash_ids, self.block);
            }
        }
        let mut previous: Option<usize> = None;
        for step in &a.steps {
            match step {
                Step::Call(r) => {
                    if main && previous.is_some() && r.reason == WaitReason::Person {
                        self.task += 1;
                    }
                    let at_s = start_s + r.t_s;
                    let hash_ids = if self.global() {
                        r.hash_ids.clone()
                    } else {
                        self.ids.map(self.scope, &r.hash_ids)
                    };
                    let link = previous.map(|p| {
                        let before = &self.calls[p];
                        let gap = r.think_time_s.unwrap_or_else(|| {
                            (at_s - before.end_s().unwrap_or(before.at_s)).max(0.0)
                        });
                        Dependency {
                            call: p,
                            gap_s: gap,
                            reason: r.reason,
                        }
                    });
                    self.links.push(link);
                    self.calls.push(TraceCall {
                        session: Some(session.to_string()),
                        parent: parent.map(String::from),
                        kind: Some(if parent.is_some() {
                            CallKind::Subagent
                        } else {
                            CallKind::Agent
                        }),
                        task: Some(self.task),
                        at_s,
                        input_tokens: r.input_tokens,
                        output_tokens: r.output_tokens,
                        hash_ids,
                        after: None,
                        ttft_s: r.ttft_s,
                        duration_s: r.api_time_s,
                    });
                    previous = Some(self.calls.len() - 1);
                }
                Step::Sub(sub) => {
                    let sub_start = start_s + sub.t_s;
                    let name = format!(
                        "{session}/{}",
                        sub.id.clone().unwrap_or_else(|| "agent".into())
                    );
                    let first = self.calls.len();
                    let task = self.task;
                    self.agent(sub, &name, Some(session), sub_start, false);
                    self.task = task;
                    // The subagent's first call waits for its parent's call
                    // that asked for it: the latest one started by then.
                    if let (Some(p), true) = (previous, first < self.calls.len()) {
                        let before = &self.calls[p];
                        let gap = (self.calls[first].at_s - before.end_s().unwrap_or(before.at_s))
                            .max(0.0);
                        self.links[first] = Some(Dependency {
                            call: p,
                            gap_s: gap,
                            reason: WaitReason::Tool,
                        });
                    }
                }
            }
        }
    }

    fn global(&self) -> bool {
        self.scope.is_none()
    }
}

/// The trace of `conversations` (read by [`read_conversation`]), at the
/// first one's block size; a conversation of another block size is left
/// out and named in the trace's `unread`.
pub fn to_trace(conversations: Vec<Conversation>) -> Trace {
    let block_size = conversations.first().map_or(BLOCK_SIZE, |c| c.block_size);
    let mut ids = Ids {
        next: 0,
        of: HashMap::new(),
        heads: HashMap::new(),
    };
    let mut used: HashMap<String, usize> = HashMap::new();
    let mut calls: Vec<TraceCall> = Vec::new();
    let mut unread_list = Vec::new();
    for (ci, conv) in conversations.into_iter().enumerate() {
        if conv.block_size != block_size {
            unread_list.push(unread(
                &conv.file,
                0,
                format!(
                    "hash blocks of {} tokens where the first conversation's are {block_size}; the file is left out",
                    conv.block_size
                ),
            ));
            continue;
        }
        let n = used.entry(conv.id.clone()).or_insert(0);
        *n += 1;
        let session = if *n == 1 {
            conv.id.clone()
        } else {
            format!("{}#{n}", conv.id)
        };
        let mut flat = Flat {
            ids: &mut ids,
            scope: (!conv.global_ids).then_some(ci),
            block: u64::from(block_size.max(1)),
            calls: Vec::new(),
            links: Vec::new(),
            task: 0,
        };
        flat.agent(&conv.root, &session, None, 0.0, true);
        let base = calls.len();
        for (mut c, link) in flat.calls.into_iter().zip(flat.links) {
            c.after = link.map(|d| Dependency {
                call: d.call + base,
                ..d
            });
            calls.push(c);
        }
    }
    let mut trace = Trace::new(block_size, super::mooncake::in_arrival_order(calls));
    trace.unread = unread_list;
    trace
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONVERSATION: &str = r#"{"id":"c1","block_size":4,"hash_id_scope":"local",
      "tool_tokens":8,"system_tokens":4,"requests":[
      {"t":0.0,"type":"n","in":16,"out":2,"hash_ids":[1,2,3,4],"input_types":["text"],"api_time":1.0,"think_time":0.0},
      {"t":5.0,"type":"subagent","agent_id":"a1","tool_tokens":4,"system_tokens":4,"requests":[
        {"t":0.0,"type":"s","in":12,"out":3,"hash_ids":[50,51,52],"input_types":["text"],"api_time":0.5,"ttft":0.1,"think_time":0.0},
        {"t":2.0,"type":"s","in":20,"out":3,"hash_ids":[50,51,52,53,54],"input_types":["tool_result"],"api_time":0.5,"think_time":1.5}]},
      {"t":10.0,"type":"n","in":24,"out":2,"hash_ids":[1,2,3,4,5,6],"input_types":["tool_result"],"api_time":1.0,"think_time":9.0},
      {"t":60.0,"type":"n","in":30,"out":2,"hash_ids":[1,2,3,4,5,6,7],"input_types":["text"],"think_time":49.0}]}"#;

    fn read(text: &str, file: &str) -> Conversation {
        let (c, bad) = read_conversation(text.as_bytes(), file).expect("reads");
        assert_eq!(bad, None);
        c
    }

    #[test]
    fn a_conversation_with_a_subagent_becomes_calls_with_waits_and_offsets() {
        let t = to_trace(vec![read(CONVERSATION, "c1.json")]);
        assert_eq!(t.block_size, 4);
        assert_eq!(t.calls.len(), 5);
        let at: Vec<f64> = t.calls.iter().map(|c| c.at_s).collect();
        assert_eq!(at, vec![0.0, 5.0, 7.0, 10.0, 60.0]);
        let sub = &t.calls[1];
        assert_eq!(sub.session.as_deref(), Some("c1/a1"));
        assert_eq!(sub.parent.as_deref(), Some("c1"));
        assert_eq!(sub.kind, Some(CallKind::Subagent));
        assert_eq!(sub.ttft_s, Some(0.1));
        // The subagent starts 4 s after the call that asked for it ended.
        assert_eq!(
            sub.after,
            Some(Dependency {
                call: 0,
                gap_s: 4.0,
                reason: WaitReason::Tool
            })
        );
        assert_eq!(
            t.calls[2].after,
            Some(Dependency {
                call: 1,
                gap_s: 1.5,
                reason: WaitReason::Tool
            })
        );
        // The main conversation goes on beside its subagent.
        assert_eq!(t.calls[3].after.map(|d| d.call), Some(0));
        assert_eq!(
            t.calls[4].after,
            Some(Dependency {
                call: 3,
                gap_s: 49.0,
                reason: WaitReason::Person
            })
        );
        assert_eq!(t.calls[4].duration_s, None, "no api_time recorded");
        let tasks: Vec<Option<usize>> = t.calls.iter().map(|c| c.task).collect();
        assert_eq!(tasks, vec![Some(0), Some(0), Some(0), Some(0), Some(1)]);
        assert_eq!(
            t.subagent_offsets(),
            vec![("c1/a1".to_string(), "c1".to_string(), 5.0)]
        );
    }

    #[test]
    fn conversations_share_their_heads_and_nothing_else() {
        let other = CONVERSATION.replace("\"c1\"", "\"c2\"");
        let t = to_trace(vec![read(CONVERSATION, "a.json"), read(&other, "b.json")]);
        let firsts: Vec<&TraceCall> = t
            .calls
            .iter()
            .filter(|c| c.at_s == 0.0 && c.kind == Some(CallKind::Agent))
            .collect();
        assert_eq!(firsts.len(), 2);
        let (a, b) = (&firsts[0].hash_ids, &firsts[1].hash_ids);
        // Tools (8 tokens: 2 blocks) and system prompt (4: 1 block) shared,
        // the conversation's own block not.
        assert_eq!(a[..3], b[..3]);
        assert_ne!(a[3], b[3]);
        // Within a conversation the recorded sharing stays.
        let c1: Vec<&TraceCall> = t
            .calls
            .iter()
            .filter(|c| c.session.as_deref() == Some("c1"))
            .collect();
        assert_eq!(c1[1].hash_ids[..4], c1[0].hash_ids[..]);
        // The subagents of both share their own head (4 + 4 tokens).
        let subs: Vec<&TraceCall> = t
            .calls
            .iter()
            .filter(|c| {
                c.kind == Some(CallKind::Subagent)
                    && c.after.map(|d| d.reason) == Some(WaitReason::Tool)
                    && c.input_tokens == 12
            })
            .collect();
        assert_eq!(subs.len(), 2);
        assert_eq!(subs[0].hash_ids[..2], subs[1].hash_ids[..2]);
        assert_ne!(subs[0].hash_ids[2], subs[1].hash_ids[2]);
        // The same id twice: the second is told apart.
        let again = to_trace(vec![
            read(CONVERSATION, "a.json"),
            read(CONVERSATION, "b.json"),
        ]);
        assert!(again.sessions().contains(&"c1#2"), "{:?}", again.sessions());
    }

    #[test]
    fn a_bad_entry_keeps_the_calls_before_it_and_a_bad_file_is_named() {
        let broken = CONVERSATION.replace("\"in\":24", "\"in\":0");
        let (c, bad) = read_conversation(broken.as_bytes(), "c1.json").expect("partial");
        assert_eq!(c.calls(), 3, "the first call and the subagent's two");
        let bad = bad.expect("named");
        assert!(
            bad.reason.starts_with("requests[2]: a prompt of 0 tokens"),
            "{bad}"
        );
        let cut = &CONVERSATION[..200];
        let e = read_conversation(cut.as_bytes(), "cut.json").unwrap_err();
        assert_eq!(e.file, "cut.json");
        assert!(
            e.line >= 1 && e.reason.contains("not a JSON conversation"),
            "{e}"
        );
        let e = read_conversation(&b"{\"rows\": []}"[..], "x.json").unwrap_err();
        assert!(e.reason.contains("no `requests` list"), "{e}");
        // A head larger than any prompt shares no more than the prompt.
        let huge = CONVERSATION.replace("\"tool_tokens\":8,", "\"tool_tokens\":1000000000000000,");
        let t = to_trace(vec![read(&huge, "h.json")]);
        assert_eq!(t.calls.len(), 5);
        let too_many = CONVERSATION.replace("\"in\":16", "\"in\":8");
        let e = read_conversation(too_many.as_bytes(), "y.json").unwrap_err();
        assert!(e.reason.contains("4 hash ids for 8 tokens"), "{e}");
    }
}
