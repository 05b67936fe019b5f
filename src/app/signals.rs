//! Ctrl-C and SIGTERM for every command that runs a workload: the first
//! signal asks the command to stop (no new requests, the calls in flight
//! get their grace, everything measured is written); a second one, or
//! [`STOP_DEADLINE`] passing after the first, ends the process at once with
//! exit 130. So no command can be left waiting with no way out.

use std::time::Duration;

use tokio::sync::watch;

use crate::events::{Event, Events};

/// How long a command may take to end after the first Ctrl-C or SIGTERM
/// (real seconds): the 5 s grace for calls in flight, plus time to write the
/// results and the report.
pub const STOP_DEADLINE: Duration = Duration::from_secs(15);

/// Completes on the next Ctrl-C or SIGTERM.
pub async fn next_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// A channel that turns true on the first Ctrl-C or SIGTERM; what the
/// process does on a second one is described in the module docs. Call it
/// inside a tokio runtime; the listener lives as long as that runtime.
pub fn stop_on_signal(events: Events) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        next_signal().await;
        events.emit(Event::Stopping);
        let _ = tx.send(true);
        tokio::select! {
            _ = next_signal() => events.emit(Event::EndingNow("second interrupt".into())),
            _ = tokio::time::sleep(STOP_DEADLINE) => events.emit(Event::EndingNow(format!(
                "still not finished {} s after the interrupt",
                STOP_DEADLINE.as_secs()
            ))),
        }
        std::process::exit(130);
    });
    rx
}
