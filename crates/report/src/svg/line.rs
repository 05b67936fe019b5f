//! Several series against a numeric x (e.g. concurrency), with markers.

use super::axis::{finite_range, nice_ticks};
use super::canvas::{legend_rows, polyline, Canvas, Frame};
use super::{colour, dash, AxisTitle, Series};

/// A line chart: one line per series, optional markers at the points.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Heading drawn at the top and used as the accessible name.
    pub title: String,
    /// Horizontal axis title.
    pub x: AxisTitle,
    /// Vertical axis title.
    pub y: AxisTitle,
    /// The series, drawn in order.
    pub series: Vec<Series>,
    /// Draw a marker at every point (off for dense series such as timelines).
    pub markers: bool,
    /// Start both axes at zero even when the data starts higher.
    pub from_zero: bool,
}

impl LineChart {
    /// A chart with markers whose axes start at zero.
    pub fn new(title: impl Into<String>, x: AxisTitle, y: AxisTitle, series: Vec<Series>) -> Self {
        LineChart {
            title: title.into(),
            x,
            y,
            series,
            markers: true,
            from_zero: true,
        }
    }

    /// The chart as an SVG document.
    pub fn render(&self) -> String {
        let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
        let points: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().filter(finite).copied())
            .collect();
        let xr = finite_range(points.iter().map(|p| p.0));
        let yr = finite_range(points.iter().map(|p| p.1));
        let zero = |r: Option<(f64, f64)>| match r {
            Some((lo, hi)) if self.from_zero => Some((lo.min(0.0), hi.max(0.0))),
            other => other,
        };
        let (x0, x1) = zero(xr).unwrap_or((0.0, 1.0));
        let (y0, y1) = zero(yr).unwrap_or((0.0, 1.0));
        let names: Vec<String> = self.series.iter().map(|s| s.name.clone()).collect();
        let frame = Frame::new(
            nice_ticks(x0, x1, 8),
            nice_ticks(y0, y1, 5),
            legend_rows(&names),
            false,
        );
        let mut c = Canvas::new(&self.title);
        c.legend(&names, self.markers);
        frame.draw_axes(&mut c, &self.x.text(), &self.y.text());
        if points.is_empty() {
            c.note(&frame, "No data");
            return c.finish();
        }
        for (i, s) in self.series.iter().enumerate() {
            let d = polyline(
                s.points
                    .iter()
                    .map(|&(x, y)| Some((frame.px(x), frame.py(y)))),
            );
            c.path(&d, colour(i), 2.0, dash(i));
            if self.markers {
                for &(x, y) in s.points.iter().filter(finite) {
                    c.marker(i, frame.px(x), frame.py(y), colour(i));
                }
            }
        }
        c.finish()
    }
}
