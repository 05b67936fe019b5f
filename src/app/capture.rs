//! `codendum capture` end to end: start the recording proxy, say where it
//! listens (once, on stderr, with a warning when it is plain HTTP beyond
//! loopback), print its notices as they come, run until Ctrl-C or SIGTERM
//! (the normal end), then let answers in flight finish, give the disk its
//! grace and say what was recorded and what was lost. Exit 0 when every
//! call was recorded, 1 when some were not (the class itself was served).

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
    let warning = capture::plain_http_warning(&config);
    let mut handle = capture::start(config).await?;
    eprintln!(
        "codendum capture: listening on {} (give OpenCode this base URL), forwarding to {}, writing {} (Ctrl-C stops)",
        handle.base_url(),
        strip_credentials(&upstream),
        out.display()
    );
    if let Some(w) = warning {
        eprintln!("codendum capture: {w}");
    }
    let printer = handle.take_notices().map(|mut notices| {
        tokio::spawn(async move {
            while let Some(n) = notices.recv().await {
                eprintln!("codendum capture: {n}");
            }
        })
    });
    let _ = stop.wait_for(|s| *s).await;
    let summary = handle.finish(STOP_GRACE).await;
    if let Some(p) = printer {
        // The notices' sender is gone with the handle: the printer ends
        // once it has said what was left.
        let _ = tokio::time::timeout(Duration::from_secs(1), p).await;
    }
    let line = summary.line(&out);
    if summary.losses.calls_lost() > 0 || !summary.header_written {
        return Err(Error::Failed(format!("capture: {line}")));
    }
    eprintln!("codendum capture: {line}");
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
