//! The `[targets]` of a fitted profile, so the capacity suite can judge the
//! lab's own server: the suite's workloads ([`crate::acceptance`]) run on
//! the fitted twin in virtual time, and each figure becomes a target with
//! headroom; the class's ceilings a lab sets for its students (TTFT P95,
//! coding-request median) come from the profile given with
//! `--targets-from` when it has them.
//!
//! Headroom: a latency target is the twin's figure × [`LATENCY_HEADROOM`],
//! and at least [`LATENCY_FLOOR_S`] above it (small figures move by the
//! network and the proxy more than by the server), rounded up to two
//! significant digits; a throughput target is the twin's figure ×
//! [`THROUGHPUT_HEADROOM`], rounded down to two significant digits; errors,
//! server errors and (where the twin had none) preemptions must be 0. So a
//! server that runs as it did when it was calibrated passes, and one that
//! got slower by more than the headroom, or started failing, does not.

use std::fmt::Write as _;
use std::path::Path;

use crate::acceptance::quick::{quick_class, QUICK_BENCH_LEVEL_CAP, QUICK_BENCH_REQUESTS};
use crate::bench::config::{Cell, Load, DEFAULT_CONCURRENCY};
use crate::bench::BenchConfig;
use crate::classroom::ClassroomConfig;
use crate::plan::config::CellSpec;
use crate::plan::figures::{figures, CellResult, Window};
use codendum_core::error::Error;
use codendum_core::profile::Profile;
use codendum_core::results::LevelSummary;
use codendum_core::shape::Shape;

/// A latency target is at least this many times the twin's figure.
pub const LATENCY_HEADROOM: f64 = 1.5;
/// A latency target is at least this much above the twin's figure, seconds.
pub const LATENCY_FLOOR_S: f64 = 0.5;
/// A throughput target is this share of the twin's figure.
pub const THROUGHPUT_HEADROOM: f64 = 0.8;
/// Seed of the simulated classes.
pub const CLASS_SEED: u64 = 1;

/// The requirement keys of `[targets.classroom]` a lab sets for its
/// students (taken from `--targets-from`), not measured.
pub const REQUIREMENTS: [&str; 2] = ["ttft_p95_s", "coding_request_p50_s"];

/// `v` rounded to two significant digits, up or down.
fn two_digits(v: f64, up: bool) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 0.0;
    }
    let scale = 10f64.powi(1 - v.log10().floor() as i32);
    let scaled = v * scale;
    // Round away the float noise of the scaling before going up or down.
    let scaled = (scaled * 1e9).round() / 1e9;
    (if up { scaled.ceil() } else { scaled.floor() }) / scale
}

/// The latency target for a twin's figure `v` (seconds).
pub fn latency_target(v: f64) -> f64 {
    two_digits((v * LATENCY_HEADROOM).max(v + LATENCY_FLOOR_S), true)
}

/// The throughput target for a twin's figure `v` (tokens/s).
pub fn throughput_target(v: f64) -> f64 {
    two_digits(v * THROUGHPUT_HEADROOM, false)
}

/// A number as TOML writes it: no trailing `.0` noise beyond what it has.
fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// A class requirement's figure in words: `TTFT P95 75 s`,
/// `coding-request median 15.0 min`.
fn describe(key: &str, v: f64) -> String {
    match key {
        "ttft_p95_s" => format!("TTFT P95 {v:.0} s"),
        _ => format!("coding-request median {:.1} min", v / 60.0),
    }
}

/// The targets written into a fitted profile, and what the twin's runs said.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedTargets {
    /// The `[targets]` section, TOML with a comment on each value.
    pub toml: String,
    /// What the reader should know (a requirement the twin misses, a level
    /// it could not serve).
    pub notes: Vec<String>,
}

/// The benchmark levels of a profile's targets: one at a time, the seats,
/// and half as many again.
pub fn bench_levels(seats: u32) -> Vec<u32> {
    let mut levels = vec![1, seats, seats + seats.div_ceil(2)];
    levels.sort_unstable();
    levels.dedup();
    levels
}

struct Section {
    text: String,
}

impl Section {
    fn new(header: &str) -> Self {
        Section {
            text: format!("\n{header}\n"),
        }
    }

    fn comment(&mut self, text: &str) {
        let _ = writeln!(self.text, "# {text}");
    }

    fn value(&mut self, key: &str, value: &str) {
        let _ = writeln!(self.text, "{key} = {value}");
    }
}

