//! The handler every request goes through: read the request, note it, send
//! it upstream with the same method, path, query, headers and body, and
//! hand the answer back as it streams ([`Tap`]).
//!
//! Headers: hop-by-hop ones (`connection`, `keep-alive`, `te`, `trailer`,
//! `transfer-encoding`, `upgrade`, `proxy-*`), `host` and `content-length`
//! are set anew by each side; `accept-encoding` is dropped so the upstream
//! answers uncompressed and the stream can be read. Everything else,
//! `Authorization` included, is forwarded as it came (and never written).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::classify;
use super::notice::{CaptureNotice, Notifier};
use super::observe::Answer;
use super::store::Store;
use super::tap::Tap;
use codendum_twin::chunks::error_body;

/// The largest request body taken, bytes.
pub const MAX_REQUEST_BYTES: usize = 256 << 20;

/// What every request needs.
pub struct Forwarder {
    /// The upstream client (rustls, optional private CA).
    pub http: reqwest::Client,
    /// Upstream OpenAI base, ending in `/v1`.
    pub base: String,
    /// Upstream origin (`scheme://host:port`), for paths outside `/v1`.
    pub origin: String,
    /// The records.
    pub store: Arc<Store>,
    /// Where the operator's notices go.
    pub notices: Notifier,
}

impl Forwarder {
    /// The upstream URL of a request path (with query): `/v1/…` maps onto
    /// the base, anything else onto the origin.
    pub fn url_for(&self, path_and_query: &str) -> String {
        match path_and_query.strip_prefix("/v1") {
            Some(rest) if rest.is_empty() || rest.starts_with('/') || rest.starts_with('?') => {
                format!("{}{rest}", self.base)
            }
            _ => format!("{}{path_and_query}", self.origin),
        }
    }
}

fn hop_by_hop(name: &HeaderName) -> bool {
    let n = name.as_str();
    matches!(
        n,
        "connection"
            | "keep-alive"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
    ) || n.starts_with("proxy-")
}

/// vLLM's error JSON with `status`.
fn vllm_error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = error_body(message, kind, None, status.as_u16());
    let mut resp = (status, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// The capture's one handler (see the module documentation).
pub async fn handle(State(fwd): State<Arc<Forwarder>>, request: Request) -> Response {
    let received = Instant::now();
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, MAX_REQUEST_BYTES).await {
        Ok(b) => b,
        Err(e) => {
            let msg = format!("cannot read the request body: {e}");
            return vllm_error(StatusCode::BAD_REQUEST, "BadRequestError", &msg);
        }
    };
    let path = parts.uri.path().to_string();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or(path.clone(), |p| p.as_str().to_string());
    let (info, parsed) = classify::inspect(&parts.headers, &path, &body);
    let key = parts
        .headers
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    let student = fwd.store.student(key);
    let call = fwd.store.begin(
        (parts.method.as_str(), &path),
        (&info, student),
        parsed.as_ref(),
        body.len(),
        received,
    );
    drop(parsed);
    let mut req = fwd
        .http
        .request(parts.method.clone(), fwd.url_for(&path_and_query));
    for (name, value) in &parts.headers {
        if !hop_by_hop(name) && name != header::ACCEPT_ENCODING {
            req = req.header(name, value);
        }
    }
    let resp = match req.body(body).send().await {
        Ok(r) => r,
        Err(e) => {
            let reason = codendum_core::error::one_line(&e);
            fwd.notices.send(CaptureNotice::UpstreamUnreachable {
                origin: fwd.origin.clone(),
                reason: reason.clone(),
            });
            let message = format!("upstream {} unreachable: {reason}", fwd.origin);
            fwd.store.finish(
                call,
                502,
                Answer::default(),
                Instant::now(),
                Some(message.clone()),
            );
            return vllm_error(StatusCode::BAD_GATEWAY, "BadGatewayError", &message);
        }
    };
    let status = resp.status();
    let sse = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut builder = Response::builder().status(status);
    for (name, value) in resp.headers() {
        if !hop_by_hop(name) {
            builder = builder.header(name, value);
        }
    }
    let stream = resp.bytes_stream().boxed();
    let tap = Tap::new(stream, sse, call, status.as_u16(), fwd.store.clone());
    builder.body(Body::from_stream(tap)).unwrap_or_else(|e| {
        vllm_error(
            StatusCode::BAD_GATEWAY,
            "BadGatewayError",
            &format!("cannot pass the answer on: {e}"),
        )
    })
}
