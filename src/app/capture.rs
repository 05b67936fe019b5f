//! `codendum capture` end to end: start the recording proxy, say where it
//! listens (once, on stderr), run until Ctrl-C or SIGTERM (the normal end,
//! exit 0), then let answers in flight finish and write the last files.

use std::time::Duration;

use tokio::sync::watch;

use crate::capture::{self, CaptureConfig};
use codendum_core::error::Error;

/// How long answers still streaming get after the stop, seconds.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// Captures until `stop` turns true; returns the calls recorded.
pub async fn run(config: CaptureConfig, mut stop: watch::Receiver<bool>) -> Result<u64, Error> {
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
    let _ = stop.wait_for(|s| *s).await;
    let calls = handle.shutdown(STOP_GRACE).await?;
    events.line(format!(
        "codendum capture: {calls} calls recorded in {}",
        out.display()
    ));
    Ok(calls)
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
