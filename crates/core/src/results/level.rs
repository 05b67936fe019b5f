//! Per-level summaries from request records (plain functions, no I/O),
//! with the server figures over a level's window folded in.

use super::records::{RateFigures, SteadyWindow};
use super::slo::Slo;
use super::steady::steady_window;
use std::collections::BTreeMap;

use crate::openai::TokenSource;
use crate::results::{ErrorGroup, LevelEnd, LevelSummary, RequestRecord};
use crate::server_figures::ServerWindow;
use crate::stats::dependence::{percentile_interval_in_order, percentile_interval_in_rounds};
use crate::stats::interval::batch_count;
use crate::stats::{batch_means, mean, mean_interval, percentile, sorted_finite, wilson, Interval};

/// What the driver knows about a level besides its records.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelFrame<'a> {
    /// Shape name.
    pub shape: &'a str,
    /// Concurrency N.
    pub concurrency: u32,
    /// Why it stopped starting requests.
    pub ended_by: LevelEnd,
    /// Level start, seconds since the run started.
    pub started_at_s: f64,
    /// Level start to the end of its last request, seconds.
    pub wall_time_s: f64,
    /// In-flight requests dropped after an interruption's grace.
    pub abandoned: u64,
    /// A rate level's load, as the driver saw it (`None`: closed loop); the
    /// send lags are filled in from the records.
    pub rate: Option<RateFigures>,
    /// `--slo`, for the level's SLO share and goodput.
    pub slo: Option<&'a Slo>,
}

/// Puts the server figures of `window` into `level` (what
/// [`summarize_level`] does with a window; used again when the figures come
/// in after the run, from Prometheus). The client means of the time split
/// are kept.
pub fn apply_server_window(level: &mut LevelSummary, window: &ServerWindow) {
    level.preemptions = window.preemptions;
    level.peak_kv_usage = window.peak_kv_usage;
    level.peak_running = window.peak_running;
    level.peak_waiting = window.peak_waiting;
    level.prefix_hit_rate = window.prefix_hit_rate;
    level.failed_scrapes = Some(window.failed_scrapes);
    level.time_split = window.time_split.map(|mut split| {
        split.client_ttft_mean_s = level.ttft_mean_s;
        split.client_e2e_mean_s = level.e2e_mean_s;
        split
    });
}

