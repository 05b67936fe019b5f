//! The main agent's changes: which file to change, an edit that inserts
//! code before a unique line, or a new file next to the sources or tests.

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::code;
use super::paths::{basename, dirname, is_test_path, lang_of, Lang};
use super::report::finish;
use super::request_plan::Plan;
use super::size;
use super::tools::{Slot, ToolRole};
use super::writing;
use super::{answer, Ctx};
use crate::answer::{AnswerPart, PlannedAnswer};

/// Source files of the project's language with known content, most relevant first.
pub(super) fn source_candidates<'a>(ctx: &'a Ctx<'_>) -> Vec<&'a String> {
    let mut c: Vec<&String> = ctx
        .t
        .files
        .iter()
        .filter(|f| lang_of(f) == Some(ctx.lang) && ctx.t.contents.contains_key(f.as_str()))
        .filter(|f| ctx.t.failed_edits(f) < 2)
        .collect();
    c.sort_by_key(|f| (is_test_path(f), -relevance(ctx, f)));
    c
}

pub(super) fn change_step(
    ctx: &Ctx<'_>,
    rng: &mut ChaCha8Rng,
    plan: &Plan,
    index: usize,
) -> Option<PlannedAnswer> {
    let last = index + 1 >= plan.edits;
    let candidates = source_candidates(ctx);
    let can_write = ctx.kit.has(ToolRole::Write);
    // A task that asks for tests gets a test, at the latest with the last change.
    let owes_test = ctx.t.task.to_ascii_lowercase().contains("test")
        && !ctx
            .t
            .changes()
            .iter()
            .any(|e| e.path.as_deref().is_some_and(is_test_path));
    if can_write && ((plan.write_new && last) || !ctx.kit.has(ToolRole::Edit)) {
        let tests = !candidates.is_empty() && (owes_test && last || rng.gen_bool(0.6));
        return Some(write_new(ctx, rng, tests));
    }
    let sources: Vec<&&String> = candidates.iter().filter(|f| !is_test_path(f)).collect();
    let tests: Vec<&&String> = candidates.iter().filter(|f| is_test_path(f)).collect();
    if last && owes_test && tests.is_empty() && can_write {
        return Some(write_new(ctx, rng, true));
    }
    let target = match (last, tests.first(), sources.is_empty()) {
        (true, Some(t), _) => (**t).clone(),
        (_, _, false) => (**sources[index % sources.len()]).clone(),
        (_, Some(t), true) => (**t).clone(),
        (_, None, true) => return can_write.then(|| write_new(ctx, rng, false)),
    };
    let size = edit_size(ctx);
    match edit_call(ctx, rng, &target, size) {
        Some(call) => Some(answer(
            writing::before_change(rng, &target, ctx.topic, false),
            vec![call],
        )),
        None => can_write.then(|| write_new(ctx, rng, is_test_path(&target))),
    }
}

