//! Traces: recorded traffic as sizes, timing and prefix structure, without
//! a word of prompt text and without a key. The one model of a recorded
//! session: every importer reads into it, `replay` sends it, `export-trace`
//! writes it, and what is learnt from real sessions is learnt from it.
//!
//! A [`Trace`] is a list of calls in arrival order. Each call has its
//! prompt and output length (tokens), the prompt's KV blocks as `hash_ids`
//! (equal ids at the start of two prompts mean an equal prefix, block by
//! block, at [`Trace::block_size`] tokens a block, as Mooncake traces put
//! it), its session and parent session (a subagent), and how it is timed:
//! - a call with a [`Dependency`] is sent a recorded gap after the call it
//!   waited for ended (an agent's next step waits for the previous answer
//!   plus the client time); the dependency says why the client waited
//!   ([`WaitReason`]: a tool ran, a person thought, or the recording does
//!   not say);
//! - a call without one is sent at its recorded arrival `at_s` (open loop,
//!   or a session's first call at its offset).
//!
//! The trace also says where it came from ([`TraceSource`]: the format, the
//! files, a licence note found beside them) and what of the source could
//! not be read ([`Unread`]: file, line and why), so a partial read keeps
//! what came before the bad line and says so.
//!
//! - [`mooncake`]: Mooncake-style JSONL (`timestamp` ms, `input_length`,
//!   `output_length`, `hash_ids`) and the sessions AIPerf reads from the
//!   same lines (`session_id`, `delay` ms);
//! - [`claude_code`]: Claude Code conversations in the WEKA/AgentX form
//!   (one JSON a conversation, 64-token blocks, nested subagents);
//! - [`tracelab`]: TraceLab's round rows (`.jsonl`, `.jsonl.gz`);
//! - [`opencode`]: OpenCode's own session store (its SQLite database or
//!   the older JSON folders);
//! - [`detect`]: which of these a path holds;
//! - [`prefix`]: the `hash_ids` of recorded sessions that kept no text (a
//!   shared system prefix, each session's growing conversation);
//! - [`theory`]: the prefix-cache hit rate the recorded sharing gives a
//!   cache that keeps everything;
//! - [`text`]: the synthetic prompt a replay sends for a call's blocks;
//! - [`timing`]: which call waits for which, and more or fewer sessions.

pub mod claude_code;
pub mod detect;
pub mod mooncake;
pub mod opencode;
pub mod prefix;
pub mod text;
pub mod theory;
pub mod timing;
pub mod tracelab;

use serde::{Deserialize, Serialize};

use crate::results::classroom_records::CallKind;

/// The block size Mooncake-style traces assume here unless told otherwise,
/// tokens (vLLM's default KV block).
pub const DEFAULT_BLOCK_SIZE: u32 = 16;

/// The longest prompt a recording may state, tokens (16,777,216: far past
/// any served context); a longer one is a corrupt count, refused by every
/// reader before a replay would build it.
pub const MAX_PROMPT_TOKENS: u64 = 1 << 24;

/// Why the client waited before sending a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    /// A tool ran (or a subagent): the call carries its result.
    Tool,
    /// A person read the answer and wrote the next message.
    Person,
    /// The recording does not say.
    #[default]
    Unknown,
}

impl WaitReason {
    /// The name in files and tables (`tool`, `person`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            WaitReason::Tool => "tool",
            WaitReason::Person => "person",
            WaitReason::Unknown => "unknown",
        }
    }
}

/// What a call waits for before it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Dependency {
    /// Index (in [`Trace::calls`]) of the call whose end it waits for; always
    /// an earlier call.
    pub call: usize,
    /// Recorded time from that call's end to this call's start, seconds
    /// (the client time).
    pub gap_s: f64,
    /// Why the client waited.
    #[serde(default)]
    pub reason: WaitReason,
}

impl Dependency {
    /// A wait of `gap_s` seconds after call `call`, for a reason the
    /// recording does not give.
    pub fn after(call: usize, gap_s: f64) -> Self {
        Dependency {
            call,
            gap_s,
            reason: WaitReason::Unknown,
        }
    }
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
    /// The prompt's blocks (at most `ceil(input_tokens / block_size)` ids;
    /// the last may be partial; past the last id the prompt is the call's
    /// own).
    pub hash_ids: Vec<u64>,
    /// What the call waited for; `None`: open loop at `at_s`.
    pub after: Option<Dependency>,
    /// Recorded time to first token, seconds.
    pub ttft_s: Option<f64>,
    /// Recorded duration (arrival → end of the answer), seconds.
    pub duration_s: Option<f64>,
}

