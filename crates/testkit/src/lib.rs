//! What codendum's test binaries (`it`, `perf`, `real`, `capacity`) share:
//! servers that behave differently from ours, the fixtures folder, the
//! helpers that run the `codendum` binary, a live fleet with a real
//! Prometheus, and the harness for tests of real components. Test code
//! only; nothing of the product depends on it.

pub mod cli;
pub mod live;
pub mod real;
pub mod scripted;
pub mod servers;
pub mod turns;
pub mod vllm_router;

use std::path::PathBuf;

/// The workspace's `fixtures/` folder.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}
