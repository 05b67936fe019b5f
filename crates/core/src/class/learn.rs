//! Learning a class from recorded sessions: every distribution of the
//! class file measured on [`Trace`]s (captures, classroom runs and the
//! formats the trace importers read), with what could not be measured
//! kept from a default class and said.
//!
//! What is measured, per root session (an agent session with its
//! subagents) and per coding request (the calls of one user turn, told by
//! [`TraceCall::task`]):
//! - the person: the wait before each request after the first (the gap
//!   from the previous call's end), the follow-ups (requests less one), the
//!   session's length (first call to last end), and whether people go on
//!   to a next session (a person's own recorded sessions do);
//! - the agent: model calls per request (main agent and subagent steps;
//!   titles and compactions apart), the share of requests with a subagent
//!   and each subagent session's calls, output tokens by kind (the last
//!   main-agent call of a request is its final answer, the others agent
//!   steps), the tokens each call adds to its conversation, the first
//!   prompt of a session, the prompt size where a conversation was
//!   compacted (a call that starts over much shorter), and the client's
//!   time between an answer and the next call of the same request (the
//!   tools), per kind when the source says which tool ran.
//!
//! Which waits are the person's and which the tools' follows the
//! recording's own reason when it gives one ([`WaitReason`]: Claude Code
//! conversations, TraceLab rows and OpenCode's store say whether a person
//! wrote or a tool answered); a wait without a reason is the person's when
//! it opens a follow-up request and the tools' inside a request.

use std::collections::{BTreeMap, HashMap};

use super::dist::Distribution;
use super::sessions::RequestPrompt;
use super::{ByCall, Class, SessionShapes, ToolTimes};
use crate::results::classroom_records::CallKind;
use crate::trace::{SourceFormat, Trace, TraceCall, WaitReason};

/// Observations kept as samples up to this many; more become a quantile
/// table.
pub const KEEP_SAMPLES: usize = 200;

/// The fewest observations any field of a class is learned from; a field
/// seen fewer times keeps the default class's value, and the report says
/// how many were seen and how many are needed. A distribution drawn from
/// one to three events is those events, outliers and all: a single
/// compaction at a small prompt makes every simulated conversation compact
/// at that size. Four is what a small store of a person's own sessions
/// gives its session fields (follow-ups, first prompts, the sessions drawn
/// whole); with four observations their range holds the median 7 times in
/// 8 (1 − 2 × 0.5⁴). Sessions count for a session's fields, coding
/// requests for a request's (calls per request, the subagent share).
/// How the choice against 5 and against none measured on held-out
/// sessions: `docs/validation.md`.
pub const MIN_OBSERVATIONS: usize = 4;

/// Where the buckets of `agent.prompt_tokens_by_call` start (a session's
/// main-agent call, 0 its first): doubling, as a conversation's growth
/// slows relative to its size.
const BY_CALL_EDGES: [u32; 9] = [0, 1, 2, 4, 8, 16, 32, 64, 128];

/// A bucket of `agent.prompt_tokens_by_call` with fewer observations is
/// merged into the one before it.
const BY_CALL_MIN: usize = 8;

/// A prompt this much shorter than its session's previous one (a
/// fraction) starts over from a summary: the conversation was compacted.
const COMPACTED_BELOW: f64 = 0.6;

/// One recorded source to learn from.
#[derive(Debug, Clone)]
pub struct Source<'a> {
    /// Its name in messages (a path).
    pub name: String,
    /// Its calls.
    pub trace: &'a Trace,
    /// Client seconds per tool kind measured beside the calls (a capture's
    /// `client-times.json`: `file_tool`, `after_edit`, `build_test`,
    /// `bash`, `other_tool`), when the source has them.
    pub tool_times: Option<BTreeMap<String, Vec<f64>>>,
}

