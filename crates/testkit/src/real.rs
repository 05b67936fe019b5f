//! The harness of the `real` test binary: tests that need a real component
//! we did not build (Prometheus, OpenCode and its ripgrep, the vLLM Router,
//! AIPerf). A test whose component is missing is reported by the harness as
//! `ignored, <component> not installed` outside CI and fails with `CI` set,
//! so a plain `cargo test` on a fresh machine never shows it as passed.
//! `.ci/run` installs every component; [`Component::install`] says how.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// A real program a test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// Debian's Prometheus server, `/usr/bin/prometheus`.
    Prometheus,
    /// OpenCode 1.18.33 (npm `opencode-linux-x64`), at `$CODENDUM_OPENCODE`
    /// or under `~/.cache/codendum-opencode`.
    OpenCode,
    /// ripgrep (`rg` on `PATH`): OpenCode's glob and grep tools run it.
    Ripgrep,
    /// The vLLM Router 0.1.17 (PyPI `vllm-router`) in its own virtual
    /// environment under `~/.cache/codendum-vllm-router`.
    VllmRouter,
    /// AIPerf 0.13.0 (PyPI `aiperf`) in its own virtual environment under
    /// `~/.cache/codendum-aiperf`.
    Aiperf,
}

/// The OpenCode version the tests are written against.
pub const OPENCODE_VERSION: &str = "1.18.33";

fn home_cache(rel: &str) -> Option<PathBuf> {
    Some(
        PathBuf::from(std::env::var_os("HOME")?)
            .join(".cache")
            .join(rel),
    )
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

impl Component {
    /// The name the harness prints.
    pub fn name(self) -> &'static str {
        match self {
            Component::Prometheus => "prometheus",
            Component::OpenCode => "opencode",
            Component::Ripgrep => "ripgrep",
            Component::VllmRouter => "vllm-router",
            Component::Aiperf => "aiperf",
        }
    }

    /// How to install it (what `.ci/run` does).
    pub fn install(self) -> &'static str {
        match self {
            Component::Prometheus => "apt-get install prometheus",
            Component::OpenCode => {
                "npm install --prefix ~/.cache/codendum-opencode opencode-linux-x64@1.18.33"
            }
            Component::Ripgrep => "apt-get install ripgrep",
            Component::VllmRouter => {
                "python3 -m venv ~/.cache/codendum-vllm-router/venv && \
                 ~/.cache/codendum-vllm-router/venv/bin/pip install vllm-router==0.1.17"
            }
            Component::Aiperf => {
                "python3 -m venv ~/.cache/codendum-aiperf/venv && \
                 ~/.cache/codendum-aiperf/venv/bin/pip install aiperf==0.13.0"
            }
        }
    }

    /// Where the component's program is, if it is installed.
    pub fn locate(self) -> Option<PathBuf> {
        let found = match self {
            Component::Prometheus => Some(PathBuf::from("/usr/bin/prometheus")),
            Component::OpenCode => match std::env::var_os("CODENDUM_OPENCODE") {
                Some(p) => Some(PathBuf::from(p)),
                None => {
                    home_cache("codendum-opencode/node_modules/opencode-linux-x64/bin/opencode")
                }
            },
            Component::Ripgrep => on_path("rg"),
            Component::VllmRouter => home_cache("codendum-vllm-router/venv/bin/vllm-router"),
            Component::Aiperf => home_cache("codendum-aiperf/venv/bin/aiperf"),
        };
        found.filter(|p| p.is_file())
    }

    /// The component's program; panics (failing the test) when it is
    /// missing, which [`trial`] has ruled out before the test runs.
    pub fn program(self) -> PathBuf {
        self.locate()
            .unwrap_or_else(|| panic!("{} is not installed: {}", self.name(), self.install()))
    }
}

/// Whether the tests run in CI, where a missing component is a failure.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// A test that needs `needs`: ignored with the reason when one is missing
/// outside CI, failed with the install command in CI, run otherwise (a
/// panic in `test` is its failure).
pub fn trial(name: &str, needs: &[Component], test: fn()) -> Trial {
    let needs = needs.to_vec();
    Trial::ignorable_test(name, move || {
        if let Some(missing) = needs.iter().find(|c| c.locate().is_none()) {
            let reason = format!("{} not installed", missing.name());
            if in_ci() {
                return Err(Failed::from(format!(
                    "{reason} (CI is set); install it with: {}",
                    missing.install()
                )));
            }
            return Ok(Completion::ignored_with(reason));
        }
        catch_unwind(AssertUnwindSafe(test))
            .map(|()| Completion::Completed)
            .map_err(|panic| {
                let text = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "the test panicked".to_string());
                Failed::from(text)
            })
    })
}

/// Runs the trials with the command line's filters and exits. Without
/// `--test-threads`, `RUST_TEST_THREADS` sets the threads as it does for
/// the standard harness (these tests mostly wait on real processes).
pub fn run(trials: Vec<Trial>) -> ! {
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = std::env::var("RUST_TEST_THREADS")
            .ok()
            .and_then(|v| v.parse().ok());
    }
    libtest_mimic::run(&args, trials).exit()
}
