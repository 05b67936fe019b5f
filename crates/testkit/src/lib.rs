//! What codendum's test binaries (`it`, `perf`, `capacity`) share: servers
//! that behave differently from ours and the fixtures folder. Test code
//! only; nothing of the product depends on it.

pub mod servers;
pub mod turns;

use std::path::PathBuf;

/// The workspace's `fixtures/` folder.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}
