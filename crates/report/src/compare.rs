//! The comparison model: the same figures from two or more runs side by
//! side, each later run compared with the first (the baseline), with a word
//! saying whether the change is better or worse for that figure.

use serde::{Deserialize, Serialize};

use super::format::{fixed, show_with_unit, MISSING};
use super::model::RunInfo;
use super::svg::Chart;
use codendum_core::results::metrics::{Better, Shown, Unit};
use codendum_core::results::repeat::RepeatGroup;
use codendum_core::results::repeat_folder::RepeatSummary;
use codendum_core::results::{ClassroomSummary, LevelSummary};
use codendum_core::stats::Interval;

/// How a later run's figure compares with the baseline's. When both runs
/// give the figure's 95 % interval, a change is real only when the two
/// intervals do not overlap (a conservative test: two non-overlapping 95 %
/// intervals differ at well under the 5 % level); overlapping ones are
/// **within noise**. Without intervals (older folders, counts and peaks)
/// a change under 0.5 % is the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Assessment {
    /// Moved in the good direction (beyond both intervals, or by at least
    /// 0.5 % without them).
    Better,
    /// Moved in the bad direction (likewise).
    Worse,
    /// Changed by less than 0.5 % of the baseline (no intervals to judge
    /// by).
    Same,
    /// Changed, but the figure has no good direction.
    Changed,
    /// The two runs' intervals overlap: the difference is no larger than
    /// what repeating the same run gives.
    WithinNoise,
}

impl Assessment {
    /// The word printed in reports.
    pub fn word(self) -> &'static str {
        match self {
            Assessment::Better => "better",
            Assessment::Worse => "worse",
            Assessment::Same => "same",
            Assessment::Changed => "changed",
            Assessment::WithinNoise => "within noise",
        }
    }
}

/// The change of one figure from the baseline to another run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Run value minus baseline value, in the figure's stored unit.
    pub delta: f64,
    /// Relative change in percent; `None` when the baseline is zero.
    pub percent: Option<f64>,
    /// Better, worse, same or just changed.
    pub assessment: Assessment,
}

/// One figure across runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparedFigure {
    /// What the figure is, e.g. `TTFT P95`.
    pub name: String,
    /// The unit of its values.
    pub unit: Unit,
    /// How people read it.
    pub shown: Shown,
    /// Which direction is good.
    pub better: Better,
    /// One value per run, in run order; `None` where a run lacks it.
    pub values: Vec<Option<f64>>,
    /// Each value's 95 % interval, in run order; empty, or `None` where a
    /// run gives none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<Option<Interval>>,
    /// For a count summed (or a peak taken the largest) over a repeated
    /// run's runs: how many runs each value combines, in run order; empty
    /// when every value is one run's. Such values are not compared across
    /// columns that combine different numbers of runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs_combined: Vec<usize>,
}

impl ComparedFigure {
    /// A figure from its values; it is shown as its unit is by default
    /// ([`Shown::of`]).
    pub fn new(name: &str, unit: Unit, better: Better, values: Vec<Option<f64>>) -> Self {
        ComparedFigure {
            name: name.to_string(),
            unit,
            shown: Shown::of(unit),
            better,
            values,
            intervals: Vec::new(),
            runs_combined: Vec::new(),
        }
    }

    /// The figure with how many runs each value combines (a count summed,
    /// a peak taken the largest, over a repeated run's runs), when it is
    /// such a figure (`combine`) and some column is a repetition
    /// (`any_pooled`); else unchanged.
    pub fn combining(
        self,
        combine: Option<Combine>,
        any_pooled: bool,
        runs_combined: Vec<usize>,
    ) -> Self {
        if combine.is_none() || !any_pooled {
            return self;
        }
        ComparedFigure {
            runs_combined,
            ..self
        }
    }

    /// The figure with each run's interval (in run order).
    pub fn with_intervals(self, intervals: Vec<Option<Interval>>) -> Self {
        ComparedFigure { intervals, ..self }
    }

    /// Run `run`'s interval, if it gave one.
    pub fn interval(&self, run: usize) -> Option<Interval> {
        self.intervals.get(run).copied().flatten()
    }

    /// The figure shown another way (milliseconds, minutes).
    pub fn shown_as(self, shown: Shown) -> Self {
        ComparedFigure { shown, ..self }
    }

    /// A value with its unit, e.g. `17.5 s`, `8.5 %`.
    pub fn show(&self, v: f64) -> String {
        if !v.is_finite() {
            return MISSING.to_string();
        }
        show_with_unit(self.shown, self.unit, Some(v))
    }

    /// A signed difference with its unit; fractions change in percentage
    /// points (`pp`).
    pub fn show_delta(&self, d: f64) -> String {
        let shown = match self.shown {
            Shown::Percent => format!("{} pp", fixed(d * 100.0, 1)),
            _ => self.show(d),
        };
        let nonzero = shown.chars().any(|c| c.is_ascii_digit() && c != '0');
        if d > 0.0 && nonzero {
            format!("+{shown}")
        } else {
            shown
        }
    }

