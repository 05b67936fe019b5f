//! Fitting the step-time model to observations: the expert share by a
//! search over candidates, the linear coefficients by weighted least squares
//! kept non-negative, uncertainties by standard error and bootstrap, and
//! the terms the data cannot tell apart fixed at a stated default.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::design::{prefill_light, structural_fixes};
use super::lsq::weighted_least_squares;
use super::model::{Coefficients, PARAMS};
use super::observe::{Observation, ObservationKind};

/// How a coefficient was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Fitted from the data.
    Fitted,
    /// Fitted, but the best non-negative value is 0.
    AtZero,
    /// The runs cannot tell it apart from other terms: fixed at the stated
    /// default.
    Fixed,
}

/// One coefficient of the fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamFit {
    /// Name (`step_s`, …).
    pub name: &'static str,
    /// Value, seconds per unit.
    pub value: f64,
    /// Standard error from the residuals, seconds per unit.
    pub std_err: Option<f64>,
    /// Standard deviation over bootstrap resamples of the requests, seconds
    /// per unit.
    pub bootstrap_sd: Option<f64>,
    /// Fitted, at zero, or fixed.
    pub status: Status,
    /// Why it was fixed, when it was.
    pub note: Option<String>,
}

/// The fitted model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// The coefficients.
    pub coefficients: Coefficients,
    /// Experts each token reaches as a share of all (`None`: dense).
    pub expert_share: Option<f64>,
    /// Each coefficient with its uncertainty and status.
    pub params: Vec<ParamFit>,
    /// Root mean square of the relative residuals (fraction).
    pub rms_relative_error: f64,
    /// Observations used (decode + TTFT).
    pub observations: usize,
    /// Of which decode observations.
    pub decode_observations: usize,
    /// Notes on what the data could not tell.
    pub notes: Vec<String>,
    /// The fixed coefficients (value and reason), in row order.
    #[serde(skip)]
    pub fixed: [Option<(f64, String)>; PARAMS],
}

/// Fit settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FitOptions {
    /// Bootstrap resamples (0: none).
    pub bootstrap_rounds: usize,
    /// Seed of the resampling.
    pub seed: u64,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            bootstrap_rounds: 200,
            seed: 1,
        }
    }
}

/// An MoE share must explain at least this much more of the residual than
/// a dense model (with its compute cost per decoded sequence) to be kept,
/// fraction of the dense residual: at small shares the expert curve
/// `1 - (1 - q)^n` is nearly linear in the batch and could stand in for a
/// compute cost, which would report a dense model as an MoE.
const MOE_GAIN: f64 = 0.10;

/// A solution of the linear part for one expert share.
#[derive(Debug, Clone)]
pub(crate) struct Linear {
    pub coef: [f64; PARAMS],
    pub std_err: [Option<f64>; PARAMS],
    pub status: [Status; PARAMS],
    pub rss: f64,
}

