//! The command-line reference page (`docs/cli-reference.md`), generated
//! from the two definitions it describes: clap's command tree ([`Cli`]:
//! every command, flag, value name, default, environment variable and help
//! text) and the registry of environment variables
//! ([`codendum::settings::env::VARS`]). `codendum cli-reference` (hidden)
//! prints it; a test (`tests/it/cli_reference.rs`) fails when the committed
//! page differs, so the page cannot drift from the code.

use std::fmt::Write;

use clap::{Arg, ArgAction, Command, CommandFactory};

use crate::cli::Cli;
use codendum::settings::env::VARS;

/// The command that regenerates the page, as the page and its test say it.
pub const REGENERATE: &str = "UPDATE_REFERENCE=1 cargo test --test it cli_reference";

/// The whole page, Markdown.
pub fn page() -> String {
    let mut root = Cli::command();
    root.build();
    // clap's own `help` subcommand says nothing a page needs.
    let commands: Vec<&Command> = root
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .collect();
    let mut out = String::new();
    let _ = write!(
        out,
        "# Command-line reference\n\n\
<!-- Generated from src/cli.rs and src/settings/env.rs by `codendum cli-reference`; do not edit.\n\
     Regenerate: {REGENERATE} -->\n\n\
Every command and every flag as the binary defines them: value, default, environment variable and\n\
help, the same text `codendum COMMAND --help` prints. Flags win over the environment, the\n\
environment over `.env`; an empty variable is an unset one. What the commands do, in detail, and\n\
the exit codes: [reference.md](reference.md).\n\n"
    );
    for c in &commands {
        let _ = writeln!(out, "- [`codendum {0}`](#codendum-{0})", c.get_name());
    }
    out.push_str("- [Environment variables](#environment-variables)\n");
    for c in commands {
        command_section(&mut out, c);
    }
    environment_section(&mut out);
    out
}

/// One command: its help, usage and a row per argument.
fn command_section(out: &mut String, c: &Command) {
    let name = c.get_name();
    let _ = write!(out, "\n## `codendum {name}`\n\n");
    if let Some(about) = c.get_long_about().or(c.get_about()) {
        let about = one_paragraph(&about.to_string());
        let stop = if about.ends_with(['.', ')']) { "" } else { "." };
        let _ = write!(out, "{about}{stop}\n\n");
    }
    let usage = c
        .clone()
        .bin_name(format!("codendum {name}"))
        .render_usage();
    let usage = usage.to_string();
    let usage = usage.strip_prefix("Usage: ").unwrap_or(&usage);
    let _ = write!(out, "```text\n{usage}\n```\n\n");
    out.push_str("| argument or flag | value | default | environment | meaning |\n");
    out.push_str("|---|---|---|---|---|\n");
    let args = c
        .get_positionals()
        .chain(c.get_arguments().filter(|a| !a.is_positional()))
        .filter(|a| !a.is_hide_set() && !is_builtin(a));
    for a in args {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            flag_cell(a),
            value_cell(a),
            default_cell(a),
            a.get_env()
                .map(|e| format!("`{}`", e.to_string_lossy()))
                .unwrap_or_default(),
            cell(&help(a)),
        );
    }
}

/// The variables of the registry, with their flags and defaults.
fn environment_section(out: &mut String) {
    out.push_str("\n## Environment variables\n\n");
    out.push_str(
        "The `CODENDUM_*` variables of the commands (`src/settings/env.rs`); \
`cargo test --test capacity` reads the same. The variables of the benchmarks and tests are in \
[reference.md](reference.md#environment-variables).\n\n",
    );
    out.push_str("| variable | flag | used by | meaning | when unset |\n");
    out.push_str("|---|---|---|---|---|\n");
    for v in VARS {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            v.name,
            v.flag.map(|f| format!("`{f}`")).unwrap_or_default(),
            cell(v.used_by),
            cell(v.meaning),
            cell(v.default),
        );
    }
}

/// `--help` and `--version`, which clap adds to every command.
fn is_builtin(a: &Arg) -> bool {
    matches!(
        a.get_action(),
        ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
    )
}

fn flag_cell(a: &Arg) -> String {
    if a.is_positional() {
        let name = a
            .get_value_names()
            .and_then(|n| n.first().map(ToString::to_string))
            .unwrap_or_else(|| a.get_id().to_string().to_uppercase());
        let many = matches!(a.get_num_args(), Some(r) if r.max_values() > 1);
        let required = if a.is_required_set() {
            ""
        } else {
            " (optional)"
        };
        let name = name.replace('|', "\\|");
        return format!("`{name}{}`{required}", if many { "…" } else { "" });
    }
    let mut names = Vec::new();
    if let Some(long) = a.get_long() {
        names.push(format!("`--{long}`"));
    }
    if let Some(short) = a.get_short() {
        names.push(format!("`-{short}`"));
    }
    names.join(", ")
}

/// What the flag takes: its value name, or its choices; empty for a switch.
fn value_cell(a: &Arg) -> String {
    if a.is_positional() || !a.get_action().takes_values() {
        return String::new();
    }
    let choices: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|p| !p.is_hide_set())
        .map(|p| p.get_name().to_string())
        .collect();
    if !choices.is_empty() {
        return format!("`{}`", choices.join("\\|"));
    }
    let name = a
        .get_value_names()
        .map(|n| {
            n.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| a.get_id().to_string().to_uppercase());
    format!("`{}`", name.replace('|', "\\|"))
}

fn default_cell(a: &Arg) -> String {
    if !a.get_action().takes_values() {
        return String::new();
    }
    let values: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if values.is_empty() {
        String::new()
    } else {
        format!("`{}`", values.join(","))
    }
}

/// The flag's help as `--help` shows it, with the choices of a value enum
/// and their meanings.
fn help(a: &Arg) -> String {
    let mut text = a
        .get_long_help()
        .or(a.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let choices: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|p| !p.is_hide_set() && a.get_action().takes_values())
        .filter_map(|p| {
            p.get_help().map(|h| {
                format!(
                    "`{}`: {}",
                    p.get_name(),
                    h.to_string().trim_end_matches('.')
                )
            })
        })
        .collect();
    if !choices.is_empty() {
        let _ = write!(text, " ({})", choices.join("; "));
    }
    text
}

/// Text joined into one paragraph.
fn one_paragraph(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text fit for a table cell: one line, pipes escaped.
fn cell(text: &str) -> String {
    one_paragraph(text).replace('|', "\\|")
}
