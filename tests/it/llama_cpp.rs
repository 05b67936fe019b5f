//! What llama.cpp's server does that vLLM does not, from its recorded
//! answers (fixtures/llama-cpp/): no usage in streams, SSE comment lines,
//! 404 for /tokenize, /version and /metrics, usage only when not streamed,
//! and an answer with nothing in it.

use std::sync::Arc;
use std::time::Duration;

use codendum::classroom::{run_classroom, LiveStatus, MemorySink};
use codendum::client::{ClientOptions, HttpClient};
use codendum_core::clock::Clock;
use codendum_core::openai::{CallRequest, Endpoint, ErrorKind, TokenSource, Transport};
use codendum_core::results::classroom_records::{CallKind, TaskOutcome};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use codendum_testkit::servers::{fixture, Servers, MODEL};

fn client(base: &str) -> HttpClient {
    HttpClient::new(
        &codendum_core::access::BaseUrl::parse(base).expect("base URL"),
        ClientOptions::default(),
    )
    .expect("client")
}

fn chat() -> CallRequest {
    CallRequest {
        endpoint: Endpoint::Chat,
        body: json!({"model": MODEL, "stream": true, "max_tokens": 24,
            "messages": [{"role": "user", "content": "Say hello in five words."}]})
        .into(),
        api_key: None,
        headers: Vec::new(),
        record_gaps: true,
        first_token: None,
    }
}

#[test]
fn recorded_streams_measure_with_the_clients_own_count() {
    let servers = Servers::start(Duration::ZERO);
    let c = client(&servers.base_url());
    let o = servers.rt.block_on(c.call(chat()));
    assert!(o.is_ok(), "{:?}", o.error);
    assert!(o.ttft.is_some());
    assert!(o.usage.is_none(), "llama.cpp sends no usage in streams");
    let (tokens, source) = o.output_tokens();
    assert_eq!(source, TokenSource::Client);
    assert_eq!(tokens, o.text_chunks);
    assert!(!o.message.content.is_empty());
    let mut completions = chat();
    completions.endpoint = Endpoint::Completions;
    completions.body =
        json!({"model": MODEL, "prompt": "Once upon a time", "max_tokens": 16, "stream": true})
            .into();
    let o = servers.rt.block_on(c.call(completions));
    assert!(o.is_ok(), "{:?}", o.error);
    assert!(o.text_chunks > 0);
}

#[test]
fn side_calls_that_answer_404_mean_not_there() {
    let servers = Servers::start(Duration::ZERO);
    let c = client(&servers.base_url());
    servers.rt.block_on(async {
        assert_eq!(
            c.tokenize(MODEL, "hello").await.expect("404 is no error"),
            None
        );
        assert_eq!(c.version().await, None);
        let models = c.models().await.expect("models");
        assert_eq!(models[0].id, MODEL);
        assert_eq!(models[0].max_model_len, None);
        // usage only without streaming: what the prompt sizing asks for.
        let tokens = c
            .prompt_tokens_unstreamed(Endpoint::Chat, MODEL, "Say hello in five words.")
            .await
            .expect("answer");
        assert_eq!(
            tokens,
            Some(20),
            "the recorded answer's usage.prompt_tokens"
        );
    });
}

/// Serves `body` as the answer to every chat request.
fn answering(rt: &tokio::runtime::Runtime, body: String) -> MockServer {
    rt.block_on(async {
        let s = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_string(body))
            .mount(&s)
            .await;
        s
    })
}

/// Ping comments (sse-starlette's keep-alive every 15 s, recorded from a
/// request that waited in llama.cpp's one-at-a-time queue) before the first
/// event change nothing.
#[test]
fn comment_lines_before_the_first_event_are_skipped() {
    let rt = crate::cli_support::runtime();
    let body = fixture("llama-cpp/sse-chat-queued-ping.txt");
    assert!(
        body.starts_with(": ping - "),
        "the recording starts with a ping"
    );
    let server = answering(&rt, body);
    let o = rt.block_on(client(&format!("{}/v1", server.uri())).call(chat()));
    assert!(o.is_ok(), "{:?}", o.error);
    assert!(!o.message.content.is_empty());
}

/// A streamed prompt that does not fit: llama.cpp answers 200 with an
/// empty body (the error is only in its log). Not a success.
#[test]
fn an_empty_200_body_is_incomplete() {
    let rt = crate::cli_support::runtime();
    let server = answering(&rt, fixture("llama-cpp/error-too-long-stream.txt"));
    let o = rt.block_on(client(&format!("{}/v1", server.uri())).call(chat()));
    assert_eq!(o.error.map(|e| e.kind), Some(ErrorKind::Incomplete));
}

/// The role chunk, a finish chunk and `[DONE]` with nothing between
/// (recorded: the end-of-turn token forced by `logit_bias`): an empty
/// answer. The student's coding request ends there, as OpenCode's turn
/// does, and counts as failed, never as completed.
#[test]
fn an_empty_answer_ends_the_coding_request_as_failed() {
    let rt = crate::cli_support::runtime();
    let server = answering(&rt, fixture("llama-cpp/sse-chat-empty.txt"));
    let mut config = crate::classroom_support::one_student(Some(8192));
    config.model = MODEL.into();
    config.output_limit = 1024;
    let transport: Arc<dyn Transport> = Arc::new(client(&format!("{}/v1", server.uri())));
    let clock = Clock::real();
    let sink = Arc::new(MemorySink::default());
    let status = Arc::new(LiveStatus::new(clock.clone()));
    let outcome = rt
        .block_on(run_classroom(&config, transport, clock, sink, status))
        .expect("run");
    let agent: Vec<_> = outcome
        .requests
        .iter()
        .filter(|r| r.kind == CallKind::Agent)
        .collect();
    assert_eq!(agent.len(), 1, "no retry of an empty answer: {agent:?}");
    assert_eq!(agent[0].error_kind, Some(ErrorKind::EmptyAnswer));
    assert_eq!(outcome.tasks.len(), 1);
    assert_eq!(outcome.tasks[0].outcome, TaskOutcome::Failed);
    assert_eq!(outcome.tasks[0].error_kind, Some(ErrorKind::EmptyAnswer));
    assert_eq!(outcome.summary.completed, 0);
    assert_eq!(
        outcome.summary.errors_by_kind.get(&ErrorKind::EmptyAnswer),
        Some(&outcome.summary.errors)
    );
}
