//! The classroom simulation: N students, each working on a small
//! client-server chat project with an OpenCode-like agent, against a real
//! model reached through a [`codendum_core::openai::Transport`].
//!
//! The model's output and the server load are real; the file system, the
//! builds and the students are simulated. Entry point: [`run_classroom`].
//!
//! Definitions (seconds are simulated seconds on the run's clock):
//! - a *model call* is one request after OpenCode-like retries (2 s doubling
//!   plus up to 25 % jitter, capped at 30 s, at most 5; `retry-after` wins;
//!   a call that cannot connect once the class's window is over is not
//!   sent again, so a server gone at the end does not hold the run);
//!   its record keeps the last attempt's TTFT and duration, and the student's
//!   wait including retry pauses;
//! - *model time* of a coding request: the sum of the waits of its agent,
//!   subagent and compaction calls (the title call runs beside the first
//!   step and is left out);
//! - *output speed per user*: per successful call, output tokens /
//!   (duration − TTFT); the summary gives the median and 5th percentile;
//! - *completed per hour*: completed coding requests / run wall time.

mod agent;
mod buildlog;
mod calls;
pub mod client_times;
mod command_line;
pub mod compaction;
pub mod config;
pub mod continuous;
mod driver;
pub mod prompt;
pub mod records;
pub mod retry;
pub mod scenario;
mod session;
pub mod shell;
mod shell_files;
mod sizes;
pub mod status;
pub mod tools;
pub mod workspace;

pub use client_times::{ClientTimeKind, ClientTimes};
/// A class's figures: a plain function of its records, in
/// [`codendum_core::results::classroom_summary`].
pub use config::{ClassroomConfig, DEFAULT_OUTPUT_LIMIT};
pub use continuous::{run_continuous_class, ClassSize};
pub use driver::{run_classroom, run_classroom_until, ClassroomOutcome};
pub use prompt::{PromptSet, PromptSource};
pub use records::{JsonlSink, MemorySink, RecordSink};
pub use retry::{retry_delay, MAX_RETRIES};
pub use scenario::Scenario;
pub use status::{LiveStatus, OpenCall, RunningTask, StatusSnapshot};

#[cfg(test)]
mod tools_tests;
