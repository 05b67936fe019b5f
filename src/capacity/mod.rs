//! The capacity acceptance suite: a profile's targets (`[targets]` in
//! `profiles/<name>.toml`), the workloads that measure them, and their
//! evaluation. `cargo test --test capacity` lists one trial per target and
//! judges a live server (`CODENDUM_BASE_URL`) or, without one, the embedded
//! twin running each profile.
//!
//! - [`targets`]: the typed `[targets]` tables (`[targets.classroom]` is
//!   [`crate::targets::classroom`]'s, shared with `codendum plan`);
//! - [`workload`]: quick and full workloads, the twin's speed-ups;
//! - [`judge`]: figures against targets (plain functions);
//! - [`settings`]: the environment and `.env`;
//! - [`suite`]: trials, and one shared run per workload;
//! - [`server_match`]: whether the live server runs the profile (its
//!   `[server]` against `/v1/models` and `/metrics`), for the suite's
//!   `<profile>::server::matches_profile` and for `bench` / `classroom`;
//! - [`runner`]: runs a workload through [`crate::app`] and writes its report;
//! - [`reuse`]: sharing a run between processes (cargo nextest).

pub mod judge;
pub mod reuse;
pub mod runner;
pub mod server_match;
mod server_match_check;
mod server_match_live;
pub mod settings;
pub mod suite;
pub mod targets;
pub mod workload;

pub use self::judge::{Bound, Judgement};
pub use self::settings::Settings;
pub use self::suite::{Suite, TrialKind, TrialSpec};
pub use self::targets::{
    parse_targets, BenchLevelTargets, ClassroomTargets, ModeTargets, ProfileTargets,
};
pub use self::workload::{Mode, WorkloadKind};
