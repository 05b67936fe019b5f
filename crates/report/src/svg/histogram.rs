//! A histogram of raw values in bins of a "nice" width.

use super::axis::{finite_range, nice_ticks, Ticks};
use super::canvas::{Canvas, Frame};
use super::{colour, AxisTitle};

/// A histogram chart.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramChart {
    /// Heading drawn at the top and used as the accessible name.
    pub title: String,
    /// Horizontal axis title (what the values are, with unit).
    pub x: AxisTitle,
    /// What a bar counts, e.g. `Requests`.
    pub counted: String,
    /// Raw values in the unit of the x axis; non-finite values are ignored.
    pub values: Vec<f64>,
}

/// Bin edges and counts: `counts[i]` holds values in
/// `[edges.min + i·step, edges.min + (i+1)·step)`, the last bin closed.
pub fn bin(values: &[f64], target_bins: usize) -> (Ticks, Vec<u64>) {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let (lo, hi) = finite_range(finite.iter().copied()).unwrap_or((0.0, 1.0));
    let edges = nice_ticks(lo.min(0.0), hi, target_bins);
    let bins = edges.values.len().saturating_sub(1).max(1);
    let mut counts = vec![0u64; bins];
    for v in finite {
        let i = ((v - edges.min) / edges.step).floor();
        let i = if i.is_finite() && i > 0.0 {
            i as usize
        } else {
            0
        };
        counts[i.min(bins - 1)] += 1;
    }
    (edges, counts)
}

impl HistogramChart {
    /// The chart as an SVG document.
    pub fn render(&self) -> String {
        let (edges, counts) = bin(&self.values, 16);
        let peak = counts.iter().copied().max().unwrap_or(0) as f64;
        let frame = Frame::new(edges.clone(), nice_ticks(0.0, peak.max(1.0), 5), 1, false);
        let mut c = Canvas::new(&self.title);
        frame.draw_axes(&mut c, &self.x.text(), &self.counted);
        if peak == 0.0 {
            c.note(&frame, "No data");
            return c.finish();
        }
        for (i, &count) in counts.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let x0 = frame.px(edges.min + i as f64 * edges.step);
            let x1 = frame.px(edges.min + (i + 1) as f64 * edges.step);
            let y = frame.py(count as f64);
            c.rect(
                x0 + 0.5,
                y,
                x1 - x0 - 1.0,
                frame.bottom - y,
                colour(0),
                "#ffffff",
            );
        }
        c.finish()
    }
}
