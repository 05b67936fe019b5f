//! `codendum replay`: recorded traffic sent again, against a live server
//! or the twin, and `codendum export-trace`: the same traffic as a
//! Mooncake-style or AIPerf trace for other tools.
//!
//! - [`source`]: a capture folder, a classroom or replay folder, or a
//!   trace file, read as a [`codendum_core::trace::Trace`] (sizes, kinds,
//!   sessions, times and prefix blocks; never text);
//! - [`driver`]: the calls sent with prompts of their recorded size whose
//!   shared prefixes are rebuilt from the blocks, their recorded output
//!   length and timing.

pub mod driver;
pub mod source;

pub use driver::{run_replay, template_tokens, ReplayConfig, ReplayOutcome, Template};
pub use source::{load, SourceKind};