/// Summarises one level. Throughputs and latencies use successful
/// requests; percentiles are taken from the raw values. A closed-loop level
/// is summarised over its steady window ([`super::steady`]) when that holds
/// enough requests: latencies from the requests inside it, rates from the
/// requests that ended in it; counts (requests, errors, the error rate)
/// are always the whole level's. Every percentile, share, mean and rate
/// carries its 95 % interval ([`LevelSummary::intervals`], one method per
/// figure: [`crate::results::metrics::LEVEL_METRICS`]). `window` is `None`
/// when there was no `/metrics`: the server columns are then absent, not
/// zero.
pub fn summarize_level(
    frame: LevelFrame<'_>,
    records: &[RequestRecord],
    window: Option<ServerWindow>,
) -> LevelSummary {
    let all_ok: Vec<&RequestRecord> = records.iter().filter(|r| r.ok).collect();
    let mut errors: BTreeMap<String, ErrorGroup> = BTreeMap::new();
    for r in records.iter().filter(|r| !r.ok) {
        let kind = r.error_kind.clone().unwrap_or_else(|| "unknown".into());
        let group = errors.entry(kind).or_insert_with(|| ErrorGroup {
            count: 0,
            sample_message: r.error_message.clone().unwrap_or_default(),
        });
        group.count += 1;
    }
    let steady = match frame.rate {
        None => steady_window(records),
        Some(_) => None,
    };
    let basis = Basis::of(records, steady.filter(|w| w.used), &frame);
    let ok: Vec<&RequestRecord> = basis.latency.iter().copied().filter(|r| r.ok).collect();
    let ttft_in_order: Vec<f64> = ok.iter().filter_map(|r| r.ttft_s).collect();
    let e2e_in_order: Vec<f64> = ok.iter().map(|r| r.e2e_s).collect();
    let tpot_in_order: Vec<f64> = ok.iter().filter_map(|r| r.tpot_s).collect();
    let ttft_mean_s = mean(ttft_in_order.iter().copied());
    let e2e_mean_s = mean(e2e_in_order.iter().copied());
    let ttft = sorted_finite(ttft_in_order.iter().copied());
    let e2e = sorted_finite(e2e_in_order.iter().copied());
    let flows = basis.flows();
    let rate = |x: f64| {
        if basis.span_s > 0.0 {
            x / basis.span_s
        } else {
            0.0
        }
    };
    let slo_counts = frame.slo.map(|s| {
        let met_inside = basis.latency.iter().filter(|r| s.met_by(r)).count() as u64;
        let met_ended: f64 = basis
            .rated
            .iter()
            .filter(|r| s.met_by(r))
            .map(|r| basis.share_of_life(r))
            .sum();
        (met_inside, basis.latency.len() as u64, met_ended)
    });
    let mut intervals = BTreeMap::new();
    let mut put = |key: &str, i: Option<Interval>| {
        if let Some(i) = i {
            intervals.insert(key.to_string(), i);
        }
    };
    // A closed-loop level's requests come in rounds of its N slots: its
    // percentiles read their dependence between rounds.
    let round = basis.closed_n.map_or(1, |n| n as usize);
    for (key, values, p) in [
        ("ttft_p50_s", &ttft_in_order, 50.0),
        ("ttft_p95_s", &ttft_in_order, 95.0),
        ("ttft_p99_s", &ttft_in_order, 99.0),
        ("e2e_p50_s", &e2e_in_order, 50.0),
        ("e2e_p95_s", &e2e_in_order, 95.0),
    ] {
        put(key, percentile_interval_in_rounds(values, p, round));
    }
    put("ttft_mean_s", mean_interval(&ttft_in_order));
    put("e2e_mean_s", mean_interval(&e2e_in_order));
    put("tpot_mean_s", mean_interval(&tpot_in_order));
    put(
        "error_rate",
        wilson((records.len() - all_ok.len()) as u64, records.len() as u64),
    );
    let requests_per_s = rate(flows.successes);
    let output_tok_per_s = rate(flows.output_tokens);
    let total_tok_per_s = rate(flows.total_tokens);
    put(
        "requests_per_s",
        basis.rate_interval(requests_per_s, |r| r.ok.into()),
    );
    put(
        "output_tok_per_s",
        basis.rate_interval(output_tok_per_s, |r| ok_tokens(r, false)),
    );
    put(
        "total_tok_per_s",
        basis.rate_interval(total_tok_per_s, |r| ok_tokens(r, true)),
    );
    let mut goodput_per_s = None;
    let mut slo_share = None;
    if let (Some(slo), Some((met, n, met_ended))) = (frame.slo, slo_counts) {
        slo_share = (n > 0).then(|| met as f64 / n as f64);
        goodput_per_s = (n > 0 && basis.span_s > 0.0).then(|| rate(met_ended));
        put("slo_share", wilson(met, n));
        if let Some(g) = goodput_per_s {
            put(
                "goodput_per_s",
                basis.rate_interval(g, |r| f64::from(u8::from(slo.met_by(r)))),
            );
        }
    }
    let lags_in_order: Vec<f64> = records.iter().filter_map(|r| r.send_lag_s).collect();
    if frame.rate.is_some() {
        put(
            "send_lag_p50_s",
            percentile_interval_in_order(&lags_in_order, 50.0),
        );
        put(
            "send_lag_p95_s",
            percentile_interval_in_order(&lags_in_order, 95.0),
        );
    }
    // A rate level that queued for stretches as long as itself: one run
    // cannot bound its tail.
    let rate_figures = frame.rate.map(|mut r| {
        r.ttft_stretch = percentile(&ttft, 95.0)
            .zip(percentile(&ttft, 5.0))
            .filter(|(_, low)| *low > 0.0)
            .map(|(high, low)| high / low);
        r
    });
    // Its tail is then bounded only by what any run of it shows: above
    // nothing, below its own median (a queue's history moves the tail by
    // many times, its median far less).
    if rate_figures.as_ref().is_some_and(RateFigures::queued) {
        let medians = [
            ("ttft_p95_s", percentile(&ttft, 50.0)),
            ("ttft_p99_s", percentile(&ttft, 50.0)),
            ("e2e_p95_s", percentile(&e2e, 50.0)),
        ];
        for (key, median) in medians {
            if let Some(i) = intervals.get_mut(key) {
                i.hi = None;
                i.lo = i.lo.zip(median).map(|(lo, m)| lo.min(m));
            }
        }
    }
    LevelSummary {
        shape: frame.shape.to_string(),
        concurrency: frame.concurrency,
        ended_by: frame.ended_by,
        requests: records.len() as u64,
        successes: all_ok.len() as u64,
        errors,
        abandoned: frame.abandoned,
        mean_input_tokens: mean(
            all_ok
                .iter()
                .filter_map(|r| r.prompt_tokens.map(|t| t as f64)),
        ),
        mean_output_tokens: mean(all_ok.iter().map(|r| r.output_tokens as f64)),
        tokens_client_counted: records
            .iter()
            .any(|r| r.tokens_counted_by == TokenSource::Client),
        started_at_s: frame.started_at_s,
        wall_time_s: frame.wall_time_s,
        requests_per_s,
        error_rate: (!records.is_empty())
            .then(|| (records.len() - all_ok.len()) as f64 / records.len() as f64),
        output_tok_per_s,
        total_tok_per_s,
        ttft_p50_s: percentile(&ttft, 50.0),
        ttft_p95_s: percentile(&ttft, 95.0),
        ttft_p99_s: percentile(&ttft, 99.0),
        e2e_p50_s: percentile(&e2e, 50.0),
        e2e_p95_s: percentile(&e2e, 95.0),
        tpot_mean_s: mean(tpot_in_order.iter().copied()),
        ttft_mean_s,
        e2e_mean_s,
        preemptions: window.and_then(|w| w.preemptions),
        peak_kv_usage: window.and_then(|w| w.peak_kv_usage),
        peak_running: window.and_then(|w| w.peak_running),
        peak_waiting: window.and_then(|w| w.peak_waiting),
        prefix_hit_rate: window.and_then(|w| w.prefix_hit_rate),
        failed_scrapes: window.map(|w| w.failed_scrapes),
        time_split: window.and_then(|w| w.time_split).map(|mut split| {
            split.client_ttft_mean_s = ttft_mean_s;
            split.client_e2e_mean_s = e2e_mean_s;
            split
        }),
        fleet: None,
        rate: rate_figures.map(|mut r| {
            let lags = sorted_finite(lags_in_order.iter().copied());
            r.send_lag_p50_s = percentile(&lags, 50.0);
            r.send_lag_p95_s = percentile(&lags, 95.0);
            r.send_lag_max_s = lags.last().copied();
            r
        }),
        slo_share,
        goodput_per_s,
        server_restarted: false,
        steady,
        intervals,
        client_cpu: None,
    }
}

