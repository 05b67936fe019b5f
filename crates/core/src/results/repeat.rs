//! The same workload run N times (new seeds, the same server): each
//! figure's mean, spread and coefficient of variation across the runs,
//! beside the figure pooled over every run and its 95 % interval. Plain
//! functions of the runs' summaries and records, for `--repeat`.
//!
//! - **Across runs**: the runs' values of a figure, their mean, standard
//!   deviation (n − 1) and coefficient of variation (sd / mean): how much
//!   the figure moves between identical runs.
//! - **Pooled**: a percentile over every run's values together (each run's
//!   latencies from the requests its own figures came from: a level's
//!   steady window, a class's successful calls or completed coding
//!   requests), its interval by order statistics with the dependence read
//!   within each run; a share over every run's requests (the error rate,
//!   the SLO share), by Wilson; a mean
//!   or a rate as the runs' mean, its interval by Student's t over the
//!   runs (each run one batch).

use serde::{Deserialize, Serialize};

use super::classroom_records::{CallRecord, TaskOutcome, TaskRecord};
use super::classroom_summary::ClassroomSummary;
use super::metrics::{IntervalMethod, CLASS_METRICS, LEVEL_METRICS};
use super::records::{LevelSummary, RequestRecord};
use crate::stats::dependence::percentile_interval_in_order;
use crate::stats::{batch_means, percentile, sorted_finite, wilson, Interval};

/// One figure over repeated runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repeated {
    /// The figure's key (`ttft_p95_s`, `output_tok_per_s`, `error_rate`).
    pub key: String,
    /// Each run's value, in run order (`None`: not measured in that run).
    pub values: Vec<Option<f64>>,
    /// The mean of the measured values.
    pub mean: f64,
    /// Their standard deviation (n − 1); `None` with one value.
    pub sd: Option<f64>,
    /// `sd / mean`; `None` without a spread or with a mean of 0.
    pub cv: Option<f64>,
    /// The smallest and largest value.
    pub min: f64,
    /// See [`Repeated::min`].
    pub max: f64,
    /// The figure pooled over every run (see the module documentation).
    pub pooled: Option<f64>,
    /// The pooled figure's 95 % interval.
    pub pooled_interval: Option<Interval>,
    /// Whether the coefficient of variation is above [`UNSTABLE_CV`]: the
    /// figure moves between identical runs more than a run can tell.
    #[serde(default)]
    pub unstable: bool,
}

/// The coefficient of variation across runs above which a figure is
/// flagged "unstable across runs" (a fraction: 0.10 = 10 %).
pub const UNSTABLE_CV: f64 = 0.10;

impl Repeated {
    /// Whether the figure moves between runs by more than [`UNSTABLE_CV`].
    pub fn is_unstable(&self) -> bool {
        self.unstable
    }
}

/// One run's level: its summary and its records (every request of the
/// level).
#[derive(Debug, Clone, Copy)]
pub struct RunLevel<'a> {
    /// The level's summary.
    pub level: &'a LevelSummary,
    /// The level's records.
    pub records: &'a [RequestRecord],
}

/// One run's class: its summary and records.
#[derive(Debug, Clone, Copy)]
pub struct RunClass<'a> {
    /// The class's summary.
    pub summary: &'a ClassroomSummary,
    /// Its model calls.
    pub calls: &'a [CallRecord],
    /// Its coding requests.
    pub tasks: &'a [TaskRecord],
}