/// What was learned, and from how much.
#[derive(Debug, Clone, PartialEq)]
pub struct LearnReport {
    /// The sources, by name.
    pub sources: Vec<String>,
    /// Root sessions read.
    pub sessions: usize,
    /// Model calls read.
    pub calls: usize,
    /// Coding requests told apart.
    pub coding_requests: usize,
    /// Subagent sessions.
    pub subagent_sessions: usize,
    /// Each field learned, with its figures (`agent.calls_per_request`,
    /// `P50 12, P90 30, mean 15.1, 2–48 from 120 requests`).
    pub learned: Vec<(String, String)>,
    /// Each field kept from the default class, with why.
    pub kept: Vec<(String, String)>,
    /// Anything else worth saying (how requests were told apart).
    pub notes: Vec<String>,
}

/// A class learned from sessions and its report.
#[derive(Debug, Clone, PartialEq)]
pub struct Learned {
    /// The class.
    pub class: Class,
    /// What it came from.
    pub report: LearnReport,
}

/// Observations gathered over every source.
#[derive(Default)]
struct Obs {
    pause_s: Vec<f64>,
    follow_ups: Vec<f64>,
    session_s: Vec<f64>,
    calls_per_request: Vec<f64>,
    session_rows: Vec<Vec<u32>>,
    session_prompts: Vec<Vec<RequestPrompt>>,
    requests_with_subagent: usize,
    subagent_calls: Vec<f64>,
    title: Vec<f64>,
    agent_step: Vec<f64>,
    subagent_step: Vec<f64>,
    final_answer: Vec<f64>,
    compaction: Vec<f64>,
    appended: Vec<f64>,
    prompt: Vec<f64>,
    prompt_by_call: Vec<(u32, f64)>,
    shared_prompt: Vec<f64>,
    compact_at: Vec<f64>,
    tool_gaps: Vec<f64>,
    tool_kinds: BTreeMap<String, Vec<f64>>,
    sessions: usize,
    calls: usize,
    requests: usize,
    untold_requests: Vec<String>,
}

/// What a field is learned from, as the report counts it: the noun for
/// one and for many (`compaction`, `compactions`).
#[derive(Debug, Clone, Copy)]
struct Counted<'a>(&'a str, &'a str);

impl Counted<'_> {
    /// `n` of them, in words (`1 compaction`, `3 compactions`).
    fn of(self, n: usize) -> String {
        format!("{n} {}", if n == 1 { self.0 } else { self.1 })
    }
}

/// Sessions, as the report counts them.
const SESSIONS: Counted<'static> = Counted("session", "sessions");

/// Coding requests, as the report counts them.
const REQUESTS: Counted<'static> = Counted("coding request", "coding requests");

/// Why `n` observations of `what` are not learned from, when they are
/// fewer than [`MIN_OBSERVATIONS`]; `None` when they are enough.
fn too_few(n: usize, what: Counted<'_>) -> Option<String> {
    match n {
        0 => Some(format!("no {} in the sources", what.1)),
        n if n < MIN_OBSERVATIONS => {
            Some(format!("{} seen, {MIN_OBSERVATIONS} needed", what.of(n)))
        }
        _ => None,
    }
}

/// The kind of a call: as recorded, else a main-agent step in its root
/// session and a subagent step elsewhere.
fn kind_of(c: &TraceCall, root: &str) -> CallKind {
    c.kind.unwrap_or(if c.session.as_deref() == Some(root) {
        CallKind::Agent
    } else {
        CallKind::Subagent
    })
}

