//! One quantity of a class as an empirical distribution: a constant, a
//! quantile table (probability → value, linear in between) or the measured
//! samples themselves, always with where it came from and how many
//! observations stand behind it.
//!
//! Sampling is inverse-CDF on a uniform draw from the caller's seeded
//! random source: a quantile table interpolates linearly between its
//! points, samples are drawn uniformly (each observation equally likely),
//! so a class draws exactly what was recorded, tails included, and never a
//! normal fitted to a mean.

use rand::Rng;

/// The shape of a [`Distribution`].
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Always this value.
    Value(f64),
    /// `(p, value)` points: `p` rises strictly from 0 to 1, values never
    /// fall; the value at probability `u` is interpolated linearly between
    /// the two points around it.
    Quantiles(Vec<(f64, f64)>),
    /// Observations, sorted ascending, each drawn with equal probability.
    Samples(Vec<f64>),
}

/// An empirical distribution of one quantity (its unit is in the field's
/// name: `_s` seconds, `_tokens` tokens, counts otherwise).
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    /// Where it comes from, in a few words (a file, a measurement, a rule).
    pub source: String,
    /// Observations behind it (0: stated, not measured).
    pub count: u64,
    /// Its values.
    pub shape: Shape,
}

impl Distribution {
    /// A constant.
    pub fn value(source: impl Into<String>, value: f64) -> Self {
        Distribution {
            source: source.into(),
            count: 0,
            shape: Shape::Value(value),
        }
    }

    /// Uniform between `low` and `high` (a two-point quantile table).
    pub fn uniform(source: impl Into<String>, low: f64, high: f64) -> Self {
        Distribution {
            source: source.into(),
            count: 0,
            shape: Shape::Quantiles(vec![(0.0, low), (1.0, high)]),
        }
    }

    /// The observations themselves when there are at most `keep` of them,
    /// else a quantile table of `points` (at least the minimum, the
    /// quartiles, the deciles, P95, P99 and the maximum). Non-finite
    /// values are dropped; `None` when nothing is left.
    pub fn from_observations(
        source: impl Into<String>,
        values: &[f64],
        keep: usize,
    ) -> Option<Self> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        let count = v.len() as u64;
        v.sort_by(f64::total_cmp);
        let shape = if v.len() <= keep {
            Shape::Samples(v)
        } else {
            let points = TABLE_POINTS
                .iter()
                .map(|&p| (p, crate::stats::percentile(&v, p * 100.0).unwrap_or(v[0])))
                .collect();
            Shape::Quantiles(points)
        };
        Some(Distribution {
            source: source.into(),
            count,
            shape,
        })
    }

    /// The value at probability `u` (0..=1; clamped): the inverse of the
    /// distribution function.
    pub fn quantile(&self, u: f64) -> f64 {
        let u = if u.is_finite() {
            u.clamp(0.0, 1.0)
        } else {
            0.0
        };
        match &self.shape {
            Shape::Value(v) => *v,
            Shape::Quantiles(points) => interpolate(points, u),
            Shape::Samples(s) => {
                let i = ((u * s.len() as f64) as usize).min(s.len().saturating_sub(1));
                s.get(i).copied().unwrap_or(0.0)
            }
        }
    }

    /// One draw.
    pub fn sample(&self, rng: &mut impl Rng) -> f64 {
        match &self.shape {
            Shape::Value(v) => *v,
            Shape::Quantiles(points) => interpolate(points, rng.gen::<f64>()),
            Shape::Samples(s) => s[rng.gen_range(0..s.len())],
        }
    }

    /// One draw rounded to a whole number ≥ 0 (counts, tokens).
    pub fn sample_count(&self, rng: &mut impl Rng) -> u64 {
        self.sample(rng).round().max(0.0) as u64
    }

    /// One draw at or above `floor`: the distribution truncated below it
    /// (a uniform draw over the probabilities whose values reach `floor`).
    /// When no value reaches it, the largest value.
    pub fn sample_at_least(&self, floor: f64, rng: &mut impl Rng) -> f64 {
        let from = self.cdf(floor);
        let u = from + rng.gen::<f64>() * (1.0 - from);
        self.quantile(u).max(floor.min(self.max()))
    }

    /// The share of the distribution below `x` (0..=1).
    pub fn cdf(&self, x: f64) -> f64 {
        match &self.shape {
            Shape::Value(v) => f64::from(u8::from(*v < x)),
            Shape::Samples(s) => s.iter().filter(|v| **v < x).count() as f64 / s.len() as f64,
            Shape::Quantiles(points) => {
                if x <= points[0].1 {
                    return 0.0;
                }
                for w in points.windows(2) {
                    let ((p0, v0), (p1, v1)) = (w[0], w[1]);
                    if x <= v1 {
                        if v1 <= v0 {
                            return p0;
                        }
                        return p0 + (p1 - p0) * (x - v0) / (v1 - v0);
                    }
                }
                1.0
            }
        }
    }

    /// The mean.
    pub fn mean(&self) -> f64 {
        match &self.shape {
            Shape::Value(v) => *v,
            Shape::Samples(s) => s.iter().sum::<f64>() / s.len() as f64,
            // The mean of a piecewise-linear quantile function: each
            // segment's average value times its probability.
            Shape::Quantiles(points) => points
                .windows(2)
                .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
                .sum(),
        }
    }

    /// The smallest value.
    pub fn min(&self) -> f64 {
        self.quantile(0.0)
    }

    /// The largest value.
    pub fn max(&self) -> f64 {
        self.quantile(1.0)
    }

    /// Checks the shape; the error says what is wrong in a few words
    /// (the caller names the field).
    pub fn check(&self, min: f64, max: f64) -> Result<(), String> {
        let in_range = |x: f64| x.is_finite() && x >= min && x <= max;
        let range = || {
            if max.is_finite() {
                format!("between {min} and {max}")
            } else {
                format!("at least {min}")
            }
        };
        match &self.shape {
            Shape::Value(v) if !in_range(*v) => Err(format!("value {v} is not {}", range())),
            Shape::Value(_) => Ok(()),
            Shape::Samples(s) if s.is_empty() => Err("samples is empty".into()),
            Shape::Samples(s) => match s.iter().position(|x| !in_range(*x)) {
                Some(i) => Err(format!("samples[{i}] = {} is not {}", s[i], range())),
                None => Ok(()),
            },
            Shape::Quantiles(points) => check_quantiles(points, &in_range, &range),
        }
    }
}

