//! The real OpenCode 1.18.33 client (`opencode run`) against the twin, in a
//! scratch copy of the python classroom project with an isolated HOME: what
//! it read, edited, wrote and ran, checked on disk and on the wire (every
//! request the twin answered, recorded beside the persona's answer). It
//! talks to the twin through `codendum capture --no-text`, as a class
//! would: the capture must record every call of a client we did not write,
//! keep no word of its messages and no key, and its recording must replay
//! against a fresh twin with every prompt of its recorded size.
//!
//! The binary is found at `$CODENDUM_OPENCODE` or
//! `~/.cache/codendum-opencode/node_modules/opencode-linux-x64/bin/opencode`
//! (`.ci/run` installs it there), with ripgrep on `PATH` (OpenCode's glob
//! and grep run it); the harness ignores or fails the test without them.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::capture_support::any_file_contains;
use crate::replay_support::{assert_every_call_replayed, replay_through, twin};
use codendum::capture::{self, CaptureConfig};
use codendum::replay;
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_core::results::classroom_records::CallKind;
use codendum_core::trace::SourceFormat;
use codendum_testkit::real::{Component, OPENCODE_VERSION as VERSION};
use codendum_twin::answer::{AnswerRequest, PlannedAnswer, Responder};
use codendum_twin::persona::AgentPersona;
use codendum_twin::{start, TwinOptions};
use serde_json::{json, Value};

const TASK: &str = "Add a function to chat/protocol.py that encodes a PRIVATE message for one \
recipient, add a pytest test for it, and run the tests.";
/// The twin runs this many times faster than the GB10 it models.
const TIME_SCALE: f64 = 20.0;
/// The whole `opencode run` must end within this (wall seconds).
const LIMIT: Duration = Duration::from_secs(120);

/// One request the twin answered: what OpenCode sent, what the persona said.
struct Call {
    messages: Vec<Value>,
    tools: Vec<Value>,
    answer: PlannedAnswer,
}

/// The persona of `codendum serve`, recording every request.
struct Recorder {
    persona: AgentPersona,
    calls: Mutex<Vec<Call>>,
}

impl Responder for Recorder {
    fn plan(&self, r: &AnswerRequest<'_>) -> PlannedAnswer {
        let answer = self.persona.plan(r);
        self.calls.lock().expect("calls").push(Call {
            messages: r.messages.to_vec(),
            tools: r.tools.to_vec(),
            answer: answer.clone(),
        });
        answer
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The project's opencode.json: the twin as an OpenAI-compatible provider.
fn config(base_url: &str) -> Value {
    json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"twin": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "codendum twin",
            "options": {"baseURL": base_url, "apiKey": "twin-test-key"},
            "models": {"qwen3-coder": {"name": "qwen3-coder",
                "limit": {"context": 65536, "output": 8192}}}
        }},
        "model": "twin/qwen3-coder",
        "autoupdate": false,
        "share": "disabled"
    })
}

