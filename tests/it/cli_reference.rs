//! docs/cli-reference.md is what the command-line definitions generate
//! (`codendum cli-reference`): a committed page that differs fails here,
//! saying how to regenerate it. The page holds every flag `--help` shows,
//! for every command, and every variable of the registry.

use std::path::Path;

use crate::cli_support::{codendum, run};
use codendum::settings::env::VARS;

const PAGE: &str = "docs/cli-reference.md";

/// The commands `codendum --help` lists (its own `help` aside): a command
/// added to the binary is checked here without being named.
fn commands(dir: &Path) -> Vec<String> {
    let mut cmd = codendum(dir);
    cmd.arg("--help");
    let help = run(cmd);
    assert_eq!(help.code, Some(0), "{}", help.both());
    // `  bench   Closed-loop …`; a wrapped description is indented further.
    let names: Vec<String> = help
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(ToString::to_string)
        .collect();
    for expected in [
        "bench",
        "plan",
        "capture",
        "replay",
        "export-trace",
        "check",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not read from --help: {names:?}"
        );
    }
    names
}

fn generated() -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.arg("cli-reference");
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    f.stdout
}

#[test]
fn the_committed_page_is_the_one_the_code_generates() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PAGE);
    let page = generated();
    if std::env::var_os("UPDATE_REFERENCE").is_some() {
        std::fs::write(&path, &page).expect("write the page");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != page {
        let first = committed
            .lines()
            .zip(page.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(page.lines().count()));
        panic!(
            "{PAGE} differs from what the command-line definitions generate (first at line {}: \
             committed {:?}, generated {:?}); regenerate it with \
             `UPDATE_REFERENCE=1 cargo test --test it cli_reference` and commit it",
            first + 1,
            committed.lines().nth(first).unwrap_or(""),
            page.lines().nth(first).unwrap_or(""),
        );
    }
}

#[test]
fn every_flag_of_every_command_and_every_variable_is_on_the_page() {
    let page = generated();
    let dir = tempfile::tempdir().expect("tempdir");
    for command in commands(dir.path()) {
        let command = command.as_str();
        assert!(
            page.contains(&format!("\n## `codendum {command}`\n")),
            "{command}"
        );
        let mut cmd = codendum(dir.path());
        cmd.args([command, "--help"]);
        let help = run(cmd);
        assert_eq!(help.code, Some(0), "{command}: {}", help.both());
        // A flag's own line: `  -y, --yes` or `      --calibration`; help
        // text wraps onto lines indented further.
        for line in help.stdout.lines() {
            if !(line.starts_with("  -") || line.starts_with("      --")) {
                continue;
            }
            let Some(long) = line
                .split_whitespace()
                .find(|w| w.starts_with("--"))
                .map(|w| w.trim_end_matches(','))
            else {
                continue;
            };
            if long == "--help" || long == "--version" {
                continue;
            }
            assert!(
                page.contains(&format!("| `{long}`")),
                "{command} {long} is not on the page"
            );
        }
    }
    for v in VARS {
        assert!(page.contains(&format!("| `{}` |", v.name)), "{}", v.name);
    }
}