/// The probabilities of a learned quantile table.
pub const TABLE_POINTS: [f64; 14] = [
    0.0, 0.05, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.75, 0.9, 0.95, 0.99, 1.0,
];

fn check_quantiles(
    points: &[(f64, f64)],
    in_range: &dyn Fn(f64) -> bool,
    range: &dyn Fn() -> String,
) -> Result<(), String> {
    if points.len() < 2 {
        return Err("quantiles needs at least two [p, value] points (p = 0 and p = 1)".into());
    }
    if points[0].0 != 0.0 || points[points.len() - 1].0 != 1.0 {
        return Err("quantiles must start at p = 0 and end at p = 1".into());
    }
    for (i, w) in points.windows(2).enumerate() {
        // NaN never rises either.
        if w[1].0.partial_cmp(&w[0].0) != Some(std::cmp::Ordering::Greater) {
            return Err(format!("quantiles[{}]: p must rise strictly", i + 1));
        }
        if w[1].1 < w[0].1 {
            return Err(format!(
                "quantiles[{}]: a value below the one before it",
                i + 1
            ));
        }
    }
    match points.iter().position(|(_, v)| !in_range(*v)) {
        Some(i) => Err(format!(
            "quantiles[{i}]: value {} is not {}",
            points[i].1,
            range()
        )),
        None => Ok(()),
    }
}

fn interpolate(points: &[(f64, f64)], u: f64) -> f64 {
    for w in points.windows(2) {
        let ((p0, v0), (p1, v1)) = (w[0], w[1]);
        if u <= p1 {
            let f = if p1 > p0 { (u - p0) / (p1 - p0) } else { 0.0 };
            return v0 + f * (v1 - v0);
        }
    }
    points.last().map_or(0.0, |p| p.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> rand::rngs::StdRng {
        rand::rngs::StdRng::seed_from_u64(7)
    }

    #[test]
    fn a_quantile_table_interpolates_and_its_draws_follow_it() {
        let d = Distribution {
            source: "t".into(),
            count: 100,
            shape: Shape::Quantiles(vec![(0.0, 2.0), (0.5, 10.0), (0.9, 20.0), (1.0, 100.0)]),
        };
        assert!((d.quantile(0.25) - 6.0).abs() < 1e-9);
        assert!((d.quantile(0.95) - 60.0).abs() < 1e-9);
        assert!((d.cdf(15.0) - 0.7).abs() < 1e-12);
        // Mean: 0.5·6 + 0.4·15 + 0.1·60.
        assert!((d.mean() - 15.0).abs() < 1e-12);
        let mut r = rng();
        let mut draws: Vec<f64> = (0..20_000).map(|_| d.sample(&mut r)).collect();
        draws.sort_by(f64::total_cmp);
        let p = |q: f64| draws[(q * draws.len() as f64) as usize];
        assert!((p(0.5) - 10.0).abs() < 0.3, "{}", p(0.5));
        assert!((p(0.95) - 60.0).abs() < 3.0, "{}", p(0.95));
    }

    #[test]
    fn samples_are_drawn_as_recorded_and_truncation_keeps_the_tail() {
        let d = Distribution::from_observations("s", &[4.0, 1.0, 9.0], 10).unwrap();
        assert_eq!(d.shape, Shape::Samples(vec![1.0, 4.0, 9.0]));
        let mut r = rng();
        for _ in 0..100 {
            assert!([1.0, 4.0, 9.0].contains(&d.sample(&mut r)));
            assert!(d.sample_at_least(3.0, &mut r) >= 4.0);
        }
        assert_eq!(d.max(), 9.0);
        let big: Vec<f64> = (0..1000).map(f64::from).collect();
        let t = Distribution::from_observations("s", &big, 10).unwrap();
        assert_eq!(t.count, 1000);
        assert!(matches!(t.shape, Shape::Quantiles(ref p) if p.len() == TABLE_POINTS.len()));
        assert_eq!((t.min(), t.max()), (0.0, 999.0));
    }

    #[test]
    fn checks_say_what_is_wrong() {
        let q = |points: Vec<(f64, f64)>| Distribution {
            source: String::new(),
            count: 0,
            shape: Shape::Quantiles(points),
        };
        let e = q(vec![(0.0, 1.0)]).check(0.0, f64::INFINITY).unwrap_err();
        assert!(e.contains("two"), "{e}");
        let e = q(vec![(0.0, 5.0), (1.0, 2.0)])
            .check(0.0, f64::INFINITY)
            .unwrap_err();
        assert!(e.contains("quantiles[1]"), "{e}");
        let e = q(vec![(0.1, 5.0), (1.0, 6.0)])
            .check(0.0, f64::INFINITY)
            .unwrap_err();
        assert!(e.contains("p = 0"), "{e}");
        let e = Distribution::value("", -1.0).check(0.0, 1.0).unwrap_err();
        assert!(e.contains("between 0 and 1"), "{e}");
    }
}
