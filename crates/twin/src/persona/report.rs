//! The final answer of a coding request, told as it happened: the files that
//! were really changed, what the last test run really said (or that the test
//! runner is not installed), and every problem the agent could not solve. It
//! never claims a change or a passing test run that the conversation does
//! not show.

use rand_chacha::ChaCha8Rng;

use super::paths::is_test_path;
use super::tools::ToolRole;
use super::transcript::{is_compile_command, Event, Outcome};
use super::writing::{pad, pad_with};
use super::Ctx;
use crate::answer::PlannedAnswer;

/// The final text answer. `completed` says whether the agent got through
/// its plan (false: it stopped early and says so).
pub(super) fn finish(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng, completed: bool) -> PlannedAnswer {
    let t = ctx.t;
    let mut changed: Vec<String> = Vec::new();
    for e in t.changes() {
        if let Some(p) = &e.path {
            if !changed.contains(p) {
                changed.push(p.clone());
            }
        }
    }
    let status = test_status(ctx);
    let problems = problems(ctx);
    let size = super::size::draw(&ctx.config.spread.output_tokens.final_answer, rng);
    let report = Report {
        changed: &changed,
        tests: &status,
        problems: &problems,
        completed,
    };
    PlannedAnswer::text(final_report(rng, &report, ctx.topic, size))
}

/// What the tests said after the last change.
fn test_status(ctx: &Ctx<'_>) -> TestStatus {
    let t = ctx.t;
    if let Some(printed) = &ctx.tests_missing {
        return TestStatus::Missing {
            command: ctx.test_command.clone(),
            printed: printed.clone(),
        };
    }
    let Some(last) = t.last_test() else {
        return TestStatus::NotRun {
            no_shell: !ctx.kit.has(ToolRole::Shell),
        };
    };
    let command = last
        .command
        .clone()
        .unwrap_or_else(|| ctx.test_command.clone());
    let changed_after = t
        .events
        .iter()
        .skip_while(|e| !std::ptr::eq(*e, last))
        .skip(1)
        .any(|e| matches!(e.role, ToolRole::Edit | ToolRole::Write) && e.outcome == Outcome::Ok);
    match last.outcome {
        _ if changed_after => TestStatus::Stale { command },
        Outcome::TestPassed => TestStatus::Passed { command },
        _ => TestStatus::Failed {
            command,
            line: telling_line(&last.result),
        },
    }
}

/// Problems left at the end: a compile error not followed by a good build or
/// test run, files that could not be edited, tools that failed.
fn problems(ctx: &Ctx<'_>) -> Vec<String> {
    let t = ctx.t;
    let mut out = Vec::new();
    let last_build = t.events.iter().rev().find(|e| {
        e.role == ToolRole::Shell
            && (e.command.as_deref().is_some_and(is_compile_command)
                || matches!(e.outcome, Outcome::TestPassed | Outcome::TestFailed))
    });
    if let Some(e) = last_build.filter(|e| e.outcome == Outcome::Error) {
        out.push(format!(
            "`{}` reports an error I could not fix: `{}`",
            e.command.as_deref().unwrap_or("the build"),
            telling_line(&e.result)
        ));
    }
    let mut edits: Vec<&Event> = t
        .events
        .iter()
        .filter(|e| e.role == ToolRole::Edit && e.outcome == Outcome::Error)
        .collect();
    edits.dedup_by(|a, b| a.path == b.path);
    for e in edits {
        let path = e.path.as_deref().unwrap_or("a file");
        let fixed = t
            .changes()
            .iter()
            .any(|c| c.step > e.step && c.path.as_deref() == Some(path));
        if !fixed {
            out.push(format!(
                "I could not edit `{path}`: {}",
                telling_line(&e.result)
            ));
        }
    }
    for role in [ToolRole::Glob, ToolRole::Grep, ToolRole::List] {
        if let Some(e) = t
            .events
            .iter()
            .find(|e| e.role == role && e.outcome == Outcome::Error)
        {
            let name = ctx
                .kit
                .get(role)
                .map(|m| m.name.as_str())
                .unwrap_or("search");
            out.push(format!(
                "The `{name}` tool failed (`{}`), so I looked around another way.",
                telling_line(&e.result)
            ));
        }
    }
    out
}

