//! Before a run: the busy guard (refuse to load a server that is serving
//! someone), a rough duration estimate, and the plan text shown for
//! confirmation (confirming is the CLI's job).

use std::fmt::Write as _;
use std::time::Duration;

use super::config::BenchConfig;
use super::seams::ServerLoad;
use codendum_core::error::Error;

/// What the busy guard decided when the run may go ahead.
#[derive(Debug, Clone, PartialEq)]
pub enum GuardVerdict {
    /// Nothing running or waiting.
    Idle,
    /// Busy, but `--allow-busy` was given; the warning says why the figures
    /// may be disturbed.
    Allowed(String),
    /// `/metrics` could not be read, so the load is unknown: the run goes
    /// on (its plan says the server was not checked) and the warning says
    /// how to reach the server's figures.
    Unchecked(String),
}

impl GuardVerdict {
    /// The warning to show, if any.
    pub fn warning(&self) -> Option<&str> {
        match self {
            GuardVerdict::Idle => None,
            GuardVerdict::Allowed(w) | GuardVerdict::Unchecked(w) => Some(w),
        }
    }

    /// Whether the server's load was read.
    pub fn checked(&self) -> bool {
        !matches!(self, GuardVerdict::Unchecked(_))
    }
}

/// How a command takes in a server timeline recorded on the host, for the
/// guard's advice when `/metrics` is out of reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineFlag {
    /// The command reads it itself (`classroom --server-timeline`).
    Run,
    /// The report folds it in afterwards (`report --server-timeline`).
    Report,
}

/// The busy guard. `load` is a fresh `/metrics` reading (`None`: it could
/// not be read). Running or waiting requests: refused (exit 3) unless
/// `allow_busy`. No reading: the run goes on unchecked, since a
/// workstation behind the lab's proxy rarely reaches `/metrics`; the
/// warning names the three ways to get the server's side (`timeline` says
/// how this command takes a host recording).
pub fn busy_guard(
    load: Option<ServerLoad>,
    allow_busy: bool,
    timeline: TimelineFlag,
) -> Result<GuardVerdict, Error> {
    let Some(l) = load else {
        return Ok(GuardVerdict::Unchecked(unreadable_metrics_warning(
            allow_busy, timeline,
        )));
    };
    if l.running == 0.0 && l.waiting == 0.0 {
        return Ok(GuardVerdict::Idle);
    }
    let problem = format!(
        "the server is busy ({} running, {} waiting requests)",
        l.running, l.waiting
    );
    if allow_busy {
        Ok(GuardVerdict::Allowed(format!(
            "{problem}; going ahead because of --allow-busy (other load will disturb the figures)"
        )))
    } else {
        Err(Error::Refused(format!(
            "{problem}; run benchmarks in a maintenance window, or pass --allow-busy"
        )))
    }
}

/// The plan's line for a server whose load could not be read.
pub const UNCHECKED_PLAN_LINE: &str =
    "server load:        not checked (/metrics could not be read; its figures will be empty)";

/// The one line said when `/metrics` cannot be read: the load was not
/// checked, the server figures stay empty, and what to do about it.
fn unreadable_metrics_warning(allow_busy: bool, timeline: TimelineFlag) -> String {
    let head = "/metrics could not be read, so the server's load was not checked and its figures stay empty";
    if allow_busy {
        return format!("{head}; going ahead because of --allow-busy");
    }
    let pass = match timeline {
        TimelineFlag::Run => "pass the file with --server-timeline",
        TimelineFlag::Report => "fold the file in with `codendum report --server-timeline`",
    };
    format!(
        "{head}: point it at the GPU host with --metrics-url http://<gpu-host>:8000/metrics, \
or record there with `codendum metrics --watch 5 --json > tl.jsonl` and {pass}, \
or pass --allow-busy to acknowledge it"
    )
}

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