/// Fits the model. Errors name what is missing.
pub fn fit(obs: &[Observation], options: FitOptions) -> Result<Fit, String> {
    let decode = obs
        .iter()
        .filter(|o| o.kind == ObservationKind::Decode)
        .count();
    if decode == 0 {
        return Err(
            "no successful request with two output tokens or more: nothing times a step".into(),
        );
    }
    let total = obs.len();
    let (fixed, mut notes) = structural_fixes(obs);
    let (share, linear) = best_share(obs, &fixed, &mut Vec::new())?;
    // Second pass: a decode window that mostly timed other requests'
    // prefills says little about decoding and much about how those prefills
    // were spread over it, which the client cannot see; idle-server TTFTs
    // time the prefill directly. Fit again without such windows.
    let kept = prefill_light(obs, &Coefficients::from_array(linear.coef), share);
    let obs: &[Observation] = &kept;
    let (share, linear) = best_share(obs, &fixed, &mut notes)?;
    let boot = bootstrap(obs, share, &fixed, options);
    let mut params = Vec::new();
    let mut coef = linear.coef;
    let mut final_fixed = fixed.clone();
    for j in 0..PARAMS {
        let mut status = linear.status[j];
        let mut note = fixed[j].as_ref().map(|(_, why)| why.clone());
        if status == Status::Fitted && linear.std_err[j].is_none() {
            status = Status::Fixed;
            coef[j] = 0.0;
            let why =
                "cannot be told apart from the other terms in these runs: fixed at 0".to_string();
            final_fixed[j] = Some((0.0, why.clone()));
            note = Some(why);
        }
        params.push(ParamFit {
            name: Coefficients::NAMES[j],
            value: coef[j],
            std_err: linear.std_err[j],
            bootstrap_sd: boot.as_ref().map(|b| b[j]),
            status,
            note,
        });
    }
    let coefficients = Coefficients::from_array(coef);
    let rms = rms_relative(obs, &coefficients, share);
    if obs.len() < total {
        notes.push(format!(
            "{} decode windows that were mostly other requests' prefill were left out of the fit",
            total - obs.len()
        ));
    }
    if share.is_none() && fixed[1].is_none() {
        notes.push("no expert-coverage curve in the data: fitted as a dense model".into());
    }
    Ok(Fit {
        coefficients,
        expert_share: share,
        params,
        rms_relative_error: rms,
        observations: obs.len(),
        decode_observations: obs
            .iter()
            .filter(|o| o.kind == ObservationKind::Decode)
            .count(),
        notes,
        fixed: final_fixed,
    })
}

/// Candidate expert shares: dense, then 1/2 … 1/256.
fn candidates() -> Vec<Option<f64>> {
    std::iter::once(None)
        .chain((1..=8).map(|k| Some(0.5f64.powi(k))))
        .collect()
}

fn best_share(
    obs: &[Observation],
    fixed: &[Option<(f64, String)>; PARAMS],
    notes: &mut Vec<String>,
) -> Result<(Option<f64>, Linear), String> {
    let dense = solve(obs, None, fixed).ok_or("the observations do not determine the model")?;
    if fixed[1].is_some() {
        return Ok((None, dense));
    }
    let mut best: Option<(f64, Linear)> = None;
    for q in candidates().into_iter().flatten() {
        if let Some(l) = solve(obs, Some(q), fixed) {
            if best.as_ref().is_none_or(|(_, b)| l.rss < b.rss) {
                best = Some((q, l));
            }
        }
    }
    let Some((q, _)) = best else {
        return Ok((None, dense));
    };
    let q = refine_share(obs, fixed, q);
    let Some(moe) = solve(obs, Some(q), fixed) else {
        return Ok((None, dense));
    };
    let expert_clear = moe.std_err[1].is_some_and(|se| se < 0.5 * moe.coef[1]);
    if moe.rss < dense.rss * (1.0 - MOE_GAIN) && moe.coef[1] > 0.0 && expert_clear {
        notes.push(format!(
            "expert share per token fitted at {q:.4} (1 in {:.1}): residual {:.3e} against {:.3e} for a dense model",
            1.0 / q,
            moe.rss,
            dense.rss
        ));
        Ok((Some(q), moe))
    } else {
        Ok((None, dense))
    }
}

/// Golden-section search of the share on a log scale around a candidate.
fn refine_share(obs: &[Observation], fixed: &[Option<(f64, String)>; PARAMS], q: f64) -> f64 {
    let rss = |lq: f64| solve(obs, Some(lq.exp()), fixed).map_or(f64::INFINITY, |l| l.rss);
    let (mut a, mut b) = ((q / 2.0).ln(), (q * 2.0).min(0.5).ln());
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = b - g * (b - a);
    let mut d = a + g * (b - a);
    let (mut fc, mut fd) = (rss(c), rss(d));
    for _ in 0..24 {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = rss(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = rss(d);
        }
    }
    ((a + b) / 2.0).exp()
}

