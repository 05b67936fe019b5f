//! The `[targets]` table of a server profile, typed.
//!
//! ```toml
//! [targets.classroom]          # the full class (40 students, 15 minutes)
//! ttft_p95_s = 75              # max, seconds
//! coding_request_p50_s = 900   # max, seconds (task wall time P50)
//! server_output_tok_per_s = 95 # min, tokens per second (steady state)
//! preemptions = 0              # max, count
//! server_errors = 0            # max, count (http_503 + http_5xx final errors)
//!
//! [[targets.bench]]            # one entry per level of the full benchmark
//! shape = "short"
//! concurrency = 16
//! ttft_p95_s = 30              # max, seconds
//! output_tok_per_s = 110       # min, tokens per second
//! errors = 0                   # max, count
//!
//! [targets.capacity]           # the class carried at a tier, judged on a
//! students = 40                # capacity search (crate::targets::capacity)
//!
//! [targets.quick.classroom]    # the same kinds of table, for the quick
//! [[targets.quick.bench]]      # workloads (CODENDUM_CAPACITY=quick)
//! ```
//!
//! Every table rejects unknown keys, naming the key and the table.
//! `[targets.classroom]` is read and judged by [`crate::targets::classroom`],
//! the definition `codendum plan` uses too; this module adds the benchmark
//! levels and the quick tables.

use std::collections::BTreeMap;

use crate::bound::Bound;
use crate::error::ConfigError;
use crate::flags::MAX_CONCURRENCY;
use crate::results::metrics::{level_metric, Better, LevelMetric, Unit};
use crate::shape::Shape;
use crate::targets::capacity::{parse_capacity_targets, CapacityTarget};
pub use crate::targets::ClassroomTargets;
use crate::targets::{check_value_kinds, parse_classroom_targets, KeyKind};

/// The metric keys a `[[targets.bench]]` entry may give, in the order their
/// trials are listed and judged. Each names a `summary.csv` column of
/// [`crate::results::metrics::LEVEL_METRICS`], which gives its unit
/// (seconds, tokens per second or a count), its bound (a ceiling when lower
/// is better, a floor when higher is), its label and its figure.
pub const BENCH_TARGET_KEYS: [&str; 10] = [
    "ttft_p50_s",
    "ttft_p95_s",
    "ttft_p99_s",
    "e2e_p50_s",
    "e2e_p95_s",
    "tpot_mean_s",
    "output_tok_per_s",
    "total_tok_per_s",
    "errors",
    "preemptions",
];

/// The level metric of a bench target key, when `key` is one.
pub fn bench_target_metric(key: &str) -> Option<&'static LevelMetric> {
    BENCH_TARGET_KEYS
        .contains(&key)
        .then(|| level_metric(key))
        .flatten()
}

/// Whether a target on `metric` is a ceiling or a floor; `None` when
/// neither direction is better.
pub fn bound_of(metric: &LevelMetric) -> Option<Bound> {
    match metric.better {
        Better::Lower => Some(Bound::Max),
        Better::Higher => Some(Bound::Min),
        Better::Neither => None,
    }
}

/// What a target key's value must hold: a whole number for counts, a
/// number ≥ 0 otherwise.
fn key_kind(metric: &LevelMetric) -> KeyKind {
    match metric.unit {
        Unit::Count => KeyKind::Count,
        _ => KeyKind::Number,
    }
}

/// Targets of one benchmark level (`[[targets.bench]]`): a prompt shape at
/// a concurrency, and limits on that level's figures. Every metric key
/// ([`BENCH_TARGET_KEYS`]) is optional; at least one must be given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchLevelTargets {
    /// Prompt shape: `short` or `long`.
    pub shape: String,
    /// Requests kept in flight (a closed-loop level); 0 for a rate level.
    pub concurrency: u32,
    /// A rate level's rate, requests per second (`rate = 0.8`); `None`: a
    /// closed-loop level at [`BenchLevelTargets::concurrency`].
    pub rate: Option<f64>,
    /// The limits given, by key of [`BENCH_TARGET_KEYS`], in the figure's
    /// unit: seconds (`ttft_p95_s`, most), tokens per second
    /// (`output_tok_per_s`, least) or a count (`errors`, most).
    pub limits: BTreeMap<&'static str, f64>,
}

