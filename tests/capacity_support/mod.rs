//! The harness's own checks of itself (see [`selftest`]).

/// Set in the harness's own child processes: list only the suite's trials.
pub const CHILD_ENV: &str = "CODENDUM_CAPACITY_SELFTEST_CHILD";

pub mod selftest;

/// Where runs are shared between processes: `target/capacity-cache/`.
pub fn cache_dir() -> std::path::PathBuf {
    codendum::acceptance::cache_dir(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")))
}

/// The harness's voice: what the suite runs, reuses and notes, one line
/// each on stderr beside libtest's own output, in the style of every
/// codendum reporter (`capacity: note: …`, `Report: …`).
struct Lines;

impl codendum::events::Reporter for Lines {
    fn report(&self, event: &codendum::events::Event) {
        if let Some(line) = event.line("capacity") {
            eprintln!("{line}");
        }
    }
}

/// Events told by the harness on stderr.
pub fn reporter() -> codendum::events::Events {
    codendum::events::Events::to(std::sync::Arc::new(Lines))
}
