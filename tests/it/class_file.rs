//! Class files in use: a class's distributions are what the simulated
//! students and the twin's persona do (calls per coding request, output
//! tokens by kind, follow-ups, pauses, prompt and appended sizes), a class
//! learned from a run reads back and plans, and bad class files are one
//! line naming the file and the field (exit 2).

use crate::cli_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cli_support::{assert_one_line_error, codendum, only_folder, run, write_file};
use codendum::classroom::{
    run_classroom, ClassroomConfig, ClassroomOutcome, LiveStatus, MemorySink,
};
use codendum_core::class::{Class, Distribution, SessionShapes, Shape};
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_core::results::classroom_records::{CallKind, TaskOutcome};
use codendum_twin::inproc::InProcTransport;
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

/// `users` students of `class` against the in-process twin (24 seats),
/// in virtual time, with a window long enough for every request.
fn simulate(class: Class, users: usize, seed: u64) -> ClassroomOutcome {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let clock = Clock::scaled(1.0);
        let profile = Profile::load("classroom-64k-high-concurrency").expect("profile");
        let mut config = ClassroomConfig::new(
            profile.server.served_model_name.clone(),
            Some(u64::from(profile.server.max_model_len)),
        );
        let class = Arc::new(class);
        config.users = users;
        config.seed = seed;
        config.duration = Duration::from_secs(3600);
        config.ramp_up = Duration::from_secs(60);
        config.class = Arc::clone(&class);
        let mut opts = TwinOptions::new(profile);
        opts.clock = clock.clone();
        opts.seed = seed;
        opts.responder = Arc::new(AgentPersona::with_spread(
            seed,
            Arc::new(class.agent.clone()),
        ));
        let transport = Arc::new(InProcTransport::start(opts));
        let sink = Arc::new(MemorySink::default());
        let status = Arc::new(LiveStatus::new(clock.clone()));
        let outcome = run_classroom(&config, transport.clone(), clock, sink, status)
            .await
            .expect("class");
        transport.stop();
        outcome
    })
}

/// A student's main-agent calls, in the order they started.
fn main_agent_calls(
    out: &ClassroomOutcome,
    user: usize,
) -> Vec<&codendum_core::results::classroom_records::CallRecord> {
    let mut calls: Vec<_> = out
        .requests
        .iter()
        .filter(|r| r.user == user && r.kind == CallKind::Agent)
        .collect();
    calls.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
    calls
}

