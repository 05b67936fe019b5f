//! Recorded sessions as the capacity search's class (`--replay`): the
//! continuous replay holds the size it is told (seats that join, a trace
//! sent again with fresh text when the class is larger than it, seats that
//! leave mid-session), and the whole search runs on them against the twin,
//! in virtual time, and from the command line.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use codendum::capacity::on_twin::capacity_on_twin;
use codendum::capacity::settings::{CapacitySettings, TiersFrom};
use codendum::capacity::students::ReplayedSessions;
use codendum::classroom::{ClassSize, ClassroomConfig, LiveStatus, MemorySink, RecordSink};
use codendum::replay::{
    run_continuous_replay, ContinuousOutcome, ReplayConfig, Schedule, Template,
};
use codendum::virtual_time::on_paused_runtime;
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_core::results::classroom_records::{CallRecord, TaskOutcome};
use codendum_core::targets::parse_tiers;
use codendum_core::trace::detect::ImportOptions;
use codendum_core::trace::Trace;
use codendum_testkit::profiles::write_gb10_with_seats;
use codendum_twin::inproc::InProcTransport;
use codendum_twin::TwinOptions;

use crate::cli_support::{codendum, only_folder, read_json, run, Finished};

/// Six real Claude Code sessions (fixtures/sessions/claude-code).
fn sessions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sessions/claude-code")
}

fn sessions() -> Trace {
    let options = ImportOptions {
        block_size: codendum_core::trace::DEFAULT_BLOCK_SIZE,
        max_sessions: None,
    };
    codendum::replay::source::read(&sessions_dir(), None, options).expect("sessions read")
}

/// A person's recorded waits capped at five seconds, so sessions move.
fn schedule() -> Schedule {
    Schedule {
        max_think_s: Some(5.0),
        max_wait_s: Some(30.0),
        ..Schedule::default()
    }
}

/// The fixture's sessions replayed against `profile`'s server with the
/// capped waits of [`schedule`], their text salted with `salt`.
fn replay_config(profile: &Profile, salt: u64) -> ReplayConfig {
    let mut config = ReplayConfig::new(
        profile.server.served_model_name.clone(),
        Template::default(),
    );
    config.schedule = schedule();
    config.max_model_len = Some(u64::from(profile.server.max_model_len));
    config.salt = salt;
    config
}

/// [`run_continuous_replay`] of `trace` as a task of the current runtime,
/// against `twin`, its class's size told by `rx`.
fn spawn_replay(
    trace: Trace,
    config: ReplayConfig,
    (twin, clock): (&Arc<InProcTransport>, &Clock),
    (sink, status): (&Arc<MemorySink>, &Arc<LiveStatus>),
    rx: watch::Receiver<ClassSize>,
) -> tokio::task::JoinHandle<ContinuousOutcome> {
    let sink: Arc<dyn RecordSink> = sink.clone();
    let transport: Arc<dyn codendum_core::openai::Transport> = twin.clone();
    let (clock, status) = (clock.clone(), status.clone());
    tokio::spawn(async move {
        run_continuous_replay(
            &trace,
            &config,
            (transport, clock),
            (sink, status),
            rx,
            None,
        )
        .await
    })
}

/// The seconds (start, end) each user's calls span.
fn spans(calls: &[CallRecord]) -> BTreeMap<usize, (f64, f64)> {
    let mut out: BTreeMap<usize, (f64, f64)> = BTreeMap::new();
    for c in calls {
        let e = out.entry(c.user).or_insert((f64::MAX, 0.0));
        e.0 = e.0.min(c.started_at);
        e.1 = e.1.max(c.started_at + c.wait_s);
    }
    out
}

