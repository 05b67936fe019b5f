//! How a trace is sent: the model, pace, salt, endpoint and key, and how
//! sessions are started and paced ([`Schedule`]): what `codendum replay`'s
//! flags ask, before anything is sent.

use super::template::Template;
use codendum_core::access::Secret;
use codendum_core::openai::Endpoint;

/// When a call that waited for another is sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Timing {
    /// The recorded wait after the replayed answer it waited for ends: a
    /// slower server stretches the session as it would have.
    #[default]
    AfterAnswer,
    /// At its recorded offset from its session's start, whatever the
    /// server does (a conversation is carried on only when the answer it
    /// continues is back by then).
    Original,
}

/// What is done with a call the server's context cannot hold (its prompt
/// and output above `max_model_len`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TooLong {
    /// Not sent; its dependents go on after its recorded wait.
    #[default]
    Skip,
    /// Sent shortened from the front (whole blocks dropped), as a fresh
    /// prompt.
    Shorten,
}

/// How sessions are started and paced, and what is done with calls the
/// server cannot hold: what `--users`, `--timing`, `--max-think`,
/// `--max-wait`, `--start-part-way` and `--too-long` ask.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Schedule {
    /// Sessions kept running at once (`None`: every session at its
    /// recorded offset).
    pub users: Option<usize>,
    /// When a call that waited for another is sent.
    pub timing: Timing,
    /// The longest a person's recorded wait is kept, seconds (recorded
    /// seconds, before `speed`).
    pub max_think_s: Option<f64>,
    /// The longest any recorded wait is kept (a tool's too), seconds
    /// (recorded seconds, before `speed`).
    pub max_wait_s: Option<f64>,
    /// With `users`: the first sessions start part-way through their calls.
    pub start_part_way: bool,
    /// What is done with calls beyond `max_model_len`.
    pub too_long: TooLong,
}

/// How a trace is sent.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// The model requested.
    pub model: String,
    /// Timeline compression: 2 sends twice as fast as recorded.
    pub speed: f64,
    /// Salt of the synthetic text (a new salt: nothing cached from an
    /// earlier replay is hit).
    pub salt: u64,
    /// Chat or completions.
    pub endpoint: Endpoint,
    /// The key presented (never written).
    pub api_key: Option<Secret>,
    /// What the server's chat template adds, taken off each recorded
    /// prompt length.
    pub template: Template,
    /// How sessions are started and paced.
    pub schedule: Schedule,
    /// The server's context, tokens (prompt and output together), when
    /// known.
    pub max_model_len: Option<u64>,
}

impl ReplayConfig {
    /// A replay of `model` at the recorded pace and offsets, chat, no key,
    /// salt 0, the server's template `template`.
    pub fn new(model: impl Into<String>, template: Template) -> Self {
        ReplayConfig {
            model: model.into(),
            speed: 1.0,
            salt: 0,
            endpoint: Endpoint::Chat,
            api_key: None,
            template,
            schedule: Schedule::default(),
            max_model_len: None,
        }
    }
}