impl BenchLevelTargets {
    /// These targets with `key` limited to `limit` (in the figure's unit).
    ///
    /// # Panics
    ///
    /// When `key` is not one of [`BENCH_TARGET_KEYS`].
    pub fn with(mut self, key: &str, limit: f64) -> Self {
        let metric = bench_target_metric(key)
            .unwrap_or_else(|| panic!("{key} is not a [[targets.bench]] key"));
        self.limits.insert(metric.column, limit);
        self
    }

    /// The limit on `key` (a [`BENCH_TARGET_KEYS`] entry), if given.
    pub fn limit(&self, key: &str) -> Option<f64> {
        self.limits.get(key).copied()
    }

    /// The checked metrics with their limits, in [`BENCH_TARGET_KEYS`]
    /// order.
    pub fn checked(&self) -> impl Iterator<Item = (&'static LevelMetric, f64)> + '_ {
        BENCH_TARGET_KEYS.iter().filter_map(|key| {
            let limit = self.limit(key)?;
            Some((bench_target_metric(key)?, limit))
        })
    }

    /// The metrics checked, as named in trial names (`ttft_p95`), in a
    /// fixed order.
    pub fn metrics(&self) -> Vec<&'static str> {
        self.checked().map(|(m, _)| m.trial_name()).collect()
    }

    /// The shape, validated.
    pub fn shape(&self) -> Option<Shape> {
        Shape::from_name(&self.shape)
    }

    /// The workload segment of trial names: `bench-short-c16`.
    pub fn group_name(&self) -> String {
        match self.rate {
            Some(r) => format!(
                "bench-{}-r{}",
                self.shape.to_ascii_lowercase(),
                crate::results::records::trim_rate(r)
            ),
            None => format!(
                "bench-{}-c{}",
                self.shape.to_ascii_lowercase(),
                self.concurrency
            ),
        }
    }

    /// Whether `level` is the level these targets name: its shape and its
    /// concurrency (closed loop) or its rate (a rate level).
    pub fn names(&self, level: &crate::results::LevelSummary) -> bool {
        level.shape.eq_ignore_ascii_case(&self.shape)
            && match (self.rate, &level.rate) {
                (Some(r), Some(lr)) => (lr.rate_per_s - r).abs() < 1e-9,
                (None, None) => level.concurrency == self.concurrency,
                _ => false,
            }
    }
}

/// The targets of one mode: the bench levels and the class.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModeTargets {
    /// Checked benchmark levels, in file order.
    pub bench: Vec<BenchLevelTargets>,
    /// The class, when checked.
    pub classroom: Option<ClassroomTargets>,
    /// The classes the server must carry per tier (`[targets.capacity]`).
    pub capacity: Vec<CapacityTarget>,
}

/// A profile's targets: for the full workloads and for the quick ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileTargets {
    /// `[targets.classroom]` and `[[targets.bench]]`.
    pub full: ModeTargets,
    /// `[targets.quick.classroom]` and `[[targets.quick.bench]]`.
    pub quick: ModeTargets,
}

/// Reads a profile's `[targets]` table (as kept by
/// [`crate::profile::Profile::targets`]). Errors name the table and
/// the key.
pub fn parse_targets(table: &toml::Table) -> Result<ProfileTargets, ConfigError> {
    let mut out = ProfileTargets::default();
    for (key, value) in table {
        match key.as_str() {
            "classroom" | "bench" | "capacity" => {
                parse_mode_key(&mut out.full, "targets", key, value)?
            }
            "quick" => {
                let quick = value
                    .as_table()
                    .ok_or_else(|| bad("targets.quick", "must be a table"))?;
                for (k, v) in quick {
                    match k.as_str() {
                        "classroom" | "bench" | "capacity" => {
                            parse_mode_key(&mut out.quick, "targets.quick", k, v)?
                        }
                        other => {
                            return Err(unknown(
                                "targets.quick",
                                other,
                                "classroom, bench, capacity",
                            ));
                        }
                    }
                }
            }
            other => {
                return Err(unknown(
                    "targets",
                    other,
                    "classroom, bench, capacity, quick",
                ))
            }
        }
    }
    for (mode, prefix) in [(&out.full, "targets"), (&out.quick, "targets.quick")] {
        if let Some(t) = mode.capacity.iter().find(|t| t.targets.is_none()) {
            if mode.classroom.is_none() {
                return Err(bad(
                    &format!("{prefix}.capacity"),
                    &format!(
                        "the tier {} names no target of its own and there is no [{prefix}.classroom] to judge it by",
                        t.tier
                    ),
                ));
            }
        }
    }
    Ok(out)
}

