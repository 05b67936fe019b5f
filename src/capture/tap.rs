//! The response body as it passes: every piece the upstream delivers is
//! handed on at once, unchanged, after the [`Observer`] has looked at it.
//! When the body ends (or the client goes away, or the upstream cuts it)
//! the call is recorded.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use futures::Stream;

use super::observe::Observer;
use super::store::{OpenCall, Store};

/// The upstream's body stream.
pub type Upstream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// A response body that records its call when it ends.
pub struct Tap {
    inner: Upstream,
    observer: Option<Observer>,
    call: Option<OpenCall>,
    status: u16,
    store: Arc<Store>,
}

impl Tap {
    /// Passes `inner` on, recording `call` (answered with `status`) at its end.
    pub fn new(inner: Upstream, sse: bool, call: OpenCall, status: u16, store: Arc<Store>) -> Self {
        Tap {
            inner,
            observer: Some(Observer::new(sse)),
            call: Some(call),
            status,
            store,
        }
    }

    fn record(&mut self, error: Option<String>) {
        if let (Some(call), Some(observer)) = (self.call.take(), self.observer.take()) {
            let answer = observer.finish();
            let error = error.or_else(|| {
                (answer.bad_events > 0)
                    .then(|| format!("{} events were not chunk JSON", answer.bad_events))
            });
            self.store
                .finish(call, self.status, answer, Instant::now(), error);
        }
    }
}

impl Stream for Tap {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.inner.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(bytes))) => {
                if let Some(o) = self.observer.as_mut() {
                    o.feed(&bytes, Instant::now());
                }
                Poll::Ready(Some(Ok(bytes)))
            }
            Poll::Ready(Some(Err(e))) => {
                let text = codendum_core::error::one_line(&e);
                self.record(Some(format!("upstream stream broke: {text}")));
                Poll::Ready(Some(Err(std::io::Error::other(text))))
            }
            Poll::Ready(None) => {
                self.record(None);
                Poll::Ready(None)
            }
        }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.record(Some("the client went away before the end".into()));
    }
}
