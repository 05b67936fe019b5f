//! What the commands do, end to end: reach the server (or start the embedded
//! twin), run a workload through the library, write the results folder and its
//! report. The CLI and the capacity suite both call these functions, so a
//! workload is implemented once.
//!
//! One module per command, each taking a validated typed config:
//! [`mod@bench`], [`classroom`], [`metrics`], [`serve`], [`plan`] and
//! [`report`] (`report` and `compare`). `src/commands.rs` in the binary only
//! turns flags into those configs.
//!
//! The embedded twin is wired in one place: [`crate::connect::Connection::open`].

pub mod bench;
mod bench_calibration;
pub mod calibrate;
pub mod capture;
pub mod classroom;
mod classroom_output;
mod classroom_prepare;
pub mod fleet;
pub mod fleet_bench;
pub mod metrics;
pub mod plan;
pub mod replay;
pub mod report;
pub mod router;
pub mod seams;
pub mod serve;
pub mod signals;
