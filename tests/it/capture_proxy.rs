//! `codendum capture` as a proxy, over real loopback HTTP: streams pass
//! byte for byte and piece by piece, the key is forwarded and never
//! written, an unreachable upstream gets vLLM's 502, a body that is not JSON
//! passes as it is.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::Router;
use serde_json::{json, Value};

use crate::capture_support::{
    any_file_contains, calls, capture, post, step_body, twin, KEY, SYSTEM,
};

/// Lets an upstream send its next piece; counts the pieces it sent without
/// leave (waited out).
#[derive(Clone)]
struct Gate {
    leave: Arc<tokio::sync::Semaphore>,
    without_leave: Arc<AtomicUsize>,
}

impl Gate {
    /// How long the upstream waits for leave before it sends anyway
    /// (a hang guard, not a measurement: with leave given the wait is nil).
    const PATIENCE: Duration = Duration::from_secs(5);

    fn new() -> Gate {
        Gate {
            leave: Arc::new(tokio::sync::Semaphore::new(0)),
            without_leave: Arc::default(),
        }
    }

    async fn wait(&self) {
        match tokio::time::timeout(Self::PATIENCE, self.leave.acquire()).await {
            Ok(Ok(permit)) => permit.forget(),
            _ => {
                self.without_leave.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    fn give(&self) {
        self.leave.add_permits(1);
    }
}

/// An upstream that streams fixed SSE pieces, split in the middle of
/// events, each after the first only once the client has been given leave
/// (so a proxy that buffered would stall it), and echoes other bodies back.
async fn fixed_upstream() -> (String, Vec<&'static [u8]>, Gate) {
    let gate = Gate::new();
    let upstream_gate = gate.clone();
    let pieces: Vec<&'static [u8]> = vec![
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"de",
        b"lta\":{\"content\":\"Hel\"}}]}\n\n",
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n: a comment\n\n",
        b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
    ];
    let served = pieces.clone();
    let app = Router::new().fallback(move |req: axum::extract::Request| {
        let served = served.clone();
        let gate = upstream_gate.clone();
        async move {
            let body = axum::body::to_bytes(req.into_body(), 1 << 20)
                .await
                .unwrap_or_default();
            if serde_json::from_slice::<Value>(&body).is_err() {
                return axum::response::Response::builder()
                    .header("content-type", "application/octet-stream")
                    .body(Body::from(body))
                    .expect("response");
            }
            let stream = futures::stream::unfold(0usize, move |i| {
                let served = served.clone();
                let gate = gate.clone();
                async move {
                    if i >= served.len() {
                        return None;
                    }
                    if i > 0 {
                        gate.wait().await;
                    }
                    Some((Ok::<_, Infallible>(Bytes::from_static(served[i])), i + 1))
                }
            });
            axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .expect("response")
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/v1"), pieces, gate)
}

#[tokio::test]
async fn streams_pass_byte_for_byte_and_piece_by_piece() {
    let (upstream, pieces, gate) = fixed_upstream().await;
    let dir = tempfile::tempdir().expect("dir");
    let cap = capture(&upstream, dir.path()).await;
    let body = step_body(&[json!({"role": "user", "content": "hi"})], true);
    let mut resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", cap.base_url()))
        .header("x-session-id", "ses_bytes")
        .json(&body)
        .send()
        .await
        .expect("send");
    let mut got = Vec::new();
    while let Some(piece) = resp.chunk().await.expect("chunk") {
        got.extend_from_slice(&piece);
        // The upstream sends its next piece only now, 150 ms on: a proxy that
        // held the pieces back would make it wait out its patience.
        tokio::time::sleep(Duration::from_millis(150)).await;
        gate.give();
    }
    assert_eq!(got, pieces.concat(), "the stream passes byte-identical");
    assert_eq!(
        gate.without_leave.load(Ordering::SeqCst),
        0,
        "every piece reached the client before the upstream sent the next (no buffering)"
    );
    cap.shutdown(Duration::from_secs(2))
        .await
        .expect("shutdown");
    let lines = calls(dir.path());
    assert_eq!(lines.len(), 1);
    let l = &lines[0];
    assert_eq!(l["kind"], "agent");
    assert_eq!(
        (l["prompt_tokens"].as_u64(), l["output_tokens"].as_u64()),
        (Some(7), Some(2))
    );
    assert_eq!(l["tokens_counted_by"], "server");
    let ttft = l["ttft_s"].as_f64().expect("ttft");
    let duration = l["duration_s"].as_f64().expect("duration");
    // Lower bounds only (load can only make them later): the first text is
    // the second piece, sent at least 150 ms in, the last 450 ms in.
    assert!(ttft >= 0.15, "TTFT is the second piece, 150 ms in: {ttft}");
    assert!(duration >= 0.45 && duration >= ttft, "{duration}");
    assert_eq!(l["response_bytes"].as_u64(), Some(got.len() as u64));
}

#[tokio::test]
async fn the_twins_stream_is_recorded_and_the_key_is_never_written() {
    let twin = twin().await;
    let dir = tempfile::tempdir().expect("dir");
    let cap = capture(&twin.base_url(), dir.path()).await;
    let http = reqwest::Client::new();
    let msgs = [
        json!({"role": "system", "content": SYSTEM}),
        json!({"role": "user", "content": "go"}),
    ];
    let r = post(
        &http,
        &cap.base_url(),
        "ses_k",
        None,
        &step_body(&msgs, true),
    )
    .await;
    assert_eq!(
        r.status, 200,
        "the key reached the twin (it accepts only that key)"
    );
    let usage = r.assembler.usage.expect("usage in the stream");
    cap.shutdown(Duration::from_secs(2))
        .await
        .expect("shutdown");
    let l = &calls(dir.path())[0];
    assert_eq!(l["prompt_tokens"].as_u64(), Some(usage.prompt_tokens));
    assert_eq!(l["output_tokens"].as_u64(), Some(usage.completion_tokens));
    assert_eq!(l["tool_calls"][0]["name"], "read");
    let args = &r.assembler.message.tool_calls[0].arguments;
    assert_eq!(
        l["tool_calls"][0]["argument_bytes"].as_u64(),
        Some(args.len() as u64)
    );
    assert_eq!(l["session"], "ses_k");
    assert!(l["ttft_s"].as_f64().expect("ttft") <= l["duration_s"].as_f64().expect("duration"));
    assert!(!any_file_contains(dir.path(), KEY), "the key is in no file");
    assert!(
        !any_file_contains(dir.path(), "src/ChatServer.java"),
        "no tool arguments are written"
    );
    twin.shutdown().await;
}

#[tokio::test]
async fn an_unreachable_upstream_gets_vllms_502() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let dir = tempfile::tempdir().expect("dir");
    let cap = capture(&format!("http://127.0.0.1:{port}/v1"), dir.path()).await;
    let http = reqwest::Client::new();
    let r = post(&http, &cap.base_url(), "ses_x", None, &step_body(&[], true)).await;
    assert_eq!(r.status, 502);
    let v: Value = serde_json::from_slice(&r.body).expect("JSON error");
    let e = &v["error"];
    assert!(
        e["message"]
            .as_str()
            .expect("message")
            .contains("unreachable"),
        "{v}"
    );
    assert_eq!(
        (e["type"].as_str(), e["code"].as_u64()),
        (Some("BadGatewayError"), Some(502))
    );
    assert!(e.get("param").is_some_and(Value::is_null), "{v}");
    cap.shutdown(Duration::from_secs(2))
        .await
        .expect("shutdown");
    let l = &calls(dir.path())[0];
    assert_eq!(l["status"], 502);
    assert!(l["error"].as_str().expect("error").contains("unreachable"));
}

#[tokio::test]
async fn a_body_that_is_not_json_passes_and_is_recorded_as_such() {
    let (upstream, _, _) = fixed_upstream().await;
    let dir = tempfile::tempdir().expect("dir");
    let cap = capture(&upstream, dir.path()).await;
    let raw = b"model=qwen&this is {not json".to_vec();
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions?x=1", cap.base_url()))
        .header("content-type", "text/plain")
        .body(raw.clone())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.bytes().await.expect("body").to_vec(),
        raw,
        "echoed unchanged"
    );
    cap.shutdown(Duration::from_secs(2))
        .await
        .expect("shutdown");
    let l = &calls(dir.path())[0];
    assert_eq!(
        (l["kind"].as_str(), l["body_json"].as_bool()),
        (Some("other"), Some(false))
    );
    assert_eq!(l["request_bytes"].as_u64(), Some(raw.len() as u64));
    assert_eq!(l["path"], "/v1/chat/completions");
}