/// Estimated time of the whole run, simulated time.
pub fn estimate_duration(config: &BenchConfig, speed: &SpeedGuess) -> Duration {
    config
        .cells()
        .iter()
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
fn open_loop_text(config: &BenchConfig, open: &super::config::OpenLoop) -> String {
    let top = config.concurrency.iter().copied().max().unwrap_or(40);
    let cap = open
        .max_concurrency
        .map_or(String::new(), |c| format!(", at most {c} in flight"));
    let arrival = open.arrival.name();
    if let Some(n) = open.sweep {
        format!("a sweep: 1 at a time, {top} in flight, then {n} {arrival} rates between their throughputs{cap}")
    } else if open.find_rate {
        format!("the highest {arrival} rate meeting the SLO, by bisection between 1 at a time and {top} in flight{cap}")
    } else {
        let rates: Vec<String> = open
            .rates
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
}

/// The plan shown before a run: target, model, levels, shapes, requests
/// per level, output tokens, and the estimated duration.
/// `speed` is `None` when nothing is known of the server's speed yet (a
/// calibration run of a live server): the duration is then "unknown".
pub fn plan_text(config: &BenchConfig, model: &str, speed: Option<&SpeedGuess>) -> String {
    let mut t = String::new();
    let levels: Vec<String> = config.concurrency.iter().map(u32::to_string).collect();
    let shapes: Vec<String> = config
        .shapes
        .iter()
        .map(|s| format!("{} (~{} input tokens)", s.name(), s.input_tokens()))
        .collect();
    let requests: Vec<String> = config
        .concurrency
        .iter()
        .map(|&n| format!("N={n}: {}", config.requests_for(n)))
        .collect();
    let _ = writeln!(t, "Benchmark plan");
    let _ = writeln!(t, "  target:             {}", config.target.display_url());
    let _ = writeln!(t, "  model:              {model}");
    let _ = writeln!(t, "  endpoint:           {:?}", config.endpoint);
    if config.cells.is_some() {
        let cells: Vec<String> = config
            .cells()
            .iter()
            .map(|c| format!("{}@N={} ×{}", c.shape.name(), c.concurrency, c.requests))
            .collect();
        let _ = writeln!(t, "  calibration cells:  {}", cells.join(", "));
    } else if let Some(open) = &config.open_loop {
        let _ = writeln!(t, "  prompt shapes:      {}", shapes.join(", "));
        let _ = writeln!(t, "  open loop:          {}", open_loop_text(config, open));
    } else {
        let _ = writeln!(t, "  concurrency levels: {}", levels.join(", "));
        let _ = writeln!(t, "  prompt shapes:      {}", shapes.join(", "));
        let _ = writeln!(t, "  requests per level: {}", requests.join(", "));
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
    match &config.open_loop {
        Some(open) if !open.rates.is_empty() => {
            // Arrivals take requests / rate each level; the last answers
            // drain after.
            let est: f64 = open
                .rates
                .iter()
                .map(|r| {
                    let n = config
                        .requests_per_level
                        .unwrap_or_else(|| super::config::default_rate_requests(*r));
                    n as f64 / r
                })
                .sum::<f64>()
                * config.shapes.len() as f64;
            let _ = writeln!(
                t,
                "  estimated duration: {} of arrivals, then the last answers",
                about_duration(est)
            );
        }
        Some(_) => {
            let _ = writeln!(
                t,
                "  estimated duration: set by the first two levels (the rates follow from their throughput)"
            );
        }
        None => match speed {
            None => {
                let _ = writeln!(
                    t,
                    "  estimated duration: unknown until the first cells have run on this server (then on the progress line)"
                );
            }
            Some(speed) => {
                let est = estimate_duration(config, speed).as_secs_f64();
                let _ = writeln!(
                    t,
                    "  estimated duration: {}, under sustained load",
                    about_duration(est)
                );
            }
        },
    }
    t
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
    use codendum_core::target::Target;

    fn config() -> BenchConfig {
        BenchConfig::new(
            Target::new(None, None, None, None, None, Duration::from_secs(60)).unwrap(),
        )
    }

    #[test]
    fn idle_server_passes_and_busy_is_refused_with_exit_3() {
        let idle = ServerLoad {
            running: 0.0,
            waiting: 0.0,
        };
        assert_eq!(
            busy_guard(Some(idle), false, TimelineFlag::Run).unwrap(),
            GuardVerdict::Idle
        );
        for load in [
            ServerLoad {
                running: 2.0,
                waiting: 0.0,
            },
            ServerLoad {
                running: 0.0,
                waiting: 1.0,
            },
        ] {
            let e = busy_guard(Some(load), false, TimelineFlag::Run).unwrap_err();
            assert_eq!(e.exit_code(), 3);
            assert!(e.to_string().contains("--allow-busy"));
            assert!(matches!(
                busy_guard(Some(load), true, TimelineFlag::Run),
                Ok(GuardVerdict::Allowed(_))
            ));
        }
    }

    #[test]
    fn unreadable_metrics_goes_on_unchecked_and_says_what_to_do() {
        for timeline in [TimelineFlag::Run, TimelineFlag::Report] {
            let verdict = busy_guard(None, false, timeline).expect("not refused");
            assert!(!verdict.checked());
            let w = verdict.warning().unwrap_or_default().to_string();
            assert!(!w.contains('\n'), "one line: {w}");
            for advice in [
                "--metrics-url",
                "codendum metrics --watch 5 --json",
                "--server-timeline",
                "--allow-busy",
            ] {
                assert!(w.contains(advice), "{advice}: {w}");
            }
        }
        let w = busy_guard(None, true, TimelineFlag::Run).expect("not refused");
        assert!(
            matches!(&w, GuardVerdict::Unchecked(m) if m.contains("/metrics") && m.contains("--allow-busy")),
            "{w:?}"
        );
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
        let full = estimate_duration(&c, &speed);
        c.level_duration = Some(Duration::from_secs(10));
        assert!(estimate_duration(&c, &speed) < full);
        let plan = plan_text(&c, "m", Some(&speed));
        assert!(
            plan.contains("1, 8, 16, 24, 40") && plan.contains("N=40: 160"),
            "{plan}"
        );
        assert!(plan.contains("embedded twin"));
    }
}
