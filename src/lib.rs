//! codendum: tells a lab whether its self-hosted coding-assistant server
//! (vLLM behind an HTTPS proxy) can carry a class.
//!
//! This crate is the top of the workspace's layers: it drives a server (or
//! the twin) and writes results folders. Below it, `codendum_core` (the
//! shared vocabulary), `codendum_twin` (the embedded twin) and
//! `codendum_report` (reports from folders); above it, `codendum_capacity`
//! (the acceptance suite). The binary is a thin layer over this library:
//!
//! - [`client`]: the HTTP client (codendum's own HTTP/1.1 streams, reqwest
//!   for https and the side calls);
//! - [`scrape`]: reading a live `/metrics` (the 1 s sampler) or Prometheus;
//! - [`mod@bench`]: closed-loop capacity benchmark (levels × prompt shapes);
//! - [`classroom`]: simulated students working with an OpenCode-like agent;
//! - [`capture`]: a recording reverse proxy between OpenCode and the server;
//! - [`plan`]: the classroom in virtual time, judged by the profile's targets;
//! - [`calibrate`]: fits the twin's step-time model to bench runs of a real
//!   server and writes the profile;
//! - [`connect`]: a live server or the embedded twin, opened in one place;
//! - [`server_match`]: whether a live server is the one a profile describes;
//! - [`app`]: each command as a library function (what the CLI and the
//!   capacity suite call);
//!
//! The binary's `cli` (clap's flags) and `commands` (their validation into
//! the typed configurations of [`app`]) are the only code that knows clap.

pub mod app;
pub mod bench;
pub mod calibrate;
pub mod capture;
pub mod classroom;
pub mod client;
pub mod connect;
pub mod events;
pub mod plan;
pub mod replay;
pub mod scrape;
pub mod server_match;
