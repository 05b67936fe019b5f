//! The shape of one coding request the persona answers: how many steps,
//! reads and changes, drawn once per request; how many calls a subagent
//! makes.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{fnv1a, mix, PersonaConfig};

/// After this many steps in one request the agent wraps up whatever state
/// it is in, whatever the class drew.
pub const MAX_STEPS: usize = 150;

/// How a subagent's instructions say how far it may look.
pub(super) const BUDGET_WORDS: &str = "Report back after at most";

/// Model calls of the subagent started with these instructions: the
/// searches and reads they allow and the report (the persona writes them
/// so), else drawn from the class with a seed of the instructions, so the
/// subagent (which sees them as its task) and its parent (which wrote
/// them) count the same.
pub fn subagent_calls(config: &PersonaConfig, prompt: &str) -> usize {
    let said = prompt
        .split(BUDGET_WORDS)
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse::<usize>().ok());
    if let Some(n) = said {
        return (n + 1).clamp(1, MAX_STEPS);
    }
    let seed = mix(fnv1a(prompt.trim()), config.seed ^ 0x05ab_a9e7);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (config.spread.subagent_calls.sample_count(&mut rng) as usize).clamp(1, MAX_STEPS)
}

/// A request's model calls from its session's recorded shape (the class's
/// `agent.sessions`, see [`super::session_rows`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SessionCalls {
    /// The session's first step, before any answer picks its row: it
    /// answers at once with this probability (0..=1), the share of rows
    /// whose first request took one call.
    FirstStep(f64),
    /// The request's calls, read from the session's row.
    Drawn(u32),
}

/// The shape of one coding request, drawn once per request (from its first
/// step, so every later step sees the same plan).
pub(super) struct Plan {
    /// Model calls of the main agent in this request, its first step and
    /// final answer included (the class's calls per request less the
    /// subagent's).
    pub(super) steps: usize,
    pub(super) read_steps: usize,
    pub(super) edits: usize,
    pub(super) write_new: bool,
    pub(super) baseline_test: bool,
    /// Probability (0..1) of compiling right after a change.
    pub(super) compile_after_change: f64,
}
