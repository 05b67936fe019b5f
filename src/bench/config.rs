//! The validated configuration of a bench run. Every field maps to one
//! `codendum bench` flag (no clap here: the CLI parses strings with
//! [`parse_concurrency`] / [`parse_shapes`] and fills the struct).

use std::path::PathBuf;
use std::time::Duration;

use codendum_core::error::{Check, ConfigError};
use codendum_core::flags;

use super::arrival::Arrival;
use codendum_core::kinds::{Shape, MAX_CONCURRENCY};
use codendum_core::openai::Endpoint;
use codendum_core::results::SkippedShape;
use codendum_core::target::{Provenance, Target};

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

/// Parses `--concurrency` (`1,8,16`) and validates it: non-empty, each level
/// in `1..=4096`, no duplicates. Order is kept (it is the run order).
pub fn parse_concurrency(raw: &str) -> Result<Vec<u32>, ConfigError> {
    let levels = flags::whole_numbers("--concurrency", raw)?;
    validate_concurrency(&levels)?;
    Ok(levels)
}

/// Checks concurrency levels (see [`parse_concurrency`]).
pub fn validate_concurrency(levels: &[u32]) -> Result<(), ConfigError> {
    if levels.is_empty() {
        return Err(ConfigError::invalid("--concurrency", "no level given"));
    }
    for (i, &n) in levels.iter().enumerate() {
        if n == 0 || n > MAX_CONCURRENCY {
            return Err(ConfigError::invalid(
                "--concurrency",
                format!("{n} is outside 1..={MAX_CONCURRENCY}"),
            ));
        }
        if levels[..i].contains(&n) {
            return Err(ConfigError::invalid(
                "--concurrency",
                format!("{n} is given twice"),
            ));
        }
    }
    Ok(())
}

/// Parses `--shapes` (`short,long`): known names, at least one, no duplicates.
pub fn parse_shapes(raw: &str) -> Result<Vec<Shape>, ConfigError> {
    let mut shapes = Vec::new();
    for part in flags::list(raw) {
        let shape = Shape::from_name(part).ok_or_else(|| {
            ConfigError::invalid(
                "--shapes",
                format!(
                    "unknown shape {part:?} (known: short, long, or input tokens 16..=1048576)"
                ),
            )
        })?;
        if shapes.contains(&shape) {
            return Err(ConfigError::invalid(
                "--shapes",
                format!("{part} is given twice"),
            ));
        }
        shapes.push(shape);
    }
    if shapes.is_empty() {
        return Err(ConfigError::invalid("--shapes", "no shape given"));
    }
    Ok(shapes)
}

/// Everything a bench run needs to know, validated by [`BenchConfig::validate`].
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// `--max-error-rate`: the share of requests that may fail (a fraction)
    /// before a completed run exits 1.
    pub max_error_rate: f64,
    /// Where the server is (`--base-url`, `--api-key`, `--cacert`,
    /// `--metrics-url`, `--model`, `--timeout`). `target.model = None`: the
    /// first id the server lists.
    pub target: Target,
    /// Provenance (`--profile` and the provenance flags).
    pub provenance: Provenance,
    /// `--concurrency`: levels N, in run order.
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
    /// `--results-dir`: root of results folders (default `bench-results`).
    pub results_dir: PathBuf,
    /// `--allow-busy`: start even when the server has running or waiting
    /// requests, or when `/metrics` cannot tell.
    pub allow_busy: bool,
    /// `--yes`: no confirmation (recorded; confirming is the CLI's job).
    pub yes: bool,
    /// Run id placed in every prompt tag; empty: derived from the start time.
    pub run_id: String,
    /// Grace for in-flight requests after an interruption, simulated time.
    pub cancel_grace: Duration,
    /// `--calibration`: run the calibration workload instead of the grid,
    /// with this decode ladder (`--concurrency`; empty: the default ladder).
    pub calibration: Option<Vec<u32>>,
    /// The cells of the calibration workload
    /// ([`crate::bench::calibration`]), set once the server is known;
    /// `None`: every shape × level.
    pub cells: Option<Vec<Cell>>,
    /// The engine settings the server states (the embedded twin's
    /// profile), recorded in `summary.json` for `codendum calibrate`.
    pub stated_engine: Option<codendum_core::results::EngineSettings>,
    /// The stated profile checked against the server before the run,
    /// recorded in `summary.json` as `profile_check`.
    pub profile_check: Option<codendum_core::results::profile_check::ProfileCheck>,
    /// Open-loop levels instead of (or, for a sweep, after) closed-loop
    /// ones; `None`: the closed-loop grid.
    pub open_loop: Option<OpenLoop>,
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

