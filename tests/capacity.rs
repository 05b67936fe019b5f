//! The capacity acceptance suite: one trial per target of each profile,
//! named `<profile>::<workload>::<metric>`. Against `CODENDUM_BASE_URL` when
//! set (from the environment or `.env`), else against the embedded twin.
//! See docs/capacity.md.
//!
//! It also lists `selftest::…` trials: the harness run as a process of its
//! own against a server that is not vLLM, with `/metrics` in each of the
//! ways a lab meets it, to end by itself and within its grace after Ctrl-C
//! (they reach loopback only, whatever the target is).

mod capacity_support;

use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Trial};

fn main() -> ExitCode {
    let args = Arguments::from_args();
    if std::env::var_os(capacity_support::CHILD_ENV).is_some() {
        // A self-test's child loads a mock server of its own, not the twin
        // the workloads time: it keeps its records and its run lock in its
        // own folder (its working directory, a temporary one), so the twelve
        // self-tests run beside the workloads instead of waiting for the
        // lock between them (docs/testing.md, "CI's time").
        let own = std::env::current_dir()
            .expect("a working directory")
            .join("cache");
        let suite =
            Arc::new(codendum::app::suite_from_env(own).with_events(capacity_support::reporter()));
        return libtest_mimic::run(&args, codendum::acceptance::trials(&suite)).exit_code();
    }
    let suite = Arc::new(
        codendum::app::suite_from_env(capacity_support::cache_dir())
            .with_events(capacity_support::reporter()),
    );
    let mut trials = codendum::acceptance::trials(&suite);
    trials.extend(selftests());
    libtest_mimic::run(&args, trials).exit_code()
}

fn selftests() -> Vec<Trial> {
    let mut trials = Vec::new();
    for case in codendum_testkit::servers::MetricsCase::ALL {
        trials.push(Trial::test(
            format!("selftest::metrics-{}::ends", case.name()),
            move || capacity_support::selftest::ends_by_itself(case).map_err(Into::into),
        ));
        trials.push(Trial::test(
            format!("selftest::metrics-{}::ctrl-c", case.name()),
            move || capacity_support::selftest::ends_after_ctrl_c(case).map_err(Into::into),
        ));
    }
    trials
}