/// A successful request's tokens (output, or input and output); 0 for a
/// failure.
fn ok_tokens(r: &RequestRecord, with_input: bool) -> f64 {
    if !r.ok {
        return 0.0;
    }
    let input = if with_input {
        r.prompt_tokens.unwrap_or(0)
    } else {
        0
    };
    (r.output_tokens + input) as f64
}

/// The requests a level's figures come from.
struct Basis<'a> {
    /// The requests its latency figures come from, in start order: those in
    /// the steady window, or every request.
    latency: Vec<&'a RequestRecord>,
    /// The requests its rates count, in end order: those whose life
    /// overlaps the steady window (each counted for its share inside it),
    /// or every request.
    rated: Vec<&'a RequestRecord>,
    /// The steady window the rates are over, seconds since the run
    /// started; `None`: the whole level, every request counted whole.
    window: Option<(f64, f64)>,
    /// The span the rates are over, seconds: the window's length, or the
    /// level's wall time.
    span_s: f64,
    /// Where the span starts, seconds since the run started.
    start_s: f64,
    /// N of a closed-loop level (its rates' intervals follow Little's law);
    /// `None` for a rate level.
    closed_n: Option<u32>,
}

/// What the rates of a level count, summed over its rated requests.
struct Flows {
    successes: f64,
    output_tokens: f64,
    total_tokens: f64,
}