/// Runs `opencode run TASK` in `project` with HOME and the XDG folders under
/// `home` and nothing else from the environment but PATH. Returns stdout,
/// stderr and the wall time.
async fn run_opencode(bin: &Path, project: &Path, home: &Path) -> (String, String, Duration) {
    let mut cmd = tokio::process::Command::new(bin);
    cmd.arg("run")
        .arg(TASK)
        .current_dir(project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("TERM", "dumb")
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_SHARE", "1")
        .env("OPENCODE_DISABLE_CLAUDE_CODE", "1")
        .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let started = Instant::now();
    let out = tokio::time::timeout(LIMIT, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("opencode run did not end within {LIMIT:?}"))
        .expect("opencode starts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "opencode run failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    (stdout, stderr, started.elapsed())
}

/// Every tool call of the recorded answers with its result (from the next
/// requests): (name, arguments, result).
fn tool_calls(calls: &[Call]) -> Vec<(String, Value, String)> {
    let mut results = std::collections::HashMap::new();
    for c in calls {
        for m in &c.messages {
            if m["role"] == "tool" {
                let id = m["tool_call_id"].as_str().unwrap_or("").to_string();
                results.insert(id, m["content"].as_str().unwrap_or("").to_string());
            }
        }
    }
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for c in calls {
        for m in &c.messages {
            for tc in m["tool_calls"].as_array().into_iter().flatten() {
                let id = tc["id"].as_str().unwrap_or("").to_string();
                if !seen.insert(id.clone()) {
                    continue;
                }
                let f = &tc["function"];
                let args = serde_json::from_str(f["arguments"].as_str().unwrap_or(""))
                    .unwrap_or(Value::Null);
                let result = results.get(&id).cloned().unwrap_or_default();
                out.push((f["name"].as_str().unwrap_or("").to_string(), args, result));
            }
        }
    }
    out
}

/// Tool errors a real model would meet here too: pytest not installed and
/// a syntax error of the agent's own making.
fn real_error(result: &str) -> bool {
    [
        "command not found",
        "No module named",
        "SyntaxError",
        "Error compiling",
    ]
    .iter()
    .any(|w| result.contains(w))
}

fn looks_failed(result: &str) -> bool {
    let head: String = result
        .chars()
        .take(200)
        .collect::<String>()
        .to_ascii_lowercase();
    !head.contains("<type>file</type>")
        && (head.starts_with("error")
            || head.contains("not found")
            || head.contains("failed")
            || head.contains("invalid"))
}

/// A summary line of a session: calls, tools used, files changed, wall time.
fn figure(
    calls: &[Call],
    tools: &[(String, Value, String)],
    changed: &[String],
    wall: Duration,
) -> String {
    let title = calls.iter().filter(|c| c.tools.is_empty()).count();
    let sub = calls
        .iter()
        .filter(|c| !c.tools.is_empty() && c.tools.len() < 10)
        .count();
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for (name, _, _) in tools {
        *counts.entry(name.as_str()).or_default() += 1;
    }
    let used: Vec<String> = counts.iter().map(|(n, c)| format!("{n} {c}")).collect();
    format!(
        "opencode {VERSION} against the twin: {} calls ({title} title, {} build agent, {sub} subagent); \
         tools: {}; files changed: {}; wall {:.1} s",
        calls.len(),
        calls.len() - title - sub,
        used.join(", "),
        changed.join(", "),
        wall.as_secs_f64()
    )
}

/// Files of `project` that differ from the original project or are new.
fn changed_files(original: &Path, project: &Path, rel: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(project.join(rel))
        .expect("read_dir")
        .flatten()
    {
        let name = rel.join(entry.file_name());
        let s = name.to_string_lossy().to_string();
        if s.starts_with('.') || s.contains("__pycache__") || s == "opencode.json" {
            continue;
        }
        if entry.path().is_dir() {
            changed_files(original, project, &name, out);
        } else if std::fs::read(original.join(&name)).ok() != std::fs::read(entry.path()).ok() {
            out.push(s);
        }
    }
}

pub fn real_opencode_reads_edits_writes_runs_and_answers() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(opencode_session());
}

async fn opencode_session() {
    let bin = Component::OpenCode.program();
    let version = std::process::Command::new(&bin)
        .arg("--version")
        .env("HOME", "/nonexistent")
        .output();
    let version = version.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    assert_eq!(
        version.as_deref().ok(),
        Some(VERSION),
        "{bin:?} is not OpenCode {VERSION}; run `{}`",
        Component::OpenCode.install()
    );

    // The lab class draws each coding request's model calls from a heavy
    // tail (a few requests end after three or four calls, before anything
    // is changed), and OpenCode's own session id seeds the draw. This test
    // checks what the real OpenCode does with a whole request, so its
    // persona takes fifteen calls every time (the lab's mean).
    let mut spread = codendum_core::class::Class::lab().agent.clone();
    spread.calls_per_request =
        codendum_core::class::Distribution::value("a whole request, every time", 15.0);
    // A subagent, when one is started, looks around in four calls and
    // leaves the change to the main agent (drawn from the class, it can
    // take the whole request and change nothing).
    spread.subagent_calls = codendum_core::class::Distribution::value("a short look", 4.0);
    let recorder = Arc::new(Recorder {
        persona: AgentPersona::with_spread(1, Arc::new(spread)),
        calls: Mutex::new(Vec::new()),
    });
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = Clock::scaled(TIME_SCALE);
    opts.responder = recorder.clone();
    opts.seed = 1;
    let twin = start(opts, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("twin");

    let scratch = tempfile::tempdir().expect("tempdir");
    let captured = scratch.path().join("cap");
    let mut capture_config =
        CaptureConfig::new(&twin.base_url(), "127.0.0.1:0", captured.clone()).expect("config");
    capture_config.keep_text = false;
    let cap = capture::start(capture_config).await.expect("capture");
    let original = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/classroom/python");
    let project = scratch.path().join("chat");
    let home = scratch.path().join("home");
    copy_dir(&original, &project);
    std::fs::create_dir_all(&home).expect("home");
    let cfg = serde_json::to_string_pretty(&config(&cap.base_url())).unwrap();
    std::fs::write(project.join("opencode.json"), cfg).expect("config");

    let (stdout, stderr, wall) = run_opencode(&bin, &project, &home).await;
    let recorded = cap
        .shutdown(Duration::from_secs(5))
        .await
        .expect("capture shutdown");
    twin.shutdown().await;
    let calls = std::mem::take(&mut *recorder.calls.lock().unwrap());
    check_capture(&captured, &calls, recorded).await;
    check_store(&home.join(".local/share/opencode"), &captured).await;
    let tools = tool_calls(&calls);
    let mut changed = Vec::new();
    changed_files(&original, &project, Path::new(""), &mut changed);
    changed.sort();
    for (name, args, result) in &tools {
        let args: String = args.to_string().chars().take(100).collect();
        let result: String = result.chars().take(100).collect();
        eprintln!("{name} {args}\n    -> {result:?}");
    }
    eprintln!("{}", figure(&calls, &tools, &changed, wall));
    let skip = stderr.chars().count().saturating_sub(3000);
    let tail: String = stderr.chars().skip(skip).collect();
    let log = format!("stdout:\n{stdout}\nstderr (tail):\n{tail}");
    check_session(&calls, &tools, &changed, (&original, &project), &log);
}

/// The capture of the session: every model call the twin answered is a
/// line (OpenCode's other requests, if any, are `other`), nothing of the
/// task, the system prompt or the key is in any file, and the recording
/// replays against a fresh twin, every call answered and every prompt of
/// its recorded size.
async fn check_capture(dir: &Path, calls: &[Call], recorded: u64) {
    let (kind, trace) = replay::load(dir, 16).expect("the capture reads");
    assert_eq!(kind, SourceFormat::Capture);
    assert_eq!(
        trace.calls.len(),
        calls.len(),
        "a trace call per model call"
    );
    assert!(recorded as usize >= calls.len(), "{recorded} lines");
    let kinds: Vec<_> = trace.calls.iter().filter_map(|c| c.kind).collect();
    // The main agent's first step and its answer at least; a request that
    // delegates leaves the steps between to its subagent.
    let count = |k: CallKind| kinds.iter().filter(|x| **x == k).count();
    assert!(
        count(CallKind::Agent) >= 2 && count(CallKind::Agent) + count(CallKind::Subagent) >= 3,
        "{kinds:?}"
    );
    let system = calls
        .iter()
        .flat_map(|c| c.messages.first())
        .map(codendum_core::openai::message_text)
        .find(|t| t.len() > 200)
        .expect("a system prompt");
    let words: String = system.chars().take(60).collect();
    for needle in [TASK, "twin-test-key", words.as_str()] {
        assert!(!any_file_contains(dir, needle), "{needle:?} in the capture");
    }
    // Replayed at the recorded pace (the recording's seconds are real, of
    // a twin at TIME_SCALE) against a fresh twin 100 times faster than the
    // GB10.
    let clock = Clock::scaled(100.0);
    let fresh = twin(&clock).await;
    let replayed = replay_through(&fresh.base_url(), &clock, &trace, 1.0 / TIME_SCALE, 1).await;
    fresh.shutdown().await;
    assert_every_call_replayed(&trace, &replayed);
    let sent: u64 = trace.calls.iter().map(|c| c.input_tokens).sum();
    eprintln!(
        "capture: {} calls ({kinds:?}), {sent} prompt tokens recorded and replayed",
        trace.calls.len()
    );
}

/// The session store OpenCode wrote (in the isolated HOME) holds every
/// call the capture recorded but the title (which OpenCode does not
/// store), session by session, of the same sizes; replayed against a fresh
/// twin it sends each of them at the size the capture recorded.
async fn check_store(store: &Path, captured: &Path) {
    let (kind, trace) = replay::load(store, 16).expect("the store reads");
    assert_eq!(kind, SourceFormat::Opencode);
    assert!(trace.unread.is_empty(), "{:?}", trace.unread);
    let (_, capture) = replay::load(captured, 16).expect("the capture reads");
    let calls_of = |t: &codendum_core::trace::Trace, s: &str| -> Vec<(u64, u64)> {
        t.calls
            .iter()
            .filter(|c| c.session.as_deref() == Some(s) && c.kind != Some(CallKind::Title))
            .map(|c| (c.input_tokens, c.output_tokens))
            .collect()
    };
    assert_eq!(trace.sessions(), capture.sessions());
    for s in trace.sessions() {
        assert_eq!(calls_of(&trace, s), calls_of(&capture, s), "session {s}");
    }
    let clock = Clock::scaled(100.0);
    let fresh = twin(&clock).await;
    let replayed = replay_through(&fresh.base_url(), &clock, &trace, 1.0 / TIME_SCALE, 2).await;
    fresh.shutdown().await;
    assert_every_call_replayed(&trace, &replayed);
    for s in trace.sessions() {
        let mut sent: Vec<&codendum_core::results::classroom_records::CallRecord> = replayed
            .requests
            .iter()
            .filter(|r| r.session == s)
            .collect();
        sent.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
        let sent: Vec<u64> = sent.iter().filter_map(|r| r.prompt_tokens).collect();
        let recorded: Vec<u64> = calls_of(&capture, s).iter().map(|c| c.0).collect();
        assert_eq!(
            sent, recorded,
            "session {s}: every call at the size the capture recorded"
        );
    }
    eprintln!(
        "store: {} calls of {} sessions, each as the capture recorded it, replayed at its size",
        trace.calls.len(),
        trace.sessions().len()
    );
}

fn check_session(
    calls: &[Call],
    tools: &[(String, Value, String)],
    changed: &[String],
    (_original, project): (&Path, &Path),
    log: &str,
) {
    let title = calls
        .iter()
        .find(|c| c.tools.is_empty())
        .expect("a title request");
    let title_text = title.answer.content();
    assert!(
        title_text.len() <= 50 && !title_text.contains('\n'),
        "title {title_text:?}"
    );
    for (name, args, result) in tools {
        assert!(
            !["skill", "webfetch"].contains(&name.as_str()),
            "called {name} {args}\n{log}"
        );
        if name != "bash" && looks_failed(result) {
            assert!(
                real_error(result),
                "tool error that a real model would not meet: {name} {args} -> {result}\n{log}"
            );
        }
    }
    let read_py = tools.iter().any(|(n, a, r)| {
        n == "read"
            && a["filePath"].as_str().is_some_and(|p| p.ends_with(".py"))
            && r.contains("<content>")
    });
    assert!(read_py, "no python file was read\n{log}");
    let edited: Vec<&Value> = tools
        .iter()
        .filter(|(n, _, r)| n == "edit" && r.contains("Edit applied successfully"))
        .map(|(_, a, _)| a)
        .collect();
    // A change reached the disk: an edit, or a new file written (which one
    // a request makes is the class's draw).
    let wrote = tools
        .iter()
        .any(|(n, _, r)| n == "write" && !looks_failed(r));
    assert!(
        !edited.is_empty() || wrote,
        "no edit applied and no file written\n{log}"
    );
    for a in &edited {
        // Relative to the project, or absolute (as glob and grep print paths).
        let given = a["filePath"].as_str().unwrap();
        let path = Path::new(given)
            .strip_prefix(project)
            .map_or(given.to_string(), |p| p.display().to_string());
        assert!(
            changed.contains(&path),
            "{path} edited but unchanged on disk: {changed:?}"
        );
    }
    // Every file the persona wrote is on disk with what it sent (whether a
    // request writes a test is the class's draw, as with a real model; the
    // persona's text is sized by the class, so a test file may be short).
    for (_, a, _) in tools
        .iter()
        .filter(|(n, _, r)| n == "write" && !looks_failed(r))
    {
        let given = a["filePath"].as_str().unwrap_or_default();
        let on_disk = Path::new(given)
            .strip_prefix(project)
            .map_or_else(|_| project.join(given), |p| project.join(p));
        let now = std::fs::read_to_string(&on_disk).unwrap_or_default();
        let sent = a["content"].as_str().unwrap_or_default();
        assert_eq!(
            now.trim_end(),
            sent.trim_end(),
            "{given} written but not as sent\n{log}"
        );
    }
    check_tests_and_answer(calls, tools, log);
}

/// A test command ran through bash, and the final answer says what it really
/// printed: passing, failing or not installed.
fn check_tests_and_answer(calls: &[Call], tools: &[(String, Value, String)], log: &str) {
    let runs: Vec<&String> = tools
        .iter()
        .filter(|(n, a, _)| {
            n == "bash" && a["command"].as_str().is_some_and(|c| c.contains("pytest"))
        })
        .map(|(_, _, r)| r)
        .collect();
    let last = *runs
        .last()
        .unwrap_or_else(|| panic!("the tests were never run\n{log}"));
    // A change after the last run is untested: the answer cannot say the
    // tests pass (a request whose budget ends right after a change).
    let last_run = tools.iter().rposition(|(n, a, _)| {
        n == "bash" && a["command"].as_str().is_some_and(|c| c.contains("pytest"))
    });
    let changed_after = last_run.is_some_and(|i| {
        tools[i + 1..]
            .iter()
            .any(|(n, _, r)| (n == "edit" || n == "write") && !looks_failed(r))
    });
    let last_call = calls.last().expect("calls");
    assert!(
        !last_call.answer.has_tool_calls(),
        "the last call was not a final answer\n{log}"
    );
    let answer = last_call.answer.content();
    let first_line = answer.lines().next().unwrap_or("");
    let tally = last
        .lines()
        .rev()
        .find(|l| l.contains(" passed") || l.contains(" failed") || l.contains("error"))
        .or_else(|| last.lines().next())
        .unwrap_or("(no output)");
    eprintln!("last test run: {tally}\nfinal answer: {first_line}");
    assert!(
        log.contains(first_line),
        "OpenCode did not print the final answer {first_line:?}\n{log}"
    );
    // The answer claims the tests pass only when the last run passed and
    // nothing changed after it.
    let passed_last = last.contains("passed") && !last.contains("failed") && !real_error(last);
    if passed_last && !changed_after {
        assert!(answer.contains("passes"), "{answer}");
    } else {
        assert!(!answer.contains("passes"), "{answer}");
        assert!(!answer.starts_with("Done"), "{answer}");
    }
}
