//! Axis ranges and "nice" ticks (steps of 1, 2 or 5 times a power of ten).

use crate::format::fixed;

/// A tick layout along one axis: the range it spans and the tick values.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticks {
    /// Lower end of the axis, a multiple of `step`.
    pub min: f64,
    /// Upper end of the axis, a multiple of `step`.
    pub max: f64,
    /// Distance between ticks (1, 2 or 5 × 10^k).
    pub step: f64,
    /// Tick values from `min` to `max` inclusive.
    pub values: Vec<f64>,
}

/// The step of the form 1, 2 or 5 × 10^k nearest to `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let exp = raw.log10().floor();
    let base = 10f64.powf(exp);
    let frac = raw / base;
    // The 1-2-5 value nearest to the raw step (geometric midpoints), so the
    // tick count stays close to the target rather than always below it.
    let nice = if frac < 1.5 {
        1.0
    } else if frac < 3.2 {
        2.0
    } else if frac < 7.1 {
        5.0
    } else {
        10.0
    };
    nice * base
}

/// Ticks covering `[lo, hi]` with at most about `target` intervals.
/// Non-finite or reversed bounds fall back to `[0, 1]`; an empty span is
/// widened so that the axis never has zero length.
pub fn nice_ticks(lo: f64, hi: f64, target: usize) -> Ticks {
    // Beyond ±1e15 nothing we chart is meaningful; clamping keeps every
    // span and coordinate finite.
    const LIMIT: f64 = 1e15;
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() && lo <= hi {
        (lo.clamp(-LIMIT, LIMIT), hi.clamp(-LIMIT, LIMIT))
    } else {
        (0.0, 1.0)
    };
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        // One value: span from zero to it (or to 1 when it is zero).
        if lo > 0.0 {
            (lo, hi) = (0.0, hi * 1.2);
        } else if lo < 0.0 {
            (lo, hi) = (lo * 1.2, 0.0);
        } else {
            (lo, hi) = (0.0, 1.0);
        }
    }
    let target = target.max(1) as f64;
    let step = nice_step((hi - lo) / target);
    let min = (lo / step).floor() * step;
    let max = (hi / step).ceil() * step;
    let count = ((max - min) / step).round() as usize;
    let values = (0..=count.min(1000))
        .map(|i| clean(min + i as f64 * step))
        .collect();
    Ticks {
        min: clean(min),
        max: clean(max),
        step,
        values,
    }
}

/// Removes floating noise such as 0.30000000000000004 and -0.0.
fn clean(v: f64) -> f64 {
    let r = (v * 1e9).round() / 1e9;
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

/// Decimals needed to tell ticks `step` apart.
pub fn tick_decimals(step: f64) -> usize {
    if !step.is_finite() || step <= 0.0 || step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    }
}

/// A tick label: plain digits, with a `k` suffix for steps of 1000 or more.
pub fn tick_label(v: f64, step: f64) -> String {
    if step >= 1000.0 && v.abs() >= 1000.0 {
        let k = v / 1000.0;
        format!("{}k", fixed(k, tick_decimals(step / 1000.0)))
    } else {
        fixed(v, tick_decimals(step))
    }
}

/// The finite minimum and maximum of `values`, if any.
pub fn finite_range(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_five() {
        assert_eq!(nice_step(0.7), 0.5);
        assert_eq!(nice_step(1.3), 1.0);
        assert_eq!(nice_step(1.6), 2.0);
        assert_eq!(nice_step(4.0), 5.0);
        assert_eq!(nice_step(8.0), 10.0);
        assert_eq!(nice_step(0.017), 0.02);
        assert_eq!(nice_step(f64::NAN), 1.0);
    }

    #[test]
    fn ticks_cover_range() {
        let t = nice_ticks(0.0, 147.0, 5);
        assert_eq!(t.step, 20.0);
        assert_eq!(t.max, 160.0);
        assert_eq!(t.values.len(), 9);
        let t = nice_ticks(0.0, 120.0, 5);
        assert_eq!(t.values, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0, 120.0]);
        let t = nice_ticks(1.0, 40.0, 8);
        assert_eq!(t.step, 5.0);
        assert_eq!(t.min, 0.0);
        assert_eq!(t.max, 40.0);
        let t = nice_ticks(0.0, 0.3, 3);
        assert_eq!(t.values, vec![0.0, 0.1, 0.2, 0.3]);
    }

    #[test]
    fn degenerate_ranges_do_not_collapse() {
        let t = nice_ticks(5.0, 5.0, 5);
        assert!(t.max > t.min);
        assert!(t.min <= 5.0 && t.max >= 5.0);
        let t = nice_ticks(0.0, 0.0, 5);
        assert_eq!((t.min, t.max), (0.0, 1.0));
        let t = nice_ticks(f64::NAN, 3.0, 5);
        assert_eq!((t.min, t.max), (0.0, 1.0));
    }

    #[test]
    fn labels() {
        assert_eq!(tick_label(0.2, 0.1), "0.2");
        assert_eq!(tick_label(25.0, 5.0), "25");
        assert_eq!(tick_label(15000.0, 5000.0), "15k");
        assert_eq!(tick_label(2500.0, 500.0), "2500");
    }
}
