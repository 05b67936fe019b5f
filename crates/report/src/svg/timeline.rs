//! Server gauges over time: running and waiting requests on the left axis,
//! KV-cache usage in percent on the right, with vertical markers where a
//! benchmark level starts.

use super::axis::{finite_range, nice_ticks};
use super::canvas::{polyline, Canvas, Frame};
use super::{colour, dash};
use crate::model::TimelinePoint;

/// A labelled vertical line, e.g. where a level starts.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineMarker {
    /// Seconds since the start of the run.
    pub t_s: f64,
    /// Short label, e.g. `short ×8`.
    pub label: String,
}

/// Picks a gauge of a sample and maps it to a pixel y.
type Gauge<'a> = dyn Fn(&TimelinePoint) -> Option<f64> + 'a;

/// The timeline chart.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineChart {
    /// Heading drawn at the top and used as the accessible name.
    pub title: String,
    /// The samples in time order.
    pub samples: Vec<TimelinePoint>,
    /// Vertical markers (level boundaries).
    pub markers: Vec<TimelineMarker>,
    /// Shaded spans (outages: the server did not answer), seconds on the
    /// chart's axis; an open end runs to the chart's right edge.
    pub shaded: Vec<(f64, Option<f64>)>,
}

impl TimelineChart {
    /// The chart as an SVG document.
    pub fn render(&self) -> String {
        let times = self
            .samples
            .iter()
            .map(|s| s.t_s)
            .chain(self.markers.iter().map(|m| m.t_s))
            .chain(
                self.shaded
                    .iter()
                    .flat_map(|(s, e)| [Some(*s), *e])
                    .flatten(),
            );
        let (t0, t1) = finite_range(times).unwrap_or((0.0, 1.0));
        // Minutes read better than seconds beyond 20 minutes.
        let (scale, unit) = if t1 - t0.min(0.0) > 1200.0 {
            (60.0, "min")
        } else {
            (1.0, "s")
        };
        let requests = self
            .samples
            .iter()
            .flat_map(|s| [s.running, s.waiting])
            .flatten();
        let (_, req_max) = finite_range(requests).unwrap_or((0.0, 1.0));
        let kv_pct = self
            .samples
            .iter()
            .filter_map(|s| s.kv_usage)
            .map(|f| f * 100.0);
        let (_, kv_max) = finite_range(kv_pct).unwrap_or((0.0, 1.0));
        let kv_ticks = nice_ticks(0.0, kv_max.max(1.0), 5);
        let frame = Frame::new(
            nice_ticks(t0.min(0.0) / scale, t1 / scale, 8),
            nice_ticks(0.0, req_max.max(1.0), 5),
            1,
            true,
        );
        let names = [
            "Running requests".to_string(),
            "Waiting requests".to_string(),
            "KV cache (%, right axis)".to_string(),
        ];
        let mut c = Canvas::new(&self.title);
        c.legend(&names, false);
        frame.draw_axes(&mut c, &format!("Time since start ({unit})"), "Requests");
        frame.draw_right_axis(&mut c, &kv_ticks, "KV cache usage (%)", colour(2));
        if self.samples.is_empty() {
            c.note(&frame, "No server samples");
        }
        for (start, end) in &self.shaded {
            let x0 = frame.px(*start / scale);
            let x1 = end.map_or(frame.px(t1 / scale), |e| frame.px(e / scale));
            if x0.is_finite() && x1.is_finite() {
                let (a, b) = (x0.min(x1), x0.max(x1).max(x0.min(x1) + 2.0));
                c.rect(
                    a,
                    frame.top,
                    b - a,
                    frame.bottom - frame.top,
                    "#f4c7c3",
                    "none",
                );
                c.text(a + 2.0, frame.top + 12.0, "start", 9, "normal", "outage");
            }
        }
        for m in &self.markers {
            let x = frame.px(m.t_s / scale);
            if !x.is_finite() {
                continue;
            }
            c.line((x, frame.top), (x, frame.bottom), "#999999", 1.0, "3 3");
            c.rotated_text(
                (x + 3.0, frame.top + 4.0),
                90,
                "start",
                9,
                "#555555",
                &m.label,
            );
        }
        let kv_y = |f: f64| {
            frame.bottom
                - (f * 100.0 - kv_ticks.min) / (kv_ticks.max - kv_ticks.min)
                    * (frame.bottom - frame.top)
        };
        let gauges: [(usize, &Gauge); 3] = [
            (0, &|s| s.running.map(|v| frame.py(v))),
            (1, &|s| s.waiting.map(|v| frame.py(v))),
            (2, &|s| s.kv_usage.map(kv_y)),
        ];
        for (i, pick) in gauges {
            let d = polyline(
                self.samples
                    .iter()
                    .map(|s| pick(s).map(|y| (frame.px(s.t_s / scale), y))),
            );
            c.path(&d, colour(i), if i == 2 { 1.5 } else { 2.0 }, dash(i));
        }
        c.finish()
    }
}
