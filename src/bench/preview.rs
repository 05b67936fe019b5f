//! What a bench run will do, shown before it starts: the plan text (the
//! server, the model, the cells or rates, the shapes that do not fit) and a
//! rough estimate of its duration.

use std::fmt::Write as _;
use std::time::Duration;

use super::cells::BenchPlan;
use super::config::{BenchConfig, Load, OpenLoop};

/// Rough server speeds used to estimate a run's duration (GB10-like
/// defaults; the estimate is only for the confirmation prompt).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedGuess {
    /// Output tokens/s of one stream alone.
    pub single_stream_tok_per_s: f64,
    /// Aggregate output tokens/s the server tops out at.
    pub peak_output_tok_per_s: f64,
    /// Prompt tokens/s of prefill.
    pub prefill_tok_per_s: f64,
}

impl Default for SpeedGuess {
    /// About 31 tok/s for one user, ~150 tok/s aggregate, 3,000 tok/s prefill.
    fn default() -> Self {
        SpeedGuess {
            single_stream_tok_per_s: 31.0,
            peak_output_tok_per_s: 150.0,
            prefill_tok_per_s: 3000.0,
        }
    }
}

/// Estimated time of one level, simulated time: rounds of N requests, each
/// round taking prefill of N prompts plus decoding at the per-stream speed
/// the aggregate allows; capped by `--level-duration` (plus one request for
/// the tail).
pub fn estimate_level(
    config: &BenchConfig,
    input_tokens: u64,
    n: u32,
    requests: u64,
    speed: &SpeedGuess,
) -> Duration {
    let n_f = f64::from(n.max(1));
    let per_stream = speed
        .single_stream_tok_per_s
        .min(speed.peak_output_tok_per_s / n_f)
        .max(1e-6);
    let prefill = input_tokens as f64 * n_f / speed.prefill_tok_per_s.max(1e-6);
    let request = prefill + f64::from(config.output_tokens) / per_stream;
    let rounds = (requests as f64 / n_f).ceil();
    let mut secs = rounds * request;
    if let Some(cap) = config.level_duration {
        secs = secs.min(cap.as_secs_f64() + request);
    }
    Duration::from_secs_f64(secs.max(0.0))
}

/// Estimated time of the plan's cells, simulated time.
pub fn estimate_duration(config: &BenchConfig, plan: &BenchPlan, speed: &SpeedGuess) -> Duration {
    plan.cells
        .iter()
        .filter(|c| plan.fit.contains(&c.shape))
        .map(|c| {
            estimate_level(
                config,
                c.shape.input_tokens(),
                c.concurrency,
                c.requests,
                speed,
            )
        })
        .sum()
}

/// What an open-loop run will do, on one line of the plan.
fn open_loop_text(config: &BenchConfig, open: &OpenLoop) -> String {
    let top = config.top_concurrency();
    let cap = open
        .max_concurrency
        .map_or(String::new(), |c| format!(", at most {c} in flight"));
    let arrival = open.arrival.name();
    match &config.load {
        Load::Sweep { rates: n, .. } => format!("a sweep: 1 at a time, {top} in flight, then {n} {arrival} rates between their throughputs{cap}"),
        Load::FindRate { .. } => format!("the highest {arrival} rate meeting the SLO, by bisection between 1 at a time and {top} in flight{cap}"),
        Load::Rates { rates, .. } => {
            let rates: Vec<String> = rates
                .iter()
                .map(|r| {
                    let n = config
                        .requests_per_level
                        .unwrap_or_else(|| super::config::default_rate_requests(*r));
                    format!("{}/s ×{n}", codendum_core::results::records::trim_rate(*r))
                })
                .collect();
            format!("{arrival} arrivals at {}{cap}", rates.join(", "))
        }
        Load::Closed | Load::Calibration { .. } | Load::Cells(_) => String::new(),
    }
}

