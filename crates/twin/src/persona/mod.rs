//! The agent persona: answers tool-using conversations the way a coding agent
//! (OpenCode's build agent and its explore subagent) would, so that the twin
//! produces realistic multi-step sessions: look around, read, edit, run the
//! tests, fix a failure, summarise.
//!
//! Everything is derived from the request: the offered tools (mapped to roles
//! by name and parameters, see [`tools`]), the conversation (see
//! [`transcript`]) and [`AnswerRequest::seed`]; when the class draws
//! sessions whole, also from the session (the client's session id, see
//! [`session_rows`]), whose row and current request the persona keeps
//! across compactions. The persona is synchronous.
//!
//! How much it does comes from a class's agent spread
//! ([`codendum_core::class::AgentSpread`], the `lab` class by default): each
//! coding request draws its number of model calls (and a subagent's), and
//! each answer its output tokens by kind (agent step, subagent step, final
//! answer, title, compaction summary). The work fills that budget: reads,
//! edits, builds, test runs and fixes, executed by the client on its
//! project; an answer's text is padded with reasoning, or its code sized,
//! to reach the drawn length (see [`size`]).

pub mod agent;
mod changes;
pub mod code;
pub mod explore;
pub mod paths;
mod recovery;
mod report;
mod request_plan;
pub mod session_rows;
pub mod size;
pub mod tools;
pub mod transcript;
pub mod writing;

use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use codendum_core::class::{AgentSpread, Class};

use crate::answer::{AnswerPart, AnswerRequest, PlannedAnswer, Responder};
use crate::tool_sets::ToolSets;

use paths::{lang_of, Lang};
use session_rows::SessionRows;
use tools::{ToolKit, ToolRole};
use transcript::cache::TranscriptCache;
use transcript::{Outcome, Transcript};

/// Settings of the persona.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonaConfig {
    /// Mixed into every request seed (one twin = one persona seed).
    pub seed: u64,
    /// Probability (0..1) that a fresh task starts with a todo list, when a
    /// todo tool is offered (and the task is not delegated).
    pub todo_probability: f64,
    /// What a coding request's calls and answers draw from: model calls per
    /// request, the subagent share and size, output tokens by kind.
    pub spread: Arc<AgentSpread>,
}

impl Default for PersonaConfig {
    fn default() -> Self {
        PersonaConfig {
            seed: 0,
            todo_probability: 0.25,
            spread: Arc::new(Class::lab().agent.clone()),
        }
    }
}

/// A [`Responder`] that behaves like a coding agent.
#[derive(Debug, Clone, Default)]
pub struct AgentPersona {
    config: PersonaConfig,
    /// Digests of the conversations it answered, so a growing conversation
    /// is read only where it grew (shared by clones; the answers do not
    /// depend on it).
    transcripts: Arc<TranscriptCache>,
    /// The tools of the last few tool sets, mapped (shared by clones).
    kits: Arc<ToolSets<Arc<ToolKit>>>,
    /// Each session's recorded row and current request, by the client's
    /// session id (shared by clones), when the class draws sessions whole.
    rows: Arc<SessionRows>,
}

impl AgentPersona {
    /// A persona with default settings and this seed.
    pub fn new(seed: u64) -> Self {
        Self::with_config(PersonaConfig {
            seed,
            ..PersonaConfig::default()
        })
    }

    /// A persona with default settings, this seed and a class's agent
    /// spread.
    pub fn with_spread(seed: u64, spread: Arc<AgentSpread>) -> Self {
        Self::with_config(PersonaConfig {
            seed,
            spread,
            ..PersonaConfig::default()
        })
    }

