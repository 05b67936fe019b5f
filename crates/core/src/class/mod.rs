//! A class file: the distributions a simulated class draws from, for the
//! person (the wait between coding requests, follow-ups per session, how
//! long a session lasts) and for the agent, the model with its client
//! (model calls per coding request, output tokens per call by kind, tokens
//! appended per call, tool time by kind, the subagent share, compaction).
//!
//! One module owns the format: [`Class::load`] reads an embedded class by
//! name or a `.toml` file, every value is checked with a one-line error
//! naming the file and the field, and [`Distribution::sample`] draws with
//! the caller's seeded random source. [`write::to_toml`] writes a class
//! back (what `codendum learn-class` does). The format is documented in
//! `docs/class-file.md`.
//!
//! The embedded class `lab` is the default: the lab's simulated students
//! (20–90 s pauses, three follow-ups, 3–12 s builds, a failing first test
//! in 30 % of sessions) and an agent spread that reproduces the GB10's
//! classroom table.

pub mod dist;
pub mod learn;
mod parse;
pub mod sessions;
pub mod write;

use std::path::Path;
use std::sync::{Arc, OnceLock};

pub use dist::{Distribution, Shape};
pub use sessions::SessionShapes;

use crate::error::ConfigError;

/// The version of the class-file format this build writes; it reads this
/// one and every earlier one (version 2 added
/// `agent.prompt_tokens_by_call` and `agent.shared_prompt_tokens`, version
/// 3 `agent.sessions`, whose optional prompt sizes,
/// `first_prompt_tokens` and `last_prompt_tokens`, came later within 3).
pub const CLASS_SCHEMA_VERSION: u32 = 3;

/// The name of the default class.
pub const DEFAULT_CLASS: &str = "lab";

/// Classes compiled into the binary: (name, TOML text).
pub const EMBEDDED_CLASSES: &[(&str, &str)] =
    &[(DEFAULT_CLASS, include_str!("../../../../classes/lab.toml"))];

/// A class: who the students are and how their agent behaves.
#[derive(Debug, Clone, PartialEq)]
pub struct Class {
    /// Its name (the embedded name, or the file's `name`).
    pub name: String,
    /// What it is, in a sentence.
    pub description: String,
    /// The person at the keyboard.
    pub person: Person,
    /// The model with its client.
    pub agent: AgentSpread,
}

/// The person: when they ask, how much, for how long.
#[derive(Debug, Clone, PartialEq)]
pub struct Person {
    /// Seconds from a coding request's final answer to the person's next
    /// request in the same session.
    pub pause_s: Distribution,
    /// Coding requests after the first one of a session (a count, drawn
    /// once per session).
    pub follow_ups: Distribution,
    /// Seconds a person keeps working from their first request: no new
    /// request starts after it. `None`: until the class's window closes.
    pub session_s: Option<Distribution>,
    /// Whether a person whose session is over (its follow-ups asked, or
    /// its length reached) starts a new one after a pause while the class's
    /// window is open, as a user of recorded conversations goes on to the
    /// next; `false` (the lab's students, one exercise a class): they stop.
    pub next_session: bool,
}

/// The agent: the model answering with its client running the tools.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpread {
    /// Model calls of one coding request: the main agent's steps and its
    /// subagents' steps (the title and compaction calls apart), a count.
    pub calls_per_request: Distribution,
    /// Fraction (0..1) of coding requests that start a subagent.
    pub subagent_share: f64,
    /// Model calls of one subagent session (its steps and its answer), a
    /// count.
    pub subagent_calls: Distribution,
    /// Output tokens per call, by kind.
    pub output_tokens: OutputTokens,
    /// Client time per tool call, seconds, by kind.
    pub tool_s: ToolTimes,
    /// Fraction (0..1) of sessions whose first test run fails.
    pub first_test_fails: f64,
    /// Tokens a call adds to its session's previous prompt and answer (the
    /// tool results, or the person's message), per call. `None`: what the
    /// simulated project's tools return.
    pub appended_tokens: Option<Distribution>,
    /// Tokens of a session's first prompt (system prompt, tool definitions
    /// and the first message). `None`: the prompt set's own size.
    pub prompt_tokens: Option<Distribution>,
    /// Tokens at the head of a session's first prompt that every session
    /// shares (the system prompt and the tool definitions); the rest of
    /// the first prompt is the session's own. `None`: the whole first
    /// prompt is shared.
    pub shared_prompt_tokens: Option<Distribution>,
    /// Prompt tokens at which the client compacts a session, drawn once
    /// per session. `None`: the client's rule (the context limit less the
    /// output reserve).
    pub compact_at_tokens: Option<Distribution>,
    /// Prompt tokens of a session's main-agent calls by the call's place in
    /// the session, ascending by [`ByCall::from_call`] (empty: the prompts
    /// grow by [`AgentSpread::appended_tokens`] alone). A session draws one
    /// rank and reads every call's size at it, so a conversation that is
    /// long early stays long, as recorded conversations grow.
    pub prompt_tokens_by_call: Vec<ByCall>,
    /// Recorded sessions drawn whole: each one's model calls per coding
    /// request, so a simulated session's follow-ups and its requests'
    /// calls come from one recorded session ([`sessions`]). `None`: the
    /// follow-ups and [`AgentSpread::calls_per_request`] are drawn apart.
    /// With their prompt sizes ([`SessionShapes::prompt_tokens`]) they
    /// also grow a session's prompts, ahead of
    /// [`AgentSpread::prompt_tokens_by_call`].
    pub sessions: Option<SessionShapes>,
}