/// Open-loop levels (`--rate`, `--sweep`, `--find-rate`): how requests
/// arrive and what they must meet.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenLoop {
    /// `--rate`: the levels' rates, requests per second, in run order
    /// (empty with `--sweep` or `--find-rate`, which choose their own).
    pub rates: Vec<f64>,
    /// `--arrival` and `--burstiness`.
    pub arrival: Arrival,
    /// `--max-concurrency`: most requests in flight; a due request waits
    /// for a free slot (and its latency counts from when it was due).
    pub max_concurrency: Option<u32>,
    /// `--sweep N`: one at a time, the closed-loop maximum, then N rates
    /// spread between their throughputs.
    pub sweep: Option<u32>,
    /// `--find-rate`: the highest rate whose SLO share meets `--slo`,
    /// by bisection.
    pub find_rate: bool,
    /// `--stop-when-saturated`: end a sweep at its first saturated level.
    pub stop_when_saturated: bool,
    /// With `rates`: run the closed-loop levels of `--concurrency` first
    /// (the capacity suite's targets name both kinds; the command line
    /// takes one or the other).
    pub closed_levels_first: bool,
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

impl BenchConfig {
    /// The defaults of every flag for a target.
    pub fn new(target: Target) -> Self {
        BenchConfig {
            target,
            provenance: Provenance::default(),
            concurrency: DEFAULT_CONCURRENCY.to_vec(),
            shapes: Shape::ALL.to_vec(),
            requests_per_level: None,
            level_duration: None,
            output_tokens: DEFAULT_OUTPUT_TOKENS,
            endpoint: Endpoint::Chat,
            seed: 0,
            results_dir: PathBuf::from(codendum_core::results::DEFAULT_RESULTS_ROOT),
            allow_busy: false,
            yes: false,
            run_id: String::new(),
            cancel_grace: DEFAULT_CANCEL_GRACE,
            calibration: None,
            cells: None,
            stated_engine: None,
            profile_check: None,
            max_error_rate: codendum_core::results::verdict::DEFAULT_MAX_ERROR_RATE,
            open_loop: None,
            slo: None,
        }
    }
}

impl Check for BenchConfig {
    /// Checks every field; errors name the flag.
    fn check(&self) -> Result<(), ConfigError> {
        // Rate levels alone need no concurrency level.
        let rates_only = self
            .open_loop
            .as_ref()
            .is_some_and(|o| !o.rates.is_empty() && !o.closed_levels_first);
        if !(rates_only && self.concurrency.is_empty()) {
            validate_concurrency(&self.concurrency)?;
        }
        codendum_core::results::verdict::check_max_error_rate(self.max_error_rate)?;
        if self.shapes.is_empty() {
            return Err(ConfigError::invalid("--shapes", "no shape given"));
        }
        for (i, s) in self.shapes.iter().enumerate() {
            if self.shapes[..i].contains(s) {
                return Err(ConfigError::invalid(
                    "--shapes",
                    format!("{} is given twice", s.name()),
                ));
            }
        }
        if self.requests_per_level == Some(0) {
            return Err(ConfigError::invalid(
                "--requests-per-level",
                "must be at least 1",
            ));
        }
        if self.level_duration.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError::invalid(
                "--level-duration",
                "must be more than 0 s",
            ));
        }
        if let Some(open) = &self.open_loop {
            check_open_loop(open, self.slo.as_ref())?;
        }
        if self.output_tokens == 0 {
            return Err(ConfigError::invalid(
                "--output-tokens",
                "must be at least 1",
            ));
        }
        if self
            .run_id
            .chars()
            .any(|c| c.is_whitespace() || c == ']' || c.is_control())
        {
            return Err(ConfigError::invalid(
                "run id",
                "must not contain white space or ']'",
            ));
        }
        Ok(())
    }
}

