//! The proxy over real loopback HTTP, in front of a small router that streams
//! SSE chunks and holds its body open until the test releases it.

use std::time::Duration;

use axum::body::Body;
use axum::routing::{get, post};
use axum::Router;
use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_twin::proxy::{Limit, ProxyConfig, ProxyState, Rejection};
use serde_json::Value;
use tokio::sync::watch;

const KEY_A: &str = "sk-test-student-a";
const KEY_B: &str = "sk-test-student-b";

fn config(in_flight: Option<u32>, per_minute: Option<u32>, global: Option<u32>) -> ProxyConfig {
    ProxyConfig {
        keys: vec![Secret::new(KEY_A), Secret::new(KEY_B)],
        per_key_in_flight: in_flight,
        per_key_per_minute: per_minute,
        global_in_flight: global,
    }
}

/// A router whose chat endpoint sends one chunk at once and `[DONE]` when the
/// gate opens.
fn dummy(gate: watch::Receiver<bool>) -> Router {
    let chat = move || {
        let mut gate = gate.clone();
        async move {
            let stream = async_stream(move |tx| async move {
                let _ = tx.send("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n");
                let _ = gate.wait_for(|open| *open).await;
                let _ = tx.send("data: [DONE]\n\n");
            });
            axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap()
        }
    };
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/metrics", get(|| async { "dummy_requests_running 0\n" }))
        .route("/health", get(|| async { "" }))
}

/// A body stream fed by a task through an unbounded channel.
fn async_stream<F, Fut>(
    f: F,
) -> impl futures::Stream<Item = Result<&'static str, std::convert::Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::UnboundedSender<&'static str>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(f(tx));
    futures::StreamExt::map(tokio_stream::wrappers::UnboundedReceiverStream::new(rx), Ok)
}

struct Server {
    base: String,
    state: ProxyState,
    gate: watch::Sender<bool>,
    http: reqwest::Client,
}

async fn start(cfg: ProxyConfig) -> Server {
    let (gate, rx) = watch::channel(false);
    let state = ProxyState::new(cfg, Clock::real());
    let app = state.wrap(dummy(rx));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Server {
        base: format!("http://{addr}"),
        state,
        gate,
        http: reqwest::Client::new(),
    }
}

impl Server {
    async fn chat(&self, key: Option<&str>) -> reqwest::Response {
        let mut req = self
            .http
            .post(format!("{}/v1/chat/completions", self.base))
            .body("{}");
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        req.send().await.unwrap()
    }