/// How a call continues an earlier call of its session, as an agent sends
/// its conversation so far ([`Trace::conversations`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Carry {
    /// Index of the earlier call whose prompt this call starts with.
    pub call: usize,
    /// Whether the earlier call's answer follows its prompt (the agent's
    /// next step), or only its prompt (the conversation went another way
    /// after it).
    pub answer: bool,
}

impl Carry {
    /// The tokens of this call the carried call's messages (and answer)
    /// cover.
    pub fn covered_tokens(self, calls: &[TraceCall]) -> u64 {
        let c = &calls[self.call];
        c.input_tokens + if self.answer { c.output_tokens } else { 0 }
    }
}

/// Blocks a call must share with its session's previous call to carry it
/// on with a one-block tolerance: the last full block of a prompt often
/// differs in the next one (the tokenizer merges its last tokens with the
/// text appended after them), so a prompt of at least this many full
/// blocks counts as carried on when all but its last block lead the next.
const TOLERANT_FROM_BLOCKS: usize = 4;

/// How many of the earlier calls of a session are looked through for the
/// one whose prompt a call starts with.
const CARRY_LOOKBACK: usize = 64;

fn common_prefix(a: &[u64], b: &[u64]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
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

    /// Whether this call starts with the whole prompt of `earlier` (the
    /// same session, all its full blocks leading this call's, this call
    /// longer), with `tolerant` the last of those blocks may differ.
    fn starts_with(&self, earlier: &TraceCall, block_size: u32, tolerant: bool) -> bool {
        let full = (earlier.input_tokens / u64::from(block_size.max(1))) as usize;
        let need = if tolerant && full >= TOLERANT_FROM_BLOCKS {
            full - 1
        } else {
            full
        };
        earlier.session.is_some()
            && earlier.session == self.session
            && self.input_tokens > earlier.input_tokens
            && need > 0
            && common_prefix(&self.hash_ids, &earlier.hash_ids) >= need
    }

    /// Whether this call carries on the conversation of `previous` (its
    /// session's previous call): it starts with `previous`'s prompt (all
    /// but the last full block suffice for a prompt of four full blocks or
    /// more) and is longer than `previous`'s prompt and answer together.
    /// Such a call is `previous`'s messages, its answer, and a new message
    /// of [`TraceCall::new_tokens`].
    pub fn carries_on(&self, previous: &TraceCall, block_size: u32) -> bool {
        self.starts_with(previous, block_size, true)
            && self.input_tokens > previous.input_tokens + previous.output_tokens
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

/// The formats a trace is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceFormat {
    /// A `codendum capture` folder.
    Capture,
    /// A classroom results folder.
    Classroom,
    /// A replay results folder.
    Replay,
    /// Mooncake-style JSONL (AIPerf's session lines too).
    Mooncake,
    /// Claude Code conversations in the WEKA/AgentX form.
    ClaudeCode,
    /// TraceLab round rows.
    Tracelab,
    /// OpenCode's session store.
    Opencode,
}

impl SourceFormat {
    /// Every format, in the order detection tries them.
    pub const ALL: [SourceFormat; 7] = [
        SourceFormat::Capture,
        SourceFormat::Classroom,
        SourceFormat::Replay,
        SourceFormat::Opencode,
        SourceFormat::ClaudeCode,
        SourceFormat::Tracelab,
        SourceFormat::Mooncake,
    ];

    /// The name on the command line and in `summary.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceFormat::Capture => "capture",
            SourceFormat::Classroom => "classroom",
            SourceFormat::Replay => "replay",
            SourceFormat::Mooncake => "mooncake",
            SourceFormat::ClaudeCode => "claude-code",
            SourceFormat::Tracelab => "tracelab",
            SourceFormat::Opencode => "opencode",
        }
    }

    /// The format of a name ([`SourceFormat::as_str`]; `aiperf` and
    /// `weka` are read as `mooncake` and `claude-code`).
    pub fn parse(name: &str) -> Option<SourceFormat> {
        match name {
            "aiperf" => Some(SourceFormat::Mooncake),
            "weka" | "agentx" => Some(SourceFormat::ClaudeCode),
            _ => SourceFormat::ALL.into_iter().find(|f| f.as_str() == name),
        }
    }
}