/// Weighted (relative) least squares with the fixed terms moved to the
/// left side and negative coefficients pinned at zero one at a time.
pub(crate) fn solve(
    obs: &[Observation],
    share: Option<f64>,
    fixed: &[Option<(f64, String)>; PARAMS],
) -> Option<Linear> {
    let rows: Vec<[f64; PARAMS]> = obs.iter().map(|o| o.terms.row(share)).collect();
    let mut status = [Status::Fitted; PARAMS];
    let mut pinned = [false; PARAMS];
    for j in 0..PARAMS {
        if fixed[j].is_some() {
            status[j] = Status::Fixed;
            pinned[j] = true;
        }
    }
    if share.is_none() && fixed[1].is_none() {
        pinned[1] = true;
        status[1] = Status::AtZero;
    }
    loop {
        let free: Vec<usize> = (0..PARAMS).filter(|&j| !pinned[j]).collect();
        if free.is_empty() {
            return None;
        }
        let mut x = Vec::with_capacity(rows.len());
        let mut y = Vec::with_capacity(rows.len());
        let mut w = Vec::with_capacity(rows.len());
        for (o, row) in obs.iter().zip(&rows) {
            let known: f64 = (0..PARAMS)
                .filter(|&j| pinned[j])
                .map(|j| row[j] * fixed[j].as_ref().map_or(0.0, |f| f.0))
                .sum();
            x.push(free.iter().map(|&j| row[j]).collect::<Vec<_>>());
            y.push(o.seconds - known);
            w.push(1.0 / o.seconds.max(1e-9).powi(2));
        }
        let sol = weighted_least_squares(&x, &y, &w)?;
        let most_negative = free
            .iter()
            .zip(&sol.coef)
            .filter(|(_, c)| **c < 0.0)
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(j, _)| *j);
        if let Some(j) = most_negative {
            pinned[j] = true;
            status[j] = Status::AtZero;
            continue;
        }
        let mut coef = [0.0; PARAMS];
        let mut std_err = [None; PARAMS];
        for (j, f) in fixed.iter().enumerate() {
            if let Some((v, _)) = f {
                coef[j] = *v;
            }
        }
        for (k, &j) in free.iter().enumerate() {
            coef[j] = sol.coef[k];
            std_err[j] = sol.std_err[k].is_finite().then_some(sol.std_err[k]);
        }
        return Some(Linear {
            coef,
            std_err,
            status,
            rss: sol.rss,
        });
    }
}

fn bootstrap(
    obs: &[Observation],
    share: Option<f64>,
    fixed: &[Option<(f64, String)>; PARAMS],
    options: FitOptions,
) -> Option<[f64; PARAMS]> {
    if options.bootstrap_rounds < 2 || obs.len() < 3 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let mut samples: Vec<[f64; PARAMS]> = Vec::new();
    let mut pick = Vec::with_capacity(obs.len());
    for _ in 0..options.bootstrap_rounds {
        pick.clear();
        pick.extend((0..obs.len()).map(|_| obs[rng.gen_range(0..obs.len())].clone()));
        if let Some(l) = solve(&pick, share, fixed) {
            samples.push(l.coef);
        }
    }
    if samples.len() < 2 {
        return None;
    }
    let n = samples.len() as f64;
    let mut sd = [0.0; PARAMS];
    for (j, slot) in sd.iter_mut().enumerate() {
        let mean = samples.iter().map(|s| s[j]).sum::<f64>() / n;
        let var = samples.iter().map(|s| (s[j] - mean).powi(2)).sum::<f64>() / (n - 1.0);
        *slot = var.sqrt();
    }
    Some(sd)
}

/// Root mean square relative residual of a model over observations.
pub fn rms_relative(obs: &[Observation], c: &Coefficients, share: Option<f64>) -> f64 {
    if obs.is_empty() {
        return 0.0;
    }
    let s: f64 = obs
        .iter()
        .map(|o| ((o.seconds - c.predict(&o.terms, share)) / o.seconds.max(1e-9)).powi(2))
        .sum();
    (s / obs.len() as f64).sqrt()
}
