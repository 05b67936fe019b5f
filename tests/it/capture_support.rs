//! Shared by the capture tests: a twin whose answers follow a fixed agent
//! script, the capture in front of it, and a client that plays an OpenCode
//! session through it (streamed steps, tool results, pauses between steps).

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use codendum::capture::{self, CaptureConfig, CaptureHandle};
use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_core::openai::chunk::{parse_chunk, Assembler};
use codendum_core::openai::sse::{SseDecoder, SseEvent};
use codendum_core::profile::Profile;
use codendum_twin::answer::{AnswerPart, AnswerRequest, PlannedAnswer, Responder};
use codendum_twin::{start, TwinHandle, TwinOptions};
use serde_json::{json, Value};

/// The API key the tests send (and look for in every file afterwards).
pub const KEY: &str = "sk-test-student-01";

/// The agent script: read, edit, run the tests, answer. Requests without
/// tools get a title.
pub struct StepResponder;

impl Responder for StepResponder {
    fn plan(&self, r: &AnswerRequest<'_>) -> PlannedAnswer {
        if r.tools.is_empty() {
            return PlannedAnswer {
                parts: vec![AnswerPart::Text("Add a method to ChatServer".into())],
            };
        }
        let step = r
            .messages
            .iter()
            .filter(|m| m["role"] == "assistant")
            .count();
        let call = |name: &str, args: Value| AnswerPart::ToolCall {
            name: name.into(),
            arguments: args.to_string(),
        };
        let parts = match step {
            0 => vec![call("read", json!({"filePath": "src/ChatServer.java"}))],
            1 => vec![call(
                "edit",
                json!({"filePath": "src/ChatServer.java", "oldString": "a", "newString": "b"}),
            )],
            2 => vec![call("bash", json!({"command": "mvn -q test"}))],
            _ => vec![AnswerPart::Text(
                "Done: the method is added and the tests pass.".into(),
            )],
        };
        PlannedAnswer { parts }
    }
}

