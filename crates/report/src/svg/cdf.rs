//! Cumulative distribution curves: for each x, the share of values at or
//! below it. Several series overlay (one per run in a comparison).

use super::axis::{finite_range, nice_ticks};
use super::canvas::{legend_rows, polyline, Canvas, Frame};
use super::{colour, dash, AxisTitle};

/// Named raw values for one curve.
#[derive(Debug, Clone, PartialEq)]
pub struct CdfCurve {
    /// Legend text.
    pub name: String,
    /// The raw values, in the unit of the chart's x axis, in any order.
    /// Non-finite values are ignored.
    pub values: Vec<f64>,
}

/// A cumulative distribution chart with guide lines at 50 % and 95 %.
#[derive(Debug, Clone, PartialEq)]
pub struct CdfChart {
    /// Heading drawn at the top and used as the accessible name.
    pub title: String,
    /// Horizontal axis title (what the values are, with unit).
    pub x: AxisTitle,
    /// What is counted, e.g. `coding requests`; the y axis reads
    /// `Share of <what> (%)`.
    pub counted: String,
    /// One curve per distribution.
    pub curves: Vec<CdfCurve>,
}

impl CdfChart {
    /// The chart as an SVG document.
    pub fn render(&self) -> String {
        let sorted: Vec<Vec<f64>> = self
            .curves
            .iter()
            .map(|d| {
                let mut v: Vec<f64> = d.values.iter().copied().filter(|v| v.is_finite()).collect();
                v.sort_by(f64::total_cmp);
                v
            })
            .collect();
        let (lo, hi) = finite_range(sorted.iter().flatten().copied()).unwrap_or((0.0, 1.0));
        let names: Vec<String> = self.curves.iter().map(|d| d.name.clone()).collect();
        let show_legend = names.len() > 1;
        let rows = if show_legend { legend_rows(&names) } else { 1 };
        let frame = Frame::new(
            nice_ticks(lo.min(0.0), hi, 8),
            nice_ticks(0.0, 100.0, 5),
            rows,
            false,
        );
        let mut c = Canvas::new(&self.title);
        if show_legend {
            c.legend(&names, false);
        }
        let y_title = format!("Share of {} (%)", self.counted);
        frame.draw_axes(&mut c, &self.x.text(), &y_title);
        for (pct, label) in [(50.0, "P50"), (95.0, "P95")] {
            let y = frame.py(pct);
            c.line((frame.left, y), (frame.right, y), "#aaaaaa", 1.0, "4 3");
            c.rotated_text(
                (frame.left + 4.0, y - 3.0),
                0,
                "start",
                10,
                "#555555",
                label,
            );
        }
        if sorted.iter().all(Vec::is_empty) {
            c.note(&frame, "No data");
            return c.finish();
        }
        for (i, values) in sorted.iter().enumerate() {
            c.path(&step_path(&frame, values), colour(i), 2.0, dash(i));
        }
        c.finish()
    }
}

/// The empirical CDF as a staircase: flat at the previous share until each
/// value, then up to its share.
fn step_path(frame: &Frame, sorted: &[f64]) -> String {
    let n = sorted.len() as f64;
    let mut points = Vec::with_capacity(sorted.len() * 2 + 1);
    if let Some(&first) = sorted.first() {
        points.push(Some((frame.px(first), frame.py(0.0))));
    }
    for (i, &v) in sorted.iter().enumerate() {
        points.push(Some((frame.px(v), frame.py(i as f64 / n * 100.0))));
        points.push(Some((frame.px(v), frame.py((i + 1) as f64 / n * 100.0))));
    }
    polyline(points)
}
