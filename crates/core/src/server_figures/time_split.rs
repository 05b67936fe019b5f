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
    /// first token (network, proxy, client). Absent when the two clocks
    /// disagree ([`TimeSplit::clocks_disagree`]).
    pub fn path_ttft_s(&self) -> Option<f64> {
        path(self.client_ttft_mean_s?, self.ttft?.mean_s)
    }

    /// Client minus server mean request time, seconds; absent when the two
    /// clocks disagree.
    pub fn path_e2e_s(&self) -> Option<f64> {
        path(self.client_e2e_mean_s?, self.e2e?.mean_s)
    }

    /// Whether the server's means exceed the client's by more than the
    /// two windows' difference in requests can explain: the path only ever
    /// adds time, so a server mean above the client's by more than a tenth
    /// (and 50 ms) says the two do not time in the same seconds (a twin
    /// served faster than real time times its requests in its own).
    pub fn clocks_disagree(&self) -> bool {
        let beyond = |client: Option<f64>, server: Option<PhaseTime>| match (client, server) {
            (Some(c), Some(s)) => path(c, s.mean_s).is_none(),
            _ => false,
        };
        beyond(self.client_ttft_mean_s, self.ttft) || beyond(self.client_e2e_mean_s, self.e2e)
    }
}

/// Client minus server, seconds, or nothing when the server's exceeds the
/// client's by more than 10 % and 50 ms.
fn path(client_s: f64, server_s: f64) -> Option<f64> {
    let path = client_s - server_s;
    let slack = (0.1 * client_s.abs()).max(0.05);
    (path >= -slack).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(client_ttft: f64, server_ttft: f64) -> TimeSplit {
        TimeSplit {
            ttft: Some(PhaseTime {
                mean_s: server_ttft,
                p50_estimate_s: None,
                p95_estimate_s: None,
                requests: 10,
            }),
            client_ttft_mean_s: Some(client_ttft),
            ..TimeSplit::default()
        }
    }

    #[test]
    fn the_path_is_what_the_client_adds() {
        let s = split(2.5, 2.4);
        assert!((s.path_ttft_s().expect("path") - 0.1).abs() < 1e-9);
        assert!(!s.clocks_disagree());
    }

    #[test]
    fn a_small_negative_path_is_noise_between_windows() {
        let s = split(2.0, 2.1);
        assert!((s.path_ttft_s().expect("path") + 0.1).abs() < 1e-9);
        assert!(!s.clocks_disagree());
    }

    #[test]
    fn a_server_counting_in_other_seconds_has_no_path() {
        // A twin served at 25x: its histograms say 25 s where the client waited 1 s.
        let s = split(1.0, 25.0);
        assert_eq!(s.path_ttft_s(), None);
        assert!(s.clocks_disagree());
        assert_eq!(split(0.0, 0.04).path_ttft_s(), Some(-0.04));
    }
}
