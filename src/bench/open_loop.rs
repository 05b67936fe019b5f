//! Open-loop runs: rate levels (`--rate`), a sweep from one request at a
//! time to the closed-loop maximum (`--sweep N`, as GuideLLM's `sweep`), and
//! the search for the highest rate that meets an SLO (`--find-rate`, a
//! bisection over measured levels). Every level is an ordinary level of the
//! run's folder; the search's steps and answer go to `summary.json` as
//! `rate_search`.

use super::config::{default_rate_requests, Load, FIND_RATE_MAX_STEPS, FIND_RATE_PRECISION};
use super::driver::{run_level, run_rate_level, LevelContext};
use super::prompt::ShapePrompt;
use codendum_core::error::Error;
use codendum_core::results::slo::Slo;
use codendum_core::results::{
    JsonlFile, LevelEnd, LevelSummary, RateSearch, RateStep, RequestRecord,
};

/// Where levels' records and samples go, shared by every level of a run.
pub(crate) struct Outputs<'a> {
    pub requests: &'a mut JsonlFile<RequestRecord>,
    pub timeline: &'a mut Option<JsonlFile<serde_json::Value>>,
}

/// What an open-loop run of one shape measured.
pub(crate) struct ShapeRun {
    /// Its levels, in the order they ran.
    pub levels: Vec<LevelSummary>,
    /// The search, with `--find-rate`.
    pub search: Option<RateSearch>,
    /// Whether the run was interrupted.
    pub interrupted: bool,
}

/// The requests of a rate level: `--requests-per-level`, else a minute of
/// arrivals ([`default_rate_requests`]).
fn requests_at(ctx: &LevelContext<'_>, rate: f64) -> u64 {
    ctx.config
        .requests_per_level
        .unwrap_or_else(|| default_rate_requests(rate))
}

/// `n` rates spread evenly strictly between `low` and `high`.
pub fn spread(low: f64, high: f64, n: u32) -> Vec<f64> {
    let (low, high) = (low.min(high), low.max(high));
    (1..=n)
        .map(|i| low + (high - low) * f64::from(i) / f64::from(n + 1))
        .collect()
}

/// Runs one shape's open-loop levels.
pub(crate) async fn run_shape(
    ctx: &LevelContext<'_>,
    prompt: &ShapePrompt,
    out: &mut Outputs<'_>,
) -> Result<ShapeRun, Error> {
    let mut run = ShapeRun {
        levels: Vec::new(),
        search: None,
        interrupted: false,
    };
    if let Load::Rates {
        rates,
        closed_first,
        ..
    } = &ctx.config.load
    {
        if *closed_first {
            for &n in &ctx.plan.levels {
                if step_closed(ctx, prompt, n, out, &mut run).await?.is_none() {
                    return Ok(run);
                }
            }
        }
        for &rate in rates {
            if !step_rate(ctx, prompt, rate, out, &mut run).await? {
                break;
            }
        }
        return Ok(run);
    }
    // A sweep and a search start from the same two closed-loop levels: one
    // request at a time, and the largest concurrency.
    let Some(single) = step_closed(ctx, prompt, 1, out, &mut run).await? else {
        return Ok(run);
    };
    let top = ctx.config.top_concurrency();
    let Some(full) = step_closed(ctx, prompt, top, out, &mut run).await? else {
        return Ok(run);
    };
    let (low, high) = (
        single.requests_per_s,
        full.requests_per_s.max(single.requests_per_s),
    );
    if low <= 0.0 {
        return Err(Error::Failed(
            "no request succeeded one at a time: no rate to sweep or search from".into(),
        ));
    }
    if let Load::Sweep {
        rates: n,
        stop_when_saturated,
        ..
    } = ctx.config.load
    {
        for rate in spread(low, high, n) {
            if !step_rate(ctx, prompt, rate, out, &mut run).await? {
                break;
            }
            let saturated = run
                .levels
                .last()
                .and_then(|l| l.rate.as_ref())
                .is_some_and(|r| r.saturated);
            if saturated && stop_when_saturated {
                break;
            }
        }
        return Ok(run);
    }
    let searching = matches!(ctx.config.load, Load::FindRate { .. });
    if let Some(slo) = ctx.config.slo.as_ref().filter(|_| searching) {
        run.search = Some(find_rate(ctx, prompt, slo, (low, high), out, &mut run).await?);
    }
    Ok(run)
}

/// Runs a closed-loop level; `None` when the run was interrupted.
async fn step_closed(
    ctx: &LevelContext<'_>,
    prompt: &ShapePrompt,
    n: u32,
    out: &mut Outputs<'_>,
    run: &mut ShapeRun,
) -> Result<Option<LevelSummary>, Error> {
    if *ctx.stop.borrow() {
        run.interrupted = true;
        return Ok(None);
    }
    let level = run_level(
        ctx,
        prompt,
        n,
        ctx.config.requests_for(n),
        out.requests,
        out.timeline.as_mut(),
    )
    .await?;
    super::drain_timeline(ctx.metrics, out.timeline.as_mut())?;
    Ok(keep(level, run))
}

