//! The explore subagent's next step: a few searches and reads, then an
//! answer with findings (the read-only agent OpenCode's `task` tool starts).

use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::paths::{basename, lang_of, Lang};
use super::tools::{Slot, ToolRole};
use super::writing;
use super::{answer, mix, Ctx};
use crate::twin::answer::PlannedAnswer;

/// The next step of a read-only (explore) agent.
pub fn next_step(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> PlannedAnswer {
    let t = ctx.t;
    let kit = ctx.kit;
    let seed = t.plan_seed.unwrap_or_else(|| rng.gen());
    let tool_steps = ChaCha8Rng::seed_from_u64(mix(seed, ctx.config.seed)).gen_range(2..=4);
    if t.steps == 0 || t.files.is_empty() && t.steps < 2 {
        let ext = match ctx.lang {
            Lang::Java => "java",
            Lang::Python => "py",
        };
        let text = format!("I'll find the {ext} sources first.");
        let call = if let Some(glob) = kit.get(ToolRole::Glob) {
            glob.call(vec![(Slot::Pattern, json!(format!("**/*.{ext}")))])
        } else if let Some(list) = kit.get(ToolRole::List) {
            list.call(vec![(Slot::Path, json!("."))])
        } else if let Some(grep) = kit.get(ToolRole::Grep) {
            grep.call(vec![(Slot::Pattern, json!(ctx.topic))])
        } else if let Some(sh) = kit.get(ToolRole::Shell) {
            sh.call(vec![(
                Slot::Command,
                json!(format!("find . -name '*.{ext}' | head -100")),
            )])
        } else if let Some(read) = kit.get(ToolRole::Read) {
            read.call(vec![(Slot::Path, json!("."))])
        } else {
            return findings(ctx, rng);
        };
        return answer(text, vec![call]);
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
    if t.steps > tool_steps || unread.is_empty() {
        return findings(ctx, rng);
    }
    if let Some(read) = kit.get(ToolRole::Read) {
        let mut files = unread;
        files.sort_by_key(|f| !basename(f).to_ascii_lowercase().contains(ctx.topic));
        files.truncate(1 + usize::from(rng.gen_bool(0.25)));
        let calls = files
            .iter()
            .map(|f| read.call(vec![(Slot::Path, json!(f))]))
            .collect();
        return answer(writing::before_reading(rng, &files, ctx.topic), calls);
    }
    if let Some(grep) = kit.get(ToolRole::Grep) {
        if t.count(ToolRole::Grep) == 0 {
            let text = writing::before_search(rng, ctx.topic);
            return answer(
                text,
                vec![grep.call(vec![(Slot::Pattern, json!(ctx.topic))])],
            );
        }
    }
    findings(ctx, rng)
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
    let size = rng.gen_range(150..350) * super::CODE_CHARS_PER_TOKEN;
    PlannedAnswer::text(writing::findings(rng, &files, ctx.topic, size))
}
