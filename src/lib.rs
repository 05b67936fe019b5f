//! codendum: tells a lab whether its self-hosted coding-assistant server
//! (vLLM behind an HTTPS proxy) can carry a class.
//!
//! The binary is a thin layer over this library:
//! - [`mod@bench`]: closed-loop capacity benchmark (levels × prompt shapes);
//! - [`classroom`]: simulated students working with an OpenCode-like agent;
//! - [`prom`]: the vLLM `/metrics` parser, server snapshots and the 1 s sampler;
//! - [`twin`]: the embedded twin, vLLM on a GB10 in software;
//! - [`kinds`]: the neutral vocabulary results files hold (endpoint, error
//!   kinds, token source, provenance);
//! - [`results`]: results folders, the bench and classroom records and their
//!   summaries (plain functions of the records);
//! - [`report`]: Markdown and HTML reports and comparisons from results folders;
//! - [`profile`]: server profiles and hardware TOMLs, read by the twin, the
//!   capacity suite and the planner;
//! - [`targets`]: what a profile's `[targets]` mean, one definition for
//!   the capacity suite and `codendum plan`;
//! - [`capacity`]: the acceptance suite judging a profile's targets;
//! - [`plan`]: the classroom in virtual time, judged by the same targets;
//! - [`calibrate`]: fits the twin's step-time model to bench runs of a
//!   real server and writes the profile;
//! - [`capture`]: a recording reverse proxy between OpenCode and the server
//!   (per-call records, the client time, the captured prompt).
//!
//! Everything that waits or measures time asks one [`clock::Clock`].

pub mod app;
pub mod bench;
pub mod calibrate;
pub mod capacity;
pub mod capture;
pub mod classroom;
pub mod clock;
pub mod error;
pub mod kinds;
pub mod openai;
pub mod plan;
pub mod profile;
pub mod prom;
pub mod report;
pub mod results;
pub mod stats;
pub mod target;
pub mod targets;
pub mod twin;
