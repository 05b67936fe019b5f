//! What a search probe means: whether a judged cell meets the profile's
//! ceilings (the targets that more students make harder to meet) and, for
//! the first size that misses them, where the limit comes from. The checks
//! themselves are [`codendum_core::targets::classroom`]'s (through
//! [`super::verdicts::judge_cell`]); this module only reads them.

use super::verdicts::{Bottleneck, Check, JudgedCell, KV_HIGH, PERSISTENT};
use codendum_core::bound::Bound;
use codendum_core::targets::ClassroomKey;

/// Whether every ceiling of the cell is met: the targets more students
/// only make harder to meet ([`ClassroomKey::harder_with_more_students`]:
/// TTFT P95, coding request P50, preemptions, server errors, the error
/// rate, and the per-student speed floor). The server output floor is
/// left out: a small class cannot produce a large server output, so it is
/// judged at the answer instead of steering the bisection.
pub fn meets_ceilings(cell: &JudgedCell) -> bool {
    ceilings(&cell.checks).all(|c| c.met)
}

/// Whether a check steers the search (see [`meets_ceilings`]).
fn steers(c: &Check) -> bool {
    ClassroomKey::from_name(&c.key).map_or(c.bound == Bound::Max, |k| k.harder_with_more_students())
}

/// The cell's ceiling checks (those that steer the search).
pub fn ceilings(checks: &[Check]) -> impl Iterator<Item = &Check> {
    checks.iter().filter(|c| steers(c))
}

/// The cell's floor checks (judged at the answer).
pub fn floors(checks: &[Check]) -> impl Iterator<Item = &Check> {
    checks.iter().filter(|c| !steers(c))
}

/// The keys of the targets the cell missed, in judging order.
pub fn missed_keys(cell: &JudgedCell) -> Vec<String> {
    cell.checks
        .iter()
        .filter(|c| !c.met)
        .map(|c| c.key.clone())
        .collect()
}

/// Where the limit comes from, judged on `failed`, the smallest class that
/// missed its targets (plain function; the one classification both the
/// grid's verdicts and the search use). `more_seats_met` tells whether the
/// same class met its targets with more seats (the search's seats probe, or
/// a grid variant of the same profile with a larger `max_num_seqs`;
/// `None`: not tried).
///
/// 0. half or more of the calls refused (HTTP 4xx): [`Bottleneck::Refused`];
/// 1. only `server_errors` missed: [`Bottleneck::ServerErrors`];
/// 2. any preemption, peak KV usage at [`KV_HIGH`] or more, or requests
///    waiting with seats free in at least [`PERSISTENT`] of the
///    steady-state samples (and more often than seats were full):
///    [`Bottleneck::KvMemory`];
/// 3. running pinned at `max_num_seqs` with requests waiting in at least
///    [`PERSISTENT`] of the samples: [`Bottleneck::Seats`], unless more
///    seats were tried and did not help, then
///    [`Bottleneck::DecodeThroughput`];
/// 4. requests rarely queued and TTFT P95 missed, the server's prefill
///    time (when it has one) longer than its decode time:
///    [`Bottleneck::Prefill`];
/// 5. otherwise requests rarely queued and the answers themselves are too
///    slow: [`Bottleneck::RequestSpeed`].
pub fn classify(failed: &JudgedCell, more_seats_met: Option<bool>) -> Bottleneck {
    let r = &failed.result;
    if codendum_core::results::metrics::mostly_refused(&r.summary) {
        return Bottleneck::Refused;
    }
    let missed = missed_keys(failed);
    if !missed.is_empty() && missed.iter().all(|k| k == "server_errors") {
        return Bottleneck::ServerErrors;
    }
    let pinned = r.pinned_share.unwrap_or(0.0);
    let blocked = r.blocked_share.unwrap_or(0.0);
    if r.preemptions.unwrap_or(0) > 0
        || r.peak_kv_usage.unwrap_or(0.0) >= KV_HIGH
        || (blocked >= PERSISTENT && blocked > pinned)
    {
        return Bottleneck::KvMemory;
    }
    if pinned >= PERSISTENT {
        return match more_seats_met {
            Some(false) => Bottleneck::DecodeThroughput,
            _ => Bottleneck::Seats,
        };
    }
    let split = r.summary.server.time_split;
    let phase = |f: fn(
        &codendum_core::server_figures::TimeSplit,
    ) -> Option<codendum_core::server_figures::PhaseTime>| {
        split.as_ref().and_then(f).map(|p| p.mean_s)
    };
    let prefill_heavier = match (phase(|s| s.prefill), phase(|s| s.decode)) {
        (Some(p), Some(d)) => p > d,
        _ => true,
    };
    if missed.iter().any(|k| k == "ttft_p95_s") && prefill_heavier {
        Bottleneck::Prefill
    } else {
        Bottleneck::RequestSpeed
    }
}

/// Whether the seats probe is worth running for `failed`: its running
/// requests were pinned at `max_num_seqs` with requests waiting, and the
/// KV cache was not the limit (plain function, the test of
/// [`classify`]'s step 3).
pub fn wants_seats_probe(failed: &JudgedCell) -> bool {
    let probe_free = classify(failed, None);
    probe_free == Bottleneck::Seats
}

/// The seat count the seats probe runs with: twice the variant's, at most
/// 4096 (vLLM's practical ceiling, and `--max-num-seqs`' limit); `None`
/// when it cannot grow.
pub fn probe_seats(max_num_seqs: u32) -> Option<u32> {
    let more = max_num_seqs.saturating_mul(2).min(4096);
    (more > max_num_seqs).then_some(more)
}
