//! What the main agent does after a tool call went wrong, the way a capable
//! model does: a test runner that is not installed is tried another way
//! (`python3 -m pytest` after `pytest`), a compile error is read in the file
//! it names, an edit that did not apply is retried after reading the file
//! again, and after too many errors the agent stops and says what it could
//! not do.

use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::paths::{basename, lang_of};
use super::report::{finish, telling_line};
use super::tools::{Slot, ToolRole};
use super::transcript::{is_compile_command, is_test_command, Outcome};
use super::{answer, Ctx};
use crate::answer::PlannedAnswer;

/// After this many tool errors in one request the agent stops and reports.
pub const MAX_ERRORS: usize = 5;

/// The step that answers the last tool result when it went wrong (`None`:
/// nothing to recover from, go on with the plan).
pub(super) fn recover(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> Option<PlannedAnswer> {
    let t = ctx.t;
    let errors = t
        .events
        .iter()
        .filter(|e| e.outcome == Outcome::Error)
        .count();
    if errors >= MAX_ERRORS {
        return Some(finish(ctx, rng, false));
    }
    let last = t.events.last()?;
    let command = last.command.as_deref().unwrap_or("");
    match (last.role, last.outcome) {
        (ToolRole::Shell, Outcome::Missing) if is_test_command(command) => {
            // `test_command` is already the next candidate, if there is one.
            if ctx.tests_missing.is_some() {
                return None;
            }
            let sh = ctx.kit.get(ToolRole::Shell)?;
            let text = format!(
                "`{command}` is not available here (`{}`). I'll try `{}` instead.",
                telling_line(&last.result),
                ctx.test_command
            );
            Some(answer(
                text,
                vec![sh.call(vec![(Slot::Command, json!(ctx.test_command))])],
            ))
        }
        (ToolRole::Shell, Outcome::Error) if is_compile_command(command) => {
            read_named(ctx, &last.result)
        }
        (ToolRole::Edit, Outcome::Error) => {
            let path = last.path.as_deref()?;
            let read = ctx.kit.get(ToolRole::Read)?;
            if t.failed_edits(path) >= 2 {
                return None;
            }
            let text = format!(
                "The edit did not apply (`{}`). I'll read `{path}` again to get its current text.",
                telling_line(&last.result)
            );
            Some(answer(
                text,
                vec![read.call(vec![(Slot::Path, json!(path))])],
            ))
        }
        _ => None,
    }
}

/// Reads the source file a compile log names, to see the error in place.
fn read_named(ctx: &Ctx<'_>, log: &str) -> Option<PlannedAnswer> {
    let read = ctx.kit.get(ToolRole::Read)?;
    let named: Vec<&String> = ctx
        .t
        .files
        .iter()
        .filter(|f| lang_of(f).is_some() && log.contains(basename(f)))
        .collect();
    let file = named
        .iter()
        .min_by_key(|f| log.find(basename(f)).unwrap_or(usize::MAX))?;
    let text = format!(
        "The build fails: `{}`. Let me look at `{file}` where the error is.",
        telling_line(log)
    );
    Some(answer(
        text,
        vec![read.call(vec![(Slot::Path, json!(file))])],
    ))
}

/// Whether the agent should still compile after a change: not once a
/// compile failed or its program was missing in this request (it could not
/// fix that, and its final answer says so).
pub(super) fn may_compile(ctx: &Ctx<'_>) -> bool {
    !ctx.t.events.iter().any(|e| {
        e.command.as_deref().is_some_and(is_compile_command)
            && matches!(e.outcome, Outcome::Error | Outcome::Missing)
    })
}