/// Where a trace came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceSource {
    /// The format read.
    pub format: SourceFormat,
    /// Files read (conversations, stores, trace files).
    pub files: usize,
    /// The licence or attribution note found beside the source (the first
    /// line of a `NOTICE`, `LICENSE` or `LICENCE` file in its folder), if
    /// any: what a copy of the sessions must carry.
    pub licence: Option<String>,
}

/// Something of the source that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unread {
    /// The file (as found under the source).
    pub file: String,
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// Why, and what was kept.
    pub reason: String,
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{} line {}: {}", self.file, self.line, self.reason)
        } else {
            write!(f, "{}: {}", self.file, self.reason)
        }
    }
}

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];

/// The file at `path`, decompressed when it is gzipped: how every reader of
/// a source opens its files.
pub fn open(path: &std::path::Path) -> Result<Box<dyn std::io::BufRead>, Unread> {
    use std::io::{BufReader, Read};
    let cannot = |e: std::io::Error| Unread {
        file: path.display().to_string(),
        line: 0,
        reason: format!("cannot open it: {e}"),
    };
    let mut file = std::fs::File::open(path).map_err(cannot)?;
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).unwrap_or(0);
    let file = std::fs::File::open(path).map_err(cannot)?;
    if n == 2 && magic == GZIP_MAGIC {
        Ok(Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(
            BufReader::new(file),
        ))))
    } else {
        Ok(Box::new(BufReader::new(file)))
    }
}

/// A recorded workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// Tokens per block of `hash_ids`.
    pub block_size: u32,
    /// The calls, in arrival order.
    pub calls: Vec<TraceCall>,
    /// Where the trace came from, when read from a source.
    #[serde(default)]
    pub source: Option<TraceSource>,
    /// What of the source could not be read (the calls before it are kept).
    #[serde(default)]
    pub unread: Vec<Unread>,
    /// The UTC time of the trace's 0 s, when its times are a real clock's
    /// (OpenCode's store, a capture); `None` when sessions were laid out
    /// from a common start or the source keeps relative times only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_utc: Option<chrono::DateTime<chrono::Utc>>,
}

impl Trace {
    /// A trace of `calls` (in arrival order) at `block_size` tokens a
    /// block, no source said.
    pub fn new(block_size: u32, calls: Vec<TraceCall>) -> Self {
        Trace {
            block_size: block_size.max(1),
            calls,
            source: None,
            unread: Vec::new(),
            clock_utc: None,
        }
    }

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

    /// Every subagent session with its parent and its offset: seconds from
    /// the parent session's first call to the subagent's first call, in
    /// order of the subagents' first calls.
    pub fn subagent_offsets(&self) -> Vec<(String, String, f64)> {
        let mut first_at: std::collections::HashMap<&str, f64> = Default::default();
        let mut out = Vec::new();
        for c in &self.calls {
            let Some(s) = c.session.as_deref() else {
                continue;
            };
            if first_at.contains_key(s) {
                continue;
            }
            first_at.insert(s, c.at_s);
            if let Some(p) = c.parent.as_deref() {
                let parent_start = first_at.get(p).copied().unwrap_or(c.at_s);
                out.push((s.to_string(), p.to_string(), c.at_s - parent_start));
            }
        }
        out
    }