    /// A persona with these settings.
    pub fn with_config(config: PersonaConfig) -> Self {
        AgentPersona {
            config,
            transcripts: Arc::default(),
            kits: Arc::default(),
            rows: Arc::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &PersonaConfig {
        &self.config
    }
}

/// What the persona knows about the request being answered.
pub struct Ctx<'a> {
    /// The offered tools, mapped.
    pub kit: &'a ToolKit,
    /// The conversation, digested.
    pub t: &'a Transcript,
    /// The project's language.
    pub lang: Lang,
    /// What the task is about (a noun such as `message`).
    pub topic: &'static str,
    /// The command that runs the tests (the first one that has not come
    /// back as not installed).
    pub test_command: String,
    /// When every way of running the tests came back as not installed: what
    /// the last attempt printed (`pytest: command not found`).
    pub tests_missing: Option<String>,
    /// The persona's settings.
    pub config: &'a PersonaConfig,
    /// Output tokens this answer aims at, drawn from the class for the
    /// kind of agent answering (main agent or subagent step); a final
    /// answer draws its own.
    pub out_tokens: usize,
    /// The current request's model calls from its session's recorded
    /// shape, when the class draws sessions whole.
    pub session_calls: Option<request_plan::SessionCalls>,
}

impl Responder for AgentPersona {
    fn plan(&self, request: &AnswerRequest<'_>) -> PlannedAnswer {
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.config.seed, request.seed));
        if request.messages.is_empty() {
            let target = rng.gen_range(75..250);
            return PlannedAnswer::text(writing::chat(&mut rng, request.prompt, target));
        }
        let kit = self.kits.get_or_derive(request.tools, |tools| {
            Arc::new(ToolKit::from_definitions(tools))
        });
        // The digest, lent by the cache (it derefs to the `Transcript`).
        let t = self
            .transcripts
            .lease(request.messages, request.tools, &kit);
        let mut ctx = Ctx {
            kit: &kit,
            t: &t,
            lang: project_lang(&t),
            topic: topic_of(&t.task, &mut rng),
            test_command: String::new(),
            tests_missing: None,
            config: &self.config,
            out_tokens: 0,
            session_calls: None,
        };
        (ctx.test_command, ctx.tests_missing) = test_runner(&t);
        if !kit.offered_any() {
            return without_tools(&ctx, &mut rng);
        }
        let spread = &self.config.spread;
        let can_change = kit.has(ToolRole::Edit) || kit.has(ToolRole::Write);
        let can_look = [
            ToolRole::Read,
            ToolRole::Glob,
            ToolRole::Grep,
            ToolRole::List,
        ]
        .iter()
        .any(|r| kit.has(*r))
            || kit.has(ToolRole::Shell);
        if can_change && (kit.has(ToolRole::Read) || kit.has(ToolRole::Shell)) {
            let shapes = spread.sessions.as_ref();
            ctx.session_calls = self.rows.calls(shapes, request.session, request.messages);
            let (code, other) = agent::step_sizes(&ctx, &mut rng);
            ctx.out_tokens = code;
            let a = agent::next_step(&ctx, &mut rng);
            self.rows.answered(request.session, !a.has_tool_calls());
            // A final answer is sized by its own draw; a step that writes
            // code takes the request's larger sizes, any other the smaller.
            let target = match a.has_tool_calls() {
                false => 0,
                true if agent::writes_code(&a, &kit) => code,
                true => other,
            };
            size::fit(a, target, &mut rng)
        } else if can_look {
            ctx.out_tokens = size::draw(&spread.output_tokens.subagent_step, &mut rng);
            let a = explore::next_step(&ctx, &mut rng);
            size::fit(a, ctx.out_tokens, &mut rng)
        } else {
            let target = rng.gen_range(150..400);
            PlannedAnswer::text(writing::chat(&mut rng, &t.task, target))
        }
    }
}