#[test]
fn a_replayed_class_holds_its_size_sends_the_trace_again_and_lets_seats_leave() {
    let trace = sessions();
    let roots = codendum::replay::driver::root_count(&trace);
    assert_eq!(roots, 6, "the fixture's sessions");
    let profile = Profile::load("classroom-64k").expect("profile");
    let (sink, status, grown_s, shrunk_s) = on_paused_runtime(async {
        let clock = Clock::scaled(1.0);
        let mut opts = TwinOptions::new(profile.clone());
        opts.clock = clock.clone();
        let twin = Arc::new(InProcTransport::start(opts));
        let sink = Arc::new(MemorySink::default());
        let status = Arc::new(LiveStatus::new(clock.clone()));
        let (control, rx) = watch::channel(ClassSize {
            students: 2,
            join_over_s: 10.0,
        });
        let config = replay_config(&profile, 7);
        let task = spawn_replay(trace, config, (&twin, &clock), (&sink, &status), rx);
        let origin = clock.now_secs();
        let at = |t: f64| Duration::from_secs_f64(origin + t);
        clock.sleep_until(at(600.0)).await;
        let grown_s = clock.now_secs() - origin;
        let _ = control.send(ClassSize {
            students: 9,
            join_over_s: 10.0,
        });
        // The seven new students join over ten seconds, each counted from
        // its own join time, not from when its seat was set.
        clock.sleep_until(at(600.2)).await;
        let joining = status.snapshot().active_users;
        assert!(
            joining < 9,
            "{joining} students counted 0.2 s into a 10 s join"
        );
        clock.sleep_until(at(1500.0)).await;
        let shrunk_s = clock.now_secs() - origin;
        let _ = control.send(ClassSize {
            students: 1,
            join_over_s: 10.0,
        });
        clock.sleep_until(at(2400.0)).await;
        drop(control);
        let done = task.await.expect("replay ended");
        assert_eq!(done.largest, 9);
        assert!(
            done.passes_after_first >= 1,
            "nine seats went through six sessions more than once: {done:?}"
        );
        twin.stop();
        Ok((sink, status, grown_s, shrunk_s))
    })
    .expect("runs");
    let calls = sink.requests();
    let tasks = sink.tasks();
    assert!(!calls.is_empty());
    // Nothing is left under way once the class is over.
    assert!(status.open_calls().is_empty());
    assert!(status.running_tasks().is_empty());
    // Each session run is a user of its own; with nine seats and six
    // sessions, later passes run under session ids of their own.
    let sessions: HashSet<&str> = calls.iter().map(|c| c.session.as_str()).collect();
    assert!(
        sessions.iter().any(|s| s.ends_with("~1")),
        "no second pass in {sessions:?}"
    );
    let spans = spans(&calls);
    let busy_at = |t: f64| spans.values().filter(|(a, b)| *a <= t && t < *b).count();
    // Two seats before the change; nine at most after it.
    for t in (60..600).step_by(20) {
        assert!(
            busy_at(t as f64) <= 2,
            "{} users busy at {t} s",
            busy_at(t as f64)
        );
    }
    let most = (700..1500)
        .step_by(20)
        .map(|t| busy_at(t as f64))
        .max()
        .unwrap_or(0);
    assert!(
        (3..=9).contains(&most),
        "at most {most} users busy at nine seats"
    );
    // After the shrink, only the one seat starts calls: the sessions whose
    // calls start then do not overlap each other.
    let after: Vec<(f64, f64)> = spans
        .iter()
        .filter(|(u, _)| {
            calls
                .iter()
                .any(|c| c.user == **u && c.started_at > shrunk_s + 1.0)
        })
        .filter(|(_, (a, _))| *a > shrunk_s)
        .map(|(_, s)| *s)
        .collect();
    for (i, a) in after.iter().enumerate() {
        for b in &after[i + 1..] {
            assert!(
                a.1 <= b.0 || b.1 <= a.0,
                "{a:?} and {b:?} overlap after the shrink"
            );
        }
    }
    // The seats that left mid-session have their coding requests cut off;
    // every coding request recorded is one whose calls ended.
    assert!(
        tasks.iter().any(|t| t.outcome == TaskOutcome::CutOff),
        "no coding request cut off by the shrink"
    );
    assert!(tasks.iter().any(|t| t.outcome == TaskOutcome::Completed));
    assert!(tasks.iter().all(|t| t.calls > 0 && t.end >= t.start));
    assert!(grown_s >= 600.0 && shrunk_s >= 1500.0);
}

