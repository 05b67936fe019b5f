//! `codendum capture` end to end: start the recording proxy, say where it
//! listens (once, with a warning when it is plain HTTP beyond loopback),
//! run until Ctrl-C or SIGTERM (the normal end), then let answers in flight
//! finish, give the disk its grace and say what was recorded and what was
//! lost. Exit 0 when every call was recorded, 1 when some were not (the
//! class itself was served). What happens meanwhile (an upstream out of
//! reach, a disk that fails) the capture tells through the config's events.

use std::time::Duration;

use tokio::sync::watch;

use crate::capture::{self, CaptureConfig, CaptureSummary};
use codendum_core::error::Error;

/// How long answers still streaming get after the stop, and then the disk
/// for the records still waiting, seconds each.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// Captures until `stop` turns true; the summary of what was captured.
pub async fn run(
    config: CaptureConfig,
    mut stop: watch::Receiver<bool>,
) -> Result<CaptureSummary, Error> {
    let out = config.out.clone();
    let upstream = config.upstream.clone();
    let events = config.events.clone();
    let handle = capture::start(config).await?;
    events.line(format!(
        "codendum capture: listening on {} (give OpenCode this base URL), forwarding to {}, writing {} (Ctrl-C stops)",
        handle.base_url(),
        strip_credentials(&upstream),
        out.display()
    ));
    if let Some(w) = handle.plain_http_warning() {
        events.warn(format!("capture: {w}"));
    }
    let _ = stop.wait_for(|s| *s).await;
    let summary = handle.finish(STOP_GRACE).await;
    let line = summary.line(&out);
    if summary.losses.calls_lost() > 0 || !summary.header_written {
        return Err(Error::Failed(format!("capture: {line}")));
    }
    events.line(format!("codendum capture: {line}"));
    Ok(summary)
}

fn strip_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_string(),
    }
}