fn parse_mode_key(
    mode: &mut ModeTargets,
    prefix: &str,
    key: &str,
    value: &toml::Value,
) -> Result<(), ConfigError> {
    let path = format!("{prefix}.{key}");
    if key == "classroom" {
        mode.classroom = Some(parse_classroom_targets(&path, value)?);
        return Ok(());
    }
    if key == "capacity" {
        mode.capacity = parse_capacity_targets(&path, value)?;
        return Ok(());
    }
    let items = value
        .as_array()
        .ok_or_else(|| bad(&path, "must be an array of tables ([[...bench]])"))?;
    for (i, item) in items.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let t = parse_bench(&at, item)?;
        check_bench(&t, &at)?;
        if mode.bench.iter().any(|b| b.group_name() == t.group_name()) {
            return Err(bad(
                &at,
                &format!("{} is checked twice; merge the two entries", t.group_name()),
            ));
        }
        mode.bench.push(t);
    }
    Ok(())
}

/// The keys of a `[[targets.bench]]` entry and what their values hold.
fn bench_keys() -> Vec<(&'static str, KeyKind)> {
    let mut keys = vec![
        ("shape", KeyKind::Text),
        ("concurrency", KeyKind::Count),
        ("rate", KeyKind::Number),
    ];
    keys.extend(
        BENCH_TARGET_KEYS
            .iter()
            .filter_map(|k| bench_target_metric(k))
            .map(|m| (m.column, key_kind(m))),
    );
    keys
}

/// Reads one `[[targets.bench]]` entry at `path`; unknown keys are refused
/// by name.
fn parse_bench(path: &str, item: &toml::Value) -> Result<BenchLevelTargets, ConfigError> {
    let keys = bench_keys();
    check_value_kinds(path, item, &keys)?;
    let table = item
        .as_table()
        .ok_or_else(|| bad(path, "must be a table"))?;
    let mut t = BenchLevelTargets::default();
    let (mut shape, mut concurrency, mut rate) = (false, false, false);
    for (key, value) in table {
        match key.as_str() {
            "shape" => {
                t.shape = value.as_str().unwrap_or_default().to_string();
                shape = true;
            }
            "concurrency" => {
                let n = value.as_integer().unwrap_or_default();
                t.concurrency = u32::try_from(n).map_err(|_| {
                    bad(
                        path,
                        &format!("concurrency {n} is outside 1..={MAX_CONCURRENCY}"),
                    )
                })?;
                concurrency = true;
            }
            "rate" => {
                t.rate = value
                    .as_float()
                    .or_else(|| value.as_integer().map(|i| i as f64));
                rate = true;
            }
            other => {
                let Some(metric) = bench_target_metric(other) else {
                    let known: Vec<&str> = keys.iter().map(|(k, _)| *k).collect();
                    return Err(unknown(path, other, &known.join(", ")));
                };
                let limit = value
                    .as_float()
                    .or_else(|| value.as_integer().map(|i| i as f64))
                    .unwrap_or_default();
                t.limits.insert(metric.column, limit);
            }
        }
    }
    if !shape {
        return Err(bad(path, "missing key `shape`"));
    }
    match (concurrency, rate) {
        (true, true) => {
            return Err(bad(
                path,
                "gives both `concurrency` and `rate`: a level is one or the other",
            ))
        }
        (false, false) => return Err(bad(path, "missing key `concurrency` (or `rate`)")),
        _ => {}
    }
    Ok(t)
}

fn check_bench(t: &BenchLevelTargets, path: &str) -> Result<(), ConfigError> {
    if t.shape().is_none() {
        return Err(bad(
            path,
            &format!("shape {:?} is unknown (known: short, long)", t.shape),
        ));
    }
    if let Some(r) = t.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(bad(
                path,
                &format!("rate {r} is not above 0 (requests per second)"),
            ));
        }
    } else if t.concurrency == 0 || t.concurrency > MAX_CONCURRENCY {
        return Err(bad(
            path,
            &format!(
                "concurrency {} is outside 1..={MAX_CONCURRENCY}",
                t.concurrency
            ),
        ));
    }
    if t.limits.is_empty() {
        return Err(bad(path, "names a level but no target to check"));
    }
    Ok(())
}

fn bad(path: &str, reason: &str) -> ConfigError {
    ConfigError::invalid(path.to_string(), reason.to_string())
}

fn unknown(path: &str, key: &str, known: &str) -> ConfigError {
    bad(path, &format!("unknown key `{key}` (known: {known})"))
}

#[cfg(test)]
mod tests;