impl BenchConfig {
    /// Runs exactly `cells`, in their order: the shapes and levels they use
    /// become the run's.
    pub fn set_cells(&mut self, cells: Vec<Cell>) {
        let mut shapes = Vec::new();
        for c in &cells {
            if !shapes.contains(&c.shape) {
                shapes.push(c.shape);
            }
        }
        let mut levels: Vec<u32> = cells.iter().map(|c| c.concurrency).collect();
        levels.sort_unstable();
        levels.dedup();
        self.shapes = shapes;
        self.concurrency = levels;
        self.cells = Some(cells);
    }

    /// The cells in run order: the calibration's, else each shape at each
    /// level (shape by shape), with [`Self::requests_for`] requests.
    pub fn cells(&self) -> Vec<Cell> {
        if let Some(cells) = &self.cells {
            return cells.clone();
        }
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
}

/// Checks the open-loop flags: rates above 0, a sweep of 1 to 50 rates,
/// `--find-rate` with an `--slo`, a `--max-concurrency` of 1 to 4096.
fn check_open_loop(
    open: &OpenLoop,
    slo: Option<&codendum_core::results::slo::Slo>,
) -> Result<(), ConfigError> {
    for (i, &r) in open.rates.iter().enumerate() {
        if !(r.is_finite() && r > 0.0) {
            return Err(ConfigError::invalid(
                "--rate",
                format!("{r} is not a rate above 0 (requests per second)"),
            ));
        }
        if open.rates[..i].contains(&r) {
            return Err(ConfigError::invalid(
                "--rate",
                format!("{r} is given twice"),
            ));
        }
    }
    if let Some(n) = open.sweep {
        if n == 0 || n > 50 {
            return Err(ConfigError::invalid(
                "--sweep",
                format!("{n} rates: give 1 to 50"),
            ));
        }
    }
    if open.find_rate && slo.is_none() {
        return Err(ConfigError::invalid(
            "--find-rate",
            "needs --slo (what the highest rate must meet)",
        ));
    }
    if let Some(c) = open.max_concurrency {
        if c == 0 || c > MAX_CONCURRENCY {
            return Err(ConfigError::invalid(
                "--max-concurrency",
                format!("{c} is outside 1..={MAX_CONCURRENCY}"),
            ));
        }
    }
    let modes = [!open.rates.is_empty(), open.sweep.is_some(), open.find_rate];
    if modes.iter().filter(|m| **m).count() != 1 {
        return Err(ConfigError::invalid(
            "--rate",
            "give one of --rate, --sweep and --find-rate",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target::new(None, None, None, None, None, Duration::from_secs(60)).unwrap()
    }

    #[test]
    fn concurrency_is_validated_and_names_the_flag() {
        assert_eq!(parse_concurrency("1, 8,16").unwrap(), vec![1, 8, 16]);
        for bad in ["", "0", "4097", "1,1", "x", "-1"] {
            let e = parse_concurrency(bad).unwrap_err().to_string();
            assert!(e.contains("--concurrency"), "{bad}: {e}");
        }
        assert!(parse_concurrency("4096").is_ok());
    }

    #[test]
    fn shapes_by_name() {
        assert_eq!(
            parse_shapes("long,short").unwrap(),
            vec![Shape::Long, Shape::Short]
        );
        assert_eq!(parse_shapes("SHORT").unwrap(), vec![Shape::Short]);
        let e = parse_shapes("short,medium").unwrap_err().to_string();
        assert!(e.contains("--shapes") && e.contains("medium"), "{e}");
        assert!(parse_shapes("short,short").is_err());
        assert!(parse_shapes("").is_err());
    }

    #[test]
    fn defaults_validate_and_scale_requests_with_n() {
        let mut c = BenchConfig::new(target());
        c.check().unwrap();
        assert_eq!(c.requests_for(1), 16);
        assert_eq!(c.requests_for(40), 160);
        c.requests_per_level = Some(7);
        assert_eq!(c.requests_for(40), 7);
        c.requests_per_level = Some(0);
        assert!(c
            .check()
            .unwrap_err()
            .to_string()
            .contains("--requests-per-level"));
        c.requests_per_level = None;
        c.output_tokens = 0;
        assert!(c
            .check()
            .unwrap_err()
            .to_string()
            .contains("--output-tokens"));
        c.output_tokens = 1;
        c.level_duration = Some(Duration::ZERO);
        assert!(c
            .check()
            .unwrap_err()
            .to_string()
            .contains("--level-duration"));
    }
}
