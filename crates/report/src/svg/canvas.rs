//! The SVG text builder and the plot frame (axes, grid, titles, legend)
//! shared by every chart kind.

use std::fmt::Write as _;

use super::axis::{tick_label, Ticks};
use super::{colour, dash, HEIGHT, WIDTH};
use crate::format::{fixed, xml_escape};

/// One decimal for every coordinate: deterministic and precise enough.
/// A non-finite coordinate (never expected) becomes 0 so that the SVG
/// stays valid.
pub(crate) fn n(v: f64) -> String {
    fixed(if v.is_finite() { v } else { 0.0 }, 1)
}

/// Accumulates SVG elements; [`Canvas::finish`] closes the document.
#[derive(Debug)]
pub struct Canvas {
    out: String,
}

impl Canvas {
    /// Opens a 640 × 360 SVG whose accessible title is `title`.
    pub fn new(title: &str) -> Self {
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" \
             font-family=\"sans-serif\" font-size=\"12\" role=\"img\" aria-label=\"{t}\">\n<title>{t}</title>\n\
             <rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\n",
            w = n(WIDTH),
            h = n(HEIGHT),
            t = xml_escape(title)
        );
        let mut c = Canvas { out };
        c.text(WIDTH / 2.0, 21.0, "middle", 15, "bold", title);
        c
    }

    /// A straight line from `from` to `to` (pixels).
    pub fn line(&mut self, from: (f64, f64), to: (f64, f64), stroke: &str, width: f64, dash: &str) {
        let _ = writeln!(
            self.out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{stroke}\" stroke-width=\"{}\"{}/>",
            n(from.0),
            n(from.1),
            n(to.0),
            n(to.1),
            n(width),
            dash_attr(dash)
        );
    }

    /// Text anchored at (`x`, `y`); `anchor` is `start`, `middle` or `end`,
    /// `weight` is `normal` or `bold`.
    pub fn text(&mut self, x: f64, y: f64, anchor: &str, size: u32, weight: &str, text: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\" font-size=\"{size}\" font-weight=\"{weight}\" fill=\"#222222\">{}</text>",
            n(x),
            n(y),
            xml_escape(text)
        );
    }

    /// Text rotated by `degrees` around its anchor point `at` (pixels).
    pub fn rotated_text(
        &mut self,
        at: (f64, f64),
        degrees: i32,
        anchor: &str,
        size: u32,
        fill: &str,
        text: &str,
    ) {
        let _ = writeln!(
            self.out,
            "<text x=\"{x}\" y=\"{y}\" transform=\"rotate({degrees} {x} {y})\" text-anchor=\"{anchor}\" font-size=\"{size}\" fill=\"{fill}\" stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\">{}</text>",
            xml_escape(text),
            x = n(at.0),
            y = n(at.1),
        );
    }

    /// A path from `d` (already formatted), unfilled.
    pub fn path(&mut self, d: &str, stroke: &str, width: f64, dash: &str) {
        if d.is_empty() {
            return;
        }
        let _ = writeln!(
            self.out,
            "<path d=\"{d}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{}\" stroke-linejoin=\"round\"{}/>",
            n(width),
            dash_attr(dash)
        );
    }

    /// A filled rectangle.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: &str) {
        let _ = writeln!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"0.5\"/>",
            n(x),
            n(y),
            n(w.max(0.0)),
            n(h.max(0.0))
        );
    }

    /// A marker of shape `i % 4` (circle, square, triangle, diamond).
    pub fn marker(&mut self, i: usize, x: f64, y: f64, fill: &str) {
        let r = 3.5;
        let s = match i % 4 {
            0 => format!("<circle cx=\"{}\" cy=\"{}\" r=\"{}\"", n(x), n(y), n(r)),
            1 => format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"",
                n(x - r),
                n(y - r),
                n(2.0 * r),
                n(2.0 * r)
            ),
            2 => format!(
                "<path d=\"M{} {}L{} {}L{} {}Z\"",
                n(x),
                n(y - r - 0.5),
                n(x + r + 0.5),
                n(y + r),
                n(x - r - 0.5),
                n(y + r)
            ),
            _ => format!(
                "<path d=\"M{} {}L{} {}L{} {}L{} {}Z\"",
                n(x),
                n(y - r - 1.0),
                n(x + r + 1.0),
                n(y),
                n(x),
                n(y + r + 1.0),
                n(x - r - 1.0),
                n(y)
            ),
        };
        let _ = writeln!(
            self.out,
            "{s} fill=\"{fill}\" stroke=\"#ffffff\" stroke-width=\"0.8\"/>"
        );
    }

    /// One row of legend entries under the title: a line sample, marker and
    /// name per entry. Entries that do not fit wrap to a second row.
    pub fn legend(&mut self, names: &[String], markers: bool) {
        let (mut x, mut y) = (64.0, 40.0);
        for (i, name) in names.iter().enumerate() {
            let width = 34.0 + 6.8 * name.chars().count() as f64;
            if x + width > WIDTH - 16.0 && x > 64.0 {
                x = 64.0;
                y += 14.0;
            }
            self.line((x, y - 4.0), (x + 22.0, y - 4.0), colour(i), 2.0, dash(i));
            if markers {
                self.marker(i, x + 11.0, y - 4.0, colour(i));
            }
            self.text(x + 26.0, y, "start", 12, "normal", name);
            x += width;
        }
    }

    /// A grey note centred in the plot area, e.g. `No data`.
    pub fn note(&mut self, frame: &Frame, text: &str) {
        let x = (frame.left + frame.right) / 2.0;
        let y = (frame.top + frame.bottom) / 2.0;
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\" fill=\"#777777\">{}</text>",
            n(x),
            n(y),
            xml_escape(text)
        );
    }

    /// Closes the document and returns it.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

