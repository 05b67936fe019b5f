//! What the capture has to tell its operator while it runs, said as
//! warnings on the command's events (the reporter prints them, one line
//! each; the capture itself never prints).

use std::fmt;
use std::net::SocketAddr;

use crate::events::Events;

/// One thing the operator should know, as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureNotice {
    /// A call could not reach the upstream; the client got vLLM's 502.
    UpstreamUnreachable {
        /// The upstream's origin (`scheme://host:port`).
        origin: String,
        /// Why, in one line.
        reason: String,
    },
    /// The first write that failed (a full or failing disk); the class goes
    /// on and what is lost is counted.
    DiskFailing {
        /// The capture folder.
        folder: String,
        /// The error, in one line.
        error: String,
    },
    /// The disk takes writes again after failing.
    DiskRecovered {
        /// Call lines lost so far.
        lost: u64,
    },
    /// The queue of records waiting for the disk is full: new records are
    /// dropped (counted) until the disk catches up.
    DiskBehind {
        /// Records waiting.
        waiting: usize,
    },
    /// A client's TLS handshake failed (it does not trust the
    /// certificate, or speaks plain HTTP); said for the first only, the rest
    /// are counted.
    TlsHandshakeFailed {
        /// The client.
        peer: SocketAddr,
        /// Why, in one line.
        reason: String,
    },
}

impl fmt::Display for CaptureNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureNotice::UpstreamUnreachable { origin, reason } => {
                write!(f, "upstream {origin} unreachable: {reason}")
            }
            CaptureNotice::DiskFailing { folder, error } => write!(
                f,
                "cannot write into {folder}: {error}; the class goes on, and the calls not recorded are counted"
            ),
            CaptureNotice::DiskRecovered { lost } => write!(
                f,
                "the disk takes writes again ({lost} call records lost so far)"
            ),
            CaptureNotice::DiskBehind { waiting } => write!(
                f,
                "the disk is not keeping up ({waiting} records waiting): new records are dropped, and counted, until it catches up"
            ),
            CaptureNotice::TlsHandshakeFailed { peer, reason } => write!(
                f,
                "TLS handshake with {peer} failed: {reason} (does the client trust the lab's CA, and use https?); later failures are counted"
            ),
        }
    }
}

/// Where the capture's notices go: warnings on the command's events (one
/// line each on the terminal; nowhere with silent events).
#[derive(Debug, Clone, Default)]
pub struct Notifier(Events);

impl Notifier {
    /// Notices told as warnings on `events`.
    pub fn new(events: Events) -> Self {
        Notifier(events)
    }

    /// Tells one notice.
    pub fn send(&self, notice: CaptureNotice) {
        self.0.warn(format!("capture: {notice}"));
    }
}
