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
//! [targets.quick.classroom]    # the same two kinds of table, for the quick
//! [[targets.quick.bench]]      # workloads (CODENDUM_CAPACITY=quick)
//! ```
//!
//! Every table rejects unknown keys, naming the key and the table.
//! `[targets.classroom]` is read and judged by [`crate::targets::classroom`],
//! the definition `codendum plan` uses too; this module adds the benchmark
//! levels and the quick tables.

use serde::Deserialize;

use crate::bench::{config::MAX_CONCURRENCY, Shape};
use crate::error::ConfigError;
pub use crate::targets::ClassroomTargets;
use crate::targets::{check_value_kinds, parse_classroom_targets, KeyKind};

/// Targets of one benchmark level (`[[targets.bench]]`): a prompt shape at
/// a concurrency, and limits on that level's figures. Every metric key is
/// optional; at least one must be given.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchLevelTargets {
    /// Prompt shape: `short` or `long`.
    pub shape: String,
    /// Requests kept in flight.
    pub concurrency: u32,
    /// Most TTFT at the median, seconds.
    pub ttft_p50_s: Option<f64>,
    /// Most TTFT at the 95th percentile, seconds.
    pub ttft_p95_s: Option<f64>,
    /// Most TTFT at the 99th percentile, seconds.
    pub ttft_p99_s: Option<f64>,
    /// Most end-to-end latency at the median, seconds.
    pub e2e_p50_s: Option<f64>,
    /// Most end-to-end latency at the 95th percentile, seconds.
    pub e2e_p95_s: Option<f64>,
    /// Most mean time per output token, seconds.
    pub tpot_mean_s: Option<f64>,
    /// Least output tokens per second over the level.
    pub output_tok_per_s: Option<f64>,
    /// Least input + output tokens per second over the level.
    pub total_tok_per_s: Option<f64>,
    /// Most failed requests (all kinds).
    pub errors: Option<u64>,
    /// Most preemptions during the level (from `/metrics`).
    pub preemptions: Option<u64>,
}