    /// Run `run` compared with run 0; `None` if either value is missing,
    /// or if the two combine different numbers of runs (a count summed
    /// over three runs against one run's).
    pub fn change(&self, run: usize) -> Option<Change> {
        if let (Some(a), Some(b)) = (self.runs_combined.first(), self.runs_combined.get(run)) {
            if a != b {
                return None;
            }
        }
        let base = self
            .values
            .first()
            .copied()
            .flatten()
            .filter(|v| v.is_finite())?;
        let v = self
            .values
            .get(run)
            .copied()
            .flatten()
            .filter(|v| v.is_finite())?;
        let delta = v - base;
        let percent = (base != 0.0).then(|| delta / base.abs() * 100.0);
        let negligible = match percent {
            Some(p) => p.abs() < 0.5,
            None => delta == 0.0,
        };
        let noise = match (self.interval(0), self.interval(run)) {
            (Some(a), Some(b)) => a.overlaps(&b),
            _ => false,
        };
        let assessment = match (negligible, noise, self.better) {
            (_, true, _) => Assessment::WithinNoise,
            (true, false, _) => Assessment::Same,
            (false, false, Better::Neither) => Assessment::Changed,
            (false, false, Better::Higher) if delta > 0.0 => Assessment::Better,
            (false, false, Better::Lower) if delta < 0.0 => Assessment::Better,
            (false, false, _) => Assessment::Worse,
        };
        Some(Change {
            delta,
            percent,
            assessment,
        })
    }
}

/// A group of figures, e.g. one benchmark level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonSection {
    /// Section heading, e.g. `short prompts, 16 concurrent`.
    pub title: String,
    /// The figures.
    pub figures: Vec<ComparedFigure>,
    /// A sentence under the heading, e.g. that a rate level has no partner
    /// in another run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A provenance field and its value in each run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    /// Field name, e.g. `Profile`.
    pub field: String,
    /// Its value per run (`–` when absent).
    pub values: Vec<String>,
}

/// Whether the compared runs are benchmarks or classroom simulations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunKind {
    /// `codendum bench` runs.
    Bench,
    /// `codendum classroom` runs.
    Classroom,
}

/// Two or more runs side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Bench or classroom.
    pub kind: RunKind,
    /// A short label per run (e.g. its results folder name).
    pub labels: Vec<String>,
    /// Provenance of each run.
    pub runs: Vec<RunInfo>,
    /// Provenance fields whose values differ between runs.
    pub differences: Vec<Difference>,
    /// Provenance fields with the same value in every run.
    pub same: Vec<Difference>,
    /// The figures, grouped.
    pub sections: Vec<ComparisonSection>,
    /// Overlaid charts, one series per run.
    pub charts: Vec<Chart>,
    /// Per column, how many runs of a repetition (`--repeat`) its figures
    /// were pooled over; `None` for a single run.
    pub pooled_runs: Vec<Option<usize>>,
    /// How the rate levels of each run were paired with the baseline's,
    /// one sentence per shape and run (empty without rate levels).
    pub pairings: Vec<String>,
}

/// A column that stands for a repeated run (`--repeat`): the repetition's
/// pooled figures and each finished run's own, to sum counts over.
#[derive(Debug, Clone)]
pub struct RepeatColumn<'a> {
    /// The repetition's summary.
    pub summary: &'a RepeatSummary,
    /// Each finished run's number (from 1) and levels (a bench repetition).
    pub levels: Vec<(u32, Vec<LevelSummary>)>,
    /// Each finished run's class figures (a classroom or replay
    /// repetition).
    pub classes: Vec<ClassroomSummary>,
}

impl RepeatColumn<'_> {
    /// The column of a repetition whose runs' own figures are unknown:
    /// counts are then left empty.
    pub fn pooled_only(summary: &RepeatSummary) -> RepeatColumn<'_> {
        RepeatColumn {
            summary,
            levels: Vec::new(),
            classes: Vec::new(),
        }
    }

    /// How many runs it pooled (its finished runs).
    pub fn finished_runs(&self) -> usize {
        self.summary.runs.iter().filter(|r| !r.interrupted).count()
    }

    /// The pooled value of figure `key` at `level` (a level of the first
    /// finished run) and its 95 % interval; nothing when the repetition did
    /// not pool it.
    pub fn pooled_level_figure(
        &self,
        level: &LevelSummary,
        key: &str,
    ) -> (Option<f64>, Option<Interval>) {
        let run = self.summary.first_finished().map_or(0, |r| r.index);
        pooled_figure(self.summary.group_of_level(run, level), key)
    }

    /// The class's pooled figure `key` and its interval.
    pub fn pooled_class_figure(&self, key: &str) -> (Option<f64>, Option<Interval>) {
        pooled_figure(self.summary.class_group(), key)
    }

    /// `read` of every run's level pooled with `level` (a level of the
    /// first finished run), where the run gives a value.
    pub fn runs_levels_like(
        &self,
        level: &LevelSummary,
        read: impl Fn(&LevelSummary) -> Option<f64>,
    ) -> Vec<f64> {
        let first = self.summary.first_finished().map_or(0, |r| r.index);
        let Some(group) = self.summary.group_of_level(first, level) else {
            return Vec::new();
        };
        self.levels
            .iter()
            .filter_map(|(run, levels)| {
                levels.iter().find(|x| {
                    self.summary
                        .group_of_level(*run, x)
                        .is_some_and(|g| g.label == group.label)
                })
            })
            .filter_map(read)
            .collect()
    }

    /// `read` of every run's class, where the run gives a value.
    pub fn runs_classes(&self, read: impl Fn(&ClassroomSummary) -> Option<f64>) -> Vec<f64> {
        self.classes.iter().filter_map(read).collect()
    }
}