    async fn wait_idle(&self) {
        for _ in 0..1000 {
            if self.state.in_flight() == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("requests still in flight: {}", self.state.in_flight());
    }
}

async fn error_of(resp: reqwest::Response) -> Value {
    let v: Value = resp.json().await.unwrap();
    v["error"].clone()
}

#[tokio::test]
async fn unknown_or_missing_key_is_401_but_health_and_metrics_are_open() {
    let s = start(config(None, None, None)).await;
    for key in [Some("sk-wrong"), None] {
        let resp = s.chat(key).await;
        assert_eq!(resp.status(), 401);
        let e = error_of(resp).await;
        assert_eq!(e["type"], "AuthenticationError");
        assert_eq!(e["code"], 401);
    }
    let health = s
        .http
        .get(format!("{}/health", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let metrics = s
        .http
        .get(format!("{}/metrics", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);
    let text = metrics.text().await.unwrap();
    assert!(text.starts_with("dummy_requests_running 0\n"), "{text}");
    assert!(
        text.contains("codendum_proxy_unauthorized_total 2"),
        "{text}"
    );
}

#[tokio::test]
async fn a_key_over_its_in_flight_limit_gets_429_and_others_do_not() {
    let s = start(config(Some(1), None, None)).await;
    let held = s.chat(Some(KEY_A)).await;
    assert_eq!(held.status(), 200);
    let second = s.chat(Some(KEY_A)).await;
    assert_eq!(second.status(), 429);
    assert_eq!(second.headers()["retry-after"], "1");
    let e = error_of(second).await;
    assert_eq!(e["type"], "RateLimitError");
    assert_eq!(e["code"], 429);
    assert!(e["param"].is_null());

    let other = s.chat(Some(KEY_B)).await;
    assert_eq!(other.status(), 200);
    assert_eq!(s.state.in_flight(), 2);

    s.gate.send(true).unwrap();
    let body = held.text().await.unwrap();
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
    other.text().await.unwrap();
    s.wait_idle().await;
    assert_eq!(s.chat(Some(KEY_A)).await.status(), 200);

    let m = s.state.render_metrics();
    assert!(
        m.contains("codendum_proxy_rate_limited_total{key=\"0\""),
        "{m}"
    );
    assert!(m.contains(&format!(
        "codendum_proxy_rate_limited_total{{key=\"0\",key_id=\"{}\"}} 1",
        Secret::new(KEY_A).short_id()
    )));
    assert!(m.contains("codendum_proxy_requests_total{key=\"1\""));
    assert!(m.contains("codendum_proxy_rate_limited_by_limit_total{limit=\"per_key_in_flight\"} 1"));
    assert!(
        !m.contains(KEY_A) && !m.contains(KEY_B),
        "metrics leak a key"
    );
}

#[tokio::test]
async fn a_client_that_disconnects_releases_its_slot() {
    let s = start(config(Some(1), None, None)).await;
    let resp = s.chat(Some(KEY_A)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(s.state.in_flight(), 1);
    drop(resp);
    s.wait_idle().await;
    assert_eq!(s.chat(Some(KEY_A)).await.status(), 200);
}

#[tokio::test]
async fn the_global_in_flight_limit_covers_all_keys() {
    let s = start(config(None, None, Some(1))).await;
    let held = s.chat(Some(KEY_A)).await;
    assert_eq!(held.status(), 200);
    let other = s.chat(Some(KEY_B)).await;
    assert_eq!(other.status(), 429);
    assert!(error_of(other).await["message"]
        .as_str()
        .unwrap()
        .contains("global_in_flight"));
}

#[tokio::test]
async fn per_minute_limit_over_http() {
    let s = start(config(None, Some(2), None)).await;
    s.gate.send(true).unwrap();
    for _ in 0..2 {
        let r = s.chat(Some(KEY_A)).await;
        assert_eq!(r.status(), 200);
        r.text().await.unwrap();
    }
    let third = s.chat(Some(KEY_A)).await;
    assert_eq!(third.status(), 429);
    let retry: u64 = third.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "retry-after {retry}");
    assert_eq!(s.chat(Some(KEY_B)).await.status(), 200);
    let metrics = s
        .http
        .get(format!("{}/metrics", s.base))
        .send()
        .await
        .unwrap();
    let text = metrics.text().await.unwrap();
    assert!(
        text.contains("codendum_proxy_rate_limited_by_limit_total{limit=\"per_key_per_minute\"} 1")
    );
}

#[tokio::test(start_paused = true)]
async fn per_minute_window_slides_on_the_clock() {
    // A clock 60 times faster than real time: one real second is a minute.
    let state = ProxyState::new(config(None, Some(2), None), Clock::scaled(60.0));
    let auth = format!("Bearer {KEY_A}");
    drop(state.admit(Some(&auth)).unwrap());
    tokio::time::advance(Duration::from_millis(500)).await; // 30 s simulated
    drop(state.admit(Some(&auth)).unwrap());
    match state.admit(Some(&auth)) {
        Err(Rejection::TooManyRequests {
            limit: Limit::PerKeyPerMinute,
            retry_after_secs,
        }) => assert_eq!(retry_after_secs, 30),
        other => panic!("expected a per-minute 429, got {other:?}"),
    }
    tokio::time::advance(Duration::from_millis(510)).await; // first admission left the window
    assert!(state.admit(Some(&auth)).is_ok());
    assert!(matches!(
        state.admit(Some("Bearer nope")),
        Err(Rejection::Unauthorized)
    ));
}