fn samples(values: &[f64]) -> Distribution {
    Distribution::from_observations("test", values, 100).expect("values")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn the_persona_makes_the_calls_and_answers_its_class_draws() {
    let mut class = (*Class::lab()).clone();
    let a = &mut class.agent;
    a.calls_per_request = samples(&[4.0, 8.0, 16.0, 30.0]);
    a.subagent_share = 0.3;
    a.subagent_calls = samples(&[3.0, 6.0]);
    a.output_tokens.agent_step = Distribution::uniform("test", 60.0, 400.0);
    a.output_tokens.final_answer = Distribution::uniform("test", 200.0, 400.0);
    class.person.follow_ups = Distribution::value("test", 1.0);
    class.person.pause_s = Distribution::value("test", 25.0);
    let out = simulate(class, 24, 3);

    let done: Vec<_> = out
        .tasks
        .iter()
        .filter(|t| t.outcome == TaskOutcome::Completed)
        .collect();
    assert_eq!(
        done.len(),
        48,
        "every student sends the exercise and one follow-up"
    );
    // Calls per request, titles apart: the class's own values, with a
    // subagent's request at least its subagent's calls and two more.
    let mut per_request: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for r in out
        .requests
        .iter()
        .filter(|r| matches!(r.kind, CallKind::Agent | CallKind::Subagent))
    {
        *per_request.entry((r.user, r.task)).or_default() += 1;
    }
    let counts: Vec<f64> = per_request.values().map(|&n| n as f64).collect();
    let exact = counts
        .iter()
        .filter(|n| [4.0, 8.0, 16.0, 30.0].contains(*n))
        .count();
    assert!(
        exact * 10 >= counts.len() * 8,
        "calls per request {counts:?}"
    );
    let mean = counts.iter().sum::<f64>() / counts.len() as f64;
    assert!(
        (12.0..=19.0).contains(&mean),
        "mean calls per request {mean:.1} (class 14.5)"
    );
    let subagents = out
        .requests
        .iter()
        .filter(|r| r.kind == CallKind::Subagent)
        .count();
    assert!(subagents > 0, "no subagent");
    // Output tokens by kind: the class's, above what an answer must hold.
    let steps: Vec<f64> = out
        .requests
        .iter()
        .filter(|r| r.kind == CallKind::Agent && r.tool_calls > 0)
        .map(|r| r.output_tokens as f64)
        .collect();
    let m = median(steps.clone());
    assert!(
        (190.0..=290.0).contains(&m),
        "agent-step median {m} (class 230)"
    );
    let within = steps.iter().filter(|t| (55.0..=440.0).contains(*t)).count();
    assert!(
        within * 10 >= steps.len() * 9,
        "agent steps outside the class: {steps:?}"
    );
    let finals: Vec<f64> = out
        .requests
        .iter()
        .filter(|r| r.kind == CallKind::Agent && r.tool_calls == 0)
        .map(|r| r.output_tokens as f64)
        .collect();
    let m = median(finals);
    assert!(
        (250.0..=350.0).contains(&m),
        "final-answer median {m} (class 300)"
    );
    // The pause is the class's: 25 s from the exercise's answer to the follow-up.
    for user in 0..24 {
        let t: Vec<_> = out.tasks.iter().filter(|t| t.user == user).collect();
        let gap = t[1].start - t[0].end;
        assert!((gap - 25.0).abs() < 0.01, "student {user}: pause {gap}");
    }
}

/// A class that draws sessions whole: every simulated session takes one
/// recorded row, its requests as many as the row's and each request the
/// row's calls, the rows drawn about evenly.
#[test]
fn sessions_are_drawn_whole_from_the_class_s_rows() {
    let rows: Vec<Vec<u32>> = vec![
        vec![1],
        vec![3],
        vec![6, 2],
        vec![12, 4, 20],
        vec![4, 4, 4, 4],
    ];
    let mut class = (*Class::lab()).clone();
    class.agent.sessions = SessionShapes::from_rows("test", rows.clone());
    class.agent.subagent_share = 0.0;
    // Apart, these would give every session one request of 30 calls.
    class.agent.calls_per_request = Distribution::value("test", 30.0);
    class.person.follow_ups = Distribution::value("test", 0.0);
    class.person.pause_s = Distribution::value("test", 25.0);
    let out = simulate(class, 30, 5);
    let drawn = sessions_drawn(&out, 30);
    let exact = drawn.iter().filter(|d| rows.contains(d)).count();
    assert!(exact * 10 >= drawn.len() * 9, "sessions {drawn:?}");
    // Requests per session come with their calls: no session of one
    // request draws the long rows' counts.
    for d in &drawn {
        assert!(d.len() > 1 || d[0] <= 3, "a one-request session of {d:?}");
    }
    // Every row is drawn, about evenly (30 sessions over 5 rows).
    for row in &rows {
        let n = drawn.iter().filter(|d| *d == row).count();
        assert!(
            (2..=12).contains(&n),
            "row {row:?} drawn {n} times: {drawn:?}"
        );
    }
    let per_session = drawn.iter().map(|d| d.iter().sum::<u32>()).sum::<u32>() as f64 / 30.0;
    assert!(
        (7.0..=20.0).contains(&per_session),
        "mean calls a session {per_session:.1} (rows 12.8)"
    );
}

/// Each student's session as its model calls per coding request, in
/// order (titles and compactions apart); `users` sessions.
fn sessions_drawn(out: &ClassroomOutcome, users: usize) -> Vec<Vec<u32>> {
    let mut sessions: BTreeMap<usize, BTreeMap<usize, u32>> = BTreeMap::new();
    for r in out
        .requests
        .iter()
        .filter(|r| matches!(r.kind, CallKind::Agent | CallKind::Subagent))
    {
        *sessions
            .entry(r.user)
            .or_default()
            .entry(r.task)
            .or_default() += 1;
    }
    assert_eq!(sessions.len(), users, "every student has a session");
    sessions
        .values()
        .map(|s| s.values().copied().collect())
        .collect()
}

/// Sessions drawn whole keep their row through compactions: the twin's
/// persona knows a session by its `x-session-id`, so a compacted
/// conversation (whose first answer is the summary and whose user messages
/// no longer count the requests) still draws the row's calls, and the
/// client keeps the row it picked from the first answer.
#[test]
fn sessions_drawn_whole_keep_their_row_through_compactions() {
    let rows: Vec<Vec<u32>> = vec![vec![9, 3, 14], vec![12, 5], vec![6, 11, 4, 8]];
    let mut class = (*Class::lab()).clone();
    class.agent.sessions = SessionShapes::from_rows("test", rows.clone());
    class.agent.subagent_share = 0.0;
    class.agent.calls_per_request = Distribution::value("test", 30.0);
    class.agent.compact_at_tokens = Some(Distribution::value("test", 16_000.0));
    class.person.follow_ups = Distribution::value("test", 0.0);
    class.person.pause_s = Distribution::value("test", 25.0);
    let out = simulate(class, 12, 7);
    let compacted: std::collections::BTreeSet<usize> = out
        .requests
        .iter()
        .filter(|r| r.kind == CallKind::Compaction)
        .map(|r| r.user)
        .collect();
    assert!(
        compacted.len() >= 10,
        "sessions that compacted: {compacted:?}"
    );
    let drawn = sessions_drawn(&out, 12);
    let exact = drawn.iter().filter(|d| rows.contains(d)).count();
    assert!(exact * 10 >= drawn.len() * 9, "sessions {drawn:?}");
    for row in &rows {
        assert!(drawn.contains(row), "row {row:?} never drawn: {drawn:?}");
    }
}

#[test]
fn a_class_s_prompt_and_appended_sizes_shape_the_prompts() {
    let mut class = (*Class::lab()).clone();
    class.person.follow_ups = Distribution::value("test", 0.0);
    class.agent.prompt_tokens = Some(Distribution::value("test", 20_000.0));
    class.agent.appended_tokens = Some(Distribution::value("test", 2_000.0));
    class.agent.calls_per_request = Distribution::value("test", 6.0);
    class.agent.subagent_share = 0.0;
    let out = simulate(class, 4, 9);
    for user in 0..4 {
        let calls = main_agent_calls(&out, user);
        let prompts: Vec<u64> = calls.iter().filter_map(|r| r.prompt_tokens).collect();
        let first = prompts[0] as f64;
        assert!((first - 20_000.0).abs() < 2_000.0, "first prompt {first}");
        for (w, call) in prompts.windows(2).zip(&calls) {
            let added = w[1] as f64 - w[0] as f64 - call.output_tokens as f64;
            assert!(
                (1_800.0..=2_600.0).contains(&added),
                "added {added} in {prompts:?}"
            );
        }
    }
}

/// Sessions drawn whole with their recorded prompt sizes: a session's
/// prompts follow its own row's, from each request's first call's size to
/// its last call's, the person's follow-up message taking the prompt to
/// the next request's first size; the row's sizes take precedence over the
/// class's prompts by call.
#[test]
fn a_session_s_prompts_follow_its_row_s_recorded_sizes() {
    use codendum_core::class::sessions::RequestPrompt;
    let sized = |first, last| RequestPrompt { first, last };
    let mut class = (*Class::lab()).clone();
    class.agent.sessions = SessionShapes::from_rows_and_prompts(
        "test",
        vec![
            (
                vec![6, 4],
                Some(vec![sized(10_000, 22_000), sized(26_000, 29_000)]),
            ),
            (vec![6], Some(vec![sized(10_000, 25_000)])),
        ],
    );
    class.agent.subagent_share = 0.0;
    // Prompts by call that would keep every prompt at 10K (the first
    // prompt's size, drawn before the row is known): the rows win after.
    class.agent.prompt_tokens_by_call = vec![codendum_core::class::ByCall {
        from_call: 0,
        tokens: Distribution::value("test", 10_000.0),
    }];
    class.person.pause_s = Distribution::value("test", 25.0);
    let out = simulate(class, 8, 3);
    let near = |got: u64, want: f64| (got as f64 - want).abs() <= 0.1 * want;
    let mut rows_seen = [0, 0];
    for user in 0..8 {
        let calls = main_agent_calls(&out, user);
        let prompts = |task: usize| -> Vec<u64> {
            calls
                .iter()
                .filter(|r| r.task == task)
                .filter_map(|r| r.prompt_tokens)
                .collect()
        };
        let (first, second) = (prompts(0), prompts(1));
        assert_eq!(first.len(), 6, "user {user}: {first:?}");
        // The first call is the class's first prompt; every later one is
        // at the row's size for its step (2.4K or 3K tokens a step).
        assert!(near(first[0], 10_000.0), "user {user}: {first:?}");
        let (last, per_step) = if second.is_empty() {
            rows_seen[1] += 1;
            (25_000.0, 3_000.0)
        } else {
            rows_seen[0] += 1;
            assert_eq!(second.len(), 4, "user {user}: {second:?}");
            assert!(near(second[0], 26_000.0), "user {user}: {second:?}");
            assert!(near(second[3], 29_000.0), "user {user}: {second:?}");
            (22_000.0, 2_400.0)
        };
        for (k, p) in first.iter().enumerate().skip(1) {
            let want = 10_000.0 + per_step * k as f64;
            assert!(near(*p, want), "user {user} call {k}: {first:?}");
        }
        assert!(near(first[5], last), "user {user}: {first:?}");
    }
    assert!(rows_seen.iter().all(|&n| n > 0), "rows drawn {rows_seen:?}");
}

/// `codendum learn-class SOURCES -o out` in `cwd`, which must succeed.
fn learn_class(cwd: &Path, sources: &[std::path::PathBuf], out: &str) -> cli_support::Finished {
    let learned = run({
        let mut cmd = codendum(cwd);
        cmd.arg("learn-class").args(sources).args(["-o", out]);
        cmd
    });
    assert_eq!(learned.code, Some(0), "{}", learned.both());
    learned
}

#[test]
fn a_learned_class_reads_back_and_plans_and_bad_files_are_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path();
    let class_run = run({
        let mut cmd = codendum(cwd);
        cmd.args([
            "classroom",
            "--users",
            "4",
            "--duration",
            "240",
            "--ramp-up",
            "10",
            "--time-scale",
            "100",
            "--yes",
            "--no-report",
            "--results-dir",
            "results",
        ]);
        cmd
    });
    assert_eq!(class_run.code, Some(0), "{}", class_run.both());
    let folder = only_folder(&cwd.join("results"));
    let learned = learn_class(cwd, &[folder], "mine.toml");
    assert!(
        learned.stdout.contains("from 1 source: 4 sessions")
            && learned.stdout.contains("agent.calls_per_request")
            && learned.stdout.contains("Kept from the default class:")
            && learned.stdout.contains("agent.first_test_fails"),
        "{}",
        learned.stdout
    );
    let class = Class::load(cwd.join("mine.toml").to_str().expect("utf-8")).expect("reads back");
    assert_eq!(class.name, "mine");
    assert!(matches!(
        class.agent.calls_per_request.shape,
        Shape::Samples(_)
    ));
    let planned = run({
        let mut cmd = codendum(cwd);
        cmd.args([
            "plan",
            "--users",
            "4",
            "--duration",
            "240",
            "--class",
            "mine.toml",
            "--results-dir",
            "plans",
        ]);
        cmd
    });
    assert_eq!(planned.code, Some(0), "{}", planned.both());
    let plan = only_folder(&cwd.join("plans"));
    let json = std::fs::read_to_string(plan.join("plan.json")).expect("plan.json");
    assert!(json.contains("\"class\": \"mine\""), "{json}");

    bad_class_files(cwd);
}

