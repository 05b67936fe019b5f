//! Hand-written SVG charts for the HTML reports.
//!
//! Why not a plotting crate: the charts we need are four simple kinds (lines
//! against concurrency, a server timeline, a cumulative curve, a histogram).
//! Writing the SVG ourselves keeps the dependency tree lean, needs no font
//! files or rasteriser (text is left to the browser's `sans-serif`), and makes
//! the output byte-for-byte deterministic: every coordinate is printed with
//! one decimal through [`crate::format::fixed`], so charts can be
//! snapshot-tested and diffed between runs.
//!
//! All charts are drawn for a 640 × 360 view box and scale with the page.
//! Colours come from the Okabe–Ito palette, which stays distinguishable with
//! the common colour-vision deficiencies; series also differ by marker shape
//! and dash pattern so a chart still reads in grey. Empty series, a single
//! point and non-finite values are all drawn (or skipped) without panicking.

pub mod axis;
mod canvas;
pub mod cdf;
pub mod histogram;
pub mod line;
pub mod timeline;

pub use canvas::{Canvas, Frame};
pub use cdf::{CdfChart, CdfCurve};
pub use histogram::HistogramChart;
pub use line::LineChart;
pub use timeline::{TimelineChart, TimelineMarker};

/// Width of every chart's view box, in SVG user units (pixels at 100 %).
pub const WIDTH: f64 = 640.0;
/// Height of every chart's view box, in SVG user units.
pub const HEIGHT: f64 = 360.0;

/// Okabe–Ito colours in the order series receive them (yellow last: it is
/// faint on white).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442",
];

/// Dash patterns cycled with the palette (`""` is a solid line).
pub const DASHES: [&str; 4] = ["", "6 3", "2 3", "8 3 2 3"];

/// The colour of series number `i`.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// The dash pattern of series number `i`.
pub fn dash(i: usize) -> &'static str {
    DASHES[i % DASHES.len()]
}

/// An axis title: what is measured and its unit, e.g. `TTFT` and `s`.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisTitle {
    /// What the axis shows, e.g. `Time to first token`.
    pub label: String,
    /// Its unit, e.g. `s` or `tok/s`; empty for a plain count.
    pub unit: String,
}

impl AxisTitle {
    /// A title with a unit.
    pub fn new(label: impl Into<String>, unit: impl Into<String>) -> Self {
        AxisTitle {
            label: label.into(),
            unit: unit.into(),
        }
    }

    /// `label (unit)`, or just the label when there is no unit.
    pub fn text(&self) -> String {
        if self.unit.is_empty() {
            self.label.clone()
        } else {
            format!("{} ({})", self.label, self.unit)
        }
    }
}

/// One named series of (x, y) points; non-finite points are skipped and
/// break the line.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points in data units.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A series from its name and points.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
        }
    }
}

/// A chart of any kind, so a report can hold a list of them.
#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    /// Lines against a numeric x.
    Line(LineChart),
    /// Server gauges over time.
    Timeline(TimelineChart),
    /// Cumulative distribution curves.
    Cdf(CdfChart),
    /// A histogram.
    Histogram(HistogramChart),
}

impl Chart {
    /// Whether a chart of lines has no point at all (a chart against
    /// concurrency of a run with rate levels only): such a chart is left out
    /// of a report rather than drawn empty.
    pub fn is_empty_lines(&self) -> bool {
        matches!(self, Chart::Line(c) if c.series.iter().all(|s| s.points.is_empty()))
    }

    /// The chart's title.
    pub fn title(&self) -> &str {
        match self {
            Chart::Line(c) => &c.title,
            Chart::Timeline(c) => &c.title,
            Chart::Cdf(c) => &c.title,
            Chart::Histogram(c) => &c.title,
        }
    }

    /// The chart as a standalone SVG document.
    pub fn render(&self) -> String {
        match self {
            Chart::Line(c) => c.render(),
            Chart::Timeline(c) => c.render(),
            Chart::Cdf(c) => c.render(),
            Chart::Histogram(c) => c.render(),
        }
    }
}
