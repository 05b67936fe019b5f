//! Counters and histograms the engine keeps for `/metrics`, with vLLM 0.30's
//! bucket boundaries.

/// Latency buckets of TTFT, seconds.
pub const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
/// Buckets of inter-token latency and time per output token, seconds.
pub const ITL_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
/// Buckets of request-phase latencies (E2E, queue, inference, prefill, decode), seconds.
pub const PHASE_BUCKETS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];
/// Buckets of token counts per request, tokens.
pub const TOKEN_BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0, 20000.0,
    50000.0,
];
/// Buckets of tokens per engine step.
pub const ITERATION_BUCKETS: &[f64] = &[
    1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0,
];
/// Buckets of the `n` parameter.
pub const PARAMS_N_BUCKETS: &[f64] = &[1.0, 2.0, 5.0, 10.0, 20.0];
/// Buckets of preemptions per request.
pub const PREEMPTION_BUCKETS: &[f64] = &[1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0];

/// A cumulative-bucket histogram (Prometheus style).
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Upper bounds, ascending (`+Inf` implied).
    pub bounds: &'static [f64],
    /// Observations per bucket (not cumulative); last entry is `+Inf`.
    pub counts: Vec<u64>,
    /// Sum of observations.
    pub sum: f64,
    /// Number of observations.
    pub count: u64,
}

impl Histogram {
    /// An empty histogram over `bounds`.
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    /// Records one value.
    pub fn observe(&mut self, v: f64) {
        let i = self.bounds.partition_point(|b| *b < v);
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }

    /// Cumulative counts, one per bound plus `+Inf`.
    pub fn cumulative(&self) -> Vec<u64> {
        let mut acc = 0;
        self.counts
            .iter()
            .map(|c| {
                acc += c;
                acc
            })
            .collect()
    }
}

/// Why a request finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinishReason {
    /// The answer ended (end of sequence).
    Stop,
    /// `max_tokens` reached.
    Length,
    /// The client went away.
    Abort,
}

impl FinishReason {
    /// vLLM's label value.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::Abort => "abort",
        }
    }
}

/// Every request's time to first token (queue included) in the engine's
/// own clock, seconds, in the order the first tokens came: the figure
/// without the HTTP path's and the client's time, and on a scaled clock
/// without the machine's lost milliseconds inside the engine's steps (the
/// arrivals are still the machine's). Off unless asked for
/// ([`TwinOptions::ttft_log`](crate::TwinOptions::ttft_log),
/// [`TtftLog::keeping`]): a log grows by 8 bytes a request, which a
/// long-running `serve` should not. The clones of one engine's stats share
/// the list, so publishing them copies none of it.
#[derive(Debug, Clone, Default)]
pub struct TtftLog(Option<std::sync::Arc<std::sync::Mutex<Vec<f64>>>>);

impl TtftLog {
    /// A log that keeps every TTFT (the default keeps none).
    pub fn keeping() -> Self {
        TtftLog(Some(Default::default()))
    }

    /// Whether this log keeps TTFTs.
    pub fn is_kept(&self) -> bool {
        self.0.is_some()
    }

    /// Adds one request's TTFT, seconds (nothing when the log is off).
    pub fn push(&self, ttft_s: f64) {
        if let Some(Ok(mut v)) = self.0.as_ref().map(|v| v.lock()) {
            v.push(ttft_s);
        }
    }

    /// The TTFTs so far, seconds, in the order they came (empty when the
    /// log is off).
    pub fn samples(&self) -> Vec<f64> {
        self.0
            .as_ref()
            .and_then(|v| v.lock().ok().map(|v| v.clone()))
            .unwrap_or_default()
    }
}

impl PartialEq for TtftLog {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) if std::sync::Arc::ptr_eq(a, b) => true,
            _ => self.is_kept() == other.is_kept() && self.samples() == other.samples(),
        }
    }
}