fn gather(obs: &mut Obs, source: &Source<'_>) {
    let trace = source.trace;
    let roots = trace.roots();
    let carried = trace.conversations();
    obs.calls += trace.calls.len();
    // Calls per root, in order.
    let mut by_root: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, r) in roots.iter().enumerate() {
        if let Some(r) = r {
            by_root.entry(r.as_str()).or_default().push(i);
        }
    }
    let told = trace.calls.iter().any(|c| c.task.is_some());
    if !told && !by_root.is_empty() {
        obs.untold_requests.push(source.name.clone());
    }
    for (root, calls) in &by_root {
        obs.sessions += 1;
        let first_at = calls
            .iter()
            .map(|&i| trace.calls[i].at_s)
            .fold(f64::INFINITY, f64::min);
        let last_end = calls
            .iter()
            .map(|&i| trace.calls[i].end_s().unwrap_or(trace.calls[i].at_s))
            .fold(f64::NEG_INFINITY, f64::max);
        if last_end > first_at {
            obs.session_s.push(last_end - first_at);
        }
        // The coding requests of the session, in order.
        let mut tasks: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &i in calls {
            tasks
                .entry(trace.calls[i].task.unwrap_or(0))
                .or_default()
                .push(i);
        }
        obs.follow_ups.push(tasks.len().saturating_sub(1) as f64);
        if let Some(&first) = calls
            .iter()
            .find(|&&i| kind_of(&trace.calls[i], root) == CallKind::Agent)
        {
            obs.prompt.push(trace.calls[first].input_tokens as f64);
        }
        // Every main-agent call's prompt by its place in the session.
        let main = calls
            .iter()
            .filter(|&&i| kind_of(&trace.calls[i], root) == CallKind::Agent);
        for (k, &i) in main.enumerate() {
            let at = u32::try_from(k).unwrap_or(u32::MAX);
            obs.prompt_by_call
                .push((at, trace.calls[i].input_tokens as f64));
        }
        let mut row = Vec::with_capacity(tasks.len());
        let mut prompts = Vec::with_capacity(tasks.len());
        for (n, (_, task)) in tasks.iter().enumerate() {
            obs.requests += 1;
            let steps: Vec<usize> = task
                .iter()
                .copied()
                .filter(|&i| {
                    matches!(
                        kind_of(&trace.calls[i], root),
                        CallKind::Agent | CallKind::Subagent
                    )
                })
                .collect();
            if !steps.is_empty() {
                obs.calls_per_request.push(steps.len() as f64);
                row.push(u32::try_from(steps.len()).unwrap_or(u32::MAX));
                prompts.push(request_prompt(trace, root, &steps));
            }
            if steps
                .iter()
                .any(|&i| kind_of(&trace.calls[i], root) == CallKind::Subagent)
            {
                obs.requests_with_subagent += 1;
            }
            let last_main = steps
                .iter()
                .rev()
                .copied()
                .find(|&i| kind_of(&trace.calls[i], root) == CallKind::Agent);
            for (k, &i) in task.iter().enumerate() {
                let c = &trace.calls[i];
                let out = c.output_tokens as f64;
                let kind = kind_of(c, root);
                if c.output_tokens > 0 {
                    match kind {
                        CallKind::Title => obs.title.push(out),
                        CallKind::Compaction => obs.compaction.push(out),
                        CallKind::Subagent => obs.subagent_step.push(out),
                        CallKind::Agent if Some(i) == last_main => obs.final_answer.push(out),
                        CallKind::Agent => obs.agent_step.push(out),
                    }
                }
                if kind == CallKind::Title {
                    continue;
                }
                // The wait before it, as the recording says, else the
                // person's before a request's first call (but the
                // session's first) and the client's tools after.
                let Some(dep) = c.after else {
                    continue;
                };
                let opens_request = k
                    == task
                        .iter()
                        .position(|&j| kind_of(&trace.calls[j], root) != CallKind::Title)
                        .unwrap_or(0);
                match dep.reason {
                    WaitReason::Person => obs.pause_s.push(dep.gap_s),
                    WaitReason::Tool => obs.tool_gaps.push(dep.gap_s),
                    WaitReason::Unknown if opens_request && n > 0 => obs.pause_s.push(dep.gap_s),
                    WaitReason::Unknown if !opens_request && kind != CallKind::Compaction => {
                        obs.tool_gaps.push(dep.gap_s)
                    }
                    WaitReason::Unknown => {}
                }
            }
        }
        obs.session_rows.push(row);
        obs.session_prompts.push(prompts);
    }
    // The head of each session's first prompt shared with another
    // session's first prompt (the system prompt and the tools).
    let firsts: Vec<&TraceCall> = by_root
        .iter()
        .filter_map(|(root, calls)| {
            calls
                .iter()
                .map(|&i| &trace.calls[i])
                .find(|c| kind_of(c, root) == CallKind::Agent)
        })
        .collect();
    if firsts.len() > 1 {
        for (n, c) in firsts.iter().enumerate() {
            let blocks = firsts
                .iter()
                .enumerate()
                .filter(|(m, _)| *m != n)
                .map(|(_, o)| {
                    c.hash_ids
                        .iter()
                        .zip(&o.hash_ids)
                        .take_while(|(a, b)| a == b)
                        .count()
                })
                .max()
                .unwrap_or(0);
            let tokens = (blocks as u64 * u64::from(trace.block_size)).min(c.input_tokens);
            obs.shared_prompt.push(tokens as f64);
        }
    }
    // Subagent sessions and their calls.
    let mut sub_calls: HashMap<&str, usize> = HashMap::new();
    for (c, r) in trace.calls.iter().zip(&roots) {
        if let (Some(s), Some(r)) = (c.session.as_deref(), r.as_deref()) {
            if kind_of(c, r) == CallKind::Subagent {
                *sub_calls.entry(s).or_default() += 1;
            }
        }
    }
    obs.subagent_calls
        .extend(sub_calls.values().map(|&n| n as f64));
    // Tokens added to a conversation, and where it started over.
    let mut last_of: HashMap<&str, usize> = HashMap::new();
    for (i, c) in trace.calls.iter().enumerate() {
        let Some(s) = c.session.as_deref() else {
            continue;
        };
        if c.kind == Some(CallKind::Title) {
            continue;
        }
        if let Some(carry) = carried[i] {
            obs.appended.push(
                c.input_tokens
                    .saturating_sub(carry.covered_tokens(&trace.calls)) as f64,
            );
        } else if let Some(&j) = last_of.get(s) {
            let p = &trace.calls[j];
            if (c.input_tokens as f64) < COMPACTED_BELOW * p.input_tokens as f64 {
                obs.compact_at
                    .push((p.input_tokens + p.output_tokens) as f64);
            }
        }
        if c.kind == Some(CallKind::Compaction) {
            obs.compact_at.push(c.input_tokens as f64);
        }
        last_of.insert(s, i);
    }
    if let Some(kinds) = &source.tool_times {
        for (k, v) in kinds {
            obs.tool_kinds
                .entry(k.clone())
                .or_default()
                .extend(v.iter().copied());
        }
    }
}