/// A figure as a repetition pooled it: the pooled value and its 95 %
/// interval; nothing when the group or the figure is not there.
fn pooled_figure(group: Option<&RepeatGroup>, key: &str) -> (Option<f64>, Option<Interval>) {
    group
        .and_then(|g| g.figures.iter().find(|f| f.key == key))
        .map_or((None, None), |f| (f.pooled, f.pooled_interval))
}

/// How a repeated run's column shows a figure that has no pooled interval:
/// a count (errors, preemptions) summed over the runs, a peak the largest
/// of the runs'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// The sum over the runs.
    Sum,
    /// The largest of the runs' values.
    Largest,
}

impl Combine {
    /// How a figure combines over runs: `None` for a figure pooled with an
    /// interval (`has_interval`) or one that neither adds up nor peaks.
    pub fn of(key: &str, unit: Unit, has_interval: bool) -> Option<Combine> {
        if has_interval {
            None
        } else if key.starts_with("peak") {
            Some(Combine::Largest)
        } else if unit == Unit::Count {
            Some(Combine::Sum)
        } else {
            None
        }
    }

    /// The runs' values combined; `None` without any.
    pub fn apply(self, values: &[f64]) -> Option<f64> {
        if values.is_empty() {
            return None;
        }
        Some(match self {
            Combine::Sum => values.iter().sum(),
            Combine::Largest => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// A comparison needs at least two runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a comparison needs at least two runs, got {0}")]
pub struct TooFewRuns(pub usize);

/// Reads one provenance field of a run.
type RunField = fn(&RunInfo) -> &Option<String>;

/// Provenance fields that name what was compared, in heading order.
const KEY_FIELDS: [&str; 5] = [
    "Profile",
    "Image digest",
    "Model",
    "Model revision",
    "Server",
];

impl Comparison {
    /// Splits provenance into fields that differ and fields that agree.
    pub(crate) fn provenance_fields(runs: &[RunInfo]) -> (Vec<Difference>, Vec<Difference>) {
        let text = |v: &Option<String>| v.clone().unwrap_or_else(|| MISSING.to_string());
        let fields: [(&str, RunField); 8] = [
            ("Profile", |r| &r.provenance.profile),
            ("Image digest", |r| &r.provenance.image_digest),
            ("Model", |r| &r.model),
            ("Model revision", |r| &r.provenance.model_revision),
            ("Server", |r| &r.server_version),
            ("DGX OS", |r| &r.provenance.dgx_os_version),
            ("Driver", |r| &r.provenance.driver_version),
            ("Target", |r| &r.target_url),
        ];
        let (mut differ, mut same) = (Vec::new(), Vec::new());
        for (field, get) in fields {
            let values: Vec<String> = runs.iter().map(|r| text(get(r))).collect();
            let d = Difference {
                field: field.to_string(),
                values,
            };
            if d.values.windows(2).all(|w| w[0] == w[1]) {
                same.push(d);
            } else {
                differ.push(d);
            }
        }
        (differ, same)
    }

    /// A heading naming what differs, e.g. `Profile: a vs b` or
    /// `Profile and image digest differ`.
    pub fn heading(&self) -> String {
        let key: Vec<&Difference> = self
            .differences
            .iter()
            .filter(|d| KEY_FIELDS.contains(&d.field.as_str()))
            .collect();
        match key.as_slice() {
            [] if self.differences.is_empty() => {
                "Same profile, image, model and server".to_string()
            }
            [] => format!("{} differ", join_fields(&self.differences)),
            [one] => format!("{}: {}", one.field, one.values.join(" vs ")),
            many => format!("{} differ", join_fields(many)),
        }
    }
}

fn join_fields<D: std::borrow::Borrow<Difference>>(ds: &[D]) -> String {
    let names: Vec<String> = ds
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let f = &d.borrow().field;
            if i == 0 {
                f.clone()
            } else {
                lower_first(f)
            }
        })
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// `Image digest` → `image digest`, but `DGX OS` stays as it is.
pub(crate) fn lower_first(field: &str) -> String {
    let mut chars = field.chars();
    match (chars.next(), chars.next()) {
        (Some(a), Some(b)) if b.is_lowercase() => {
            a.to_lowercase().chain(field.chars().skip(1)).collect()
        }
        _ => field.to_string(),
    }
}

/// Labels for display: the given ones, with `Run N` for empty labels.
pub(crate) fn labels_or_default(labels: Vec<String>) -> Vec<String> {
    labels
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            if l.trim().is_empty() {
                format!("Run {}", i + 1)
            } else {
                l
            }
        })
        .collect()
}