/// Everything the engine counts. Counters only grow.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineStats {
    /// Requests running after the latest step.
    pub running: usize,
    /// Requests waiting after the latest step (preempted ones included).
    pub waiting: usize,
    /// KV usage after the latest step, fraction 0..1.
    pub kv_usage: f64,
    /// Preemptions so far.
    pub preemptions: u64,
    /// Prompt tokens looked up in the prefix cache at admission.
    pub prefix_queries: u64,
    /// Prompt tokens found in the prefix cache at admission.
    pub prefix_hits: u64,
    /// Prompt tokens of admitted requests (first admission only).
    pub prompt_tokens: u64,
    /// Of which computed.
    pub prompt_tokens_computed: u64,
    /// Of which taken from the prefix cache.
    pub prompt_tokens_cached: u64,
    /// Output tokens generated.
    pub generation_tokens: u64,
    /// Finished requests: stop, length, abort.
    pub finished_stop: u64,
    /// See `finished_stop`.
    pub finished_length: u64,
    /// See `finished_stop`.
    pub finished_abort: u64,
    /// Engine steps run.
    pub steps: u64,
    /// TTFT incl. queue, seconds.
    pub ttft: Histogram,
    /// Every request's TTFT incl. queue, seconds of the engine's clock.
    pub ttft_log: TtftLog,
    /// Inter-token latency, seconds.
    pub itl: Histogram,
    /// Mean time per output token per request, seconds.
    pub tpot: Histogram,
    /// Arrival to last token, seconds.
    pub e2e: Histogram,
    /// Arrival to first scheduling, seconds.
    pub queue: Histogram,
    /// First scheduling to last token, seconds.
    pub inference: Histogram,
    /// First scheduling to first token, seconds.
    pub prefill: Histogram,
    /// First token to last token, seconds.
    pub decode: Histogram,
    /// Tokens per step.
    pub iteration_tokens: Histogram,
    /// Prompt tokens per finished request.
    pub request_prompt_tokens: Histogram,
    /// Output tokens per finished request.
    pub request_generation_tokens: Histogram,
    /// Output tokens per finished request (`n` = 1: same as generation).
    pub request_max_generation_tokens: Histogram,
    /// `max_tokens` per finished request.
    pub request_max_tokens: Histogram,
    /// `n` per finished request (always 1).
    pub request_n: Histogram,
    /// Preemptions per finished request.
    pub request_preemptions: Histogram,
    /// Prompt tokens computed (not cached) per finished request.
    pub request_prefill_computed: Histogram,
}

impl Default for EngineStats {
    fn default() -> Self {
        EngineStats {
            running: 0,
            waiting: 0,
            kv_usage: 0.0,
            preemptions: 0,
            prefix_queries: 0,
            prefix_hits: 0,
            prompt_tokens: 0,
            prompt_tokens_computed: 0,
            prompt_tokens_cached: 0,
            generation_tokens: 0,
            finished_stop: 0,
            finished_length: 0,
            finished_abort: 0,
            steps: 0,
            ttft: Histogram::new(TTFT_BUCKETS),
            ttft_log: TtftLog::default(),
            itl: Histogram::new(ITL_BUCKETS),
            tpot: Histogram::new(ITL_BUCKETS),
            e2e: Histogram::new(PHASE_BUCKETS),
            queue: Histogram::new(PHASE_BUCKETS),
            inference: Histogram::new(PHASE_BUCKETS),
            prefill: Histogram::new(PHASE_BUCKETS),
            decode: Histogram::new(PHASE_BUCKETS),
            iteration_tokens: Histogram::new(ITERATION_BUCKETS),
            request_prompt_tokens: Histogram::new(TOKEN_BUCKETS),
            request_generation_tokens: Histogram::new(TOKEN_BUCKETS),
            request_max_generation_tokens: Histogram::new(TOKEN_BUCKETS),
            request_max_tokens: Histogram::new(TOKEN_BUCKETS),
            request_n: Histogram::new(PARAMS_N_BUCKETS),
            request_preemptions: Histogram::new(PREEMPTION_BUCKETS),
            request_prefill_computed: Histogram::new(TOKEN_BUCKETS),
        }
    }
}

impl EngineStats {
    /// Counts one finished request.
    pub fn count_finish(&mut self, reason: FinishReason) {
        match reason {
            FinishReason::Stop => self.finished_stop += 1,
            FinishReason::Length => self.finished_length += 1,
            FinishReason::Abort => self.finished_abort += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_upper_inclusive() {
        let mut h = Histogram::new(&[1.0, 2.0]);
        h.observe(1.0);
        h.observe(1.5);
        h.observe(9.0);
        assert_eq!(h.cumulative(), vec![1, 2, 3]);
        assert_eq!(h.count, 3);
        assert!((h.sum - 11.5).abs() < 1e-12);
    }
}
