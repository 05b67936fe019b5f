//! What the commands do, end to end. The CLI and the capacity suite both
//! call these functions, so a workload is implemented once.
//!
//! - [`run`]: the one run lifecycle of `bench`, `classroom` and `replay`
//!   (connect, what the server says of itself, the busy guard and the
//!   stated profile, plan and confirmation, the report, the verdict as the
//!   exit code); [`mod@bench`], [`classroom`] and [`replay`] plug their
//!   workload into it ([`workload`]: what one is given and returns) and
//!   import no sibling command; [`repeated`] runs one N times;
//! - shared by those: [`sampling`] (how a run reads its server),
//!   [`class_side`] (a class-like run's server figures and summary),
//!   [`fleet`] and [`fleet_bench`] (a live fleet's figures, Prometheus),
//!   [`guard`] (the busy guard), [`router_watch`] (the router's own page),
//!   [`seams`] (the HTTP client and the sampler as the drivers'
//!   interfaces), [`signals`] (Ctrl-C and SIGTERM);
//! - the other commands: [`metrics`], [`serve`], [`plan`], [`capacity`],
//!   [`calibrate`], [`capture`], [`report`] (`report` and `compare`),
//!   [`check`] (the capacity acceptance suite).
//!
//! Each takes typed settings ([`crate::settings`]); the binary's
//! `commands.rs` only resolves flags into them. The embedded twin is wired
//! in one place: [`crate::connect::Connection::open`].

pub mod bench;
pub mod calibrate;
pub mod capacity;
pub mod capture;
pub mod check;
pub mod class_side;
pub mod classroom;
pub mod fleet;
pub mod fleet_bench;
pub mod guard;
pub mod metrics;
pub mod plan;
pub mod repeated;
pub mod replay;
pub mod report;
pub mod router_watch;
pub mod run;
pub mod sampling;
pub mod seams;
pub mod serve;
pub mod signals;
pub mod workload;
