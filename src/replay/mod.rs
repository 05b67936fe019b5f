//! `codendum replay`: recorded traffic sent again, against a live server
//! or the twin, and `codendum export-trace`: the same traffic as a
//! Mooncake-style or AIPerf trace for other tools.
//!
//! - [`source`]: a capture folder, a classroom or replay folder, or the
//!   recorded sessions `codendum_core::trace` reads (OpenCode's store,
//!   Claude Code conversations, TraceLab rows, Mooncake-style lines), as a
//!   [`codendum_core::trace::Trace`] (sizes, kinds, sessions, times and
//!   prefix blocks; never text);
//! - [`driver`]: the sessions started at their offsets or as users;
//! - [`continuous`]: the sessions as a class that holds the size it is
//!   told (`codendum capacity --replay`);
//! - `sent`: what a call leaves for the calls of its session;
//! - [`call`]: one call sent with a prompt of its recorded size whose
//!   shared prefixes are rebuilt from the blocks, its recorded output
//!   length and timing;
//! - [`template`]: the server's chat-template tokens, measured first;
//! - [`summary`]: what a replay says of itself (its `summary.json` block,
//!   its verdict's note).

pub mod call;
pub mod config;
pub mod continuous;
pub mod driver;
mod root_run;
mod sent;
pub mod source;
pub mod summary;
pub mod template;

pub use call::SizeCheck;
pub use config::{ReplayConfig, Schedule, Timing, TooLong};
pub use continuous::{run_continuous_replay, ContinuousOutcome};
pub use driver::{run_replay, ReplayOutcome};
pub use source::load;
pub use template::{template_tokens, Template};

/// The request body of one call.
pub fn call_body(config: &ReplayConfig, prompt: &str, output_tokens: u64) -> serde_json::Value {
    crate::bench::prompt::request_body(
        config.endpoint,
        &config.model,
        prompt,
        output_tokens.clamp(1, u64::from(u32::MAX)) as u32,
    )
}