fn dash_attr(dash: &str) -> String {
    if dash.is_empty() {
        String::new()
    } else {
        format!(" stroke-dasharray=\"{dash}\"")
    }
}

/// The plot area in pixels and the ticks of its axes.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Left edge of the plot area.
    pub left: f64,
    /// Right edge of the plot area.
    pub right: f64,
    /// Top edge of the plot area.
    pub top: f64,
    /// Bottom edge of the plot area.
    pub bottom: f64,
    /// Horizontal axis ticks (data units).
    pub x: Ticks,
    /// Vertical axis ticks (data units).
    pub y: Ticks,
}

impl Frame {
    /// The standard plot area; `top` moves down for a two-row legend and
    /// `right_axis` leaves room for a second vertical axis.
    pub fn new(x: Ticks, y: Ticks, legend_rows: usize, right_axis: bool) -> Self {
        Frame {
            left: 64.0,
            right: if right_axis {
                WIDTH - 64.0
            } else {
                WIDTH - 24.0
            },
            top: 52.0 + 14.0 * legend_rows.saturating_sub(1) as f64,
            bottom: HEIGHT - 52.0,
            x,
            y,
        }
    }

    /// Pixel x of data value `v`.
    pub fn px(&self, v: f64) -> f64 {
        self.left + (v - self.x.min) / (self.x.max - self.x.min) * (self.right - self.left)
    }

    /// Pixel y of data value `v`.
    pub fn py(&self, v: f64) -> f64 {
        self.bottom - (v - self.y.min) / (self.y.max - self.y.min) * (self.bottom - self.top)
    }

    /// Grid lines, tick labels, the axis lines and both axis titles.
    pub fn draw_axes(&self, c: &mut Canvas, x_title: &str, y_title: &str) {
        for &v in &self.y.values {
            let y = self.py(v);
            c.line((self.left, y), (self.right, y), "#e3e3e3", 1.0, "");
            c.text(
                self.left - 6.0,
                y + 4.0,
                "end",
                12,
                "normal",
                &tick_label(v, self.y.step),
            );
        }
        for &v in &self.x.values {
            let x = self.px(v);
            c.line((x, self.bottom), (x, self.bottom + 4.0), "#555555", 1.0, "");
            c.text(
                x,
                self.bottom + 17.0,
                "middle",
                12,
                "normal",
                &tick_label(v, self.x.step),
            );
        }
        c.line(
            (self.left, self.bottom),
            (self.right, self.bottom),
            "#555555",
            1.0,
            "",
        );
        c.line(
            (self.left, self.top),
            (self.left, self.bottom),
            "#555555",
            1.0,
            "",
        );
        c.text(
            (self.left + self.right) / 2.0,
            self.bottom + 38.0,
            "middle",
            13,
            "normal",
            x_title,
        );
        c.rotated_text(
            (16.0, (self.top + self.bottom) / 2.0),
            -90,
            "middle",
            13,
            "#222222",
            y_title,
        );
    }

    /// A second vertical axis on the right with its own ticks and title.
    pub fn draw_right_axis(&self, c: &mut Canvas, ticks: &Ticks, title: &str, fill: &str) {
        c.line(
            (self.right, self.top),
            (self.right, self.bottom),
            "#555555",
            1.0,
            "",
        );
        for &v in &ticks.values {
            let y =
                self.bottom - (v - ticks.min) / (ticks.max - ticks.min) * (self.bottom - self.top);
            c.line((self.right, y), (self.right + 4.0, y), "#555555", 1.0, "");
            c.text(
                self.right + 6.0,
                y + 4.0,
                "start",
                12,
                "normal",
                &tick_label(v, ticks.step),
            );
        }
        c.rotated_text(
            (WIDTH - 14.0, (self.top + self.bottom) / 2.0),
            90,
            "middle",
            13,
            fill,
            title,
        );
    }
}

/// How many legend rows [`Canvas::legend`] will use for `names`.
pub fn legend_rows(names: &[String]) -> usize {
    if names.is_empty() {
        return 0;
    }
    let (mut x, mut rows) = (64.0, 1);
    for name in names {
        let width = 34.0 + 6.8 * name.chars().count() as f64;
        if x + width > WIDTH - 16.0 && x > 64.0 {
            x = 64.0;
            rows += 1;
        }
        x += width;
    }
    rows
}

/// An SVG path through the points, starting a new sub-path after every
/// non-finite point so that gaps show as gaps.
pub fn polyline(points: impl IntoIterator<Item = Option<(f64, f64)>>) -> String {
    let mut d = String::new();
    let mut pen_down = false;
    for p in points {
        match p {
            Some((x, y)) if x.is_finite() && y.is_finite() => {
                d.push(if pen_down { 'L' } else { 'M' });
                d.push_str(&n(x));
                d.push(' ');
                d.push_str(&n(y));
                pen_down = true;
            }
            _ => pen_down = false,
        }
    }
    d
}
