//! The report section "Where the time goes": the server's own timings next
//! to the client's, per bench level or for the class, and the difference
//! (the path: network, VPN, proxy, client).

use super::doc::Doc;
use super::format::{fixed, seconds, MISSING};
use codendum_core::server_figures::{PhaseTime, TimeSplit};

fn mean(p: Option<PhaseTime>) -> String {
    p.map_or_else(|| MISSING.to_string(), |p| seconds(p.mean_s))
}

fn estimates(p: Option<PhaseTime>) -> String {
    let show =
        |v: Option<f64>| v.map_or_else(|| MISSING.to_string(), |v| format!("~{}", seconds(v)));
    match p {
        Some(p) => format!("{} / {}", show(p.p50_estimate_s), show(p.p95_estimate_s)),
        None => MISSING.to_string(),
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| MISSING.to_string(), seconds)
}

/// The path's share in milliseconds: on a LAN it is a few of them.
fn millis(v: Option<f64>) -> String {
    v.map_or_else(|| MISSING.to_string(), |s| fixed(s * 1000.0, 1))
}

/// Adds the section for `rows` (a label such as `short c16` or `class`, and
/// its split); nothing when no row has one.
pub(crate) fn push_time_split(doc: &mut Doc, rows: &[(String, Option<TimeSplit>)]) {
    let known: Vec<(&String, &TimeSplit)> = rows
        .iter()
        .filter_map(|(label, split)| Some((label, split.as_ref()?)))
        .collect();
    if known.is_empty() {
        return;
    }
    doc.heading("Where the time goes");
    doc.paragraph(
        "Means in seconds (the path in milliseconds) from the server's own histograms (vLLM's queue, prefill, decode, \
         TTFT and end-to-end timings) over the requests that ended in the window, next to the \
         client's means; the path column is client minus server: network, VPN, proxy and \
         client. Percentiles marked ~ are estimates inside the histogram's buckets.",
    );
    let table: Vec<Vec<String>> = known
        .iter()
        .map(|(label, s)| {
            vec![
                (*label).clone(),
                mean(s.queue),
                mean(s.prefill),
                mean(s.decode),
                mean(s.ttft),
                estimates(s.ttft),
                opt(s.client_ttft_mean_s),
                millis(s.path_ttft_s()),
                mean(s.e2e),
                opt(s.client_e2e_mean_s),
                millis(s.path_e2e_s()),
            ]
        })
        .collect();
    doc.table(
        &[
            "Window",
            "Queue",
            "Prefill",
            "Decode",
            "Server TTFT",
            "Server TTFT P50 / P95",
            "Client TTFT",
            "Path, TTFT (ms)",
            "Server E2E",
            "Client E2E",
            "Path, E2E (ms)",
        ],
        table,
        1,
    );
    if known.iter().any(|(_, s)| s.clocks_disagree()) {
        doc.paragraph(
            "The path is left empty where the server's means exceed the client's by more than \
             a tenth: the two do not count in the same seconds (a twin served faster than real \
             time reports its own).",
        );
    }
}