/// The plan shown before a run: the server and model (`server`: its label
/// and the model), levels, shapes, requests per level, output tokens, the
/// shapes that do not fit, and the estimated duration. `speed` is `None`
/// when nothing is known of the server's speed yet (a calibration run of a
/// live server): the duration is then "unknown".
pub fn plan_text(
    config: &BenchConfig,
    plan: &BenchPlan,
    (label, model): (&str, &str),
    speed: Option<&SpeedGuess>,
) -> String {
    let mut t = String::new();
    let levels: Vec<String> = plan.levels.iter().map(u32::to_string).collect();
    let shapes: Vec<String> = plan
        .fit
        .iter()
        .map(|s| format!("{} (~{} input tokens)", s.name(), s.input_tokens()))
        .collect();
    let requests: Vec<String> = plan
        .levels
        .iter()
        .map(|&n| format!("N={n}: {}", config.requests_for(n)))
        .collect();
    let _ = writeln!(t, "Benchmark plan");
    let _ = writeln!(t, "  target:             {label}");
    let _ = writeln!(t, "  model:              {model}");
    let _ = writeln!(t, "  endpoint:           {:?}", config.endpoint);
    match (&config.load, config.load.open_loop()) {
        (Load::Calibration { .. } | Load::Cells(_), _) => {
            let cells: Vec<String> = plan
                .cells
                .iter()
                .map(|c| format!("{}@N={} ×{}", c.shape.name(), c.concurrency, c.requests))
                .collect();
            let _ = writeln!(t, "  calibration cells:  {}", cells.join(", "));
        }
        (_, Some(open)) => {
            let _ = writeln!(t, "  prompt shapes:      {}", shapes.join(", "));
            let _ = writeln!(t, "  open loop:          {}", open_loop_text(config, open));
        }
        (_, None) => {
            let _ = writeln!(t, "  concurrency levels: {}", levels.join(", "));
            let _ = writeln!(t, "  prompt shapes:      {}", shapes.join(", "));
            let _ = writeln!(t, "  requests per level: {}", requests.join(", "));
        }
    }
    if let Some(slo) = &config.slo {
        let _ = writeln!(t, "  SLO:                {}", slo.describe());
    }
    let _ = writeln!(
        t,
        "  output tokens:      {} per request (ignore_eos)",
        config.output_tokens
    );
    if let Some(cap) = config.level_duration {
        let _ = writeln!(t, "  level cap:          {:.0} s", cap.as_secs_f64());
    }
    let _ = writeln!(
        t,
        "  estimated duration: {}",
        duration_text(config, plan, speed)
    );
    for s in &plan.skipped {
        let _ = writeln!(t, "  {}", s.reason());
    }
    t
}

/// The plan's estimated duration.
fn duration_text(config: &BenchConfig, plan: &BenchPlan, speed: Option<&SpeedGuess>) -> String {
    match (&config.load, speed) {
        (Load::Rates { rates, .. }, _) => {
            // Arrivals take requests / rate each level; the last answers
            // drain after.
            let est: f64 = rates
                .iter()
                .map(|r| {
                    let n = config
                        .requests_per_level
                        .unwrap_or_else(|| super::config::default_rate_requests(*r));
                    n as f64 / r
                })
                .sum::<f64>()
                * plan.fit.len() as f64;
            format!("{} of arrivals, then the last answers", about_duration(est))
        }
        (Load::Sweep { .. } | Load::FindRate { .. }, _) => {
            "set by the first two levels (the rates follow from their throughput)".to_string()
        }
        (_, None) => {
            "unknown until the first cells have run on this server (then on the progress line)"
                .to_string()
        }
        (_, Some(speed)) => format!(
            "{}, under sustained load",
            about_duration(estimate_duration(config, plan, speed).as_secs_f64())
        ),
    }
}

/// A duration estimate for people: seconds under two minutes, else minutes
/// with the seconds beside them (`about 40 s`, `about 6 min (331 s)`).
pub fn about_duration(seconds: f64) -> String {
    let s = seconds.max(0.0);
    if s < 120.0 {
        format!("about {:.0} s", s.ceil().max(1.0))
    } else {
        format!("about {:.0} min ({:.0} s)", (s / 60.0).round(), s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> BenchConfig {
        BenchConfig::default()
    }

    fn plan(c: &BenchConfig) -> BenchPlan {
        BenchPlan::new(c, &crate::bench::ServerFacts::default())
    }

    #[test]
    fn estimates_read_as_a_person_would_say_them() {
        assert_eq!(about_duration(0.4), "about 1 s");
        assert_eq!(about_duration(1.0), "about 1 s");
        assert_eq!(about_duration(59.2), "about 60 s");
        assert_eq!(about_duration(331.0), "about 6 min (331 s)");
    }

    #[test]
    fn estimate_grows_with_work_and_respects_the_cap() {
        let mut c = config();
        let speed = SpeedGuess::default();
        // Worked by hand from the default guess (31 tok/s alone, 150 tok/s
        // in all, 3,000 tok/s prefill), 512-token prompts, 256 out:
        // N=1, 16 requests: 16 × (512/3000 + 256/31) = 134.8597 s.
        let one = estimate_level(&c, 512, 1, c.requests_for(1), &speed).as_secs_f64();
        assert!((one - 134.8597).abs() < 1e-3, "{one}");
        // N=40, 160 requests: 150/40 = 3.75 tok/s each; 4 rounds of
        // 512·40/3000 + 256/3.75 = 75.0933 s, 300.3733 s.
        let forty = estimate_level(&c, 512, 40, 160, &speed).as_secs_f64();
        assert!((forty - 300.3733).abs() < 1e-3, "{forty}");
        // Capped at 10 s a level: the cap plus the round in flight, 85.0933 s.
        let mut capped = c.clone();
        capped.level_duration = Some(Duration::from_secs(10));
        let cut = estimate_level(&capped, 512, 40, 160, &speed).as_secs_f64();
        assert!((cut - 85.0933).abs() < 1e-3, "{cut}");
        let full = estimate_duration(&c, &plan(&c), &speed);
        c.level_duration = Some(Duration::from_secs(10));
        assert!(estimate_duration(&c, &plan(&c), &speed) < full);
        let plan = plan_text(&c, &plan(&c), ("embedded twin", "m"), Some(&speed));
        assert!(
            plan.contains("1, 8, 16, 24, 40") && plan.contains("N=40: 160"),
            "{plan}"
        );
        assert!(plan.contains("embedded twin"));
    }
}
