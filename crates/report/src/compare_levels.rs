//! The levels of bench runs lined up for a comparison: closed-loop levels
//! by shape and concurrency, rate levels paired with the baseline's (see
//! [`super::compare_pairs`]), and each row's figures, a repeated run's
//! pooled over its runs.

use super::compare::{ComparedFigure, ComparisonSection, RepeatColumn};
use super::compare_pairs::{pair_rates, RatePairing, RATE_TOLERANCE};
use super::format::upper_first;
use super::model::BenchReport;
use codendum_core::results::metrics::{level_metrics_in, View};
use codendum_core::results::records::trim_rate;
use codendum_core::results::LevelSummary;

/// One row of the comparison: a level of each run (`None` where a run has
/// none there).
struct LevelRow<'a> {
    /// The prompt shape.
    shape: String,
    /// Each run's level, in run order.
    cells: Vec<Option<&'a LevelSummary>>,
    /// Per run, how its rate level was paired with the baseline's (`None`
    /// for the baseline, a closed-loop level or a level without partner).
    paired: Vec<Option<RatePairing>>,
    /// A sweep pairing's place: the `k`-th of `n` rates.
    place: Option<(usize, usize)>,
}

/// Whether `r`'s rate levels of `shape` are a sweep's: the run measured
/// the shape closed-loop too (a sweep's two ends) and did not search it
/// (`--find-rate` steers its rates by what it measured).
fn is_sweep(r: &BenchReport, shape: &str) -> bool {
    let of = |rate: bool| {
        r.levels
            .iter()
            .any(|l| l.shape == shape && l.rate.is_some() == rate)
    };
    of(true) && of(false) && !r.searched_shapes.iter().any(|s| s == shape)
}

/// The rate a column shows for a level: a repeated run's is its runs' mean
/// rate at that place (a sweep's rates move from run to run), else the
/// level's own.
fn side_rate(level: &LevelSummary, pooled: Option<&RepeatColumn<'_>>) -> Option<f64> {
    let own = level.rate.as_ref()?.rate_per_s;
    let mean = pooled.and_then(|p| {
        let run = p.summary.first_finished()?.index;
        let group = p.summary.group_of_level(run, level)?;
        group
            .figures
            .iter()
            .find(|f| f.key == "rate_per_s")
            .and_then(|f| f.pooled)
    });
    Some(mean.unwrap_or(own))
}

/// Shapes in the order first met across the runs.
pub(crate) fn shapes_of(runs: &[(String, &BenchReport)]) -> Vec<String> {
    let mut shapes: Vec<String> = Vec::new();
    for (_, r) in runs {
        for s in r.shapes() {
            if !shapes.contains(&s) {
                shapes.push(s);
            }
        }
    }
    shapes
}

