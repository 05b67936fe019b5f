//! `--router-metrics-url` in a run: the router's own page read at the start
//! and at the end, its table, and the note when it retried
//! requests the client never saw fail.

use crate::client::build_http_client;
use crate::events::Events;
use crate::scrape::router_reader::{RouterReader, RouterWatch};
use codendum_core::access::Target;
use codendum_core::error::Error;
use codendum_core::openai::ErrorKind;
use codendum_core::server_figures::router_figures::{router_table, RouterFigures};

/// The first read of the router, when the target names its page; a page
/// that cannot be read is said on stderr and the run goes on without.
pub async fn watch(target: &Target, events: &Events) -> Result<Option<RouterWatch>, Error> {
    let Some(url) = &target.router_metrics_url else {
        return Ok(None);
    };
    let client = build_http_client(target.cacert.as_deref(), 2)?;
    match RouterWatch::start(RouterReader::new(client, url)).await {
        Ok(watch) => Ok(Some(watch)),
        Err(e) => {
            events.warn(format!("{e}; no router figures for this run"));
            Ok(None)
        }
    }
}

/// The last read: what the router did over the run, shown on stderr with
/// the retries the client never saw (`client_failures`: its calls that
/// failed with a server error).
pub async fn finish(
    watch: Option<RouterWatch>,
    client_failures: u64,
    events: &Events,
) -> Option<RouterFigures> {
    let figures = match watch?.finish().await {
        Ok(figures) => figures,
        Err(e) => {
            events.warn(format!("{e}; no router figures for this run"));
            return None;
        }
    };
    events.table(router_table(&figures));
    if let Some(note) = figures.retry_note(client_failures) {
        events.note(note);
    }
    Some(figures)
}

/// [`finish`] for a class-like run: its client failures are the server
/// errors among its calls' errors by kind.
pub async fn finish_class(
    watch: Option<RouterWatch>,
    errors_by_kind: &std::collections::BTreeMap<codendum_core::openai::ErrorKind, u64>,
    events: &Events,
) -> Option<RouterFigures> {
    let server_errors = errors_by_kind
        .iter()
        .filter(|(kind, _)| is_server_error(kind.as_str()))
        .map(|(_, n)| *n)
        .sum();
    finish(watch, server_errors, events).await
}

/// Whether a failure of this kind is one a router retries (a server error).
pub fn is_server_error(kind: &str) -> bool {
    [ErrorKind::Http503, ErrorKind::Http5xx]
        .iter()
        .any(|k| k.as_str() == kind)
}