/// One more change after the plan's: an edit of a known source or test
/// file, taken in turn (`None` when no file can be edited).
pub(super) fn another_change(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> Option<PlannedAnswer> {
    let candidates = source_candidates(ctx);
    let target = candidates.get(ctx.t.changes().len() % candidates.len().max(1))?;
    let call = edit_call(ctx, rng, target, edit_size(ctx))?;
    Some(answer(
        writing::before_change(rng, target, ctx.topic, false),
        vec![call],
    ))
}

/// Characters of new code in an edit: what the answer's drawn length
/// leaves beside the rest of the call (at least a few lines).
fn edit_size(ctx: &Ctx<'_>) -> usize {
    size::code_chars(ctx.out_tokens, EDIT_OVERHEAD, 20)
}

/// Tokens of an edit's answer besides its new code: the sentence before
/// it, the path, the line it inserts before, the JSON around them.
pub(super) const EDIT_OVERHEAD: usize = 45;

/// An edit that inserts code before a line that appears exactly once in the
/// file's known content (the line itself is the `oldString`).
pub(super) fn edit_call(
    ctx: &Ctx<'_>,
    rng: &mut ChaCha8Rng,
    path: &str,
    size: usize,
) -> Option<AnswerPart> {
    let tool = ctx.kit.get(ToolRole::Edit)?;
    let content = ctx.t.contents.get(path)?;
    let (line, indent) = anchor(content, lang_of(path).unwrap_or(ctx.lang), rng)?;
    let lang = lang_of(path).unwrap_or(ctx.lang);
    let block = code::block(lang, is_test_path(path), rng, ctx.topic, size, &indent);
    let new = format!("{block}\n\n{line}");
    Some(tool.call(vec![
        (Slot::Path, json!(path)),
        (Slot::Old, Value::from(line)),
        (Slot::New, Value::from(new)),
    ]))
}

/// A line to insert before: a method declaration when there is a unique one,
/// otherwise any unique, non-trivial line. Returns the line and its indentation.
fn anchor(content: &str, lang: Lang, rng: &mut ChaCha8Rng) -> Option<(String, String)> {
    // A line is unique when the text holds it once; counting is a scan of
    // the whole text per line, so the declarations are counted first and
    // the other lines only when no declaration is unique.
    let unique = |l: &&str| l.trim().len() >= 4 && content.matches(*l).count() == 1;
    let declaration = |l: &&str| {
        let s = l.trim_start();
        let indented = s.len() < l.len();
        match lang {
            Lang::Java => {
                indented
                    && s.contains('(')
                    && s.trim_end().ends_with('{')
                    && ["public ", "private ", "protected ", "static ", "void "]
                        .iter()
                        .any(|p| s.starts_with(p))
            }
            Lang::Python => s.starts_with("def ") || s.starts_with("async def "),
        }
    };
    let preferred: Vec<&str> = content.lines().filter(declaration).filter(unique).collect();
    let line = match preferred.choose(rng) {
        Some(l) => *l,
        None => *content
            .lines()
            .filter(unique)
            .collect::<Vec<_>>()
            .choose(rng)?,
    };
    let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
    Some((line.to_string(), indent))
}

/// Writes a new file next to the project's sources or tests.
fn write_new(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng, tests: bool) -> PlannedAnswer {
    let Some(tool) = ctx.kit.get(ToolRole::Write) else {
        return finish(ctx, rng, false);
    };
    let t = ctx.t;
    let topic = ctx.topic;
    let near = t
        .files
        .iter()
        .find(|f| lang_of(f) == Some(ctx.lang) && is_test_path(f) == tests)
        .or_else(|| t.files.iter().find(|f| lang_of(f) == Some(ctx.lang)));
    let mut dir = near.map(|f| dirname(f).to_string()).unwrap_or_default();
    if tests && near.is_some_and(|f| !is_test_path(f)) {
        dir = match ctx.lang {
            Lang::Java => dir.replace("src/main/", "src/test/"),
            Lang::Python => "tests".to_string(),
        };
    }
    let cap = {
        let mut c = topic.to_string();
        if let Some(f) = c.get_mut(0..1) {
            f.make_ascii_uppercase();
        }
        c
    };
    let name = match (ctx.lang, tests) {
        (Lang::Java, true) => format!("{cap}Test.java"),
        (Lang::Java, false) => format!("{cap}Store.java"),
        (Lang::Python, true) => format!("test_{topic}.py"),
        (Lang::Python, false) => format!("{topic}_store.py"),
    };
    let mut path = if dir.is_empty() {
        name.clone()
    } else {
        format!("{dir}/{name}")
    };
    let mut n = 2;
    while t.files.contains(&path) {
        path = path.replacen(&name, &format!("{n}{name}"), 1);
        n += 1;
    }
    // A new file holds its header and at least one method or test.
    let size = size::code_chars(ctx.out_tokens, 30, 80);
    let content = code::new_file(ctx.lang, &path, tests, rng, topic, size);
    let call = tool.call(vec![
        (Slot::Path, json!(path)),
        (Slot::Content, json!(content)),
    ]);
    answer(writing::before_change(rng, &path, topic, true), vec![call])
}

/// How useful reading a file is for the task (higher first).
pub(super) fn relevance(ctx: &Ctx<'_>, path: &str) -> i32 {
    let base = basename(path).to_ascii_lowercase();
    let mut score = 0;
    if ctx.t.task.contains(path) {
        score += 4;
    }
    if lang_of(path) == Some(ctx.lang) {
        score += 3;
    }
    if base.contains(ctx.topic) {
        score += 2;
    }
    if base.contains("server") {
        score += 1;
    }
    if ["server", "client", "chat", "main"]
        .iter()
        .any(|w| base.contains(w))
    {
        score += 1;
    }
    if is_test_path(path) {
        score -= 1;
    }
    score
}