impl<'a> Basis<'a> {
    fn of(
        records: &'a [RequestRecord],
        steady: Option<SteadyWindow>,
        frame: &LevelFrame<'_>,
    ) -> Self {
        let (mut latency, mut rated, span_s, start_s): (
            Vec<&RequestRecord>,
            Vec<&RequestRecord>,
            f64,
            f64,
        ) = match steady {
            Some(w) => (
                records.iter().filter(|r| w.holds(r)).collect(),
                records.iter().filter(|r| w.overlaps(r)).collect(),
                w.length_s(),
                w.start_s,
            ),
            None => (
                records.iter().collect(),
                records.iter().collect(),
                frame.wall_time_s,
                frame.started_at_s,
            ),
        };
        latency.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
        rated.sort_by(|a, b| a.ended_at().total_cmp(&b.ended_at()));
        Basis {
            latency,
            rated,
            window: steady.map(|w| (w.start_s, w.end_s)),
            span_s,
            start_s,
            closed_n: frame.rate.is_none().then_some(frame.concurrency.max(1)),
        }
    }

    /// The share of `(from, to)` (seconds since the run started) inside
    /// the window: 1 without a window; for an instant, whether it is in.
    fn share(&self, from: f64, to: f64) -> f64 {
        let Some((a, b)) = self.window else {
            return 1.0;
        };
        if to <= from {
            return f64::from(u8::from(from > a && from <= b));
        }
        ((to.min(b) - from.max(a)) / (to - from)).clamp(0.0, 1.0)
    }

    /// The share of a request's life (start to end) inside the window.
    fn share_of_life(&self, r: &RequestRecord) -> f64 {
        self.share(r.started_at, r.ended_at())
    }

    /// What a level delivered within the window: each request counts for
    /// the share of its life inside it, its output for the share of its
    /// generation (first token to end) and its prompt for the share of its
    /// prefill (start to first token). Counting whole requests that merely
    /// ended inside would count the ramp-up's tokens in the window: with
    /// waves of N requests, three waves' output over two waves' time.
    fn flows(&self) -> Flows {
        let mut f = Flows {
            successes: 0.0,
            output_tokens: 0.0,
            total_tokens: 0.0,
        };
        for r in self.rated.iter().filter(|r| r.ok) {
            let first = r.started_at + r.ttft_s.unwrap_or(0.0).clamp(0.0, r.e2e_s);
            let output = r.output_tokens as f64 * self.share(first, r.ended_at());
            let input = r.prompt_tokens.unwrap_or(0) as f64 * self.share(r.started_at, first);
            f.successes += self.share_of_life(r);
            f.output_tokens += output;
            f.total_tokens += output + input;
        }
        f
    }