/// The line of a log or error that says what went wrong (at most 160
/// characters).
pub(super) fn telling_line(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let words = [
        "Error",
        "error",
        "FAILED",
        "failed",
        "not found",
        "No module",
    ];
    // `SyntaxError: …` says more than `*** Error compiling …`.
    let line = lines
        .iter()
        .find(|l| l.contains("Error:"))
        .or_else(|| lines.iter().find(|l| words.iter().any(|w| l.contains(w))))
        .or_else(|| lines.last())
        .copied()
        .unwrap_or("no output");
    let mut s: String = line.chars().take(160).collect();
    s = s.replace('`', "'");
    s
}

/// Sentences that claim nothing, for answers that could not confirm the work.
const NEUTRAL: &[&str] = &[
    "Each change is listed above with the file it is in.",
    "The code around the changes is as it was.",
    "I kept the names consistent with the existing classes and functions.",
    "Please review the changes before relying on them.",
    "Nothing else in the project was touched.",
];

/// What the last test run of a request said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TestStatus {
    /// The last run after the last change passed.
    Passed {
        /// The command that ran.
        command: String,
    },
    /// The last run after the last change failed.
    Failed {
        /// The command that ran.
        command: String,
        /// The line of the log that tells why.
        line: String,
    },
    /// Files changed after the last run.
    Stale {
        /// The command that ran before the change.
        command: String,
    },
    /// Every way of running the tests is not installed.
    Missing {
        /// The command that was tried first.
        command: String,
        /// What the last attempt printed.
        printed: String,
    },
    /// The tests never ran.
    NotRun {
        /// Whether no shell tool was offered.
        no_shell: bool,
    },
}

/// The facts a final answer reports.
pub(super) struct Report<'a> {
    /// Files changed successfully.
    pub changed: &'a [String],
    /// What the tests said.
    pub tests: &'a TestStatus,
    /// Problems left unsolved, one sentence each.
    pub problems: &'a [String],
    /// Whether the agent got through its plan.
    pub completed: bool,
}

/// The final answer of a coding request, about `target_tokens` long: only
/// what happened.
pub(super) fn final_report(
    rng: &mut ChaCha8Rng,
    report: &Report<'_>,
    topic: &str,
    target_tokens: usize,
) -> String {
    let passed = matches!(report.tests, TestStatus::Passed { .. });
    let good = passed && report.problems.is_empty() && !report.changed.is_empty();
    let mut s = if good {
        format!("Done. The chat project now handles {topic}s as requested.\n\nChanges:\n")
    } else if report.changed.is_empty() {
        let more = if report.completed {
            ""
        } else {
            " I could not finish the task."
        };
        format!("I did not change any file.{more}\n\n")
    } else {
        "I changed the files below, but I could not confirm that the change works.\n\nChanges:\n"
            .to_string()
    };
    // A short answer names the files on one line; a longer one says what
    // each holds.
    let one_line = target_tokens < 40 + 20 * report.changed.len();
    if one_line && !report.changed.is_empty() {
        let names: Vec<String> = report
            .changed
            .iter()
            .map(|f| format!("`{}`", super::paths::basename(f)))
            .collect();
        s.push_str(&names.join(", "));
        s.push('\n');
    }
    for f in report.changed.iter().filter(|_| !one_line) {
        let what = if is_test_path(f) {
            format!("tests for the {topic} behaviour")
        } else {
            format!("{topic} handling and input checks")
        };
        s.push_str(&format!("- `{f}`: {what}\n"));
    }
    s.push('\n');
    s.push_str(&match report.tests {
        TestStatus::Passed { command } => format!("`{command}` passes."),
        TestStatus::Failed { command, line } => format!("`{command}` still fails: `{line}`."),
        TestStatus::Stale { command } => {
            format!("I did not run `{command}` again after the last change.")
        }
        TestStatus::Missing { command, printed } => {
            let program = if command.contains("pytest") {
                "pytest"
            } else {
                command.split_whitespace().next().unwrap_or(command)
            };
            format!(
                "I could not run the tests: `{program}` is not installed on this machine \
                 (`{printed}`). Install it and run `{command}` to check the change."
            )
        }
        TestStatus::NotRun { no_shell: true } => {
            "I did not run the tests: no tool to run commands was offered.".to_string()
        }
        TestStatus::NotRun { no_shell: false } => "I did not run the tests.".to_string(),
    });
    s.push_str("\n\n");
    for p in report.problems {
        s.push_str(&format!("- {p}\n"));
    }
    if !report.problems.is_empty() {
        s.push('\n');
    }
    if good {
        pad(rng, s, target_tokens)
    } else {
        pad_with(rng, s, target_tokens, NEUTRAL)
    }
}
