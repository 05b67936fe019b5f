//! The main agent's next step: look around, read, edit or write, run the
//! tests, read a failure and fix it, and finish with a summary.
//!
//! A coding request has a budget of model calls drawn from the class
//! (the plan's steps): the work is planned to fill it (reads, changes,
//! builds, tests, fixes); when the plan is done early the agent keeps
//! checking and improving (more reads, searches, another change, the tests
//! again), and when the budget is spent it answers with what it has.

use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::changes::{another_change, change_step, edit_call, relevance, source_candidates};
use super::paths::{basename, is_test_path, lang_of};
use super::recovery::{may_compile, recover};
use super::report::finish;
use super::request_plan::{subagent_calls, Plan, SessionCalls, BUDGET_WORDS, MAX_STEPS};
use super::tools::{Slot, ToolRole};
use super::transcript::{Event, Outcome};
use super::writing;
use super::{answer, mix, size, Ctx};
use crate::answer::PlannedAnswer;

/// After this many failed test runs the agent stops trying and reports.
const MAX_FAILED_RUNS: usize = 3;

/// Output tokens of this request's next step that writes code (an edit, a
/// write, a fix) and of its next other step. A request draws its agent
/// steps' sizes once, from the class, and hands the largest to the steps
/// that write code and the smallest to the others (reads, searches, test
/// runs), so each request's sizes are the class's draws and the code
/// carries the long answers, as a model's does. The first step, before the
/// request's plan exists, draws its own.
pub fn step_sizes(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> (usize, usize) {
    let dist = &ctx.config.spread.output_tokens.agent_step;
    let Some(seed) = ctx.t.plan_seed else {
        let one = size::draw(dist, rng);
        return (one, one);
    };
    let plan = plan_of(ctx, rng);
    let mut r = ChaCha8Rng::seed_from_u64(mix(seed, ctx.config.seed ^ 0x0005_12e5));
    let n = plan.steps.saturating_sub(1).max(1);
    let mut sizes: Vec<usize> = (0..n).map(|_| size::draw(dist, &mut r)).collect();
    sizes.sort_unstable();
    let t = ctx.t;
    let code_steps = {
        let mut steps: Vec<usize> = t
            .events
            .iter()
            .filter(|e| matches!(e.role, ToolRole::Edit | ToolRole::Write))
            .map(|e| e.step)
            .collect();
        steps.dedup();
        steps.len()
    };
    let other_steps = t.steps.saturating_sub(code_steps);
    let code = sizes[n - 1 - code_steps.min(n - 1)];
    let other = sizes[other_steps.min(n - 1)];
    (code, other)
}

/// Whether an answer writes code: one of its calls edits or writes a file.
pub fn writes_code(answer: &PlannedAnswer, kit: &super::tools::ToolKit) -> bool {
    answer.parts.iter().any(|p| match p {
        crate::answer::AnswerPart::ToolCall { name, .. } => kit
            .by_name(name)
            .is_some_and(|t| matches!(t.role, ToolRole::Edit | ToolRole::Write)),
        _ => false,
    })
}

/// The calls of the subagent this request started, if it started one.
fn delegated_calls(ctx: &Ctx<'_>) -> Option<usize> {
    let e = ctx.t.events.iter().find(|e| e.role == ToolRole::Task)?;
    Some(subagent_calls(
        ctx.config,
        e.prompt.as_deref().unwrap_or(""),
    ))
}

fn plan_of(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> Plan {
    let seed = ctx.t.plan_seed.unwrap_or_else(|| rng.gen());
    let mut p = ChaCha8Rng::seed_from_u64(mix(seed, ctx.config.seed));
    // A request past its first step makes at least two calls, drawn from the
    // class above its first (its first step already was no answer). One that
    // delegated makes at least the subagent's and two of its own: a smaller
    // draw is raised to that (raising only those keeps the class's
    // distribution closer than drawing above the floor would).
    let sub = delegated_calls(ctx).unwrap_or(0);
    let calls = &ctx.config.spread.calls_per_request;
    let drawn = match ctx.session_calls {
        // The session's recorded row says; past the first step, at least
        // two calls (a step and an answer).
        Some(SessionCalls::Drawn(n)) => n as usize,
        _ if sub == 0 => calls.sample_at_least(1.5, &mut p).round() as usize,
        _ => calls.sample_count(&mut p) as usize,
    };
    let floor = sub + 2;
    let steps = drawn.max(floor).saturating_sub(sub).clamp(2, MAX_STEPS);
    // The work between the first step and the final answer: a sixth
    // reading, the rest changing and checking (a change, a build after
    // some, the test runs).
    let work = steps.saturating_sub(2) as f64;
    let read_steps = ((work / 6.0).round() as usize).clamp(1, 6);
    let edits = (((work - read_steps as f64 - 1.0) / 1.6).round() as usize).clamp(1, 12);
    Plan {
        steps,
        read_steps,
        edits,
        write_new: p.gen_bool(0.3),
        baseline_test: p.gen_bool(0.2),
        compile_after_change: p.gen_range(0.3..0.8),
    }
}

fn is_change(e: &Event) -> bool {
    matches!(e.role, ToolRole::Edit | ToolRole::Write) && e.outcome == Outcome::Ok
}

/// The next step of the main (build) agent.
pub fn next_step(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> PlannedAnswer {
    let t = ctx.t;
    if t.steps == 0 {
        return first_step(ctx, rng);
    }
    let plan = plan_of(ctx, rng);
    // The budget is spent: answer with what there is.
    if t.steps + 1 >= plan.steps {
        return finish(ctx, rng, true);
    }
    let since = t.since_last_test();
    let changed_since = since.iter().any(is_change);
    let can_test = ctx.kit.has(ToolRole::Shell) && ctx.tests_missing.is_none();
    // One call before the answer: check the last changes.
    if t.steps + 2 == plan.steps && changed_since && can_test {
        return run_tests(ctx, rng, t.last_test().is_some());
    }
    if let Some(a) = recover(ctx, rng) {
        return a;
    }
    let changes = t.changes().len();
    match after_tests(ctx, rng, since, changed_since) {
        Some(Next::Answer(a)) => return a,
        Some(Next::Done) => return more_work(ctx, rng, changed_since),
        None => {}
    }
    let just_changed = t.events.last().is_some_and(is_change);
    if just_changed && rng.gen_bool(plan.compile_after_change) && may_compile(ctx) {
        if let Some(a) = compile(ctx, rng) {
            return a;
        }
    }
    if t.files.is_empty() {
        let listed = t
            .events
            .iter()
            .any(|e| is_listing(e) && e.outcome == Outcome::Ok);
        return if listed {
            finish(ctx, rng, false)
        } else {
            listing(ctx, rng)
        };
    }
    if changes == 0 {
        if let Some(a) = super::explore::subfolders(ctx, rng) {
            return a;
        }
    }
    let read_steps = read_steps(ctx);
    let unread = unread_files(ctx);
    // A subagent that explored the code already reported on it.
    let delegated = usize::from(t.count(ToolRole::Task) > 0);
    if read_steps + delegated < plan.read_steps && !unread.is_empty() && ctx.kit.has(ToolRole::Read)
    {
        if plan.baseline_test && can_test && t.last_test().is_none() && read_steps >= 1 {
            return run_tests(ctx, rng, false);
        }
        if ctx.kit.has(ToolRole::Grep) && t.count(ToolRole::Grep) == 0 && rng.gen_bool(0.5) {
            return grep(ctx, rng, ctx.topic);
        }
        let n = (1 + usize::from(rng.gen_bool(0.3))).min(unread.len());
        return read(ctx, rng, &unread[..n]);
    }
    // Nothing to change is known yet (a subagent read the code, not this
    // agent): read a source first, as OpenCode's edit tool requires.
    let known_sources = source_candidates(ctx).iter().any(|f| !is_test_path(f));
    if changes == 0 && !known_sources && ctx.kit.has(ToolRole::Read) {
        if let Some(first) = unread.iter().find(|f| lang_of(f) == Some(ctx.lang)) {
            return read(ctx, rng, std::slice::from_ref(first));
        }
    }
    if changes < plan.edits {
        if let Some(a) = change_step(ctx, rng, &plan, changes) {
            return a;
        }
        if !unread.is_empty() && ctx.kit.has(ToolRole::Read) && read_steps < MAX_STEPS / 4 {
            return read(ctx, rng, &unread[..1]);
        }
    }
    if can_test && (t.last_test().is_none() || changed_since) {
        return run_tests(ctx, rng, t.last_test().is_some());
    }
    more_work(ctx, rng, changed_since)
}

/// Words the agent searches the code for once its plan is done and calls
/// are left, after the task's own topic.
const MORE_PATTERNS: &[&str] = &["broadcast", "socket", "close", "send", "parse", "error"];

/// The plan is done and the budget is not: untested changes are tested,
/// unread files read, the code searched, one more change made, or the
/// tests run again; the answer when none of that is possible.
fn more_work(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng, changed_since: bool) -> PlannedAnswer {
    let t = ctx.t;
    let kit = ctx.kit;
    let can_test = kit.has(ToolRole::Shell) && ctx.tests_missing.is_none();
    if changed_since && can_test {
        return run_tests(ctx, rng, t.last_test().is_some());
    }
    let unread = unread_files(ctx);
    if !unread.is_empty() && kit.has(ToolRole::Read) {
        let n = (1 + usize::from(rng.gen_bool(0.3))).min(unread.len());
        return read(ctx, rng, &unread[..n]);
    }
    let searched = t.count(ToolRole::Grep);
    let mut patterns = std::iter::once(ctx.topic).chain(MORE_PATTERNS.iter().copied());
    if let Some(pattern) = patterns.nth(searched).filter(|_| kit.has(ToolRole::Grep)) {
        if !t.failed(ToolRole::Grep) && rng.gen_bool(0.5) {
            return grep(ctx, rng, pattern);
        }
    }
    if let Some(a) = another_change(ctx, rng) {
        return a;
    }
    if can_test {
        return run_tests(ctx, rng, t.last_test().is_some());
    }
    finish(ctx, rng, true)
}

/// What the last test run leaves to do.
enum Next {
    /// This answer.
    Answer(PlannedAnswer),
    /// The tests pass after the changes: the plan is done.
    Done,
}

/// After a test run: fix a failure, give up after too many, or say the
/// plan is done when the tests pass and nothing changed since (`None`: go
/// on with the plan).
fn after_tests(
    ctx: &Ctx<'_>,
    rng: &mut ChaCha8Rng,
    since: &[Event],
    changed_since: bool,
) -> Option<Next> {
    let t = ctx.t;
    let changes = t.changes().len();
    let last = t.last_test()?;
    let failed_runs = t
        .events
        .iter()
        .filter(|e| e.outcome == Outcome::TestFailed)
        .count();
    match last.outcome {
        Outcome::TestFailed if !changed_since && failed_runs >= MAX_FAILED_RUNS => {
            Some(Next::Answer(finish(ctx, rng, false)))
        }
        Outcome::TestFailed if !changed_since => {
            Some(Next::Answer(fix_step(ctx, rng, last, since)))
        }
        Outcome::TestPassed if !changed_since && changes > 0 => Some(Next::Done),
        _ => None,
    }
}

fn first_step(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> PlannedAnswer {
    let kit = ctx.kit;
    // A request drawn to take one call is answered at once.
    let at_once = match ctx.session_calls {
        Some(SessionCalls::Drawn(n)) => n <= 1,
        Some(SessionCalls::FirstStep(share)) => rng.gen_bool(share.clamp(0.0, 1.0)),
        None => ctx.config.spread.calls_per_request.sample_count(rng) <= 1,
    };
    if at_once {
        return finish(ctx, rng, true);
    }
    if let Some(task) = kit.get(ToolRole::Task) {
        if rng.gen_bool(ctx.config.spread.subagent_share) {
            let topic = ctx.topic;
            // How far the subagent may look: its calls drawn from the class
            // (at least a look and a report), said in its instructions.
            let calls =
                (ctx.config.spread.subagent_calls.sample_count(rng) as usize).clamp(2, MAX_STEPS);
            let prompt = format!(
                "Find the code of this project that deals with {topic}s: the classes or modules, \
                 the methods involved, and the tests that cover them. The task is: {}. \
                 Report the file paths and what each one does; do not change anything. \
                 {BUDGET_WORDS} {} searches or reads.",
                ctx.t.task.trim(),
                calls - 1
            );
            let call = task.call(vec![
                (Slot::Description, json!(format!("Find {topic} handling"))),
                (Slot::Prompt, json!(prompt)),
                (Slot::SubagentType, json!("explore")),
            ]);
            return answer(writing::before_task(rng, topic), vec![call]);
        }
    }
    if let Some(todo) = kit.get(ToolRole::Todo) {
        if rng.gen_bool(ctx.config.todo_probability) {
            let topic = ctx.topic;
            let items = json!([
                "Explore the project structure",
                format!("Implement {topic} support"),
                format!("Add tests for {topic}s"),
                "Run the tests and fix failures",
            ]);
            let text = "I'll plan the work first.".to_string();
            return answer(text, vec![todo.call(vec![(Slot::Todos, items)])]);
        }
    }
    let unread = unread_files(ctx);
    let sources = unread.iter().filter(|f| lang_of(f).is_some()).count();
    if sources >= 2 && kit.has(ToolRole::Read) {
        let n = rng.gen_range(1..=2).min(unread.len());
        return read(ctx, rng, &unread[..n]);
    }
    listing(ctx, rng)
}

fn read_steps(ctx: &Ctx<'_>) -> usize {
    let mut steps: Vec<usize> = ctx
        .t
        .events
        .iter()
        .filter(|e| e.role == ToolRole::Read)
        .filter(|e| {
            let p = e.path.as_deref().unwrap_or("");
            p != "." && !ctx.t.dirs.iter().any(|d| d == p)
        })
        .map(|e| e.step)
        .collect();
    steps.dedup();
    steps.len()
}

/// Files worth reading whose content the conversation does not hold yet
/// (not read or written in this request or an earlier one), most relevant
/// first.
fn unread_files(ctx: &Ctx<'_>) -> Vec<String> {
    let build = [
        "pom.xml",
        "build.gradle",
        "pyproject.toml",
        "requirements.txt",
    ];
    let mut files: Vec<String> = ctx
        .t
        .files
        .iter()
        .filter(|f| lang_of(f).is_some() || build.contains(&basename(f)))
        .filter(|f| !ctx.t.contents.contains_key(f.as_str()))
        .filter(|f| {
            !ctx.t
                .events
                .iter()
                .any(|e| e.role == ToolRole::Read && e.path.as_deref() == Some(f.as_str()))
        })
        .cloned()
        .collect();
    files.sort_by_key(|f| -relevance(ctx, f));
    files
}

fn read(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng, files: &[String]) -> PlannedAnswer {
    let Some(tool) = ctx.kit.get(ToolRole::Read) else {
        return finish(ctx, rng, false);
    };
    let calls = files
        .iter()
        .map(|f| tool.call(vec![(Slot::Path, json!(f))]))
        .collect();
    answer(writing::before_reading(rng, files, ctx.topic), calls)
}

/// Whether a call was a look at the project's files: a list, a glob, a read
/// of a folder, `find` or `ls` through the shell.
fn is_listing(e: &Event) -> bool {
    match e.role {
        ToolRole::List | ToolRole::Glob => true,
        ToolRole::Read => e.path.as_deref() == Some("."),
        ToolRole::Shell => e
            .command
            .as_deref()
            .is_some_and(|c| c.starts_with("find ") || c.starts_with("ls")),
        _ => false,
    }
}

/// Lists the project with what the toolset offers: a list tool, a read tool
/// that reads folders, a glob, `ls` through the shell, or a plain read of `.`.
fn listing(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> PlannedAnswer {
    let kit = ctx.kit;
    let t = ctx.t;
    let tried = |role: ToolRole| t.events.iter().any(|e| e.role == role && is_listing(e));
    let read = kit.get(ToolRole::Read).filter(|_| !tried(ToolRole::Read));
    let call = if let Some(list) = kit.get(ToolRole::List).filter(|_| !tried(ToolRole::List)) {
        list.call(vec![(Slot::Path, json!("."))])
    } else if let Some(read) = read.filter(|r| r.reads_folders) {
        read.call(vec![(Slot::Path, json!("."))])
    } else if let Some(glob) = kit.get(ToolRole::Glob).filter(|_| !tried(ToolRole::Glob)) {
        glob.call(vec![(Slot::Pattern, json!("**/*"))])
    } else if let Some(sh) = kit.get(ToolRole::Shell).filter(|_| !tried(ToolRole::Shell)) {
        sh.call(vec![(
            Slot::Command,
            json!("find . -type f -not -path '*/.git/*' | head -100"),
        )])
    } else if let Some(read) = read {
        read.call(vec![(Slot::Path, json!("."))])
    } else {
        return finish(ctx, rng, false);
    };
    answer(writing::before_listing(rng), vec![call])
}

fn grep(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng, pattern: &str) -> PlannedAnswer {
    match ctx.kit.get(ToolRole::Grep) {
        Some(g) => answer(
            writing::before_search(rng, pattern),
            vec![g.call(vec![(Slot::Pattern, json!(pattern))])],
        ),
        None => finish(ctx, rng, false),
    }
}

fn run_tests(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng, again: bool) -> PlannedAnswer {
    match ctx.kit.get(ToolRole::Shell) {
        Some(sh) => answer(
            writing::before_tests(rng, &ctx.test_command, again),
            vec![sh.call(vec![(Slot::Command, json!(ctx.test_command))])],
        ),
        None => finish(ctx, rng, false),
    }
}

/// Compiles the project after a change (`None` when there is no shell or no
/// known compile command for the project).
fn compile(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng) -> Option<PlannedAnswer> {
    let sh = ctx.kit.get(ToolRole::Shell)?;
    let command = match ctx.test_command.split_whitespace().next()? {
        "mvn" | "./mvnw" => "mvn -q compile",
        "./gradlew" | "gradle" => "./gradlew -q compileJava",
        "pytest" | "python3" => "python3 -m compileall -q .",
        _ => return None,
    };
    Some(answer(
        writing::before_compile(rng, command),
        vec![sh.call(vec![(Slot::Command, json!(command))])],
    ))
}

/// After a failed test run: read the files the log names, then edit the source.
fn fix_step(ctx: &Ctx<'_>, rng: &mut ChaCha8Rng, failed: &Event, since: &[Event]) -> PlannedAnswer {
    let t = ctx.t;
    let mentioned: Vec<&String> = t
        .files
        .iter()
        .filter(|f| failed.result.contains(basename(f)))
        .collect();
    let editable = |f: &&String| t.contents.contains_key(f.as_str()) && lang_of(f).is_some();
    let target = mentioned
        .iter()
        .copied()
        .filter(|f| !is_test_path(f))
        .find(|f| editable(f))
        .or_else(|| {
            t.changes()
                .iter()
                .rev()
                .filter_map(|e| e.path.as_ref())
                .find(|p| !is_test_path(p) && editable(p))
        })
        .or_else(|| source_candidates(ctx).into_iter().next())
        .cloned();
    let Some(target) = target else {
        return match unread_files(ctx).first() {
            Some(f) => read(ctx, rng, std::slice::from_ref(f)),
            None => finish(ctx, rng, false),
        };
    };
    if !since.iter().any(|e| e.role == ToolRole::Read) && ctx.kit.has(ToolRole::Read) {
        let mut files: Vec<String> = mentioned
            .iter()
            .filter(|f| is_test_path(f))
            .take(1)
            .map(|f| f.to_string())
            .collect();
        files.push(target);
        files.dedup();
        return read(ctx, rng, &files);
    }
    let size = size::code_chars(ctx.out_tokens, super::changes::EDIT_OVERHEAD, 20);
    match edit_call(ctx, rng, &target, size) {
        Some(call) => answer(writing::before_fix(rng, &target), vec![call]),
        None => finish(ctx, rng, false),
    }
}
