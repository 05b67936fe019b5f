//! Number and text formatting shared by the Markdown, HTML and SVG writers.
//!
//! Every number goes through these functions so that output is deterministic
//! (fixed decimals, no `-0.0`) and a missing or non-finite value prints as an
//! en dash instead of `NaN` or `inf`.

use codendum_core::results::metrics::{ClassMetric, LevelMetric, Reading, Shown, Unit};
use codendum_core::results::{ClassroomSummary, LevelSummary};
use codendum_core::stats::Interval;

/// What a missing or non-finite figure prints as.
pub const MISSING: &str = "–";

/// Formats `v` with `decimals` digits after the point; non-finite values
/// print as [`MISSING`], and a value that rounds to zero never shows a sign.
pub fn fixed(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return MISSING.to_string();
    }
    let s = format!("{v:.decimals$}");
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// Like [`fixed`], for an optional value.
pub fn opt_fixed(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| MISSING.to_string(), |v| fixed(v, decimals))
}

/// A duration in seconds with precision that suits its size: two decimals
/// below 10 s, one below 100 s, none above.
pub fn seconds(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        MISSING.to_string()
    } else if a < 10.0 {
        fixed(v, 2)
    } else if a < 100.0 {
        fixed(v, 1)
    } else {
        fixed(v, 0)
    }
}

/// A fraction (0..1) shown as a percentage with one decimal, without the sign.
pub fn percent(fraction: f64) -> String {
    fixed(fraction * 100.0, 1)
}

/// Like [`percent`], for an optional fraction.
pub fn opt_percent(fraction: Option<f64>) -> String {
    fraction.map_or_else(|| MISSING.to_string(), percent)
}

/// A figure's number as people read it ([`Shown`]), without its unit;
/// [`MISSING`] when it was not measured.
pub fn show(shown: Shown, v: Option<f64>) -> String {
    let Some(v) = v else {
        return MISSING.to_string();
    };
    let v = v * shown.scale();
    match shown {
        Shown::Seconds => seconds(v),
        Shown::Millis | Shown::Minutes | Shown::Percent => fixed(v, 1),
        Shown::Decimals(d) => fixed(v, usize::from(d)),
        Shown::Text => MISSING.to_string(),
    }
}

/// A 95 % interval as people read it, in the figure's shown form and
/// without its unit: `(27.8–31.3)`; an open bound is said as such, `(≥
/// 2.70)` (no upper bound: too few values) or `(≤ 3.1)`; `(no bound)` when
/// both are open. Empty without an interval.
pub fn interval_text(shown: Shown, interval: Option<Interval>) -> String {
    let Some(i) = interval else {
        return String::new();
    };
    let bound = |v: f64| show(shown, Some(v));
    match (i.lo, i.hi) {
        (Some(lo), Some(hi)) => format!("({}–{})", bound(lo), bound(hi)),
        (Some(lo), None) => format!("(≥ {})", bound(lo)),
        (None, Some(hi)) => format!("(≤ {})", bound(hi)),
        (None, None) => "(no bound)".to_string(),
    }
}

/// A number and its interval: `29.5 (27.8–31.3)`, or the number alone
/// without an interval.
pub fn with_interval(number: String, shown: Shown, interval: Option<Interval>) -> String {
    match interval_text(shown, interval) {
        text if text.is_empty() => number,
        text => format!("{number} {text}"),
    }
}

/// A figure with its unit and interval, as sentences give it: `TTFT P95
/// 29.5 s (27.8–31.3)`'s `29.5 s (27.8–31.3)`.
pub fn show_with_interval(shown: Shown, unit: Unit, v: Option<f64>, i: Option<Interval>) -> String {
    with_interval(
        show_with_unit(shown, unit, v),
        shown,
        i.filter(|_| v.is_some()),
    )
}

/// A figure's number with its shown unit: `17.5 s`, `8.5 %`, `64`.
pub fn show_with_unit(shown: Shown, unit: Unit, v: Option<f64>) -> String {
    let number = show(shown, v);
    match shown.symbol(unit) {
        "" => number,
        symbol => format!("{number} {symbol}"),
    }
}

