//! The environment variables of the command line are the registry's
//! (`codendum::settings::env`): every `[env: …]` that `--help` shows is
//! listed there with its flag, and every variable listed with a flag is
//! read by some command.

use std::collections::BTreeSet;

use crate::cli_support::{codendum, run};
use codendum::settings::env;

const COMMANDS: [&str; 12] = [
    "bench",
    "classroom",
    "metrics",
    "serve",
    "report",
    "compare",
    "plan",
    "calibrate",
    "capture",
    "replay",
    "export-trace",
    "check",
];

#[test]
fn every_variable_the_command_line_reads_is_in_the_registry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut seen = BTreeSet::new();
    for command in COMMANDS {
        let mut cmd = codendum(dir.path());
        cmd.args([command, "--help"]);
        let help = run(cmd);
        assert_eq!(help.code, Some(0), "{command}: {}", help.both());
        // clap wraps the help at the terminal's width, "[env:" and the
        // name on two lines at times.
        let text = help.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        for name in text
            .split("[env: ")
            .skip(1)
            .filter_map(|rest| rest.split(['=', ']']).next().map(str::to_string))
        {
            let var = env::var(&name)
                .unwrap_or_else(|| panic!("{command} reads {name}, which the registry lacks"));
            let flag = var.flag.expect("a variable of the command line has a flag");
            assert!(text.contains(flag), "{command}: {name} stands for {flag}");
            seen.insert(name);
        }
    }
    for v in env::VARS.iter().filter(|v| v.flag.is_some()) {
        assert!(seen.contains(v.name), "no command reads {}", v.name);
    }
}