/// The rows: every closed-loop (shape, concurrency) in the order first met,
/// then each shape's rate levels paired with the baseline's; and one
/// sentence per shape and later run saying how its rates were paired.
fn rows<'a>(
    runs: &[(String, &'a BenchReport)],
    labels: &[String],
    pooled: &[Option<&RepeatColumn<'_>>],
) -> (Vec<LevelRow<'a>>, Vec<String>) {
    let n = runs.len();
    let mut out: Vec<LevelRow<'a>> = Vec::new();
    let mut closed: Vec<(String, u32)> = Vec::new();
    for (_, r) in runs {
        for l in r.levels.iter().filter(|l| l.rate.is_none()) {
            let key = (l.shape.clone(), l.concurrency);
            if !closed.contains(&key) {
                closed.push(key);
            }
        }
    }
    for (shape, c) in closed {
        out.push(LevelRow {
            cells: runs
                .iter()
                .map(|(_, r)| {
                    r.levels
                        .iter()
                        .find(|l| l.rate.is_none() && l.shape == shape && l.concurrency == c)
                })
                .collect(),
            shape,
            paired: vec![None; n],
            place: None,
        });
    }
    let mut sentences = Vec::new();
    for shape in shapes_of(runs) {
        let rate_levels = |i: usize| -> Vec<(&'a LevelSummary, f64)> {
            runs[i]
                .1
                .levels
                .iter()
                .filter(|l| l.shape == shape)
                .filter_map(|l| Some((l, side_rate(l, pooled[i])?)))
                .collect()
        };
        let base = rate_levels(0);
        // Rows keyed by the rate they are sorted by: the baseline's, else
        // the first run's that has the level.
        let mut shape_rows: Vec<(f64, LevelRow<'a>)> = base
            .iter()
            .map(|(l, rate)| {
                let mut cells = vec![None; n];
                cells[0] = Some(*l);
                (
                    *rate,
                    LevelRow {
                        shape: shape.clone(),
                        cells,
                        paired: vec![None; n],
                        place: None,
                    },
                )
            })
            .collect();
        for j in 1..n {
            let other = rate_levels(j);
            if base.is_empty() && other.is_empty() {
                continue;
            }
            let sweeps = is_sweep(runs[0].1, &shape) && is_sweep(runs[j].1, &shape);
            let rates = |v: &[(&LevelSummary, f64)]| v.iter().map(|(_, r)| *r).collect::<Vec<_>>();
            let pairs = pair_rates(&rates(&base), &rates(&other), sweeps);
            let mut alone = 0;
            for (i, k) in pairs.pairs {
                match (i, k) {
                    (Some(i), Some(k)) => {
                        let row = &mut shape_rows[i].1;
                        row.cells[j] = Some(other[k].0);
                        row.paired[j] = Some(pairs.pairing);
                        if pairs.pairing == RatePairing::ByPlace {
                            row.place = Some((i + 1, base.len()));
                        }
                    }
                    (None, Some(k)) => {
                        alone += 1;
                        let mut cells = vec![None; n];
                        cells[j] = Some(other[k].0);
                        shape_rows.push((
                            other[k].1,
                            LevelRow {
                                shape: shape.clone(),
                                cells,
                                paired: vec![None; n],
                                place: None,
                            },
                        ));
                    }
                    _ => {}
                }
            }
            let count = |v: &[(&LevelSummary, f64)]| match v.len() {
                1 => "1 rate".to_string(),
                k => format!("{k} rates"),
            };
            let what = |i: usize, v: &[(&LevelSummary, f64)]| {
                if is_sweep(runs[i].1, &shape) {
                    format!("{}: a sweep of {}", labels[i], count(v))
                } else {
                    format!("{}: {}", labels[i], count(v))
                }
            };
            let mut sentence = format!(
                "{} prompts: the rate levels of {} are paired with {}'s {} ({}; {}).",
                upper_first(&shape),
                labels[j],
                labels[0],
                pairs.pairing.words(),
                what(0, &base),
                what(j, &other),
            );
            let unpaired = base.len() + alone
                - shape_rows
                    .iter()
                    .filter(|(_, r)| r.cells[0].is_some() && r.cells[j].is_some())
                    .count();
            if unpaired > 0 {
                sentence.push_str(&format!(
                    " {unpaired} without a partner {} listed on {}.",
                    if unpaired == 1 { "is" } else { "are" },
                    if unpaired == 1 {
                        "its own"
                    } else {
                        "their own"
                    },
                ));
            }
            sentences.push(sentence);
        }
        shape_rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        out.extend(shape_rows.into_iter().map(|(_, r)| r));
    }
    (out, sentences)
}

/// A row's heading: `Short prompts, 8 concurrent`; `Short prompts,
/// 2 requests/s` when every run measured the same rate; else each run's
/// rate and how they were paired (`Short prompts, sweep rate 2 of 3: rate
/// 2.31 req/s vs 2.40 req/s`).
fn title(row: &LevelRow<'_>, labels: &[String], pooled: &[Option<&RepeatColumn<'_>>]) -> String {
    let shape = upper_first(&row.shape);
    let present: Vec<&LevelSummary> = row.cells.iter().flatten().copied().collect();
    let Some(first) = present.first() else {
        return format!("{shape} prompts");
    };
    if first.rate.is_none() {
        return format!("{shape} prompts, {} concurrent", first.concurrency);
    }
    let rates: Vec<Option<f64>> = row
        .cells
        .iter()
        .zip(pooled)
        .map(|(c, p)| c.and_then(|l| side_rate(l, *p)))
        .collect();
    let all_same = rates.iter().all(|r| {
        r.zip(rates[0])
            .is_some_and(|(a, b)| (a - b).abs() <= 1e-9 * b.abs().max(1.0))
    });
    if all_same {
        return format!(
            "{shape} prompts, {} requests/s",
            trim_rate(rates[0].unwrap_or_default())
        );
    }
    let each = rates
        .iter()
        .map(|r| r.map_or_else(|| "–".to_string(), |r| format!("{} req/s", trim_rate(r))))
        .collect::<Vec<_>>()
        .join(" vs ");
    let word = |p: RatePairing| match p {
        RatePairing::ByPlace => "by place",
        RatePairing::Nearest => "by nearest rate",
    };
    let used: Vec<(usize, RatePairing)> = row
        .paired
        .iter()
        .enumerate()
        .filter_map(|(j, p)| Some((j, (*p)?)))
        .collect();
    let how = match used.as_slice() {
        [] => String::new(),
        [(_, first), ..] if used.iter().all(|(_, p)| p == first) => {
            format!(" (paired {})", word(*first))
        }
        _ => format!(
            " (paired: {})",
            used.iter()
                .map(|(j, p)| format!("{} {}", labels[*j], word(*p)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    match row.place {
        Some((k, n)) => format!("{shape} prompts, sweep rate {k} of {n}: rate {each}{how}"),
        None => format!("{shape} prompts, rate {each}{how}"),
    }
}

/// For a rate row some run has no level in: a sentence saying which runs
/// have no partner for it.
fn partner_note(
    row: &LevelRow<'_>,
    labels: &[String],
    pooled: &[Option<&RepeatColumn<'_>>],
) -> Option<String> {
    // Closed-loop levels are keyed by concurrency: nothing to pair.
    row.cells.iter().flatten().next()?.rate.as_ref()?;
    let missing: Vec<&str> = row
        .cells
        .iter()
        .zip(labels)
        .filter(|(c, _)| c.is_none())
        .map(|(_, l)| l.as_str())
        .collect();
    if missing.is_empty() {
        return None;
    }
    let tolerance = (RATE_TOLERANCE * 100.0).round();
    match row.cells[0] {
        Some(base) => Some(format!(
            "No partner in {}: no rate level there within {tolerance} % of {}'s {} req/s.",
            missing.join(", "),
            labels[0],
            trim_rate(side_rate(base, pooled[0]).unwrap_or_default())
        )),
        None => {
            let (j, level) = row
                .cells
                .iter()
                .enumerate()
                .find_map(|(j, c)| Some((j, (*c)?)))?;
            Some(format!(
                "Only in {}: {} has no rate level within {tolerance} % of its {} req/s, so it \
                 stands alone.",
                labels[j],
                labels[0],
                trim_rate(side_rate(level, pooled[j]).unwrap_or_default())
            ))
        }
    }
}

/// The sections of a bench comparison and the pairing sentences.
pub(crate) fn level_sections(
    runs: &[(String, &BenchReport)],
    labels: &[String],
    pooled: &[Option<&RepeatColumn<'_>>],
) -> (Vec<ComparisonSection>, Vec<String>) {
    let (rows, pairings) = rows(runs, labels, pooled);
    let sections = rows
        .iter()
        .map(|row| ComparisonSection {
            title: title(row, labels, pooled),
            figures: figures(&row.cells, pooled),
            note: partner_note(row, labels, pooled),
        })
        .collect();
    (sections, pairings)
}

/// One row's figures across the runs; a pooled column's from its
/// repetition: the pooled value and interval, or for a count the sum over
/// the runs and for a peak the largest.
fn figures(
    cells: &[Option<&LevelSummary>],
    pooled: &[Option<&RepeatColumn<'_>>],
) -> Vec<ComparedFigure> {
    let present: Vec<&LevelSummary> = cells.iter().flatten().copied().collect();
    level_metrics_in(View::Compare)
        .filter(|m| m.shown_for(&present))
        .map(|m| {
            let combine = super::compare::Combine::of(m.key(), m.unit, m.interval.is_some());
            let mut combined = Vec::new();
            let (values, intervals) = cells
                .iter()
                .zip(pooled)
                .map(|(cell, rep)| match (cell, rep) {
                    (Some(l), Some(rep)) => match combine {
                        Some(how) => {
                            let each = rep.runs_levels_like(l, |x| m.number(x));
                            combined.push(each.len());
                            (how.apply(&each), None)
                        }
                        None => {
                            combined.push(1);
                            rep.pooled_level_figure(l, m.key())
                        }
                    },
                    (Some(l), None) => {
                        combined.push(1);
                        (m.number(l), m.interval_of(l))
                    }
                    (None, _) => {
                        combined.push(0);
                        (None, None)
                    }
                })
                .unzip();
            ComparedFigure::new(m.label, m.unit, m.better, values)
                .shown_as(m.shown)
                .with_intervals(intervals)
                .combining(combine, pooled.iter().any(Option::is_some), combined)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Comparison;
    use codendum_core::results::repeat_folder::{RepeatRun, RepeatSummary};
    use codendum_core::results::repeat_levels::{bench_groups, RunBench};
    use codendum_core::results::{ErrorGroup, RateFigures, Verdict};

    /// A short-prompt level: closed-loop at `n`, or at `rate` requests/s,
    /// with `errors` timeouts, `preemptions` and a peak KV usage.
    fn level(n: u32, rate: Option<f64>, errors: u64, preemptions: f64, kv: f64) -> LevelSummary {
        let mut l = LevelSummary {
            shape: "short".into(),
            concurrency: n,
            output_tok_per_s: 40.0,
            preemptions: Some(preemptions),
            peak_kv_usage: Some(kv),
            rate: rate.map(|r| RateFigures {
                rate_per_s: r,
                arrival: "poisson".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        if errors > 0 {
            l.errors.insert(
                "timeout".into(),
                ErrorGroup {
                    count: errors,
                    sample_message: "timed out".into(),
                },
            );
        }
        l
    }

    /// A repetition of two sweeps (c1, c8, two rates each).
    fn repetition(runs: &[Vec<LevelSummary>]) -> RepeatSummary {
        let view: Vec<RunBench<'_>> = runs
            .iter()
            .zip(1..)
            .map(|(levels, index)| RunBench {
                index,
                levels,
                searches: &[],
                records: &[],
            })
            .collect();
        let now = chrono::Utc::now();
        RepeatSummary {
            schema_version: 1,
            kind: "repeat".into(),
            of: "bench".into(),
            started_utc: now,
            finished_utc: now,
            runs_asked: runs.len() as u32,
            stopped_early: false,
            stop_reason: None,
            runs: (1..=runs.len() as u32)
                .map(|index| RepeatRun {
                    index,
                    folder: format!("run-{index}"),
                    seed: u64::from(index),
                    interrupted: false,
                    verdict: None,
                })
                .collect(),
            groups: bench_groups(&view),
            unstable_cv: 0.1,
            judgements: Vec::new(),
            verdict: Verdict::pooled(&[], 0.05),
        }
    }

    fn sweep(rates: [f64; 2], errors: u64, preemptions: f64, kv: f64) -> Vec<LevelSummary> {
        vec![
            level(1, None, 0, 0.0, 0.1),
            level(8, None, 0, 0.0, 0.2),
            level(0, Some(rates[0]), errors, preemptions, kv),
            level(0, Some(rates[1]), errors + 1, preemptions + 1.0, kv),
        ]
    }

    #[test]
    fn a_repeated_sweeps_counts_are_summed_and_its_peaks_the_largest() {
        let runs = [
            sweep([1.0, 2.0], 2, 3.0, 0.4),
            sweep([1.1, 2.1], 1, 5.0, 0.7),
        ];
        let summary = repetition(&runs);
        let column = RepeatColumn {
            summary: &summary,
            levels: vec![(1, runs[0].clone()), (2, runs[1].clone())],
            classes: Vec::new(),
        };
        let (a, b) = (
            BenchReport {
                levels: runs[0].clone(),
                ..Default::default()
            },
            BenchReport {
                levels: sweep([1.08, 2.2], 4, 1.0, 0.5),
                ..Default::default()
            },
        );
        // The repetition against another single sweep and against itself.
        let c = Comparison::of_bench_pooled(
            &[("rep".into(), &a), ("one".into(), &b), ("rep2".into(), &a)],
            &[Some(&column), None, Some(&column)],
        )
        .expect("three");
        let section = &c.sections[2];
        assert_eq!(
            section.title,
            "Short prompts, sweep rate 1 of 2: rate 1.05 req/s vs 1.08 req/s vs 1.05 req/s \
             (paired by place)",
            "a repeated run shows its runs' mean rate"
        );
        let get = |name: &str| {
            section
                .figures
                .iter()
                .find(|f| f.name == name)
                .unwrap_or_else(|| panic!("{name} in {section:?}"))
        };
        let errors = get("Errors");
        assert_eq!(errors.values, [Some(3.0), Some(4.0), Some(3.0)]);
        assert_eq!(errors.runs_combined, [2, 1, 2]);
        // A sum over two runs is not set against one run's count, but
        // against another column of two runs it is.
        assert_eq!(errors.change(1), None);
        assert_eq!(errors.change(2).map(|ch| ch.delta), Some(0.0));
        assert_eq!(get("Preemptions").values[0], Some(8.0));
        assert_eq!(get("Peak KV-cache usage").values[0], Some(0.7));
        // Figures with an interval stay pooled, judged by the pooled
        // interval of the group the sweep's first rate was pooled in.
        let output = get("Output");
        let group = summary
            .groups
            .iter()
            .find(|g| g.label.starts_with("short, sweep rate 1 "))
            .expect("the first rate's group");
        let pooled = group
            .figures
            .iter()
            .find(|f| f.key == "output_tok_per_s")
            .expect("output pooled");
        assert_eq!(output.values[0], pooled.pooled);
        assert_eq!(output.interval(0), pooled.pooled_interval);
        assert!(output.interval(0).is_some());
        // The second rate: errors 3 + 2, preemptions 4 + 6.
        let second = &c.sections[3];
        let errors = second
            .figures
            .iter()
            .find(|f| f.name == "Errors")
            .expect("errors");
        assert_eq!(errors.values[0], Some(5.0));
        // A repetition read without its runs' figures leaves counts empty.
        let bare = RepeatColumn::pooled_only(&summary);
        let c = Comparison::of_bench_pooled(
            &[("rep".into(), &a), ("one".into(), &b)],
            &[Some(&bare), None],
        )
        .expect("two");
        let errors = c.sections[2]
            .figures
            .iter()
            .find(|f| f.name == "Errors")
            .expect("errors");
        assert_eq!(errors.values[0], None);
    }
}