/// The across-runs part of a figure from its runs' values; `None` when no
/// run measured it.
fn across(key: &str, values: Vec<Option<f64>>) -> Option<Repeated> {
    let v: Vec<f64> = values
        .iter()
        .flatten()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    let n = v.len();
    if n == 0 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    let sd = (n > 1)
        .then(|| (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
    let cv = sd.filter(|_| mean != 0.0).map(|s| s / mean.abs());
    Some(Repeated {
        key: key.to_string(),
        values,
        mean,
        sd,
        cv,
        unstable: cv.is_some_and(|c| c > UNSTABLE_CV),
        min: v.iter().copied().fold(f64::INFINITY, f64::min),
        max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        pooled: None,
        pooled_interval: None,
    })
}

/// A percentile pooled over runs: every run's values (each in time order)
/// one after another.
fn pooled_percentile(series: &[Vec<f64>], p: f64) -> (Option<f64>, Option<Interval>) {
    let all: Vec<f64> = series.iter().flatten().copied().collect();
    let sorted = sorted_finite(all.iter().copied());
    (
        percentile(&sorted, p),
        percentile_interval_in_order(&all, p),
    )
}

/// A mean or a rate pooled over runs: the runs' mean, by Student's t over
/// the runs; a figure no run measured below 0 (a rate, a time) keeps its
/// interval at 0 or above.
fn pooled_mean(r: &Repeated) -> (Option<f64>, Option<Interval>) {
    let v: Vec<f64> = r.values.iter().flatten().copied().collect();
    match batch_means(&v) {
        Some((mean, mut i)) => {
            if v.iter().all(|x| *x >= 0.0) {
                i.lo = i.lo.map(|lo| lo.max(0.0));
            }
            (Some(mean), Some(i))
        }
        None => (Some(r.mean), None),
    }
}

/// A figure each run gave once (a search's answer, a sweep level's rate):
/// its spread across the runs, pooled as the runs' mean with Student's t
/// over the runs; `None` when no run gave it.
pub fn repeat_values(key: &str, values: Vec<Option<f64>>) -> Option<Repeated> {
    let mut r = across(key, values)?;
    (r.pooled, r.pooled_interval) = pooled_mean(&r);
    Some(r)
}

/// The percentile a key names (`ttft_p95_s` → 95, `output_speed_p50_tok_per_s`
/// → 50).
fn percentile_of(key: &str) -> Option<f64> {
    let rest = key.split("_p").nth(1)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The requests a level's latencies came from, in start order: its steady
/// window's when its figures came from it, else all of them.
fn latency_records<'a>(run: &RunLevel<'a>) -> Vec<&'a RequestRecord> {
    let window = run.level.steady.filter(|w| w.used);
    let mut out: Vec<&RequestRecord> = run
        .records
        .iter()
        .filter(|r| r.ok && window.is_none_or(|w| w.holds(r)))
        .collect();
    out.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
    out
}

/// Every level figure with an interval, over the runs of one level (the
/// same shape and load in each run), in table order.
pub fn repeat_levels(runs: &[RunLevel<'_>]) -> Vec<Repeated> {
    LEVEL_METRICS
        .iter()
        .filter_map(|m| {
            let method = m.interval?;
            let mut r = across(
                m.key(),
                runs.iter().map(|run| m.number(run.level)).collect(),
            )?;
            let (pooled, interval) = match method {
                IntervalMethod::OrderStatistics => {
                    let p = percentile_of(m.key())?;
                    let series: Vec<Vec<f64>> = runs
                        .iter()
                        .map(|run| {
                            let recs = latency_records(run);
                            if m.key().starts_with("ttft") {
                                recs.iter().filter_map(|x| x.ttft_s).collect()
                            } else if m.key().starts_with("e2e") {
                                recs.iter().map(|x| x.e2e_s).collect()
                            } else {
                                run.records.iter().filter_map(|x| x.send_lag_s).collect()
                            }
                        })
                        .collect();
                    pooled_percentile(&series, p)
                }
                IntervalMethod::Wilson if m.key() == "error_rate" => {
                    let n: u64 = runs.iter().map(|run| run.records.len() as u64).sum();
                    let bad: u64 = runs
                        .iter()
                        .map(|run| run.records.iter().filter(|x| !x.ok).count() as u64)
                        .sum();
                    ((n > 0).then(|| bad as f64 / n as f64), wilson(bad, n))
                }
                IntervalMethod::Wilson if m.key() == "slo_share" => {
                    // Each run's requests meeting the SLO, from its share.
                    let (met, n) = runs
                        .iter()
                        .filter_map(|run| {
                            let share = run.level.slo_share?;
                            let n = run.level.requests;
                            Some(((share * n as f64).round() as u64, n))
                        })
                        .fold((0, 0), |(a, b), (m, n)| (a + m, b + n));
                    ((n > 0).then(|| met as f64 / n as f64), wilson(met, n))
                }
                _ => pooled_mean(&r),
            };
            r.pooled = pooled;
            r.pooled_interval = interval;
            Some(r)
        })
        .collect()
}

/// Every class figure with an interval, over the runs of one class, in
/// table order.
pub fn repeat_classes(runs: &[RunClass<'_>]) -> Vec<Repeated> {
    CLASS_METRICS
        .iter()
        .filter_map(|m| {
            let method = m.interval?;
            let mut r = across(
                m.key,
                runs.iter().map(|run| (m.read)(run.summary)).collect(),
            )?;
            let (pooled, interval) = match method {
                IntervalMethod::OrderStatistics => {
                    let p = percentile_of(m.key)?;
                    let series: Vec<Vec<f64>> =
                        runs.iter().map(|run| class_series(run, m.key)).collect();
                    pooled_percentile(&series, p)
                }
                _ => pooled_mean(&r),
            };
            r.pooled = pooled;
            r.pooled_interval = interval;
            Some(r)
        })
        .collect()
}

/// The values a class percentile is taken from, in start order.
fn class_series(run: &RunClass<'_>, key: &str) -> Vec<f64> {
    let mut calls: Vec<&CallRecord> = run.calls.iter().filter(|c| c.is_ok()).collect();
    calls.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
    let mut done: Vec<&TaskRecord> = run
        .tasks
        .iter()
        .filter(|t| t.outcome == TaskOutcome::Completed)
        .collect();
    done.sort_by(|a, b| a.start.total_cmp(&b.start));
    match key.split("_p").next().unwrap_or_default() {
        "ttft" => calls.iter().filter_map(|c| c.ttft_s).collect(),
        "request_time" => calls.iter().map(|c| c.e2e_s).collect(),
        "output_speed" => calls.iter().filter_map(|c| c.output_speed()).collect(),
        "prompt_tokens" => calls
            .iter()
            .filter_map(|c| c.prompt_tokens.map(|t| t as f64))
            .collect(),
        "coding_request" => done.iter().map(|t| t.end - t.start).collect(),
        "model_time" => done.iter().map(|t| t.model_time_s).collect(),
        _ => Vec::new(),
    }
}

/// Every figure of one thing the runs measured: a bench level (a shape at
/// a concurrency or a rate) or the class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatGroup {
    /// `short, N=8`, `short, 2.0 req/s` or `class`.
    pub label: String,
    /// The runs that measured it (their numbers, from 1), in the order of
    /// each figure's `values`.
    pub runs: Vec<u32>,
    /// Its figures, in the figure table's order.
    pub figures: Vec<Repeated>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::TokenSource;

    fn record(i: u64, ttft: f64, ok: bool) -> RequestRecord {
        RequestRecord {
            shape: "short".into(),
            concurrency: 0,
            index: i,
            started_at: i as f64,
            ttft_s: Some(ttft),
            e2e_s: 2.0 + ttft,
            tpot_s: Some(0.03),
            prompt_tokens: Some(100),
            output_tokens: 64,
            tokens_counted_by: TokenSource::Server,
            finish_reason: None,
            ok,
            error_kind: (!ok).then(|| "timeout".into()),
            error_message: None,
            status: Some(200),
            scheduled_at: None,
            send_lag_s: None,
        }
    }

    #[test]
    fn three_runs_give_their_spread_and_a_pooled_interval() {
        let runs: Vec<(LevelSummary, Vec<RequestRecord>)> = [0.0, 0.1, 0.2]
            .iter()
            .map(|shift| {
                let records: Vec<RequestRecord> = (0..100)
                    .map(|i| record(i, 0.5 + shift + (i % 10) as f64 * 0.01, i % 25 != 0))
                    .collect();
                let level = LevelSummary {
                    ttft_p95_s: Some(0.59 + shift),
                    output_tok_per_s: 100.0 + shift * 100.0,
                    error_rate: Some(0.04),
                    ..Default::default()
                };
                (level, records)
            })
            .collect();
        let view: Vec<RunLevel<'_>> = runs
            .iter()
            .map(|(level, records)| RunLevel { level, records })
            .collect();
        let out = repeat_levels(&view);
        let get = |k: &str| out.iter().find(|r| r.key == k).expect(k);
        let ttft = get("ttft_p95_s");
        assert!((ttft.mean - 0.69).abs() < 1e-9 && ttft.values.len() == 3);
        assert!((ttft.sd.expect("spread") - 0.1).abs() < 1e-9);
        assert!((ttft.cv.expect("cv") - 0.1 / 0.69).abs() < 1e-9);
        assert!(ttft.unstable, "a CV of 14 % is above 10 %");
        let pooled = ttft.pooled.expect("pooled");
        assert!(
            ttft.pooled_interval.is_some_and(|i| i.contains(pooled)),
            "{ttft:?}"
        );
        let out_rate = get("output_tok_per_s");
        assert_eq!(out_rate.pooled, Some(110.0));
        assert!(out_rate.pooled_interval.is_some_and(|i| i.contains(110.0)));
        let errors = get("error_rate");
        assert_eq!(errors.pooled, Some(12.0 / 300.0));
        assert!(errors.pooled_interval.is_some());
        assert!(repeat_levels(&[]).is_empty());
        assert_eq!(percentile_of("output_speed_p50_tok_per_s"), Some(50.0));
        assert_eq!(percentile_of("ttft_p95_s"), Some(95.0));
    }

    #[test]
    fn classes_pool_their_calls_and_coding_requests() {
        use crate::results::classroom_records::CallKind;
        let class = |shift: f64| {
            let calls: Vec<CallRecord> = (0..200)
                .map(|i| CallRecord {
                    user: i % 10,
                    session: format!("s{}", i % 10),
                    task: 0,
                    kind: CallKind::Agent,
                    started_at: i as f64,
                    prompt_tokens: Some(1000 + i as u64),
                    output_tokens: 100,
                    tokens_counted_by: TokenSource::Server,
                    ttft_s: Some(1.0 + shift + (i % 20) as f64 * 0.1),
                    e2e_s: 10.0,
                    wait_s: 10.0,
                    retries: 0,
                    retried_kinds: Vec::new(),
                    error_kind: None,
                    tool_calls: 0,
                })
                .collect();
            let tasks: Vec<TaskRecord> = (0..30)
                .map(|i| TaskRecord {
                    user: i % 10,
                    index: i,
                    start: i as f64 * 10.0,
                    end: i as f64 * 10.0 + 600.0 + shift * 100.0,
                    model_time_s: 300.0,
                    calls: 10,
                    output_tokens: 1000,
                    tool_calls: 5,
                    tool_errors: 0,
                    compactions: 0,
                    outcome: TaskOutcome::Completed,
                    error_kind: None,
                })
                .collect();
            let summary = ClassroomSummary::from_records(10, &calls, &tasks);
            (summary, calls, tasks)
        };
        let runs = [class(0.0), class(0.5)];
        let view: Vec<RunClass<'_>> = runs
            .iter()
            .map(|(summary, calls, tasks)| RunClass {
                summary,
                calls,
                tasks,
            })
            .collect();
        let out = repeat_classes(&view);
        let ttft = out.iter().find(|r| r.key == "ttft_p95_s").expect("ttft");
        assert_eq!(ttft.values.len(), 2);
        assert!((ttft.max - ttft.min - 0.5).abs() < 1e-9, "{ttft:?}");
        assert!(ttft
            .pooled
            .is_some_and(|p| p > ttft.min && p <= ttft.max + 1e-9));
        let coding = out
            .iter()
            .find(|r| r.key == "coding_request_p50_s")
            .expect("coding requests");
        assert!((coding.mean - 625.0).abs() < 1e-9, "{coding:?}");
        assert!(coding.pooled_interval.is_some());
    }
}
