//! A bench repetition's levels matched across its runs: each closed-loop
//! level by its shape and concurrency, each rate by its place among the
//! shape's rates (a `--rate` level keeps its rate; a sweep's k-th rate,
//! which differs a little from run to run, is pooled with the other runs'
//! k-th), and each `--find-rate` search by its answer across the runs.

use super::records::trim_rate;
use super::repeat::{repeat_levels, repeat_values, RepeatGroup, RunLevel};
use super::{LevelSummary, RateSearch, RequestRecord};

/// The records of level `l` among a run's records.
fn level_records(l: &LevelSummary, records: &[RequestRecord]) -> Vec<RequestRecord> {
    let end = l.started_at_s + l.wall_time_s;
    records
        .iter()
        .filter(|r| {
            r.shape == l.shape
                && r.concurrency == l.concurrency
                && r.started_at >= l.started_at_s - 1e-9
                && r.started_at <= end + 1e-9
        })
        .cloned()
        .collect()
}

/// One bench run of a repetition: its number, levels, searches and records.
#[derive(Debug, Clone, Copy)]
pub struct RunBench<'a> {
    /// The run's number, from 1.
    pub index: u32,
    /// Its levels, in run order.
    pub levels: &'a [LevelSummary],
    /// Its `--find-rate` searches, one per shape.
    pub searches: &'a [RateSearch],
    /// Every request of the run.
    pub records: &'a [RequestRecord],
}

/// Where a run's level sits among the levels of every run.
#[derive(Debug, Clone, PartialEq)]
enum Slot {
    /// A closed-loop level: its shape and concurrency.
    Closed(String, u32),
    /// The shape's `k`-th rate level (from 1) in a run without a search
    /// for the shape: a `--rate` level, or a sweep's `k`-th rate.
    Rate(String, usize),
}

/// A run's levels by slot. The rate levels of a `--find-rate` search are
/// left out: each run's bisection steers by what it measured, so its rates
/// are not the same workload from run to run; the search's answer is
/// compared across runs instead.
fn slots<'a>(run: &RunBench<'a>) -> Vec<(Slot, &'a LevelSummary)> {
    let mut kth: Vec<(String, usize)> = Vec::new();
    let mut out = Vec::new();
    for l in run.levels {
        let slot = match &l.rate {
            None => Slot::Closed(l.shape.clone(), l.concurrency),
            Some(_) if run.searches.iter().any(|s| s.shape == l.shape) => continue,
            Some(_) => {
                let k = match kth.iter_mut().find(|(s, _)| *s == l.shape) {
                    Some((_, k)) => {
                        *k += 1;
                        *k
                    }
                    None => {
                        kth.push((l.shape.clone(), 1));
                        1
                    }
                };
                Slot::Rate(l.shape.clone(), k)
            }
        };
        out.push((slot, l));
    }
    out
}

/// A slot's label: `short, N=8`; `short, 2 req/s` when every run measured
/// the same rate there (`--rate`); `short, sweep rate 2 (1.1–1.3 req/s)`
/// when the runs' rates differ (a sweep spreads its rates between what
/// each run measured one at a time and at full concurrency, so its `k`-th
/// rate is the same point of the sweep, a slightly different rate each
/// run).
fn slot_label(slot: &Slot, rates: &[f64]) -> String {
    match slot {
        Slot::Closed(shape, n) => format!("{shape}, N={n}"),
        Slot::Rate(shape, k) => {
            let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = rates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if hi - lo <= 1e-9 * hi.abs().max(1.0) {
                format!("{shape}, {lo} req/s")
            } else {
                format!(
                    "{shape}, sweep rate {k} ({}–{} req/s)",
                    trim_rate(lo),
                    trim_rate(hi)
                )
            }
        }
    }
}