    /// The interval of a rate whose figure is `point` and whose numerator
    /// sums `count` over the rated requests.
    ///
    /// - Closed loop: with N requests always in flight, the level's rate is
    ///   N times what one slot delivers per second of its requests' time
    ///   (Little's law), so each batch of consecutive requests (in end
    ///   order) gives its own estimate `N · Σ count / Σ E2E`; the batch
    ///   means' relative interval is set around `point`.
    /// - Open loop: the span is cut into equal sub-windows and the rate
    ///   counted in each (by end time); batch means over them.
    fn rate_interval(&self, point: f64, count: impl Fn(&RequestRecord) -> f64) -> Option<Interval> {
        let b = batch_count(self.rated.len())?;
        let per = self.rated.len() / b;
        let batches: Vec<f64> = match self.closed_n {
            Some(n) => (0..b)
                .map(|i| {
                    let end = if i + 1 == b {
                        self.rated.len()
                    } else {
                        (i + 1) * per
                    };
                    let chunk = &self.rated[i * per..end];
                    let busy: f64 = chunk.iter().map(|r| r.e2e_s).sum();
                    let done: f64 = chunk.iter().map(|r| count(r)).sum();
                    if busy > 0.0 {
                        f64::from(n) * done / busy
                    } else {
                        f64::NAN
                    }
                })
                .collect(),
            None => {
                if self.span_s <= 0.0 {
                    return None;
                }
                let width = self.span_s / b as f64;
                let mut sums = vec![0.0; b];
                for r in &self.rated {
                    let at = ((r.ended_at() - self.start_s) / width).floor();
                    let i = (at.max(0.0) as usize).min(b - 1);
                    sums[i] += count(r);
                }
                sums.into_iter().map(|s| s / width).collect()
            }
        };
        let (centre, i) = batch_means(&batches)?;
        match self.closed_n {
            Some(_) if centre > 0.0 => Some(i.scaled(point / centre)),
            Some(_) => Some(Interval::closed(point, point)),
            None => {
                let i = i.shifted(point - centre);
                Some(Interval {
                    lo: i.lo.map(|v| v.max(0.0)),
                    hi: i.hi,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::metrics::LEVEL_METRICS;
    use crate::results::records::QUEUED_STRETCH;
    use crate::results::slo::Slo;

    /// A closed loop of `n` slots over `waves` waves of 10 s, each request's
    /// TTFT growing with its place in the wave; the first wave slower.
    fn closed(n: u32, waves: u32) -> Vec<RequestRecord> {
        (0..waves)
            .flat_map(|w| {
                (0..n).map(move |i| RequestRecord {
                    shape: "short".into(),
                    concurrency: n,
                    index: u64::from(w * n + i),
                    started_at: f64::from(w) * 10.0,
                    ttft_s: Some(if w == 0 {
                        5.0
                    } else {
                        0.1 + 0.01 * f64::from(i)
                    }),
                    e2e_s: 10.0,
                    tpot_s: Some(0.03),
                    prompt_tokens: Some(100),
                    output_tokens: 256,
                    tokens_counted_by: TokenSource::Server,
                    finish_reason: Some("length".into()),
                    ok: !(w == 2 && i == 0),
                    error_kind: (w == 2 && i == 0).then(|| "http_503".into()),
                    error_message: None,
                    status: Some(200),
                    scheduled_at: None,
                    send_lag_s: None,
                })
            })
            .collect()
    }

    fn frame<'a>(n: u32, slo: Option<&'a Slo>) -> LevelFrame<'a> {
        LevelFrame {
            shape: "short",
            concurrency: n,
            ended_by: LevelEnd::Requests,
            started_at_s: 0.0,
            wall_time_s: 60.0,
            abandoned: 0,
            rate: None,
            slo,
        }
    }

    /// A Poisson-like rate level of 200 requests, one every 0.5 s, whose
    /// TTFTs are `ttft(i)`.
    fn rate_level(ttft: impl Fn(u64) -> f64) -> LevelSummary {
        let records: Vec<RequestRecord> = closed(1, 200)
            .into_iter()
            .enumerate()
            .map(|(i, mut r)| {
                r.started_at = i as f64 * 0.5;
                r.ttft_s = Some(ttft(i as u64));
                r.e2e_s = r.ttft_s.unwrap_or(0.0) + 1.0;
                r.ok = true;
                r.error_kind = None;
                r
            })
            .collect();
        let rate = RateFigures {
            rate_per_s: 2.0,
            arrival: "poisson".into(),
            ..RateFigures::default()
        };
        let frame = LevelFrame {
            rate: Some(rate),
            ..frame(1, None)
        };
        summarize_level(frame, &records, None)
    }

    #[test]
    fn a_rate_level_that_queued_throughout_leaves_its_tail_open_above() {
        // Kept up with: TTFTs within 40 % of each other.
        let kept = rate_level(|i| 0.2 + 0.08 * ((i * 37) % 100) as f64 / 100.0);
        let r = kept.rate.as_ref().expect("rate figures");
        assert!(!r.queued(), "{:?}", r.ttft_stretch);
        assert!(kept.intervals["ttft_p95_s"].hi.is_some());
        // A queue that builds and drains over the level: the tail is many
        // times the unloaded TTFT.
        let queued = rate_level(|i| 0.2 + 20.0 * (((i % 100) as f64 / 100.0).powi(3)));
        let r = queued.rate.as_ref().expect("rate figures");
        assert!(r.ttft_stretch.is_some_and(|s| s > QUEUED_STRETCH), "{r:?}");
        assert!(r.queued());
        for key in ["ttft_p95_s", "ttft_p99_s", "e2e_p95_s"] {
            let i = queued.intervals[key];
            assert_eq!(i.hi, None, "{key} is bounded above: {i:?}");
            assert!(i.lo.is_some(), "{key} keeps its lower bound");
        }
        // The median keeps its interval: only the tail depends on the
        // level's history.
        assert!(queued.intervals["ttft_p50_s"].hi.is_some());
    }

    #[test]
    fn a_closed_loop_level_is_summarised_over_its_steady_window() {
        let records = closed(4, 6);
        let l = summarize_level(frame(4, None), &records, None);
        let w = l.steady.expect("a window");
        assert_eq!((w.start_s, w.end_s), (10.0, 50.0));
        assert_eq!((w.ramp_up, w.requests, w.drain), (4, 16, 4));
        assert!(w.used);
        // The slow first wave is ramp-up: no TTFT of 5 s in the figures.
        assert!(l.ttft_p95_s.expect("ttft") < 1.0, "{:?}", l.ttft_p95_s);
        // Counts stay the whole level's.
        assert_eq!((l.requests, l.successes), (24, 23));
        // Four waves end in (10, 50]: 15 successes over 40 s.
        assert!(
            (l.requests_per_s - 15.0 / 40.0).abs() < 1e-9,
            "{}",
            l.requests_per_s
        );
        assert!((l.output_tok_per_s - 15.0 * 256.0 / 40.0).abs() < 1e-9);
    }

    #[test]
    fn a_window_counts_what_was_delivered_inside_it_not_whole_requests_that_ended_there() {
        // Four slots running 10 s requests back to back, each slot a little
        // slower than the last: the first wave's ends straddle the
        // window's start (the first end), as on a real server.
        let mut records = Vec::new();
        for slot in 0..4u32 {
            let e2e = 10.0 + 0.01 * f64::from(slot);
            for k in 0..6u32 {
                records.push(RequestRecord {
                    shape: "short".into(),
                    concurrency: 4,
                    index: u64::from(k * 4 + slot),
                    started_at: f64::from(k) * e2e,
                    ttft_s: Some(0.5),
                    e2e_s: e2e,
                    tpot_s: Some(0.03),
                    prompt_tokens: Some(100),
                    output_tokens: 256,
                    tokens_counted_by: crate::openai::TokenSource::Server,
                    finish_reason: None,
                    ok: true,
                    error_kind: None,
                    error_message: None,
                    status: Some(200),
                    scheduled_at: None,
                    send_lag_s: None,
                });
            }
        }
        let l = summarize_level(frame(4, None), &records, None);
        // Little's law: four slots, each finishing one request per ~10 s.
        let truth: f64 = (0..4).map(|s| 1.0 / (10.0 + 0.01 * f64::from(s))).sum();
        assert!(
            (l.requests_per_s / truth - 1.0).abs() < 0.01,
            "{} against {truth}",
            l.requests_per_s
        );
        assert!((l.output_tok_per_s / (256.0 * truth) - 1.0).abs() < 0.02);
    }

    #[test]
    fn every_figure_with_an_interval_method_gets_one() {
        let slo = Slo::parse("--slo", "ttft=1s").expect("slo");
        let records = closed(4, 12);
        let l = summarize_level(frame(4, Some(&slo)), &records, None);
        for m in LEVEL_METRICS.iter().filter(|m| m.interval.is_some()) {
            let want = !m.column.starts_with("send_lag");
            assert_eq!(
                m.interval_of(&l).is_some(),
                want,
                "{}: {:?}",
                m.column,
                l.intervals
            );
            if let (Some(v), Some(i)) = (m.number(&l), m.interval_of(&l)) {
                assert!(i.contains(v), "{} {v} outside {i:?}", m.column);
            }
        }
        // A short level keeps the whole level's figures, and says so.
        let short = summarize_level(frame(4, None), &closed(4, 3), None);
        let w = short.steady.expect("a window");
        assert!(!w.used && w.requests == 4);
        assert!(short.ttft_p95_s.expect("ttft") > 4.0, "ramp-up included");
    }
}
