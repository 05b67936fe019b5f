//! The explore subagent's next step: a few searches and reads, then an
//! answer with findings (the read-only agent OpenCode's `task` tool starts).

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::paths::{basename, lang_of, Lang};
use super::tools::{Slot, ToolRole};
use super::transcript::Outcome;
use super::writing;
use super::{answer, request_plan, Ctx};
use crate::answer::PlannedAnswer;

/// Words the subagent searches for once it has read what it found.
const MORE_PATTERNS: &[&str] = &["send", "broadcast", "socket", "parse", "test"];

/// The next step of a read-only (explore) agent: its number of calls is
/// the class's draw for its instructions (`request_plan::subagent_calls`); it
/// searches, reads and searches again until its last call, which reports
/// its findings (or reports early when there is nothing left to look at).
pub fn next_step(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> PlannedAnswer {
    let t = ctx.t;
    let kit = ctx.kit;
    let calls = request_plan::subagent_calls(ctx.config, &t.task);
    let tool_steps = calls - 1;
    if t.steps >= tool_steps {
        return findings(ctx, rng);
    }
    let sources_known = t.files.iter().any(|f| lang_of(f).is_some());
    let search_failed = t
        .events
        .last()
        .is_some_and(|e| e.outcome == Outcome::Error && !matches!(e.role, ToolRole::Read));
    if t.steps == 0 || (!sources_known || search_failed) && t.steps < 3 {
        if let Some(a) = search(ctx) {
            return a;
        }
        if !sources_known {
            return findings(ctx, rng);
        }
    }
    if let Some(a) = subfolders(ctx, rng) {
        return a;
    }
    let unread: Vec<String> = t
        .files
        .iter()
        .filter(|f| lang_of(f).is_some() && !t.contents.contains_key(f.as_str()))
        .filter(|f| {
            !t.events
                .iter()
                .any(|e| e.role == ToolRole::Read && e.path.as_deref() == Some(f.as_str()))
        })
        .cloned()
        .collect();
    if let Some(read) = kit.get(ToolRole::Read).filter(|_| !unread.is_empty()) {
        let mut files = unread;
        files.sort_by_key(|f| !basename(f).to_ascii_lowercase().contains(ctx.topic));
        files.truncate(1 + usize::from(rng.gen_bool(0.25)));
        let calls = files
            .iter()
            .map(|f| read.call(vec![(Slot::Path, json!(f))]))
            .collect();
        return answer(writing::before_reading(rng, &files, ctx.topic), calls);
    }
    if let Some(grep) = kit
        .get(ToolRole::Grep)
        .filter(|_| !t.failed(ToolRole::Grep))
    {
        let mut patterns = std::iter::once(ctx.topic).chain(MORE_PATTERNS.iter().copied());
        if let Some(pattern) = patterns.nth(t.count(ToolRole::Grep)) {
            let text = writing::before_search(rng, pattern);
            return answer(text, vec![grep.call(vec![(Slot::Pattern, json!(pattern))])]);
        }
    }
    findings(ctx, rng)
}

/// A first look for the sources with a tool not tried yet in this request:
/// glob, list, a read of the folder, grep, `find` through the shell.
fn search(ctx: &Ctx<'_>) -> Option<PlannedAnswer> {
    let (t, kit) = (ctx.t, ctx.kit);
    let ext = match ctx.lang {
        Lang::Java => "java",
        Lang::Python => "py",
    };
    let fresh = |role: ToolRole| kit.get(role).filter(|_| t.count(role) == 0);
    let call = if let Some(glob) = fresh(ToolRole::Glob) {
        glob.call(vec![(Slot::Pattern, json!(format!("**/*.{ext}")))])
    } else if let Some(list) = fresh(ToolRole::List) {
        list.call(vec![(Slot::Path, json!("."))])
    } else if let Some(read) = fresh(ToolRole::Read).filter(|r| r.reads_folders) {
        read.call(vec![(Slot::Path, json!("."))])
    } else if let Some(grep) = fresh(ToolRole::Grep) {
        grep.call(vec![(Slot::Pattern, json!(ctx.topic))])
    } else if let Some(sh) = fresh(ToolRole::Shell) {
        sh.call(vec![(
            Slot::Command,
            json!(format!("find . -name '*.{ext}' | head -100")),
        )])
    } else {
        return None;
    };
    let failed = t.events.last().is_some_and(|e| e.outcome == Outcome::Error);
    let text = if t.steps == 0 {
        format!("I'll find the {ext} sources first.")
    } else if failed {
        "That did not work; I'll look for the sources another way.".to_string()
    } else {
        format!("I'll look further for the {ext} sources.")
    };
    Some(answer(text, vec![call]))
}

/// Folders not worth looking into.
const SKIPPED_DIRS: &[&str] = &[
    "__pycache__",
    "node_modules",
    "target",
    "build",
    "dist",
    "venv",
];

/// Most folder reads one request makes while looking for sources.
const MAX_FOLDER_READS: usize = 4;

/// While the project's sources are not known yet: reads the folders a
/// folder listing showed (OpenCode's `read` lists folders), all in one step.
pub(super) fn subfolders(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> Option<PlannedAnswer> {
    let t = ctx.t;
    let read = ctx.kit.get(ToolRole::Read).filter(|r| r.reads_folders)?;
    let sources = t
        .files
        .iter()
        .filter(|f| lang_of(f) == Some(ctx.lang))
        .count();
    let read_before = |d: &str| {
        t.events
            .iter()
            .any(|e| e.role == ToolRole::Read && e.path.as_deref() == Some(d))
    };
    let folder_reads = t.dirs.iter().filter(|d| read_before(d)).count();
    if sources >= 3 || folder_reads >= MAX_FOLDER_READS {
        return None;
    }
    let dirs: Vec<String> = t
        .dirs
        .iter()
        .filter(|d| {
            let base = basename(d);
            !base.starts_with('.') && !SKIPPED_DIRS.contains(&base) && !read_before(d)
        })
        .take(3)
        .cloned()
        .collect();
    if dirs.is_empty() {
        return None;
    }
    let calls = dirs
        .iter()
        .map(|d| read.call(vec![(Slot::Path, json!(d))]))
        .collect();
    Some(answer(
        writing::before_reading(rng, &dirs, ctx.topic),
        calls,
    ))
}

fn findings(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> PlannedAnswer {
    let t = ctx.t;
    let mut files: Vec<String> = t
        .files
        .iter()
        .filter(|f| t.contents.contains_key(f.as_str()))
        .cloned()
        .collect();
    files.extend(
        t.files
            .iter()
            .filter(|f| lang_of(f).is_some() && !files.contains(f))
            .cloned()
            .collect::<Vec<_>>(),
    );
    PlannedAnswer::text(writing::findings(rng, &files, ctx.topic, ctx.out_tokens))
}