fn bad_class_files(cwd: &Path) {
    let lab = codendum_core::class::write::to_toml(&Class::lab());
    write_file(
        cwd,
        "bad.toml",
        &lab.replace("first_test_fails = 0.3", "first_test_fails = 3.0"),
    );
    for cmd in ["plan", "classroom"] {
        let f = run({
            let mut c = codendum(cwd);
            c.args([
                cmd,
                "--class",
                "bad.toml",
                "--users",
                "1",
                "--duration",
                "60",
            ]);
            if cmd == "classroom" {
                c.arg("--yes");
            }
            c
        });
        assert_eq!(f.code, Some(2), "{cmd}: {}", f.both());
        assert_one_line_error(&f, "bad.toml");
        assert!(f.stderr.contains("agent.first_test_fails"), "{}", f.stderr);
    }
    let f = run({
        let mut c = codendum(cwd);
        c.args(["plan", "--class", "nope", "--users", "1"]);
        c
    });
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(&f, "--class");
}

/// A class learned from real recorded sessions of three clients at once
/// (Claude Code conversations, TraceLab rows, the store the real OpenCode
/// wrote): the report counts what the importers read, the person's pauses
/// are exactly the waits the recordings say a person took, and what the
/// recordings cannot tell is kept and said.
#[test]
fn a_class_learned_from_real_sessions_counts_them_and_takes_the_person_s_waits() {
    use crate::sessions_import::{fixture, read};
    use codendum_core::trace::WaitReason;
    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path();
    let sources = [
        fixture("claude-code"),
        fixture("tracelab/round_trace.jsonl.gz"),
        fixture("opencode-1.18.33"),
    ];
    let learned = learn_class(cwd, &sources, "real.toml");
    let traces: Vec<_> = sources.iter().map(|p| read(p)).collect();
    let calls: usize = traces.iter().map(|t| t.calls.len()).sum();
    let sessions: usize = traces
        .iter()
        .map(|t| {
            let mut roots: Vec<_> = t.roots().into_iter().flatten().collect();
            roots.sort();
            roots.dedup();
            roots.len()
        })
        .sum();
    let head = format!("from 3 sources: {sessions} sessions");
    assert!(
        learned.stdout.contains(&head) && learned.stdout.contains(&format!("{calls} model calls")),
        "{head}, {calls} calls: {}",
        learned.stdout
    );
    let mut person: Vec<f64> = traces
        .iter()
        .flat_map(|t| t.calls.iter())
        .filter_map(|c| c.after)
        .filter(|d| d.reason == WaitReason::Person)
        .map(|d| d.gap_s.max(0.0))
        .collect();
    person.sort_by(f64::total_cmp);
    assert!(!person.is_empty(), "the recordings say when a person wrote");
    let class = Class::load(cwd.join("real.toml").to_str().expect("utf-8")).expect("reads back");
    match &class.person.pause_s.shape {
        Shape::Samples(v) => {
            let mut v = v.clone();
            v.sort_by(f64::total_cmp);
            assert_eq!(v.len(), person.len());
            for (a, b) in v.iter().zip(&person) {
                assert!((a - b).abs() < 1e-3, "{v:?} against {person:?}");
            }
        }
        other => panic!("{} waits kept as samples, got {other:?}", person.len()),
    }
    // Every session is kept whole, one row each, and said.
    let shapes = class.agent.sessions.as_ref().expect("sessions drawn whole");
    assert_eq!(shapes.calls.len(), sessions, "{:?}", shapes.calls);
    assert!(
        learned
            .stdout
            .contains(&format!("{sessions} sessions drawn whole")),
        "{}",
        learned.stdout
    );
    // None of them times its tools by kind, nor says which test failed.
    assert!(
        learned.stdout.contains("tool kinds not told apart")
            && learned.stdout.contains("agent.first_test_fails"),
        "{}",
        learned.stdout
    );
}

