//! Turns the library's capacity suite into libtest-mimic trials (shared by
//! the harness and the suite's own checks).

/// Set in the harness's own child processes: list only the suite's trials.
pub const CHILD_ENV: &str = "CODENDUM_CAPACITY_SELFTEST_CHILD";

pub mod selftest;

use std::path::PathBuf;
use std::sync::Arc;

use codendum::capacity::Suite;
use libtest_mimic::Trial;

/// Where runs are shared between processes: `target/capacity-cache/`.
pub fn cache_dir() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent()
        .map(|t| t.join("capacity-cache"))
        .unwrap_or_else(|| tmp.join("capacity-cache"))
}

/// One libtest-mimic trial per suite trial; ignored ones flagged so.
pub fn trials(suite: &Arc<Suite>) -> Vec<Trial> {
    suite
        .trials()
        .into_iter()
        .map(|spec| {
            let s = Arc::clone(suite);
            let ignored = spec.ignored;
            Trial::test(spec.name.clone(), move || {
                s.run_trial(&spec).map_err(Into::into)
            })
            .with_ignored_flag(ignored)
        })
        .collect()
}