/// The bench levels of one mode on the twin: `cells` as given, each level
/// stopped starting requests after `cap`.
fn bench(
    profile: &Profile,
    cells: Vec<Cell>,
    cap: Option<std::time::Duration>,
    scratch: &Path,
) -> Result<Vec<LevelSummary>, Error> {
    let config = BenchConfig {
        load: Load::Cells(cells),
        level_duration: cap,
        ..BenchConfig::default()
    };
    crate::virtual_time::bench_on_twin(profile, config, scratch)
}

/// One level's targets from the twin's figures of it.
fn bench_section(header: &str, level: &LevelSummary, notes: &mut Vec<String>) -> String {
    let mut s = Section::new(header);
    s.comment(&format!(
        "twin: {} requests, TTFT P95 {}, {:.1} output tok/s{}",
        level.requests,
        level
            .ttft_p95_s
            .map_or("not measured".to_string(), |t| format!("{t:.2} s")),
        level.output_tok_per_s,
        match level.preemptions {
            Some(p) if p > 0.0 => format!(", {p:.0} preemptions"),
            _ => String::new(),
        }
    ));
    s.value("shape", &format!("{:?}", level.shape));
    s.value("concurrency", &level.concurrency.to_string());
    match level.ttft_p95_s {
        Some(t) if level.successes > 0 => {
            s.value("ttft_p95_s", &num(latency_target(t)));
            s.value(
                "output_tok_per_s",
                &num(throughput_target(level.output_tok_per_s)),
            );
        }
        _ => notes.push(format!(
            "the fitted twin completed no {} request at {} in flight: that level is judged on errors only",
            level.shape, level.concurrency
        )),
    }
    s.value("errors", "0");
    if level.preemptions == Some(0.0) {
        s.value("preemptions", "0");
    }
    s.text
}

/// A class on the twin of `profile` in virtual time and its figures over
/// its steady window (the server figures filled in), as `plan` reads a cell.
pub fn class_figures(profile: &Profile, classroom: ClassroomConfig) -> Result<CellResult, Error> {
    let c = crate::virtual_time::class_on_twin(profile, &classroom, CLASS_SEED)?;
    let spec = CellSpec {
        profile: profile.name.clone(),
        max_num_seqs: profile.server.max_num_seqs,
        overridden: false,
        users: classroom.users as u32,
        seed: None,
    };
    let window = Window {
        origin: c.origin,
        ramp_up: classroom.ramp_up.as_secs_f64(),
        duration: classroom.duration.as_secs_f64(),
    };
    Ok(figures(&spec, c.summary, &c.timeline, window))
}

/// The class's targets: the requirements from `required` (else measured),
/// the rest measured on the twin.
fn class_section(
    header: &str,
    what: &str,
    twin: &CellResult,
    required: Option<(&str, &toml::Table)>,
    notes: &mut Vec<String>,
) -> String {
    let mut s = Section::new(header);
    let figure = |key: &str| match key {
        "ttft_p95_s" => twin.ttft_p95_s,
        _ => twin.coding_request_p50_s,
    };
    s.comment(&format!(
        "twin, {what}: TTFT P95 {}, coding request P50 {}, {} tok/s steady server output, {} of {} coding requests completed",
        twin.ttft_p95_s.map_or("–".into(), |t| format!("{t:.1} s")),
        twin.coding_request_p50_s
            .map_or("–".into(), |t| format!("{:.1} min", t / 60.0)),
        twin.server_output_tok_per_s.map_or("–".into(), |t| format!("{t:.1}")),
        twin.completed,
        twin.coding_requests,
    ));
    for key in REQUIREMENTS {
        let given = required.and_then(|(from, t)| {
            Some((
                from,
                t.get(key)?
                    .as_float()
                    .or_else(|| t.get(key)?.as_integer().map(|i| i as f64))?,
            ))
        });
        match (given, figure(key)) {
            (Some((from, limit)), measured) => {
                s.comment(&format!("required by {from}"));
                s.value(key, &num(limit));
                if let Some(m) = measured.filter(|m| *m > limit) {
                    notes.push(format!(
                        "the fitted twin's {what} has {}, beyond the {} {from} requires: expect that trial to fail (`codendum plan` with this profile says how many students the server carries)",
                        describe(key, m),
                        describe(key, limit)
                    ));
                }
            }
            (None, Some(m)) => s.value(key, &num(latency_target(m))),
            (None, None) => notes.push(format!(
                "the fitted twin's {what} completed no coding request: no {key} target"
            )),
        }
    }
    if let Some(out) = twin.server_output_tok_per_s {
        s.value("server_output_tok_per_s", &num(throughput_target(out)));
    }
    if twin.preemptions == Some(0) {
        s.value("preemptions", "0");
    }
    s.value("server_errors", "0");
    s.text
}

