//! What a bench run was asked to do. Every field maps to one `codendum
//! bench` flag, already typed and checked when the command line was read
//! ([`crate::settings::values`]); nothing here checks them again.

use std::time::Duration;

use super::arrival::Arrival;
use codendum_core::openai::Endpoint;
use codendum_core::results::SkippedShape;
use codendum_core::shape::Shape;

/// Default concurrency levels (`--concurrency`).
pub const DEFAULT_CONCURRENCY: [u32; 5] = [1, 8, 16, 24, 40];
/// Default output tokens per request (`--output-tokens`).
pub const DEFAULT_OUTPUT_TOKENS: u32 = 256;
/// Default grace for in-flight requests after an interruption, simulated s.
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(5);

/// Splits `shapes` into those whose prompt plus `output_tokens` fit in
/// `max_model_len` (all of them when the server states no limit) and those
/// that cannot, in order.
pub fn fit_shapes(
    shapes: &[Shape],
    output_tokens: u32,
    max_model_len: Option<u64>,
) -> (Vec<Shape>, Vec<SkippedShape>) {
    let mut fit = Vec::new();
    let mut skipped = Vec::new();
    for &shape in shapes {
        match max_model_len {
            Some(limit) if shape.input_tokens() + u64::from(output_tokens) > limit => {
                skipped.push(SkippedShape {
                    shape: shape.name().to_string(),
                    input_tokens: shape.input_tokens(),
                    output_tokens,
                    max_model_len: limit,
                })
            }
            _ => fit.push(shape),
        }
    }
    (fit, skipped)
}

/// How a bench run loads the server. The modes exclude each other; the
/// levels of [`BenchConfig::concurrency`] are their closed-loop levels (a
/// sweep's and a search's top end).
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// Each shape at each level, N requests in flight.
    Closed,
    /// The calibration workload ([`crate::bench::calibration`]): its cells
    /// are chosen once the server is known; `concurrency` is the decode
    /// ladder when `ladder_given`, else the ladder is the default one.
    Calibration {
        /// Whether `--concurrency` named the ladder.
        ladder_given: bool,
    },
    /// Exactly these cells, in order (a recorded run played again).
    Cells(Vec<Cell>),
    /// Rate levels at these rates (requests per second), after the
    /// closed-loop levels when `closed_first` (the capacity suite's targets
    /// name both kinds; the command line takes one or the other).
    Rates {
        /// The rates, in run order.
        rates: Vec<f64>,
        /// Run the closed-loop levels first.
        closed_first: bool,
        /// How requests arrive.
        open: OpenLoop,
    },
    /// One request at a time, the closed-loop maximum, then `rates` rates
    /// spread evenly between their throughputs.
    Sweep {
        /// Rates between the two ends, 1 to 50.
        rates: u32,
        /// End at the first saturated level.
        stop_when_saturated: bool,
        /// How requests arrive.
        open: OpenLoop,
    },
    /// The highest rate meeting the run's SLO, by bisection between one
    /// request at a time and the closed-loop maximum.
    FindRate {
        /// How requests arrive.
        open: OpenLoop,
    },
}

impl Load {
    /// How requests arrive, for the open-loop modes.
    pub fn open_loop(&self) -> Option<&OpenLoop> {
        match self {
            Load::Rates { open, .. } | Load::Sweep { open, .. } | Load::FindRate { open } => {
                Some(open)
            }
            Load::Closed | Load::Calibration { .. } | Load::Cells(_) => None,
        }
    }
}

/// Everything a bench run was asked to do (the server and how the run
/// starts are [`crate::settings`]'s; what the server tells is
/// [`super::ServerFacts`]).
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// How the run loads the server.
    pub load: Load,
    /// `--concurrency`: closed-loop levels N, in run order.
    pub concurrency: Vec<u32>,
    /// `--shapes`: prompt shapes, in run order.
    pub shapes: Vec<Shape>,
    /// `--requests-per-level`: requests started per level; `None`: the
    /// default `max(16, 4·N)`, so every in-flight slot turns over at least
    /// four times and low levels still get enough samples for a P95.
    pub requests_per_level: Option<u64>,
    /// `--level-duration`: optional cap on each level, simulated time. When
    /// it passes, no new request starts; those in flight finish and count.
    pub level_duration: Option<Duration>,
    /// `--output-tokens`: generated tokens per request (max_tokens =
    /// min_tokens, ignore_eos).
    pub output_tokens: u32,
    /// `--endpoint`: chat or completions.
    pub endpoint: Endpoint,
    /// `--seed`: seed of the prompt filler text.
    pub seed: u64,
    /// Run id placed in every prompt tag; empty: derived from the start time.
    pub run_id: String,
    /// Grace for in-flight requests after an interruption, simulated time.
    pub cancel_grace: Duration,
    /// `--slo`: the per-request objectives behind each level's SLO share
    /// and goodput (and `--find-rate`'s search).
    pub slo: Option<codendum_core::results::slo::Slo>,
}