/// The bench groups of a repetition, in the order first met: one per
/// level slot (the runs' levels of one shape and load pooled together;
/// a sweep's rates pooled by their place in the sweep, with the rate
/// itself among the figures, as it differs between runs), then one per
/// searched shape with each run's `--find-rate` answer
/// (`highest_rate_per_s`): its spread across the runs.
pub fn bench_groups(runs: &[RunBench<'_>]) -> Vec<RepeatGroup> {
    let by_run: Vec<Vec<(Slot, &LevelSummary)>> = runs.iter().map(slots).collect();
    let mut order: Vec<Slot> = Vec::new();
    for (slot, _) in by_run.iter().flatten() {
        if !order.contains(slot) {
            order.push(slot.clone());
        }
    }
    let mut groups = Vec::new();
    for slot in order {
        let mut idx = Vec::new();
        let mut data = Vec::new();
        for (run, levels) in runs.iter().zip(&by_run) {
            if let Some((_, level)) = levels.iter().find(|(s, _)| *s == slot) {
                idx.push(run.index);
                data.push((*level, level_records(level, run.records)));
            }
        }
        let rates: Vec<f64> = data
            .iter()
            .filter_map(|(l, _)| l.rate.as_ref().map(|r| r.rate_per_s))
            .collect();
        let label = slot_label(&slot, &rates);
        let view: Vec<RunLevel<'_>> = data
            .iter()
            .map(|(level, records)| RunLevel { level, records })
            .collect();
        let mut figures = Vec::new();
        if label.contains(", sweep rate ") {
            figures.extend(repeat_values(
                "rate_per_s",
                rates.iter().copied().map(Some).collect(),
            ));
        }
        figures.extend(repeat_levels(&view));
        groups.push(RepeatGroup {
            label,
            runs: idx,
            figures,
        });
    }
    let mut shapes: Vec<&str> = Vec::new();
    for s in runs.iter().flat_map(|r| r.searches) {
        if !shapes.contains(&s.shape.as_str()) {
            shapes.push(&s.shape);
        }
    }
    for shape in shapes {
        let searched: Vec<(u32, &RateSearch)> = runs
            .iter()
            .filter_map(|r| {
                let s = r.searches.iter().find(|s| s.shape == shape)?;
                Some((r.index, s))
            })
            .collect();
        let answers = searched.iter().map(|(_, s)| s.highest_rate_per_s).collect();
        groups.push(RepeatGroup {
            label: format!("{shape}, --find-rate"),
            runs: searched.iter().map(|(i, _)| *i).collect(),
            figures: repeat_values(FIND_RATE_ANSWER, answers)
                .into_iter()
                .collect(),
        });
    }
    groups
}

/// The key of a `--find-rate` answer among a repetition's figures,
/// requests per second.
pub const FIND_RATE_ANSWER: &str = "highest_rate_per_s";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::slo::Slo;

    fn level(shape: &str, n: u32, rate: Option<f64>, out: f64) -> LevelSummary {
        LevelSummary {
            shape: shape.into(),
            concurrency: n,
            output_tok_per_s: out,
            rate: rate.map(|r| crate::results::RateFigures {
                rate_per_s: r,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn search(answer: Option<f64>) -> RateSearch {
        RateSearch {
            slo: Slo {
                ttft_s: Some(2.0),
                tpot_s: None,
                e2e_s: None,
                share: 0.9,
            },
            shape: "short".into(),
            steps: Vec::new(),
            highest_rate_per_s: answer,
            levels: 4,
            wall_s: 100.0,
            bracket: (answer.unwrap_or(0.5), 3.0),
        }
    }

    /// Runs numbered from 1, each with its levels and searches.
    fn runs<'a>(each: &[(&'a [LevelSummary], &'a [RateSearch])]) -> Vec<RunBench<'a>> {
        each.iter()
            .zip(1..)
            .map(|(&(levels, searches), index)| RunBench {
                index,
                levels,
                searches,
                records: &[],
            })
            .collect()
    }

    fn group<'a>(groups: &'a [RepeatGroup], label: &str) -> &'a RepeatGroup {
        groups
            .iter()
            .find(|g| g.label == label)
            .unwrap_or_else(|| panic!("{label} in {groups:#?}"))
    }

    #[test]
    fn a_sweeps_rates_pool_by_their_place_and_fixed_rates_by_their_rate() {
        // Two sweeps: each run's rates sit at the same places between its
        // own ends, so they differ a little between runs; the second run
        // stopped after its second rate.
        let a = [
            level("short", 1, None, 10.0),
            level("short", 8, None, 50.0),
            level("short", 0, Some(1.1), 20.0),
            level("short", 0, Some(2.2), 30.0),
            level("short", 0, Some(3.3), 40.0),
        ];
        let b = [
            level("short", 1, None, 12.0),
            level("short", 8, None, 54.0),
            level("short", 0, Some(1.2), 22.0),
            level("short", 0, Some(2.4), 32.0),
        ];
        let groups = bench_groups(&runs(&[(&a[..], &[][..]), (&b[..], &[][..])]));
        let labels: Vec<&str> = groups.iter().map(|g| g.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "short, N=1",
                "short, N=8",
                "short, sweep rate 1 (1.1–1.2 req/s)",
                "short, sweep rate 2 (2.2–2.4 req/s)",
                "short, 3.3 req/s",
            ]
        );
        let second = group(&groups, "short, sweep rate 2 (2.2–2.4 req/s)");
        assert_eq!(second.runs, [1, 2]);
        let rate = &second.figures[0];
        assert_eq!(rate.key, "rate_per_s");
        assert_eq!(rate.values, [Some(2.2), Some(2.4)]);
        let out = second
            .figures
            .iter()
            .find(|f| f.key == "output_tok_per_s")
            .expect("output");
        assert_eq!(out.values, [Some(30.0), Some(32.0)]);
        assert_eq!(out.pooled, Some(31.0));
        // Fixed rates (`--rate`) stay named by their rate, without a rate
        // figure: it does not move.
        let fixed = [level("short", 0, Some(2.0), 30.0)];
        let groups = bench_groups(&runs(&[(&fixed[..], &[][..]), (&fixed[..], &[][..])]));
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].label, "short, 2 req/s");
        assert!(groups[0].figures.iter().all(|f| f.key != "rate_per_s"));
    }

    #[test]
    fn a_searchs_answer_is_spread_across_runs_and_its_steps_are_not_pooled() {
        let a = [
            level("short", 1, None, 10.0),
            level("short", 8, None, 50.0),
            level("short", 0, Some(1.5), 20.0),
            level("short", 0, Some(0.9), 20.0),
        ];
        let b = [
            level("short", 1, None, 11.0),
            level("short", 8, None, 52.0),
            level("short", 0, Some(1.6), 20.0),
        ];
        let (sa, sb, sc) = ([search(Some(1.2))], [search(Some(1.5))], [search(None)]);
        let groups = bench_groups(&runs(&[
            (&a[..], &sa[..]),
            (&b[..], &sb[..]),
            (&b[..], &sc[..]),
        ]));
        let labels: Vec<&str> = groups.iter().map(|g| g.label.as_str()).collect();
        assert_eq!(labels, ["short, N=1", "short, N=8", "short, --find-rate"]);
        let answer = &group(&groups, "short, --find-rate").figures[0];
        assert_eq!(answer.key, FIND_RATE_ANSWER);
        assert_eq!(answer.values, [Some(1.2), Some(1.5), None]);
        assert!((answer.mean - 1.35).abs() < 1e-12);
        let sd = answer.sd.expect("two answers");
        assert!((sd - 0.15 * 2f64.sqrt()).abs() < 1e-12, "{answer:?}");
        assert!(answer.pooled_interval.is_some_and(|i| i.contains(1.35)));
        assert_eq!((answer.min, answer.max), (1.2, 1.5));
    }
}
