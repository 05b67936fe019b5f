//! The capacity acceptance suite: a profile's targets (`[targets]` in
//! `profiles/<name>.toml`), the workloads that measure them, and their
//! evaluation. One trial per target, judging a live server
//! (`CODENDUM_BASE_URL`) or, without one, the embedded twin running each
//! profile; `codendum check` ([`crate::app::check`]) and the
//! `cargo test --test capacity` harness ([`trials`]) run the same trials.
//!
//! - [`settings`]: the environment and `.env`, or `codendum check`'s flags,
//!   resolved once;
//! - [`workload`]: quick and full workloads, the twin's speed-ups;
//!   [`quick`]: the quick workloads' sizes (shared with `calibrate`);
//! - [`judge`]: figures against targets (plain functions; the targets
//!   themselves are [`codendum_core::targets`]', shared with `codendum plan`);
//! - [`suite`]: trials, and one shared run per workload; against a live
//!   server also `<profile>::server::matches_profile`
//!   ([`crate::server_match`]);
//! - [`capacity`]: `<profile>::capacity-<tier>::students`, a capacity
//!   search judged against `[targets.capacity]`;
//! - [`runner`]: runs a workload through the command line's run lifecycle
//!   ([`lifecycle`], handed in by [`crate::app::check`]) and writes its report;
//! - [`reuse`]: sharing a run between processes (cargo nextest, two checks).

pub mod capacity;
pub mod judge;
pub mod lifecycle;
pub mod profile;
pub mod quick;
pub mod reuse;
pub mod runner;
pub mod settings;
pub mod suite;
pub mod workload;

pub use self::judge::{Judgement, TrialPass};
pub use self::settings::Settings;
pub use self::suite::{Suite, TrialKind, TrialSpec};
pub use self::workload::{Mode, WorkloadKind};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use libtest_mimic::{Completion, Trial};

/// Where runs are shared between test processes: `capacity-cache/` beside a
/// test binary's `CARGO_TARGET_TMPDIR` (`target/capacity-cache/`).
pub fn cache_dir(target_tmpdir: &Path) -> PathBuf {
    target_tmpdir
        .parent()
        .map(|t| t.join("capacity-cache"))
        .unwrap_or_else(|| target_tmpdir.join("capacity-cache"))
}

/// One libtest-mimic trial per suite trial, ignored ones flagged so (what
/// `cargo test --test capacity` lists; `codendum check` runs the same
/// [`Suite::trials`] itself). A trial whose figure's interval straddles its
/// target is neither passed nor failed: it ends ignored, with the reason
/// ("indeterminate: …").
pub fn trials(suite: &Arc<Suite>) -> Vec<Trial> {
    suite
        .trials()
        .into_iter()
        .map(|spec| {
            let s = Arc::clone(suite);
            let ignored = spec.ignored;
            Trial::ignorable_test(spec.name.clone(), move || match s.run_trial(&spec) {
                Ok(TrialPass::Met) => Ok(Completion::Completed),
                Ok(TrialPass::Indeterminate(why)) => Ok(Completion::ignored_with(why)),
                Err(e) => Err(e.into()),
            })
            .with_ignored_flag(ignored)
        })
        .collect()
}