/// Runs the suite's workloads on the fitted twin `profile` (as loaded from
/// the file calibrate wrote) and writes their targets; the class's
/// requirements from `requirements` (`--targets-from`). `scratch` holds the
/// benchmarks' throw-away results folders.
pub fn derive(
    profile: &Profile,
    requirements: Option<&Profile>,
    scratch: &Path,
) -> Result<DerivedTargets, Error> {
    let mut notes = Vec::new();
    let seats = profile.server.max_num_seqs;
    let levels = bench_levels(seats);
    let cells = |requests: &dyn Fn(u32) -> u64| -> Vec<Cell> {
        levels
            .iter()
            .map(|&n| Cell {
                shape: Shape::Short,
                concurrency: n,
                requests: requests(n),
            })
            .collect()
    };
    let quick_bench = bench(
        profile,
        cells(&|_| QUICK_BENCH_REQUESTS),
        Some(QUICK_BENCH_LEVEL_CAP),
        scratch,
    )?;
    let full_bench = bench(
        profile,
        cells(&|n| (4 * u64::from(n)).max(16)),
        None,
        scratch,
    )?;
    let quick = class_figures(
        profile,
        quick_class(ClassroomConfig::new(String::new(), None)),
    )?;
    let full_class = class_figures(profile, ClassroomConfig::new(String::new(), None))?;
    let required =
        requirements.and_then(|p| Some((p.name.as_str(), p.targets.get("classroom")?.as_table()?)));
    let mut t = String::new();
    let _ = writeln!(
        t,
        "\n# Targets for the capacity suite (docs/profile.md). The class's {} come from {};",
        REQUIREMENTS.join(" and "),
        required.map_or("the twin", |(from, _)| from)
    );
    let _ = writeln!(
        t,
        "# every other value is this fitted twin's figure for the same workload (virtual time,"
    );
    let _ = writeln!(
        t,
        "# seed {CLASS_SEED}) with headroom: latency x {LATENCY_HEADROOM} and at least +{LATENCY_FLOOR_S} s, throughput x {THROUGHPUT_HEADROOM}."
    );
    let _ = writeln!(t, "[targets]");
    t.push_str(&class_section(
        "[targets.classroom]",
        "full class (40 students, 15 minutes)",
        &full_class,
        required,
        &mut notes,
    ));
    for level in &full_bench {
        t.push_str(&bench_section("[[targets.bench]]", level, &mut notes));
    }
    let top = levels
        .iter()
        .copied()
        .max()
        .unwrap_or(1)
        .max(DEFAULT_CONCURRENCY[4]);
    if Shape::Long.input_tokens() + 256 <= u64::from(profile.server.max_model_len) {
        let mut s = Section::new("[[targets.bench]]");
        s.comment("stability at the heaviest level of the full benchmark: no request fails");
        s.value("shape", "\"long\"");
        s.value("concurrency", &top.to_string());
        s.value("errors", "0");
        t.push_str(&s.text);
    }
    for level in &quick_bench {
        t.push_str(&bench_section("[[targets.quick.bench]]", level, &mut notes));
    }
    t.push_str(&class_section(
        "[targets.quick.classroom]",
        "quick class (24 students, 4 minutes)",
        &quick,
        None,
        &mut notes,
    ));
    Ok(DerivedTargets { toml: t, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headroom_rounds_to_two_digits() {
        assert_eq!(latency_target(2.8), 4.2);
        assert_eq!(latency_target(0.31), 0.81);
        assert_eq!(latency_target(52.0), 78.0);
        assert_eq!(latency_target(761.0), 1200.0);
        assert_eq!(throughput_target(145.3), 110.0);
        assert_eq!(throughput_target(31.2), 24.0);
        assert_eq!(throughput_target(0.0), 0.0);
        assert_eq!(num(110.0), "110");
        assert_eq!(num(0.81), "0.81");
    }

    #[test]
    fn levels_are_one_the_seats_and_half_again() {
        assert_eq!(bench_levels(16), vec![1, 16, 24]);
        assert_eq!(bench_levels(5), vec![1, 5, 8]);
        assert_eq!(bench_levels(1), vec![1, 2]);
    }
}
