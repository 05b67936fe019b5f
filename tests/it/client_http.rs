//! The HTTP client against wiremock: error statuses, messages, retry hints,
//! the bearer header, and the side calls.

use std::time::Duration;

use crate::client_support;

use client_support::chat_request;

use codendum::client::{ClientOptions, HttpClient};
use codendum_core::access::Secret;
use codendum_core::openai::{CallRequest, ErrorKind, TokenSource, Transport};
use serde_json::json;
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Match, Mock, MockServer, Request, ResponseTemplate};

const MAX_CONTEXT: &str = "This model's maximum context length is 65536 tokens. However, you requested 8192 output tokens and your prompt contains 57400 input tokens, for a total of 65592 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=57400)";

fn client(server: &MockServer, key: Option<&str>) -> HttpClient {
    let opts = ClientOptions {
        timeout: Duration::from_secs(10),
        max_connections: 4,
        api_key: key.map(Secret::new),
        ..ClientOptions::default()
    };
    HttpClient::new(
        &codendum_core::access::BaseUrl::parse(format!("{}/v1", server.uri())).expect("base URL"),
        opts,
    )
    .expect("client")
}

fn request(key: Option<&str>) -> CallRequest {
    chat_request(key, false)
}

fn sse_ok(body: &str) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body.to_string())
}

const SHORT_STREAM: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

#[tokio::test]
async fn status_400_keeps_vllm_max_context_message() {
    let server = MockServer::start().await;
    let body = json!({"error": {"message": MAX_CONTEXT, "type": "BadRequestError", "param": "input_tokens", "code": 400}});
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(400).set_body_json(body))
        .mount(&server)
        .await;
    let o = client(&server, None).call(request(None)).await;
    let e = o.error.expect("error");
    assert_eq!((e.kind, e.status), (ErrorKind::Http400, Some(400)));
    assert!(e
        .message
        .starts_with("This model's maximum context length is 65536 tokens."));
    assert!(e.message.contains("value=57400"), "{}", e.message);
    assert!(!ErrorKind::Http400.is_retryable());
}

#[tokio::test]
async fn status_401_vllm_shape() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"error": "Unauthorized"})))
        .mount(&server)
        .await;
    let o = client(&server, None).call(request(Some("sk-wrong"))).await;
    let e = o.error.expect("error");
    assert_eq!(e.kind, ErrorKind::Http401);
    assert_eq!(e.message, "Unauthorized");
    assert!(!format!("{e:?}").contains("sk-wrong"));
}

#[tokio::test]
async fn status_429_retry_after_seconds_and_ms() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("x-which", "seconds"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "2")
                .set_body_string("slow down"),
        )
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(header("x-which", "ms"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after-ms", "750"))
        .mount(&server)
        .await;
    let c = client(&server, None);
    let mut req = request(None);
    req.headers.push(("x-which".into(), "seconds".into()));
    let e = c.call(req).await.error.expect("error");
    assert_eq!(e.kind, ErrorKind::Http429);
    assert_eq!(e.retry_after, Some(Duration::from_secs(2)));
    assert_eq!(e.message, "slow down");

    let mut req = request(None);
    req.headers.push(("x-which".into(), "ms".into()));
    let e = c.call(req).await.error.expect("error");
    assert_eq!(e.retry_after, Some(Duration::from_millis(750)));
    assert_eq!(e.message, "HTTP 429 Too Many Requests");
}

#[tokio::test]
async fn status_503() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_json(
            json!({"error": {"message": "queue full", "type": "ServiceUnavailableError", "code": 503}}),
        ))
        .mount(&server)
        .await;
    let o = client(&server, None).call(request(None)).await;
    let e = o.error.expect("error");
    assert_eq!(
        (e.kind, e.status, e.message.as_str()),
        (ErrorKind::Http503, Some(503), "queue full")
    );
    assert_eq!(o.ttft, None);
}

/// Matches a request that has no `authorization` header.
struct NoAuthorization;

impl Match for NoAuthorization {
    fn matches(&self, request: &Request) -> bool {
        !request.headers.contains_key("authorization")
    }
}

#[tokio::test]
async fn bearer_header_sent_only_with_a_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-student-07"))
        .and(header("x-session-id", "s-1"))
        .and(header("content-type", "application/json"))
        .and(body_partial_json(
            json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}}),
        ))
        .respond_with(sse_ok(SHORT_STREAM))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(NoAuthorization)
        .respond_with(sse_ok(SHORT_STREAM))
        .expect(1)
        .mount(&server)
        .await;
    let c = client(&server, None);
    let with_key = c.call(request(Some("sk-student-07"))).await;
    assert!(with_key.is_ok(), "{:?}", with_key.error);
    assert_eq!(with_key.message.content, "Hi!");
    assert_eq!(with_key.finish_reason.as_deref(), Some("stop"));
    // No usage in the stream: two text chunks counted by the client.
    assert_eq!(with_key.output_tokens(), (2, TokenSource::Client));
    let without = c.call(request(None)).await;
    assert!(without.is_ok(), "{:?}", without.error);
    server.verify().await;
}

#[tokio::test]
async fn models_tokenize_version() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .and(header("authorization", "Bearer sk-admin"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": [{"id": "qwen3-coder", "object": "model", "owned_by": "vllm",
                      "root": "/models/q", "parent": null, "max_model_len": 65536, "permission": []}]
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/tokenize"))
        .and(body_partial_json(
            json!({"model": "qwen3-coder", "prompt": "hello"}),
        ))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"count": 3, "max_model_len": 65536, "tokens": [1, 2, 3]})),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/version"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"version": "0.30.0"})))
        .mount(&server)
        .await;
    let c = client(&server, Some("sk-admin"));
    let models = c.models().await.expect("models");
    assert_eq!(models.len(), 1);
    assert_eq!(models[0].id, "qwen3-coder");
    assert_eq!(models[0].max_model_len, Some(65536));
    assert_eq!(c.tokenize("qwen3-coder", "hello").await, Ok(Some(3)));
    assert_eq!(
        c.tokenize("other", "hello").await,
        Ok(None),
        "unmatched → 404"
    );
    assert_eq!(c.version().await.as_deref(), Some("0.30.0"));

    let no_key = client(&server, None);
    let e = no_key.models().await.expect_err("404 without the key");
    assert_eq!(e.kind, ErrorKind::Http4xx);
}

#[tokio::test]
async fn connection_refused_is_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let opts = ClientOptions {
        timeout: Duration::from_secs(10),
        ..ClientOptions::default()
    };
    let c = HttpClient::new(
        &codendum_core::access::BaseUrl::parse(format!("http://127.0.0.1:{port}/v1"))
            .expect("base URL"),
        opts,
    )
    .expect("client");
    let o = c.call(request(None)).await;
    assert_eq!(o.error.map(|e| e.kind), Some(ErrorKind::Connect));
    assert_eq!(c.version().await, None);
}

#[tokio::test]
async fn chunk_larger_than_64_kib_is_read_whole() {
    let server = MockServer::start().await;
    let big = "y".repeat(200_000);
    let body = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{big}\"}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n"
    );
    Mock::given(method("POST"))
        .respond_with(sse_ok(&body))
        .mount(&server)
        .await;
    let o = client(&server, None).call(request(None)).await;
    assert!(o.is_ok(), "{:?}", o.error);
    assert_eq!(o.message.content.len(), 200_000);
    assert_eq!(o.text_chunks, 1);
}
