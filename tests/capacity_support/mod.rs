//! The harness's own checks of itself (see [`selftest`]).

/// Set in the harness's own child processes: list only the suite's trials.
pub const CHILD_ENV: &str = "CODENDUM_CAPACITY_SELFTEST_CHILD";

pub mod selftest;

/// Where runs are shared between processes: `target/capacity-cache/`.
pub fn cache_dir() -> std::path::PathBuf {
    codendum_capacity::cache_dir(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")))
}
