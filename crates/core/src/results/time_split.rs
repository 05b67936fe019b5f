//! Where a request's time goes: the server's own timings (vLLM's latency
//! histograms, increase over a level or a class) next to the client's, and
//! the difference, which is the cost of the path (network, VPN, proxy, the
//! client itself).

use serde::{Deserialize, Serialize};

/// One phase as the server timed it, over the requests that ended in a
/// window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PhaseTime {
    /// Mean, seconds (exact: histogram sum over count).
    pub mean_s: f64,
    /// Median, seconds, interpolated inside its histogram bucket: an
    /// estimate bounded by the bucket edges.
    pub p50_estimate_s: Option<f64>,
    /// 95th percentile, seconds, estimated the same way.
    pub p95_estimate_s: Option<f64>,
    /// Requests (observations) in the window.
    pub requests: u64,
}

/// The server's time split of a window and the client's means beside it.
/// A phase the server does not export stays absent, never zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeSplit {
    /// Waiting for a seat.
    pub queue: Option<PhaseTime>,
    /// Reading the prompt.
    pub prefill: Option<PhaseTime>,
    /// Generating the output.
    pub decode: Option<PhaseTime>,
    /// Prefill plus decode.
    pub inference: Option<PhaseTime>,
    /// Arrival at the server to its first token.
    pub ttft: Option<PhaseTime>,
    /// Between two output tokens.
    pub inter_token: Option<PhaseTime>,
    /// Arrival at the server to the last token.
    pub e2e: Option<PhaseTime>,
    /// The client's mean time to first token over the same requests,
    /// seconds.
    pub client_ttft_mean_s: Option<f64>,
    /// The client's mean request time (to the end of the stream), seconds.
    pub client_e2e_mean_s: Option<f64>,
}

impl TimeSplit {
    /// Whether the server told anything.
    pub fn has_any(&self) -> bool {
        [
            self.queue,
            self.prefill,
            self.decode,
            self.inference,
            self.ttft,
            self.inter_token,
            self.e2e,
        ]
        .iter()
        .any(Option::is_some)
    }

    /// Client minus server mean TTFT, seconds: the path's share of the
    /// first token (network, proxy, client).
    pub fn path_ttft_s(&self) -> Option<f64> {
        Some(self.client_ttft_mean_s? - self.ttft?.mean_s)
    }

    /// Client minus server mean request time, seconds.
    pub fn path_e2e_s(&self) -> Option<f64> {
        Some(self.client_e2e_mean_s? - self.e2e?.mean_s)
    }
}