/// The calls of a class of `students` replaying the fixture's sessions on
/// the twin of `profile` for `for_s` virtual seconds, in the order they
/// ended: user, session, start, wait, tokens in and out.
type Sent = (usize, String, f64, f64, Option<u64>, u64);

fn replayed_calls(profile: &Profile, students: usize, for_s: f64) -> Vec<Sent> {
    let trace = sessions();
    let sink = on_paused_runtime(async {
        let clock = Clock::scaled(1.0);
        let mut opts = TwinOptions::new(profile.clone());
        opts.clock = clock.clone();
        opts.seed = 5;
        let twin = Arc::new(InProcTransport::start(opts));
        let sink = Arc::new(MemorySink::default());
        let status = Arc::new(LiveStatus::new(clock.clone()));
        let (control, rx) = watch::channel(ClassSize {
            students,
            join_over_s: 10.0,
        });
        let config = replay_config(profile, 5);
        let task = spawn_replay(trace, config, (&twin, &clock), (&sink, &status), rx);
        clock.sleep(Duration::from_secs_f64(for_s)).await;
        drop(control);
        task.await.expect("replay ended");
        twin.stop();
        Ok(sink)
    })
    .expect("runs");
    sink.requests()
        .into_iter()
        .map(|c| {
            (
                c.user,
                c.session,
                c.started_at,
                c.wait_s,
                c.prompt_tokens,
                c.output_tokens,
            )
        })
        .collect()
}

#[test]
fn a_replay_with_capped_waits_is_the_same_every_run_in_virtual_time() {
    let profile = Profile::load("classroom-64k").expect("profile");
    let first = replayed_calls(&profile, 6, 400.0);
    // Capped waits start several calls of a session at one instant: the
    // case where the order they reach the server in used to vary.
    let mut starts: Vec<(usize, u64)> = first
        .iter()
        .map(|c| (c.0, (c.2 * 1e6).round() as u64))
        .collect();
    let n = starts.len();
    starts.sort_unstable();
    starts.dedup();
    assert!(
        starts.len() < n,
        "no two calls of a session started at once"
    );
    assert!(n >= 20, "{n} calls");
    // Each run builds a runtime of its own, whose random seed differs.
    for run in 1..3 {
        let again = replayed_calls(&profile, 6, 400.0);
        assert_eq!(first, again, "run {run} differs from the first");
    }
}

#[test]
fn a_search_of_replayed_sessions_answers_each_tier_on_the_twin() {
    let server = Profile::load("classroom-64k").expect("profile");
    let tiers = parse_tiers("fast:speed_p50=10,slow:speed_p50=4").expect("tiers");
    let mut class = ClassroomConfig::new("", None);
    class.seed = 5;
    let settings = CapacitySettings {
        class,
        replay: Some(Arc::new(ReplayedSessions {
            source: sessions_dir(),
            trace: sessions(),
            schedule: schedule(),
        })),
        tiers,
        tiers_from: TiersFrom::Tiers,
        left_out: Vec::new(),
        profile: server.clone(),
        max_users: 12,
        hold: Duration::from_secs(600),
        join_over: Duration::from_secs(20),
        settle: None,
        resolution: None,
        budget: None,
    };
    let found = capacity_on_twin(&settings, &server, Duration::from_secs(900)).expect("searches");
    let steps = &found.twin.run.steps;
    assert!(!steps.is_empty());
    for s in steps {
        eprintln!(
            "step {}: {} users, {} calls, ttft p50 {:?} p95 {:?} speed {:?} {:?}",
            s.index,
            s.users,
            s.measured.requests,
            s.measured.ttft_p50_s,
            s.measured.ttft_p95_s,
            s.measured.output_speed_p50_tok_s,
            s.tiers.iter().map(|t| t.outcome).collect::<Vec<_>>()
        );
        assert!(s.measured.requests > 0, "step {} had no calls", s.index);
        assert_eq!(s.tiers.len(), 2);
    }
    let answers = found.twin.answers();
    eprintln!(
        "predicted {:?}; found {answers:?} in steps {:?}",
        found.predicted.answers,
        steps.iter().map(|s| s.users).collect::<Vec<_>>()
    );
    // The fast tier's TTFT ceiling is the harder one.
    assert!(answers[0].0 <= answers[1].0, "{answers:?}");
    for (carries, upper) in &answers {
        assert!(carries <= upper && *upper <= 12, "{answers:?}");
    }
    // The twin searched the same sessions: its prediction is the server's
    // own answer up to the search's noise.
    for (p, (carries, upper)) in found.predicted.answers.iter().zip(&answers) {
        assert!(
            p.carries + 2 >= *carries && p.carries <= upper + 2,
            "predicted {} against {carries}–{upper}",
            p.carries
        );
    }
}