/// Runs a rate level; `false` when the run was interrupted.
async fn step_rate(
    ctx: &LevelContext<'_>,
    prompt: &ShapePrompt,
    rate: f64,
    out: &mut Outputs<'_>,
    run: &mut ShapeRun,
) -> Result<bool, Error> {
    if *ctx.stop.borrow() {
        run.interrupted = true;
        return Ok(false);
    }
    let level = run_rate_level(
        ctx,
        prompt,
        rate,
        requests_at(ctx, rate),
        out.requests,
        out.timeline.as_mut(),
    )
    .await?;
    super::drain_timeline(ctx.metrics, out.timeline.as_mut())?;
    Ok(keep(level, run).is_some())
}

/// Keeps a finished level; `None` (and the run marked interrupted) when it
/// ended by an interruption.
fn keep(level: LevelSummary, run: &mut ShapeRun) -> Option<LevelSummary> {
    let interrupted = level.ended_by == LevelEnd::Interrupted;
    run.levels.push(level.clone());
    if interrupted {
        run.interrupted = true;
        None
    } else {
        Some(level)
    }
}

/// Whether a level meets the SLO: its SLO share at least the SLO's share.
fn meets(level: &LevelSummary, slo: &Slo) -> bool {
    level.slo_share.is_some_and(|s| s >= slo.share)
}

/// The highest rate whose level meets `slo`, from the bracket `[low,
/// high]` (requests per second; `low` one request at a time, `high` the
/// closed-loop maximum): each step measures the middle of the bracket and
/// keeps the half the answer is in, until the bracket is within
/// [`FIND_RATE_PRECISION`] of its top or [`FIND_RATE_MAX_STEPS`] levels were
/// measured in the bisection.
async fn find_rate(
    ctx: &LevelContext<'_>,
    prompt: &ShapePrompt,
    slo: &Slo,
    (low, high): (f64, f64),
    out: &mut Outputs<'_>,
    run: &mut ShapeRun,
) -> Result<RateSearch, Error> {
    let started = ctx.clock.now_secs();
    let mut steps = Vec::new();
    let measure = |steps: &mut Vec<RateStep>, rate: f64, level: &LevelSummary| {
        let step = RateStep {
            rate_per_s: rate,
            slo_share: level.slo_share,
            meets: meets(level, slo),
            outcome: Some(slo.judge(level)),
            slo_share_interval: level.intervals.get("slo_share").copied(),
        };
        steps.push(step);
        step.meets
    };
    let mut search = RateSearch {
        slo: *slo,
        shape: prompt.shape.name().to_string(),
        steps: Vec::new(),
        highest_rate_per_s: None,
        levels: 0,
        wall_s: 0.0,
        bracket: (low, high),
    };
    // The bracket's ends first. The bottom (one request at a time's rate)
    // may miss already: then no rate meets the SLO. The top (the
    // closed-loop maximum) may meet it: an open loop is not capped by the
    // seats, so the top doubles until a level misses (three times at most).
    let (mut lo, mut hi) = (low, high);
    if !step_rate(ctx, prompt, low, out, run).await? {
        return Ok(finish(search, steps, None, ctx.clock.now_secs() - started));
    }
    if !measure(&mut steps, low, run.levels.last().expect("a level")) {
        return Ok(finish(search, steps, None, ctx.clock.now_secs() - started));
    }
    let mut top_meets = true;
    for _ in 0..4 {
        if !step_rate(ctx, prompt, hi, out, run).await? {
            return Ok(finish(
                search,
                steps,
                Some(lo),
                ctx.clock.now_secs() - started,
            ));
        }
        top_meets = measure(&mut steps, hi, run.levels.last().expect("a level"));
        if !top_meets {
            break;
        }
        lo = hi;
        hi *= 2.0;
    }
    if top_meets {
        search.bracket = (lo, hi);
        return Ok(finish(
            search,
            steps,
            Some(lo),
            ctx.clock.now_secs() - started,
        ));
    }
    let mut bisections = 0;
    while (hi - lo) / hi > FIND_RATE_PRECISION && bisections < FIND_RATE_MAX_STEPS {
        bisections += 1;
        let mid = 0.5 * (lo + hi);
        if !step_rate(ctx, prompt, mid, out, run).await? {
            break;
        }
        if measure(&mut steps, mid, run.levels.last().expect("a level")) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    search.bracket = (lo, hi);
    Ok(finish(
        search,
        steps,
        Some(lo),
        ctx.clock.now_secs() - started,
    ))
}

/// The search with its steps, its answer and how long it took (seconds of
/// the run's clock).
fn finish(
    mut search: RateSearch,
    steps: Vec<RateStep>,
    highest: Option<f64>,
    took_s: f64,
) -> RateSearch {
    search.levels = steps.len() as u32;
    search.steps = steps;
    search.highest_rate_per_s = highest;
    search.wall_s = took_s;
    search
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_spreads_its_rates_strictly_between_the_ends() {
        assert_eq!(spread(1.0, 5.0, 3), [2.0, 3.0, 4.0]);
        assert_eq!(spread(5.0, 1.0, 1), [3.0]);
    }
}
