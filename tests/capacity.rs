//! The capacity acceptance suite: one trial per target of each profile,
//! named `<profile>::<workload>::<metric>`. Against `CODENDUM_BASE_URL` when
//! set (from the environment or `.env`), else against the embedded twin.
//! See docs/capacity.md.

mod capacity_support;

use std::process::ExitCode;
use std::sync::Arc;

use codendum::capacity::Suite;
use libtest_mimic::Arguments;

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let suite = Arc::new(Suite::from_env(capacity_support::cache_dir()));
    let trials = capacity_support::trials(&suite);
    libtest_mimic::run(&args, trials).exit_code()
}