/// `codendum capacity --replay` of the fixture's sessions on the twin of
/// `profile` (a file in `dir`) served 200 times faster, up to `max_users`,
/// its folder under `results`.
fn replay_search(dir: &Path, profile: &str, max_users: &str, results: &str) -> Finished {
    let mut cmd = codendum(dir);
    cmd.args(["capacity", "--profile", profile])
        .args(["--tiers", "slow:ttft_p95=60s"])
        .arg("--replay")
        .arg(sessions_dir())
        .args([
            "--max-think",
            "5",
            "--max-users",
            max_users,
            "--hold",
            "120",
        ])
        .args(["--join-over", "10", "--settle", "20", "--time-scale", "200"])
        .args(["--seed", "3", "--results-dir", results, "--no-report"]);
    run(cmd)
}

#[test]
fn capacity_replay_from_the_command_line_writes_a_replay_search() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_gb10_with_seats(dir.path(), "tiny.toml", 2);
    let f = replay_search(dir.path(), "tiny.toml", "3", "out");
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(
        f.stderr.contains("6 recorded sessions"),
        "the plan does not say what is replayed:\n{}",
        f.stderr
    );
    assert!(f.stderr.contains("students carried: slow "), "{}", f.stderr);
    let folder = only_folder(&dir.path().join("out"));
    let results = read_json(&folder.join("capacity.json"));
    let p = &results["parameters"];
    assert_eq!(p["workload"], "replay");
    assert_eq!(p["replayed_sessions"], 6);
    assert!(p["replayed_from"]
        .as_str()
        .is_some_and(|s| s.ends_with("claude-code")));
    // Sizes only: the sessions' text is never written.
    let requests = std::fs::read_to_string(folder.join("requests.jsonl")).expect("requests");
    assert!(!requests.contains("\"content\""));
    assert!(requests.lines().count() > 0);
    // A server whose context holds the sessions' first calls but not their
    // longest: the search runs, and says what it skipped.
    let tiny = std::fs::read_to_string(dir.path().join("tiny.toml")).expect("profile");
    let short = tiny.replace("max_model_len = 65536", "max_model_len = 16384");
    assert_ne!(short, tiny, "the profile names its context");
    std::fs::write(dir.path().join("short.toml"), short).expect("profile written");
    let f = replay_search(dir.path(), "short.toml", "2", "short");
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(
        f.stderr
            .contains("calls beyond the server's max_model_len of 16384 tokens skipped"),
        "the skipped calls are not said:\n{}",
        f.stderr
    );
    // --replay excludes the simulated class's own flags.
    let mut cmd = codendum(dir.path());
    cmd.args(["capacity", "--profile", "tiny.toml", "--class", "lab"])
        .arg("--replay")
        .arg(sessions_dir());
    let f = run(cmd);
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert!(f.stderr.contains("--replay"), "{}", f.stderr);
}