    /// For every call, the earlier call of its own session whose
    /// conversation it continues ([`Carry`]), independent of what the call
    /// waits for (a main agent's step after a subagent waits for the
    /// subagent's answer but carries on its own previous step):
    /// - the session's previous call (not a title), when this call starts
    ///   with its prompt ([`TraceCall::carries_on`]'s one-block tolerance):
    ///   with its answer when this call is longer than its prompt and
    ///   answer, else its prompt only;
    /// - else the latest earlier call of the session whose whole prompt
    ///   (every full block) leads this call: its prompt only (the
    ///   conversation went another way after it, so its answer is not
    ///   taken to follow).
    pub fn conversations(&self) -> Vec<Option<Carry>> {
        let b = self.block_size;
        let mut earlier: std::collections::HashMap<&str, Vec<usize>> = Default::default();
        self.calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let s = c.session.as_deref()?;
                if c.kind == Some(CallKind::Title) {
                    return None;
                }
                let list = earlier.entry(s).or_default();
                let carried = list.last().copied().and_then(|j| {
                    let p = &self.calls[j];
                    c.starts_with(p, b, true).then(|| Carry {
                        call: j,
                        answer: c.input_tokens > p.input_tokens + p.output_tokens,
                    })
                });
                let carried = carried.or_else(|| {
                    list.iter()
                        .rev()
                        .skip(1)
                        .take(CARRY_LOOKBACK)
                        .find(|&&j| c.starts_with(&self.calls[j], b, false))
                        .map(|&j| Carry {
                            call: j,
                            answer: false,
                        })
                });
                list.push(i);
                carried
            })
            .collect()
    }

    /// The prefix-cache hit rate of the recorded sharing with a cache that
    /// keeps everything ([`theory`]), the calls sent in recorded order;
    /// `None` without prompt tokens.
    pub fn theoretical_hit_rate(&self) -> Option<f64> {
        let carries = self.conversations();
        let mut cache = theory::TheoreticalCache::new(self.block_size);
        for (i, c) in self.calls.iter().enumerate() {
            let carried = carries[i].map(|k| (&self.calls[k.call], k.answer));
            cache.send(c, carried);
        }
        cache.hit_rate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(session: &str, kind: CallKind, input: u64, ids: Vec<u64>) -> TraceCall {
        let mut c = TraceCall::open(0.0, input, 8, ids);
        c.session = Some(session.into());
        c.kind = Some(kind);
        c
    }

    fn carry(call: usize, answer: bool) -> Option<Carry> {
        Some(Carry { call, answer })
    }

    #[test]
    fn a_step_carries_on_its_own_session_whatever_it_waits_for() {
        let t = Trace::new(
            4,
            vec![
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
        );
        assert_eq!(
            t.conversations(),
            vec![None, None, None, carry(0, true), None]
        );
    }

    #[test]
    fn the_last_block_may_differ_and_a_diverged_call_goes_back_to_a_prompt_it_starts_with() {
        let ids = |n: u64, from: u64| (from..from + n).collect::<Vec<u64>>();
        // Five full blocks of 4 tokens.
        let first = call("m", CallKind::Agent, 20, ids(5, 1));
        // Its prompt but the last block (the tokenizer's boundary), then more.
        let mut second_ids = ids(4, 1);
        second_ids.extend(ids(6, 100));
        let second = call("m", CallKind::Agent, 40, second_ids.clone());
        // Shorter than the second's prompt and answer: its prompt only.
        let mut third_ids = second_ids.clone();
        third_ids.push(300);
        let third = call("m", CallKind::Agent, 44, third_ids);
        // Diverges from the third inside the second's prompt, but holds
        // the first's whole prompt: the first's prompt only.
        let mut fourth_ids = ids(5, 1);
        fourth_ids.extend(ids(10, 500));
        let fourth = call("m", CallKind::Agent, 60, fourth_ids);
        let t = Trace::new(4, vec![first, second, third, fourth]);
        assert_eq!(
            t.conversations(),
            vec![None, carry(0, true), carry(1, false), carry(0, false)]
        );
        // Too short a prompt for the tolerance: every block must lead.
        let t = Trace::new(
            4,
            vec![
                call("m", CallKind::Agent, 8, vec![1, 2]),
                call("m", CallKind::Agent, 40, vec![1, 3, 4, 5, 6]),
            ],
        );
        assert_eq!(t.conversations(), vec![None, None]);
    }

    #[test]
    fn subagents_belong_to_their_parents_root_with_their_offsets() {
        let mut a = TraceCall::open(1.0, 1, 1, vec![]);
        a.session = Some("main".into());
        let mut b = a.clone();
        b.at_s = 3.5;
        b.session = Some("sub".into());
        b.parent = Some("main".into());
        let mut c = b.clone();
        c.at_s = 4.0;
        c.session = Some("subsub".into());
        c.parent = Some("sub".into());
        let t = Trace::new(16, vec![a, b, c, TraceCall::open(5.0, 1, 1, vec![])]);
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
        assert_eq!(
            t.subagent_offsets(),
            vec![
                ("sub".to_string(), "main".to_string(), 2.5),
                ("subsub".to_string(), "sub".to_string(), 0.5)
            ]
        );
    }

    #[test]
    fn formats_are_named_once() {
        for f in SourceFormat::ALL {
            assert_eq!(SourceFormat::parse(f.as_str()), Some(f));
        }
        assert_eq!(SourceFormat::parse("weka"), Some(SourceFormat::ClaudeCode));
        assert_eq!(SourceFormat::parse("aiperf"), Some(SourceFormat::Mooncake));
        assert_eq!(SourceFormat::parse("csv"), None);
    }
}