/// Learns a class named `name` from `sources`; what they cannot tell keeps
/// `defaults`' value, said in the report.
pub fn learn(sources: &[Source<'_>], name: &str, defaults: &Class) -> Learned {
    let mut obs = Obs::default();
    for s in sources {
        gather(&mut obs, s);
    }
    let names: Vec<String> = sources.iter().map(|s| s.name.clone()).collect();
    let origin = if names.len() == 1 {
        names[0].clone()
    } else {
        format!("{} sources", names.len())
    };
    let mut report = LearnReport {
        sources: names,
        sessions: obs.sessions,
        calls: obs.calls,
        coding_requests: obs.requests,
        subagent_sessions: obs.subagent_calls.len(),
        learned: Vec::new(),
        kept: Vec::new(),
        notes: Vec::new(),
    };
    if !obs.untold_requests.is_empty() {
        report.notes.push(format!(
            "coding requests are not told apart in {}: each session counts as one request",
            obs.untold_requests.join(", ")
        ));
    }
    let mut class = defaults.clone();
    class.name = name.to_string();
    class.description = format!(
        "Learned from {origin}: {} sessions, {} coding requests, {} model calls",
        obs.sessions, obs.requests, obs.calls
    );
    let r = &mut report;
    let o = origin.as_str();
    let p = &mut class.person;
    set(
        r,
        o,
        "person.pause_s",
        Counted(
            "wait before a follow-up request",
            "waits before a follow-up request",
        ),
        &obs.pause_s,
        0.0,
        &mut p.pause_s,
    );
    set(
        r,
        o,
        "person.follow_ups",
        SESSIONS,
        &obs.follow_ups,
        0.0,
        &mut p.follow_ups,
    );
    // A person's own recorded sessions (not a class with a window) show
    // people going on to their next session when one is over.
    let own: Vec<&str> = sources
        .iter()
        .filter(|s| {
            matches!(
                s.trace.source.as_ref().map(|x| x.format),
                Some(SourceFormat::ClaudeCode | SourceFormat::Tracelab | SourceFormat::Opencode)
            )
        })
        .map(|s| s.name.as_str())
        .collect();
    if !own.is_empty() && own.len() == sources.len() {
        // A person's own session ends when its requests are asked; its
        // recorded length holds waits of hours (a person away) that a
        // class caps, and drawn apart from the follow-ups it would cut
        // long sessions short.
        r.learned.push((
            "person.session_s".into(),
            "none: the sessions are a person's own, each over when its follow-ups are asked".into(),
        ));
        p.session_s = None;
    } else if let Some(d) = fit(
        r,
        o,
        "person.session_s",
        Counted("session with a length", "sessions with a length"),
        &obs.session_s,
        0.0,
    ) {
        p.session_s = Some(d);
    }
    if own.is_empty() {
        r.kept.push((
            "person.next_session".into(),
            "no source holds a person's own sessions one after another".into(),
        ));
    } else {
        p.next_session = true;
        r.learned.push((
            "person.next_session".into(),
            format!(
                "true: the sessions of {} are a person's own, one after another",
                own.join(", ")
            ),
        ));
    }
    let a = &mut class.agent;
    set(
        r,
        o,
        "agent.calls_per_request",
        REQUESTS,
        &obs.calls_per_request,
        1.0,
        &mut a.calls_per_request,
    );
    set(
        r,
        o,
        "agent.subagent_calls",
        Counted("subagent session", "subagent sessions"),
        &obs.subagent_calls,
        1.0,
        &mut a.subagent_calls,
    );
    match too_few(obs.requests, REQUESTS) {
        None => {
            a.subagent_share = obs.requests_with_subagent as f64 / obs.requests as f64;
            r.learned.push((
                "agent.subagent_share".into(),
                format!(
                    "{:.2} ({} of {})",
                    a.subagent_share,
                    obs.requests_with_subagent,
                    REQUESTS.of(obs.requests)
                ),
            ));
        }
        Some(why) => r.kept.push(("agent.subagent_share".into(), why)),
    }
    let out = &mut a.output_tokens;
    for (field, what, values, slot) in [
        (
            "agent.output_tokens.title",
            Counted("title", "titles"),
            &obs.title,
            &mut out.title,
        ),
        (
            "agent.output_tokens.agent_step",
            Counted("agent step", "agent steps"),
            &obs.agent_step,
            &mut out.agent_step,
        ),
        (
            "agent.output_tokens.subagent_step",
            Counted("subagent step", "subagent steps"),
            &obs.subagent_step,
            &mut out.subagent_step,
        ),
        (
            "agent.output_tokens.final_answer",
            Counted("final answer", "final answers"),
            &obs.final_answer,
            &mut out.final_answer,
        ),
        (
            "agent.output_tokens.compaction",
            Counted("compaction summary", "compaction summaries"),
            &obs.compaction,
            &mut out.compaction,
        ),
    ] {
        set(r, o, field, what, values, 1.0, slot);
    }
    for (field, what, values, min, slot) in [
        (
            "agent.appended_tokens",
            Counted(
                "call carrying on a conversation",
                "calls carrying on a conversation",
            ),
            &obs.appended,
            0.0,
            &mut a.appended_tokens,
        ),
        (
            "agent.prompt_tokens",
            Counted("first prompt of a session", "first prompts of a session"),
            &obs.prompt,
            1.0,
            &mut a.prompt_tokens,
        ),
        (
            "agent.shared_prompt_tokens",
            Counted(
                "first prompt's head shared with another session",
                "first prompts' heads shared with another session",
            ),
            &obs.shared_prompt,
            0.0,
            &mut a.shared_prompt_tokens,
        ),
        (
            "agent.compact_at_tokens",
            Counted("compaction", "compactions"),
            &obs.compact_at,
            1.0,
            &mut a.compact_at_tokens,
        ),
    ] {
        match fit(r, o, field, what, values, min) {
            Some(d) => *slot = Some(d),
            None => {
                // These fall back to the simulation itself.
                if let Some((_, why)) = r.kept.last_mut() {
                    why.push_str("; the simulated project's own");
                }
            }
        }
    }
    let main_calls = Counted("main-agent call", "main-agent calls");
    let prompts = match too_few(obs.prompt_by_call.len(), main_calls) {
        Some(why) => Err(why),
        None => by_call(&obs.prompt_by_call, &origin)
            .ok_or_else(|| format!("no {} in the sources", main_calls.1)),
    };
    match prompts {
        Ok((buckets, line)) => {
            a.prompt_tokens_by_call = buckets;
            r.learned.push(("agent.prompt_tokens_by_call".into(), line));
        }
        Err(why) => r.kept.push((
            "agent.prompt_tokens_by_call".into(),
            format!("{why}; prompts grow by agent.appended_tokens"),
        )),
    }
    let rows = obs.session_rows.iter().filter(|r| !r.is_empty()).count();
    let with_call = Counted("session with a model call", "sessions with a model call");
    let shapes = match too_few(rows, with_call) {
        Some(why) => Err(why),
        None => SessionShapes::from_rows_and_prompts(
            format!("{origin}: each session's calls per coding request"),
            std::mem::take(&mut obs.session_rows)
                .into_iter()
                .zip(
                    std::mem::take(&mut obs.session_prompts)
                        .into_iter()
                        .map(Some),
                )
                .collect(),
        )
        .ok_or_else(|| format!("no {} in the sources", with_call.1)),
    };
    match shapes {
        Ok(sh) => {
            let line = format!(
                "{} sessions drawn whole: mean {:.1} requests and {:.1} model calls a session",
                sh.calls.len(),
                sh.calls.iter().map(Vec::len).sum::<usize>() as f64 / sh.calls.len() as f64,
                sh.mean_calls()
            );
            let line = match &sh.prompt_tokens {
                Some(p) => {
                    let requests: Vec<&RequestPrompt> = p.iter().flatten().collect();
                    let median = |f: fn(&RequestPrompt) -> u64| {
                        let mut v: Vec<u64> = requests.iter().map(|q| f(q)).collect();
                        v.sort_unstable();
                        v[v.len() / 2]
                    };
                    format!(
                        "{line}, with each request's prompt tokens at its first and last main-agent call (P50 {} and {})",
                        median(|q| q.first),
                        median(|q| q.last)
                    )
                }
                None => {
                    r.kept.push((
                        "agent.sessions.first_prompt_tokens".into(),
                        "a source has no prompt token sizes; prompts grow by agent.prompt_tokens_by_call or agent.appended_tokens".into(),
                    ));
                    line
                }
            };
            a.sessions = Some(sh);
            r.learned.push(("agent.sessions".into(), line));
        }
        Err(why) => r.kept.push((
            "agent.sessions".into(),
            format!("{why}; follow-ups and calls per request are drawn apart"),
        )),
    }
    learn_tools(&obs, &origin, &mut a.tool_s, &mut report);
    report.kept.push((
        "agent.first_test_fails".into(),
        "recorded sessions do not say which test runs failed".into(),
    ));
    Learned { class, report }
}

/// The prompt tokens of a coding request's first and last main-agent calls
/// among its `steps` (its first and last steps when none is the main
/// agent's).
fn request_prompt(trace: &Trace, root: &str, steps: &[usize]) -> RequestPrompt {
    let main: Vec<u64> = steps
        .iter()
        .map(|&i| &trace.calls[i])
        .filter(|c| kind_of(c, root) == CallKind::Agent)
        .map(|c| c.input_tokens)
        .collect();
    let sizes = if main.is_empty() {
        steps.iter().map(|&i| trace.calls[i].input_tokens).collect()
    } else {
        main
    };
    RequestPrompt {
        first: sizes.first().copied().unwrap_or(0),
        last: sizes.last().copied().unwrap_or(0),
    }
}

/// A distribution of `values` (each at least `min`) for `field`, said in
/// the report; `None` (said as kept, with the count seen) when they are
/// fewer than [`MIN_OBSERVATIONS`].
fn fit(
    report: &mut LearnReport,
    origin: &str,
    field: &str,
    what: Counted<'_>,
    values: &[f64],
    min: f64,
) -> Option<Distribution> {
    let values: Vec<f64> = values
        .iter()
        .filter(|v| v.is_finite())
        .map(|v| v.max(min))
        .collect();
    if let Some(why) = too_few(values.len(), what) {
        report.kept.push((field.to_string(), why));
        return None;
    }
    let seen = what.of(values.len());
    let d = Distribution::from_observations(
        format!("learned from {origin}: {seen}"),
        &values,
        KEEP_SAMPLES,
    )?;
    report.learned.push((
        field.to_string(),
        format!("{} from {seen}", super::write::describe(&d)),
    ));
    Some(d)
}

/// Prompt tokens by a call's place in its session, in the buckets of
/// `BY_CALL_EDGES` (one with fewer than `BY_CALL_MIN` calls merged into
/// the one before it), with the report's line; `None` without calls.
pub fn by_call(obs: &[(u32, f64)], origin: &str) -> Option<(Vec<ByCall>, String)> {
    let mut groups: Vec<(u32, Vec<f64>)> = Vec::new();
    for (n, &from) in BY_CALL_EDGES.iter().enumerate() {
        let to = BY_CALL_EDGES.get(n + 1).copied().unwrap_or(u32::MAX);
        let values: Vec<f64> = obs
            .iter()
            .filter(|(k, _)| (from..to).contains(k))
            .map(|(_, v)| v.max(1.0))
            .collect();
        match groups.last_mut() {
            Some((_, before)) if values.len() < BY_CALL_MIN => before.extend(values),
            _ if values.is_empty() => {}
            _ => groups.push((from, values)),
        }
    }
    let buckets: Vec<ByCall> = groups
        .iter()
        .filter_map(|(from, values)| {
            let to = groups
                .iter()
                .find(|(f, _)| f > from)
                .map_or("on".to_string(), |(f, _)| format!("to {}", f - 1));
            Distribution::from_observations(
                format!(
                    "learned from {origin}: {} main-agent calls {from} {to} of a session",
                    values.len()
                ),
                values,
                KEEP_SAMPLES,
            )
            .map(|tokens| ByCall {
                from_call: *from,
                tokens,
            })
        })
        .collect();
    if buckets.is_empty() {
        return None;
    }
    let medians: Vec<String> = buckets
        .iter()
        .map(|b| format!("{}+ {:.0}", b.from_call, b.tokens.quantile(0.5)))
        .collect();
    let line = format!(
        "P50 by call {} from {} main-agent calls in {} buckets",
        medians.join(", "),
        obs.len(),
        buckets.len()
    );
    Some((buckets, line))
}

/// [`fit`] into `slot` when there are values.
fn set(
    report: &mut LearnReport,
    origin: &str,
    field: &str,
    what: Counted<'_>,
    values: &[f64],
    min: f64,
    slot: &mut Distribution,
) {
    if let Some(d) = fit(report, origin, field, what, values, min) {
        *slot = d;
    }
}

/// Tool times: per kind where the sources measured enough of a kind, else
/// every kind from the client's time between an answer and its request's
/// next call.
fn learn_tools(obs: &Obs, origin: &str, tools: &mut ToolTimes, report: &mut LearnReport) {
    let slots: [(&str, &mut Distribution); 5] = [
        ("file_tool", &mut tools.file_tool),
        ("after_edit", &mut tools.after_edit),
        ("build_test", &mut tools.build_test),
        ("bash", &mut tools.bash),
        ("other_tool", &mut tools.other_tool),
    ];
    let gaps = obs.tool_gaps.as_slice();
    for (kind, slot) in slots {
        let field = format!("agent.tool_s.{kind}");
        let measured = obs.tool_kinds.get(kind).map_or(&[][..], Vec::as_slice);
        if measured.is_empty() && gaps.is_empty() {
            report
                .kept
                .push((field, "the sources have no tool times".into()));
            continue;
        }
        // The measured kind unless it is too thin and the gaps are not.
        let use_measured = measured.len() >= MIN_OBSERVATIONS || measured.len() >= gaps.len();
        let (one, many) = if use_measured {
            (
                format!("measured {kind} time"),
                format!("measured {kind} times"),
            )
        } else {
            let untold = "between an answer and the next call (tool kinds not told apart)";
            (
                format!("client time {untold}"),
                format!("client times {untold}"),
            )
        };
        let values = if use_measured { measured } else { gaps };
        set(
            report,
            origin,
            &field,
            Counted(&one, &many),
            values,
            0.0,
            slot,
        );
    }
}

#[cfg(test)]
mod tests;
