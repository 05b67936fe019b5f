//! The in-process transport against the HTTP twin: same answer for the
//! same request, vLLM's 400 for a prompt that is too long, time-outs that
//! abort the engine request, and engine figures as a timeline.

use std::sync::Arc;
use std::time::Duration;

use codendum::client::{ClientOptions, HttpClient};
use codendum_core::clock::Clock;
use codendum_core::openai::{CallRequest, Endpoint, ErrorKind, Transport};
use codendum_core::profile::Profile;
use codendum_core::prom::window_stats;
use codendum_twin::inproc::{InProcTransport, StatsSampler};
use codendum_twin::persona::AgentPersona;
use codendum_twin::{start, TwinOptions};
use serde_json::{json, Value};

fn options(clock: Clock) -> TwinOptions {
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = clock;
    opts.responder = Arc::new(AgentPersona::new(11));
    opts.seed = 11;
    opts
}

fn agent_body() -> Value {
    let tool = |name: &str, params: Value| json!({"type": "function", "function": {"name": name, "description": name, "parameters": params}});
    json!({
        "model": "qwen3-coder",
        "max_tokens": 8192,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [
            {"role": "system", "content": "You are a coding agent. Use the tools."},
            {"role": "user", "content": "Add a /nick command to the chat server in src/main/java/chat/Server.java and run the tests with mvn test."}
        ],
        "tools": [
            tool("read", json!({"type": "object", "properties": {"filePath": {"type": "string"}}, "required": ["filePath"]})),
            tool("edit", json!({"type": "object", "properties": {"filePath": {"type": "string"}, "oldString": {"type": "string"}, "newString": {"type": "string"}}})),
            tool("bash", json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})),
            tool("glob", json!({"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}))
        ]
    })
}

fn request(body: Value) -> CallRequest {
    CallRequest {
        endpoint: Endpoint::Chat,
        body: body.into(),
        api_key: None,
        headers: vec![("x-session-id".into(), "ses_0123456789abcdef01234567".into())],
        record_gaps: false,
        first_token: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_and_http_give_the_same_answer() {
    let clock = Clock::scaled(200.0);
    let twin = start(options(clock.clone()), "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("twin");
    let client = HttpClient::new(
        &codendum_core::access::BaseUrl::parse(twin.base_url()).expect("base URL"),
        ClientOptions {
            clock: clock.clone(),
            ..ClientOptions::default()
        },
    )
    .expect("client");
    let inproc = InProcTransport::start(options(clock.clone()));
    for body in [
        agent_body(),
        json!({"model": "qwen3-coder", "max_tokens": 40, "stream": true,
               "stream_options": {"include_usage": true},
               "messages": [{"role": "user", "content": "Generate a title for: fix the chat server"}]}),
    ] {
        let http = client.call(request(body.clone())).await;
        let local = inproc.call(request(body)).await;
        assert!(http.is_ok() && local.is_ok(), "{http:?} {local:?}");
        assert_eq!(local.message, http.message);
        assert_eq!(local.usage, http.usage);
        assert_eq!(local.finish_reason, http.finish_reason);
        assert_eq!(local.text_chunks, http.text_chunks);
        assert_eq!(local.status, Some(200));
        assert!(local.ttft.is_some_and(|t| t > 0.0 && t <= local.e2e));
    }
    twin.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn too_long_prompts_get_vllms_400_and_time_outs_abort() {
    let clock = Clock::scaled(1.0);
    let t = InProcTransport::start(options(clock.clone()));
    let mut body = agent_body();
    body["messages"][1]["content"] = json!("word ".repeat(70_000));
    let o = t.call(request(body)).await;
    let e = o.error.expect("refused");
    assert_eq!((e.kind, e.status), (ErrorKind::Http400, Some(400)));
    assert!(
        e.message.contains("maximum context length is 65536"),
        "{}",
        e.message
    );
    let mut body = agent_body();
    body["model"] = json!("other");
    assert_eq!(t.call(request(body)).await.status, Some(404));

    let t = Arc::new(
        InProcTransport::start(options(clock.clone()))
            .with_timeout(Some(Duration::from_millis(50))),
    );
    let sampler = StatsSampler::spawn(t.clone(), Duration::from_secs(1));
    let o = t.call(request(agent_body())).await;
    assert_eq!(o.error.map(|e| e.kind), Some(ErrorKind::Timeout));
    assert!((o.e2e - 0.05).abs() < 0.01, "{}", o.e2e);
    clock.sleep(Duration::from_secs(3)).await;
    let timeline = sampler.finish();
    assert!(timeline.len() >= 4, "{}", timeline.len());
    let stats = t.engine_stats();
    assert_eq!(stats.finished_abort, 1);
    let last = timeline
        .last()
        .and_then(|s| s.snapshot.clone())
        .expect("snapshot");
    let aborted = last.finished_requests.and_then(|m| m.get("abort").copied());
    assert_eq!(aborted, Some(1.0));
    let w = window_stats(&timeline, 0.0, 10.0);
    assert_eq!((w.peak_running, w.peak_waiting), (Some(0.0), Some(0.0)));
    assert!(w.prompt_tokens.is_some_and(|p| p > 0.0), "{w:?}");
}
