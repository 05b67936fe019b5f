//! codendum: tells a lab whether its self-hosted coding-assistant server
//! (vLLM behind an HTTPS proxy) can carry a class.
//!
//! This crate is the top of the workspace's layers: it drives a server (or
//! the twin) and writes results folders. Below it, `codendum_core` (the
//! shared vocabulary), `codendum_twin` (the embedded twin) and
//! `codendum_report` (reports from folders). The binary is a thin layer over
//! this library:
//!
//! - [`client`]: the HTTP client (codendum's own HTTP/1.1 streams, reqwest
//!   for https and the side calls);
//! - [`scrape`]: reading a live `/metrics` (the 1 s sampler) or Prometheus;
//! - [`mod@bench`]: closed-loop capacity benchmark (levels × prompt shapes);
//! - [`classroom`]: simulated students working with an OpenCode-like agent;
//! - [`capture`]: a recording reverse proxy between OpenCode and the server;
//! - [`replay`]: a captured class, a classroom run or a trace sent again,
//!   and traces exported for other tools;
//! - [`acceptance`]: the capacity acceptance suite (trials, workloads,
//!   judging), run by `codendum check` and `cargo test --test capacity`;
//! - [`plan`]: the classroom in virtual time, judged by the profile's targets;
//! - [`capacity`]: how many students a live server carries, per service
//!   tier, measured in one sitting with the twin's prediction beside it;
//! - [`class`]: a class file learned from recorded sessions (`learn-class`);
//! - [`calibrate`]: fits the twin's step-time model to bench runs of a real
//!   server and writes the profile;
//! - [`connect`]: a live server or the embedded twin, opened in one place;
//! - [`server_match`]: whether a live server is the one a profile describes;
//! - [`virtual_time`]: bench and class runs on the twin in virtual time;
//! - [`app`]: each command as a library function (what the CLI and the
//!   capacity suite call);
//! - [`settings`]: the typed values of the flags, the defaults and the
//!   registry of environment variables;
//! - [`events`]: what a run says, as events for the one reporter.
//!
//! The binary's `cli` (clap's flags), `commands` (their validation into
//! the typed configurations of [`app`]) and `cli_reference`
//! (docs/cli-reference.md from clap's definitions) are the only code that
//! knows clap; its `terminal` is the reporter that prints the events.

pub mod acceptance;
pub mod app;
pub mod bench;
pub mod calibrate;
pub mod capacity;
pub mod capture;
pub mod class;
pub mod classroom;
pub mod client;
pub mod connect;
pub mod events;
pub mod plan;
pub mod replay;
pub mod scrape;
pub mod server_match;
pub mod settings;
pub mod virtual_time;