/// A class whose people go on to their next session: each student, done
/// with a session, pauses and starts another (the exercise again, a new
/// conversation) while the window is open; the lab's students stop after
/// theirs.
#[test]
fn people_who_go_on_start_a_new_session_while_the_window_is_open() {
    let mut class = (*Class::lab()).clone();
    class.agent.calls_per_request = samples(&[3.0, 5.0]);
    class.agent.subagent_share = 0.0;
    class.person.follow_ups = Distribution::value("test", 0.0);
    class.person.pause_s = Distribution::value("test", 300.0);
    let once = simulate(class.clone(), 4, 7);
    let mut users: Vec<usize> = once.tasks.iter().map(|t| t.user).collect();
    users.sort_unstable();
    assert_eq!(users, vec![0, 1, 2, 3], "one session each");
    class.person.next_session = true;
    let again = simulate(class, 4, 7);
    for user in 0..4 {
        let mut starts: Vec<f64> = again
            .tasks
            .iter()
            .filter(|t| t.user == user)
            .map(|t| t.start)
            .collect();
        starts.sort_by(f64::total_cmp);
        // A session of one request takes well under 300 s here: a new one
        // every 300-odd seconds of the 3,600 s window.
        assert!(starts.len() >= 8, "user {user}: {starts:?}");
        assert!(
            starts.windows(2).all(|w| w[1] - w[0] >= 300.0),
            "{starts:?}"
        );
        assert!(starts.iter().all(|s| *s < 3600.0), "{starts:?}");
    }
    assert!(again.tasks.iter().all(|t| t.index == 0));
}
