//! Open-loop load: requests started at a rate, whatever the server does.
//!
//! A rate level's requests start at scheduled instants: evenly spaced
//! (`constant`), with exponential gaps (`poisson`), or with gamma gaps
//! (`gamma`), each of mean `1 / rate` seconds. The gamma's shape is the
//! burstiness, as `vllm bench serve --burstiness`: 1 is Poisson, below 1
//! burstier, above 1 steadier (the gaps' coefficient of variation is
//! `1 / sqrt(burstiness)`). The schedule is a plain function of the rate,
//! the count and a seed, so a level can be repeated exactly.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use codendum_core::error::ConfigError;

/// How a rate level's requests arrive (`--arrival`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// Evenly spaced, `1 / rate` apart.
    Constant,
    /// Exponential gaps of mean `1 / rate` (a Poisson process).
    Poisson,
    /// Gamma gaps of mean `1 / rate` and shape `burstiness` (> 0).
    Gamma {
        /// The gamma's shape: 1 is Poisson, below 1 burstier.
        burstiness: f64,
    },
}

impl Arrival {
    /// Parses `--arrival` with `--burstiness` (used by `gamma` only; a
    /// burstiness with another arrival is refused, naming the flag).
    pub fn parse(name: &str, burstiness: Option<f64>) -> Result<Arrival, ConfigError> {
        if let Some(b) = burstiness {
            if !(b.is_finite() && b > 0.0) {
                return Err(ConfigError::invalid(
                    "--burstiness",
                    format!("{b} is not a number above 0 (1 is Poisson, below 1 burstier)"),
                ));
            }
        }
        match (name.trim(), burstiness) {
            ("constant", None) => Ok(Arrival::Constant),
            ("poisson", None) => Ok(Arrival::Poisson),
            ("gamma", b) => Ok(Arrival::Gamma {
                burstiness: b.unwrap_or(1.0),
            }),
            ("constant" | "poisson", Some(_)) => Err(ConfigError::invalid(
                "--burstiness",
                "applies to --arrival gamma only",
            )),
            (other, _) => Err(ConfigError::invalid(
                "--arrival",
                format!("unknown arrival {other:?}; valid: constant, poisson, gamma"),
            )),
        }
    }

    /// The name written in results: `constant`, `poisson`, `gamma(0.5)`.
    pub fn name(&self) -> String {
        match self {
            Arrival::Constant => "constant".to_string(),
            Arrival::Poisson => "poisson".to_string(),
            Arrival::Gamma { burstiness } => format!("gamma({burstiness})"),
        }
    }
}

/// The start offsets of `count` requests at `rate` per second, seconds from
/// the level's start: the first at 0, each next one a gap later.
pub fn schedule(arrival: Arrival, rate: f64, count: u64, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mean = 1.0 / rate;
    let mut t = 0.0;
    let mut out = Vec::with_capacity(count as usize);
    for i in 0..count {
        if i > 0 {
            t += match arrival {
                Arrival::Constant => mean,
                Arrival::Poisson => exponential(&mut rng, mean),
                Arrival::Gamma { burstiness } => gamma(&mut rng, burstiness, mean / burstiness),
            };
        }
        out.push(t);
    }
    out
}

/// An exponential draw of mean `mean`.
fn exponential(rng: &mut impl Rng, mean: f64) -> f64 {
    // 1 - u is in (0, 1]: its logarithm is finite.
    -(1.0 - rng.gen::<f64>()).ln() * mean
}

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut impl Rng) -> f64 {
    let u1 = 1.0 - rng.gen::<f64>();
    let u2 = rng.gen::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A gamma draw of shape `k` and scale `theta` (Marsaglia and Tsang; a
/// shape below 1 is boosted by `u^(1/k)`).
fn gamma(rng: &mut impl Rng, k: f64, theta: f64) -> f64 {
    if k < 1.0 {
        let u = 1.0 - rng.gen::<f64>();
        return gamma(rng, k + 1.0, theta) * u.powf(1.0 / k);
    }
    let d = k - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = 1.0 - rng.gen::<f64>();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v * theta;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(s: &[f64]) -> Vec<f64> {
        s.windows(2).map(|w| w[1] - w[0]).collect()
    }

    fn mean_cv(g: &[f64]) -> (f64, f64) {
        let n = g.len() as f64;
        let mean = g.iter().sum::<f64>() / n;
        let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn constant_arrivals_are_evenly_spaced() {
        let s = schedule(Arrival::Constant, 4.0, 5, 1);
        assert_eq!(s, [0.0, 0.25, 0.5, 0.75, 1.0]);
    }

    #[test]
    fn random_gaps_have_the_rates_mean_and_their_spread() {
        // 20,000 gaps at 2 per second: mean 0.5 s; the coefficient of
        // variation is 1 for Poisson and 1/sqrt(k) for a gamma of shape k
        // (2 for k = 0.25, 0.5 for k = 4). Tolerances are 4 standard errors.
        let n = 20_001;
        for (arrival, cv) in [
            (Arrival::Poisson, 1.0),
            (Arrival::Gamma { burstiness: 0.25 }, 2.0),
            (Arrival::Gamma { burstiness: 4.0 }, 0.5),
        ] {
            let (mean, got) = mean_cv(&gaps(&schedule(arrival, 2.0, n, 7)));
            let se_mean = 0.5 * cv / (n as f64).sqrt();
            assert!(
                (mean - 0.5).abs() < 4.0 * se_mean,
                "{arrival:?}: mean {mean}"
            );
            assert!(
                (got - cv).abs() < 0.08 * cv,
                "{arrival:?}: cv {got}, want {cv}"
            );
        }
    }

    #[test]
    fn a_seed_repeats_the_schedule_and_another_changes_it() {
        let a = schedule(Arrival::Poisson, 1.0, 50, 3);
        assert_eq!(a, schedule(Arrival::Poisson, 1.0, 50, 3));
        assert_ne!(a, schedule(Arrival::Poisson, 1.0, 50, 4));
        assert!(a.windows(2).all(|w| w[1] >= w[0]));
    }

    #[test]
    fn bad_arrivals_name_their_flag() {
        let e = Arrival::parse("gamma", Some(-1.0)).unwrap_err().to_string();
        assert!(e.contains("--burstiness"), "{e}");
        let e = Arrival::parse("poisson", Some(0.5))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--burstiness") && e.contains("gamma"), "{e}");
        let e = Arrival::parse("bursty", None).unwrap_err().to_string();
        assert!(e.contains("--arrival"), "{e}");
        assert_eq!(
            Arrival::parse("gamma", Some(0.5)).unwrap().name(),
            "gamma(0.5)"
        );
    }
}