/// A level figure of `level` as a report's table cell: its number with
/// its interval (`2.76 (2.70–2.80)`), or its text.
pub fn level_cell(metric: &LevelMetric, level: &LevelSummary) -> String {
    match metric.read {
        Reading::Number(read) => {
            let v = read(level);
            let i = metric.interval_of(level).filter(|_| v.is_some());
            with_interval(show(metric.shown, v), metric.shown, i)
        }
        Reading::Text(read) => read(level),
    }
}

/// A level figure of `level` as a cell of a narrow table (the one `bench`
/// prints on stderr): its number, with its interval only when `interval`.
pub fn level_cell_narrow(metric: &LevelMetric, level: &LevelSummary, interval: bool) -> String {
    match metric.read {
        Reading::Number(read) if !interval => show(metric.shown, read(level)),
        _ => level_cell(metric, level),
    }
}

/// A row of the class summary table: its figures' numbers (each with its
/// interval) joined by ` / `, then the unit of the first (`17.5
/// (16.0–19.2) / 60.0 (51.4–72.3) s`).
pub fn class_row(figures: &[&ClassMetric], summary: &ClassroomSummary) -> String {
    let numbers: Vec<String> = figures
        .iter()
        .map(|m| {
            let v = (m.read)(summary);
            let i = m.interval_of(summary).filter(|_| v.is_some());
            with_interval(show(m.shown, v), m.shown, i)
        })
        .collect();
    let unit = figures.first().map_or("", |m| m.shown.symbol(m.unit));
    if unit.is_empty() {
        numbers.join(" / ")
    } else {
        format!("{} {unit}", numbers.join(" / "))
    }
}

/// An optional count.
pub fn opt_count(v: Option<u64>) -> String {
    v.map_or_else(|| MISSING.to_string(), |v| v.to_string())
}

/// Escapes text for XML and HTML content and attribute values. Control
/// characters other than tab and newline are dropped, as XML forbids them.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Makes text safe inside a Markdown table cell or paragraph: no line
/// breaks, pipes escaped, and HTML-significant characters escaped so that a
/// server's error message cannot inject markup into release notes.
pub fn md_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\r' | '\n' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` with its first letter in upper case, for headings.
pub fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Shortens `text` to at most `max` characters, ending with `…` when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_hides_negative_zero_and_nan() {
        assert_eq!(fixed(-0.04, 1), "0.0");
        assert_eq!(fixed(-0.06, 1), "-0.1");
        assert_eq!(fixed(f64::NAN, 1), MISSING);
        assert_eq!(fixed(f64::INFINITY, 2), MISSING);
        assert_eq!(fixed(1234.56, 1), "1234.6");
    }

    #[test]
    fn seconds_precision_follows_size() {
        assert_eq!(seconds(0.4123), "0.41");
        assert_eq!(seconds(17.54), "17.5");
        assert_eq!(seconds(660.2), "660");
        assert_eq!(percent(0.085), "8.5");
    }

    #[test]
    fn intervals_read_as_people_write_them() {
        let i = |lo, hi| Some(Interval { lo, hi });
        assert_eq!(
            show_with_interval(
                Shown::Seconds,
                Unit::Seconds,
                Some(29.5),
                i(Some(27.8), Some(31.3))
            ),
            "29.5 s (27.8–31.3)"
        );
        assert_eq!(
            interval_text(Shown::Seconds, i(Some(2.7), None)),
            "(≥ 2.70)"
        );
        assert_eq!(
            interval_text(Shown::Percent, i(None, Some(0.031))),
            "(≤ 3.1)"
        );
        assert_eq!(interval_text(Shown::Seconds, i(None, None)), "(no bound)");
        assert_eq!(interval_text(Shown::Seconds, None), "");
        assert_eq!(
            show_with_interval(Shown::Minutes, Unit::Seconds, Some(660.0), None),
            "11.0 min"
        );
    }

    #[test]
    fn escaping() {
        assert_eq!(xml_escape("a<b & 'c'\u{1}"), "a&lt;b &amp; &#39;c&#39;");
        assert_eq!(md_escape("x|y\n<z>"), "x\\|y &lt;z&gt;");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
        assert_eq!(upper_first("short ×8"), "Short ×8");
        assert_eq!(upper_first(""), "");
    }
}