/// Prompt tokens of the calls from one place in a session on (to the next
/// bucket's `from_call`).
#[derive(Debug, Clone, PartialEq)]
pub struct ByCall {
    /// The first call of the bucket: 0 is a session's first main-agent
    /// call (titles, compactions and subagents' calls are not counted).
    pub from_call: u32,
    /// Prompt tokens of the bucket's calls.
    pub tokens: Distribution,
}

impl AgentSpread {
    /// The prompt tokens of a session's main-agent call number `call` (0:
    /// its first) at rank `u` (0..=1), when the class has them by call.
    pub fn prompt_tokens_at(&self, call: u32, u: f64) -> Option<f64> {
        self.prompt_tokens_by_call
            .iter()
            .rev()
            .find(|b| b.from_call <= call)
            .or(self.prompt_tokens_by_call.first())
            .map(|b| b.tokens.quantile(u))
    }
}

/// Output tokens per call, by why the call was made.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputTokens {
    /// The session's title.
    pub title: Distribution,
    /// A main-agent step that calls tools.
    pub agent_step: Distribution,
    /// A subagent's step, its answer included.
    pub subagent_step: Distribution,
    /// The main agent's final answer of a coding request.
    pub final_answer: Distribution,
    /// A compaction's summary.
    pub compaction: Distribution,
}

/// Client time per tool call, seconds, by what the tool did (the kinds
/// `codendum capture` measures).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolTimes {
    /// Reading or searching the project (`read`, `glob`, `grep`, `list`).
    pub file_tool: Distribution,
    /// After an edit or a write (formatting, diagnostics).
    pub after_edit: Distribution,
    /// A build or a test run.
    pub build_test: Distribution,
    /// Any other shell command.
    pub bash: Distribution,
    /// Any other tool (`todowrite`, …).
    pub other_tool: Distribution,
}

impl ToolTimes {
    /// The kinds as (name, distribution), in file order.
    pub fn kinds(&self) -> [(&'static str, &Distribution); 5] {
        [
            ("file_tool", &self.file_tool),
            ("after_edit", &self.after_edit),
            ("build_test", &self.build_test),
            ("bash", &self.bash),
            ("other_tool", &self.other_tool),
        ]
    }

    /// The distribution of a kind by its name.
    pub fn get(&self, kind: &str) -> Option<&Distribution> {
        self.kinds()
            .into_iter()
            .find(|(n, _)| *n == kind)
            .map(|(_, d)| d)
    }
}

impl OutputTokens {
    /// The kinds as (name, distribution), in file order.
    pub fn kinds(&self) -> [(&'static str, &Distribution); 5] {
        [
            ("title", &self.title),
            ("agent_step", &self.agent_step),
            ("subagent_step", &self.subagent_step),
            ("final_answer", &self.final_answer),
            ("compaction", &self.compaction),
        ]
    }
}

impl Class {
    /// The most follow-up requests one student of this class makes: with
    /// sessions drawn whole, the longest recorded session less its first
    /// request; otherwise the largest of `person.follow_ups`.
    pub fn most_follow_ups(&self) -> u32 {
        match &self.agent.sessions {
            Some(shapes) => shapes
                .calls
                .iter()
                .map(|row| row.len().saturating_sub(1) as u32)
                .max()
                .unwrap_or(0),
            None => self.person.follow_ups.max().round() as u32,
        }
    }

    /// The default class, `lab` (parsed once).
    pub fn lab() -> Arc<Class> {
        static LAB: OnceLock<Arc<Class>> = OnceLock::new();
        LAB.get_or_init(|| {
            let (name, text) = EMBEDDED_CLASSES[0];
            // The embedded file is checked by the tests; a broken one is a
            // build defect, not bad input.
            Arc::new(parse::parse(text, Path::new(name)).unwrap_or_else(|e| panic!("{e}")))
        })
        .clone()
    }

    /// Loads an embedded class by name (`lab`) or a `.toml` file by path.
    /// An unknown name lists the known ones; every error is one line naming
    /// the file and the field.
    pub fn load(name_or_path: &str) -> Result<Class, ConfigError> {
        if let Some((name, text)) = EMBEDDED_CLASSES.iter().find(|(n, _)| *n == name_or_path) {
            return parse::parse(text, Path::new(name));
        }
        let path = Path::new(name_or_path);
        if !(name_or_path.ends_with(".toml") || name_or_path.contains('/')) {
            let known: Vec<&str> = EMBEDDED_CLASSES.iter().map(|(n, _)| *n).collect();
            return Err(ConfigError::invalid(
                "--class",
                format!(
                    "unknown class {name_or_path:?}; known classes: {} (or a path to a .toml file)",
                    known.join(", ")
                ),
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Unreadable {
            what: "class file",
            path: path.to_path_buf(),
            source,
        })?;
        parse::parse(&text, path)
    }

    /// Parses class-file text; `path` names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Class, ConfigError> {
        parse::parse(text, path)
    }
}

#[cfg(test)]
mod tests;