/// A twin (1000× real time) with the step script that accepts only [`KEY`].
pub async fn twin() -> TwinHandle {
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = Clock::scaled(1000.0);
    opts.api_keys = vec![Secret::new(KEY)];
    opts.responder = Arc::new(StepResponder);
    opts.seed = 5;
    start(opts, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("twin starts")
}

/// A twin with the step script for a class: one key per student, at
/// `scale` times real time, with `faults` (the `--faults` grammar).
pub async fn class_twin(keys: &[&str], scale: f64, faults: Option<&str>) -> TwinHandle {
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = Clock::scaled(scale);
    opts.api_keys = keys.iter().map(|k| Secret::new(*k)).collect();
    opts.responder = Arc::new(StepResponder);
    opts.seed = 5;
    opts.faults = faults.map(|f| {
        Arc::new(
            codendum_twin::faults::FaultPlan::parse(f)
                .expect("fault spec")
                .with_seed(5),
        )
    });
    start(opts, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("twin starts")
}

/// A capture on 127.0.0.1:0 in front of `upstream`, writing into `out`.
pub async fn capture(upstream: &str, out: &Path) -> CaptureHandle {
    let config = CaptureConfig::new(upstream, "127.0.0.1:0", out.to_path_buf()).expect("config");
    capture::start(config).await.expect("capture starts")
}

/// The tools a step offers.
pub fn tools() -> Value {
    let t = |name: &str, props: Value| {
        json!({"type": "function", "function": {"name": name, "description": format!("The {name} tool"),
            "parameters": {"type": "object", "properties": props}}})
    };
    json!([
        t("read", json!({"filePath": {"type": "string"}})),
        t(
            "edit",
            json!({"filePath": {"type": "string"}, "oldString": {"type": "string"}, "newString": {"type": "string"}})
        ),
        t("bash", json!({"command": {"type": "string"}})),
    ])
}

/// The system prompt of the test agent.
pub const SYSTEM: &str = "You are the test build agent. Work in the project.";

/// What one streamed call gave back.
pub struct Streamed {
    pub status: u16,
    pub body: Vec<u8>,
    pub assembler: Assembler,
}

/// Sends one chat request to `base` with the session headers and the key.
pub async fn post(
    http: &reqwest::Client,
    base: &str,
    session: &str,
    parent: Option<&str>,
    body: &Value,
) -> Streamed {
    post_as(http, base, KEY, (session, parent), body).await
}

/// [`post`] with another student's key.
pub async fn post_as(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    (session, parent): (&str, Option<&str>),
    body: &Value,
) -> Streamed {
    let mut req = http
        .post(format!("{base}/chat/completions"))
        .bearer_auth(key)
        .header("x-session-id", session)
        .json(body);
    if let Some(p) = parent {
        req = req.header("x-parent-session-id", p);
    }
    let resp = req.send().await.expect("send");
    let status = resp.status().as_u16();
    let body = resp.bytes().await.expect("body").to_vec();
    let mut assembler = Assembler::new();
    let mut dec = SseDecoder::new();
    dec.push(&body);
    while let Some(ev) = dec.next_event() {
        if let SseEvent::Data(d) = ev {
            if let Ok(c) = parse_chunk(d) {
                assembler.apply(&c);
            }
        }
    }
    Streamed {
        status,
        body,
        assembler,
    }
}

/// A streamed agent step body.
pub fn step_body(messages: &[Value], with_tools: bool) -> Value {
    let mut b = json!({"model": "qwen3-coder", "stream": true, "stream_options": {"include_usage": true},
        "max_tokens": 512, "messages": messages});
    if with_tools {
        b["tools"] = tools();
        b["tool_choice"] = json!("auto");
    }
    b
}

/// Adds the assistant's tool calls and a result for each, as the agent
/// sends them with its next step.
fn answer_tools(messages: &mut Vec<Value>, calls: &[codendum_core::openai::ToolCall]) {
    let tc: Vec<Value> = calls
        .iter()
        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
        .collect();
    messages.push(json!({"role": "assistant", "content": null, "tool_calls": tc}));
    for c in calls {
        messages.push(json!({"role": "tool", "tool_call_id": c.id, "content": "ok"}));
    }
}

/// Plays one agent session through `base`: steps until a final answer,
/// answering each tool call, then waiting `pauses[i]` seconds before step
/// i + 1. Returns the answers' tool names per step.
pub async fn session(base: &str, id: &str, pauses: &[f64]) -> Vec<Vec<String>> {
    timed_session(base, id, pauses).await.0
}

/// [`session`], with each step's wall time (request sent → whole answer
/// read) beside the tool names.
pub async fn timed_session(
    base: &str,
    id: &str,
    pauses: &[f64],
) -> (Vec<Vec<String>>, Vec<Duration>) {
    // Plain HTTP to loopback: no TLS roots. `Client::new()` parses the
    // system's CA certificates (~5 ms of CPU in a test build) on the async
    // worker, and with a whole class starting at once that held up the other
    // sessions' timed steps (`tests/perf/capture_load.rs`).
    let http = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .build()
        .expect("client");
    let mut times = Vec::new();
    let mut messages = vec![
        json!({"role": "system", "content": SYSTEM}),
        json!({"role": "user", "content": "Add a method to ChatServer and test it"}),
    ];
    let mut names = Vec::new();
    for i in 0..10 {
        let sent = std::time::Instant::now();
        let r = post(&http, base, id, None, &step_body(&messages, true)).await;
        times.push(sent.elapsed());
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let calls = r.assembler.message.tool_calls.clone();
        names.push(calls.iter().map(|c| c.name.clone()).collect());
        if calls.is_empty() {
            break;
        }
        answer_tools(&mut messages, &calls);
        let pause = pauses.get(i).copied().unwrap_or(0.0);
        tokio::time::sleep(Duration::from_secs_f64(pause)).await;
    }
    (names, times)
}

/// One student's OpenCode session through `base` with its own `key`:
/// `requests` coding requests, each stepped to its final answer (a 429 or
/// 5xx is retried after `pause_s`, as OpenCode's back-off does), `pause_s`
/// between steps and before each new message. Returns the answers' HTTP
/// statuses in order.
pub async fn opencode_session(
    base: &str,
    key: &str,
    id: &str,
    requests: usize,
    pause_s: f64,
) -> Vec<u16> {
    let http = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .build()
        .expect("client");
    let pause = Duration::from_secs_f64(pause_s);
    let mut statuses = Vec::new();
    let mut messages = vec![json!({"role": "system", "content": SYSTEM})];
    for n in 0..requests {
        messages.push(json!({"role": "user", "content": format!("Coding request {n}: add a method and test it")}));
        for _ in 0..20 {
            let r = post_as(&http, base, key, (id, None), &step_body(&messages, true)).await;
            statuses.push(r.status);
            if r.status == 429 || r.status >= 500 {
                tokio::time::sleep(pause).await;
                continue;
            }
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
            let calls = r.assembler.message.tool_calls.clone();
            if calls.is_empty() {
                messages.push(json!({"role": "assistant", "content": r.assembler.message.content}));
                break;
            }
            answer_tools(&mut messages, &calls);
            tokio::time::sleep(pause).await;
        }
        tokio::time::sleep(pause).await;
    }
    statuses
}

/// Every line of the capture's `calls.jsonl`.
pub fn calls(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("calls.jsonl")).expect("calls.jsonl");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Whether any file under `dir` contains `needle`.
pub fn any_file_contains(dir: &Path, needle: &str) -> bool {
    std::fs::read_dir(dir).expect("list").flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            any_file_contains(&p, needle)
        } else {
            String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).contains(needle)
        }
    })
}