/// Title, compaction or plain chat: requests without tools.
fn without_tools(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> PlannedAnswer {
    let t = ctx.t;
    let system = t.system.to_ascii_lowercase();
    let task_l = t.task.to_ascii_lowercase();
    if system.contains("title") || (task_l.contains("title") && t.task.len() < 2000) {
        let source = t
            .user_text
            .lines()
            .find(|l| {
                let l = l.trim().to_ascii_lowercase();
                // Not the instruction, nor a tag around the message.
                let tag = l.starts_with('<') && l.ends_with('>');
                !l.is_empty() && !l.contains("title") && !tag
            })
            .unwrap_or(&t.task);
        let words = size::title_words(&ctx.config.spread.output_tokens.title, rng);
        return PlannedAnswer::text(writing::title(source, words));
    }
    if system.contains("summar") || task_l.contains("summar") {
        let target = size::draw(&ctx.config.spread.output_tokens.compaction, rng);
        let goal = t
            .user_text
            .lines()
            .find(|l| l.trim().len() > 20)
            .unwrap_or(&t.task);
        let text = writing::compaction(rng, goal, &t.files, ctx.topic, target);
        return PlannedAnswer::text(text);
    }
    let target = rng.gen_range(100..350);
    PlannedAnswer::text(writing::chat(rng, &t.task, target))
}

/// The project's language: from build files, then file extensions, then the
/// words of the conversation (Java when nothing says otherwise).
fn project_lang(t: &Transcript) -> Lang {
    let has = |name: &str| t.files.iter().any(|f| paths::basename(f) == name);
    if has("pom.xml") || has("build.gradle") || has("build.gradle.kts") {
        return Lang::Java;
    }
    if has("pyproject.toml") || has("requirements.txt") || has("setup.py") {
        return Lang::Python;
    }
    let java = t
        .files
        .iter()
        .filter(|f| lang_of(f) == Some(Lang::Java))
        .count();
    let python = t
        .files
        .iter()
        .filter(|f| lang_of(f) == Some(Lang::Python))
        .count();
    if python > java {
        return Lang::Python;
    }
    if java > 0 {
        return Lang::Java;
    }
    let text = format!("{} {}", t.system, t.user_text).to_ascii_lowercase();
    if text.contains("python") || text.contains("pytest") {
        Lang::Python
    } else {
        Lang::Java
    }
}

/// The commands that can run the project's tests, preferred first.
fn test_commands(t: &Transcript) -> Vec<&'static str> {
    let has = |name: &str| t.files.iter().any(|f| paths::basename(f) == name);
    if has("pom.xml") {
        if has("mvnw") {
            vec!["./mvnw -q test", "mvn -q test"]
        } else {
            vec!["mvn -q test"]
        }
    } else if has("build.gradle") || has("build.gradle.kts") {
        vec!["./gradlew test", "gradle test"]
    } else if has("package.json") {
        vec!["npm test"]
    } else if has("Cargo.toml") {
        vec!["cargo test"]
    } else if project_lang(t) == Lang::Python {
        vec!["pytest -q", "python3 -m pytest -q"]
    } else {
        vec!["mvn -q test"]
    }
}

/// The test command to use next, and what the last attempt printed when
/// every candidate came back as not installed.
fn test_runner(t: &Transcript) -> (String, Option<String>) {
    let missing = |cmd: &str| {
        t.events
            .iter()
            .rev()
            .find(|e| e.outcome == Outcome::Missing && e.command.as_deref() == Some(cmd))
    };
    let candidates = test_commands(t);
    if let Some(cmd) = candidates.iter().find(|c| missing(c).is_none()) {
        return (cmd.to_string(), None);
    }
    let first = candidates[0].to_string();
    let last = candidates.last().and_then(|c| missing(c));
    let printed = last.map(|e| e.result.trim().lines().last().unwrap_or("").to_string());
    (first, printed)
}

/// The noun the task is about (a seeded pick when it names none).
fn topic_of(task: &str, rng: &mut ChaCha8Rng) -> &'static str {
    let l = task.to_ascii_lowercase();
    code::NOUNS
        .iter()
        .filter_map(|n| l.find(n).map(|at| (at, *n)))
        .min()
        .map(|(_, n)| n)
        .unwrap_or_else(|| code::NOUNS[..4].choose(rng).copied().unwrap_or("message"))
}

/// An answer: optional text first, then the tool calls.
pub fn answer(text: String, calls: Vec<AnswerPart>) -> PlannedAnswer {
    let mut parts = Vec::with_capacity(calls.len() + 1);
    if !text.is_empty() {
        parts.push(AnswerPart::Text(text));
    }
    parts.extend(calls);
    PlannedAnswer { parts }
}

/// Characters per token of code written into tool-call arguments (JSON
/// escaping adds punctuation): sizes planned in tokens are multiplied by this
/// to get characters. Measured with the twin's tokenizer on the persona's
/// edits: about 3 (see `tests/persona_sessions.rs`).
pub const CODE_CHARS_PER_TOKEN: usize = 3;

/// FNV-1a hash of a text (stable across builds and platforms).
pub fn fnv1a(text: &str) -> u64 {
    crate::tokenizer::text_hash(text)
}

/// Mixes two seeds (SplitMix64 finaliser over their combination).
pub fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
