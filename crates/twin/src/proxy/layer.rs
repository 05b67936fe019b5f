//! The proxy as an axum middleware layer (see [`super::ProxyState::wrap`]):
//! routes `/v1/*` through [`ProxyState::admit`], holds each admitted
//! request's [`Permit`] until its response body ends, and appends the
//! counters to `/metrics`.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, BodyDataStream, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::Stream;

use super::{Permit, ProxyState};

/// The largest `/metrics` body the layer reads to append its counters, bytes.
const METRICS_BODY_LIMIT: usize = 16 * 1024 * 1024;

pub(super) async fn proxy(
    State(state): State<ProxyState>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_string();
    if path == "/metrics" {
        let response = next.run(request).await;
        return append_metrics(&state, response).await;
    }
    if path != "/v1" && !path.starts_with("/v1/") {
        return next.run(request).await;
    }
    let auth = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let permit = match state.admit(auth) {
        Ok(p) => p,
        Err(rejection) => return rejection.into_response(),
    };
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    let guarded = Guarded {
        inner: body.into_data_stream(),
        permit: Some(permit),
    };
    Response::from_parts(parts, Body::from_stream(guarded))
}

async fn append_metrics(state: &ProxyState, response: Response) -> Response {
    if !response.status().is_success() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let mut text = match axum::body::to_bytes(body, METRICS_BODY_LIMIT).await {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(_) => return StatusCode::BAD_GATEWAY.into_response(),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&state.render_metrics());
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(text))
}

/// A response body that holds the request's [`Permit`] until the body ends
/// (or is dropped because the client went away).
struct Guarded {
    inner: BodyDataStream,
    permit: Option<Permit>,
}

impl Stream for Guarded {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.inner).poll_next(cx);
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.permit = None;
        }
        polled
    }
}