/// One cell of a run: a shape at a concurrency level, with the requests it
/// starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    /// The prompt shape.
    pub shape: Shape,
    /// Requests kept in flight (N).
    pub concurrency: u32,
    /// Requests started in the cell.
    pub requests: u64,
}

/// How open-loop requests arrive (`--arrival`, `--burstiness`,
/// `--max-concurrency`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenLoop {
    /// `--arrival` and `--burstiness`.
    pub arrival: Arrival,
    /// `--max-concurrency`: most requests in flight; a due request waits
    /// for a free slot (and its latency counts from when it was due).
    pub max_concurrency: Option<u32>,
}

/// Most levels `--find-rate` measures in its bisection.
pub const FIND_RATE_MAX_STEPS: u32 = 8;
/// `--find-rate` stops when its bracket is this narrow (a fraction of its
/// upper end).
pub const FIND_RATE_PRECISION: f64 = 0.05;

/// The requests a rate level starts by default: a minute of arrivals, at
/// least 16, at most 2,000.
pub fn default_rate_requests(rate: f64) -> u64 {
    ((60.0 * rate).ceil() as u64).clamp(16, 2_000)
}

impl Default for BenchConfig {
    /// The defaults of every flag: the closed loop over the default levels
    /// and both shapes.
    fn default() -> Self {
        BenchConfig {
            load: Load::Closed,
            concurrency: DEFAULT_CONCURRENCY.to_vec(),
            shapes: Shape::ALL.to_vec(),
            requests_per_level: None,
            level_duration: None,
            output_tokens: DEFAULT_OUTPUT_TOKENS,
            endpoint: Endpoint::Chat,
            seed: 0,
            run_id: String::new(),
            cancel_grace: DEFAULT_CANCEL_GRACE,
            slo: None,
        }
    }
}

impl BenchConfig {
    /// The grid's cells in run order: each shape at each level (shape by
    /// shape), with [`Self::requests_for`] requests.
    pub fn grid(&self) -> Vec<Cell> {
        self.shapes
            .iter()
            .flat_map(|&shape| {
                self.concurrency.iter().map(move |&n| Cell {
                    shape,
                    concurrency: n,
                    requests: self.requests_for(n),
                })
            })
            .collect()
    }

    /// Requests started at level `n`: `--requests-per-level`, or
    /// `max(16, 4·n)`.
    pub fn requests_for(&self, n: u32) -> u64 {
        self.requests_per_level
            .unwrap_or_else(|| (4 * u64::from(n)).max(16))
    }

    /// The closed-loop level of a sweep's or a search's top end: the
    /// largest level.
    pub fn top_concurrency(&self) -> u32 {
        self.concurrency.iter().copied().max().unwrap_or(40)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_scale_with_the_level() {
        let mut c = BenchConfig::default();
        assert_eq!(c.requests_for(1), 16);
        assert_eq!(c.requests_for(40), 160);
        c.requests_per_level = Some(7);
        assert_eq!(c.requests_for(40), 7);
        assert_eq!(c.grid().len(), 10);
        assert_eq!(c.top_concurrency(), 40);
    }

    #[test]
    fn shapes_that_do_not_fit_are_set_aside() {
        let (fit, skipped) = fit_shapes(&Shape::ALL, 256, Some(8_192));
        assert_eq!(fit, vec![Shape::Short]);
        assert_eq!(skipped.len(), 1);
        let (fit, _) = fit_shapes(&Shape::ALL, 256, None);
        assert_eq!(fit.len(), 2);
    }
}