impl BenchLevelTargets {
    /// The metrics checked, as named in trial names, in a fixed order.
    pub fn metrics(&self) -> Vec<&'static str> {
        [
            ("ttft_p50", self.ttft_p50_s.is_some()),
            ("ttft_p95", self.ttft_p95_s.is_some()),
            ("ttft_p99", self.ttft_p99_s.is_some()),
            ("e2e_p50", self.e2e_p50_s.is_some()),
            ("e2e_p95", self.e2e_p95_s.is_some()),
            ("tpot_mean", self.tpot_mean_s.is_some()),
            ("output_tok_per_s", self.output_tok_per_s.is_some()),
            ("total_tok_per_s", self.total_tok_per_s.is_some()),
            ("errors", self.errors.is_some()),
            ("preemptions", self.preemptions.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }

    /// The shape, validated.
    pub fn shape(&self) -> Option<Shape> {
        Shape::from_name(&self.shape)
    }

    /// The workload segment of trial names: `bench-short-c16`.
    pub fn group_name(&self) -> String {
        format!(
            "bench-{}-c{}",
            self.shape.to_ascii_lowercase(),
            self.concurrency
        )
    }
}

/// The targets of one mode: the bench levels and the class.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModeTargets {
    /// Checked benchmark levels, in file order.
    pub bench: Vec<BenchLevelTargets>,
    /// The class, when checked.
    pub classroom: Option<ClassroomTargets>,
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
/// [`crate::twin::profile::Profile::targets`]). Errors name the table and
/// the key.
pub fn parse_targets(table: &toml::Table) -> Result<ProfileTargets, ConfigError> {
    let mut out = ProfileTargets::default();
    for (key, value) in table {
        match key.as_str() {
            "classroom" | "bench" => parse_mode_key(&mut out.full, "targets", key, value)?,
            "quick" => {
                let quick = value
                    .as_table()
                    .ok_or_else(|| bad("targets.quick", "must be a table"))?;
                for (k, v) in quick {
                    match k.as_str() {
                        "classroom" | "bench" => {
                            parse_mode_key(&mut out.quick, "targets.quick", k, v)?
                        }
                        other => {
                            return Err(unknown("targets.quick", other, "classroom, bench"));
                        }
                    }
                }
            }
            other => return Err(unknown("targets", other, "classroom, bench, quick")),
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
    let items = value
        .as_array()
        .ok_or_else(|| bad(&path, "must be an array of tables ([[...bench]])"))?;
    for (i, item) in items.iter().enumerate() {
        let at = format!("{path}[{i}]");
        check_value_kinds(&at, item, BENCH_KEYS)?;
        let t: BenchLevelTargets = item
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| bad(&at, &e.message().replace('\n', " ")))?;
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

const BENCH_KEYS: &[(&str, KeyKind)] = &[
    ("shape", KeyKind::Text),
    ("concurrency", KeyKind::Count),
    ("ttft_p50_s", KeyKind::Number),
    ("ttft_p95_s", KeyKind::Number),
    ("ttft_p99_s", KeyKind::Number),
    ("e2e_p50_s", KeyKind::Number),
    ("e2e_p95_s", KeyKind::Number),
    ("tpot_mean_s", KeyKind::Number),
    ("output_tok_per_s", KeyKind::Number),
    ("total_tok_per_s", KeyKind::Number),
    ("errors", KeyKind::Count),
    ("preemptions", KeyKind::Count),
];

fn check_bench(t: &BenchLevelTargets, path: &str) -> Result<(), ConfigError> {
    if t.shape().is_none() {
        return Err(bad(
            path,
            &format!("shape {:?} is unknown (known: short, long)", t.shape),
        ));
    }
    if t.concurrency == 0 || t.concurrency > MAX_CONCURRENCY {
        return Err(bad(
            path,
            &format!(
                "concurrency {} is outside 1..={MAX_CONCURRENCY}",
                t.concurrency
            ),
        ));
    }
    let values = [
        ("ttft_p50_s", t.ttft_p50_s),
        ("ttft_p95_s", t.ttft_p95_s),
        ("ttft_p99_s", t.ttft_p99_s),
        ("e2e_p50_s", t.e2e_p50_s),
        ("e2e_p95_s", t.e2e_p95_s),
        ("tpot_mean_s", t.tpot_mean_s),
        ("output_tok_per_s", t.output_tok_per_s),
        ("total_tok_per_s", t.total_tok_per_s),
    ];
    check_limits(path, &values)?;
    let any =
        values.iter().any(|(_, v)| v.is_some()) || t.errors.is_some() || t.preemptions.is_some();
    if !any {
        return Err(bad(path, "names a level but no target to check"));
    }
    Ok(())
}

fn check_limits(path: &str, values: &[(&str, Option<f64>)]) -> Result<(), ConfigError> {
    for (key, v) in values {
        if let Some(v) = v {
            if !v.is_finite() || *v < 0.0 {
                return Err(bad(path, &format!("{key} = {v} is not a number ≥ 0")));
            }
        }
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
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ProfileTargets, ConfigError> {
        let table: toml::Table = toml::from_str(text).expect("toml");
        parse_targets(&table)
    }

    #[test]
    fn full_and_quick_tables_are_read() {
        let t = parse(
            r#"
            [classroom]
            ttft_p95_s = 75
            coding_request_p50_s = 900.5
            server_output_tok_per_s = 95
            preemptions = 0
            server_errors = 0
            [[bench]]
            shape = "short"
            concurrency = 16
            ttft_p95_s = 30
            errors = 0
            [quick.classroom]
            ttft_p95_s = 10
            [[quick.bench]]
            shape = "long"
            concurrency = 1
            output_tok_per_s = 20
            "#,
        )
        .expect("parses");
        let c = t.full.classroom.expect("classroom");
        assert_eq!(c.ttft_p95_s, Some(75.0));
        assert_eq!(c.coding_request_p50_s, Some(900.5));
        assert_eq!(c.server_errors, Some(0));
        assert_eq!(t.full.bench[0].group_name(), "bench-short-c16");
        assert_eq!(t.quick.bench[0].output_tok_per_s, Some(20.0));
        assert_eq!(t.quick.classroom.and_then(|c| c.ttft_p95_s), Some(10.0));
    }

    #[test]
    fn unknown_keys_are_named_with_their_table() {
        let e = parse("[classroom]\nttft_p99_s = 3\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ttft_p99_s") && e.contains("targets.classroom"),
            "{e}"
        );
        let e = parse("[[quick.bench]]\nshape = \"short\"\nconcurrency = 1\nttft = 1\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`ttft`") && e.contains("targets.quick.bench[0]"),
            "{e}"
        );
        let e = parse("[latency]\nx = 1\n").unwrap_err().to_string();
        assert!(e.contains("`latency`"), "{e}");
        let e = parse("[quick.plan]\nx = 1\n").unwrap_err().to_string();
        assert!(e.contains("`plan`") && e.contains("targets.quick"), "{e}");
    }

    #[test]
    fn bad_levels_and_values_are_refused() {
        let cases = [
            ("[[bench]]\nshape = \"medium\"\nconcurrency = 1\nerrors = 0\n", "medium"),
            ("[[bench]]\nshape = \"short\"\nconcurrency = 0\nerrors = 0\n", "concurrency"),
            ("[[bench]]\nshape = \"short\"\nconcurrency = 4\n", "no target"),
            ("[[bench]]\nshape = \"short\"\nconcurrency = 4\nttft_p95_s = -1\n", "ttft_p95_s"),
            ("[classroom]\nttft_p95_s = nan\n", "ttft_p95_s"),
            ("[classroom]\npreemptions = -1\n", "preemptions"),
            (
                "[[bench]]\nshape = \"short\"\nconcurrency = 4\nerrors = 0\n[[bench]]\nshape = \"SHORT\"\nconcurrency = 4\nerrors = 1\n",
                "twice",
            ),
            ("bench = 3\n", "array"),
        ];
        for (text, needle) in cases {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn an_empty_table_has_no_targets() {
        let t = parse("").expect("empty");
        assert!(t.full.bench.is_empty() && t.full.classroom.is_none());
        assert_eq!(t.quick, ModeTargets::default());
    }
}
