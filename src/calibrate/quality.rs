//! How good a fit is, level by level: the measured mean time per output
//! token and idle-server TTFT beside the fitted model's, and beside a fit
//! that never saw the level (held out).

use serde::Serialize;

use super::fit::{solve, Fit};
use super::model::Coefficients;
use super::observe::{Observation, ObservationKind};

/// One level's measured and predicted times, seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelCheck {
    /// `shape@N`.
    pub level: String,
    /// Decode observations (requests) in the level.
    pub requests: usize,
    /// Mean measured time per output token, seconds.
    pub tpot_measured_s: f64,
    /// The fitted model's, seconds.
    pub tpot_fitted_s: f64,
    /// A fit without this level's requests, seconds (`None`: the others
    /// alone do not determine the model).
    pub tpot_held_out_s: Option<f64>,
    /// Mean measured TTFT of the level's requests that met an idle server,
    /// seconds.
    pub ttft_measured_s: Option<f64>,
    /// The fitted model's, seconds.
    pub ttft_fitted_s: Option<f64>,
    /// A fit without this level, seconds.
    pub ttft_held_out_s: Option<f64>,
}

impl LevelCheck {
    /// Held-out TPOT error, fraction (signed: predicted over measured − 1).
    pub fn tpot_held_out_error(&self) -> Option<f64> {
        self.tpot_held_out_s.map(|p| p / self.tpot_measured_s - 1.0)
    }
}

fn mean_of(obs: &[&Observation], f: impl Fn(&Observation) -> f64) -> Option<f64> {
    (!obs.is_empty()).then(|| obs.iter().map(|o| f(o)).sum::<f64>() / obs.len() as f64)
}

/// The check of every level in `labels` order.
pub fn level_checks(obs: &[Observation], fit: &Fit, labels: &[String]) -> Vec<LevelCheck> {
    let share = fit.expert_share;
    let mut out = Vec::new();
    for (level, label) in labels.iter().enumerate() {
        let of_kind = |k: ObservationKind| -> Vec<&Observation> {
            obs.iter()
                .filter(|o| o.level == level && o.kind == k)
                .collect()
        };
        let decode = of_kind(ObservationKind::Decode);
        let ttft = of_kind(ObservationKind::Ttft);
        let Some(tpot_measured_s) = mean_of(&decode, |o| o.seconds) else {
            continue;
        };
        let rest: Vec<Observation> = obs.iter().filter(|o| o.level != level).cloned().collect();
        let held_out = solve(&rest, share, &fit.fixed)
            .filter(|l| {
                l.std_err
                    .iter()
                    .zip(&fit.params)
                    .all(|(se, p)| se.is_some() || p.status != super::fit::Status::Fitted)
            })
            .map(|l| Coefficients::from_array(l.coef));
        let predict =
            |c: &Coefficients, set: &[&Observation]| mean_of(set, |o| c.predict(&o.terms, share));
        out.push(LevelCheck {
            level: label.clone(),
            requests: decode.len(),
            tpot_measured_s,
            tpot_fitted_s: predict(&fit.coefficients, &decode).unwrap_or(0.0),
            tpot_held_out_s: held_out.as_ref().and_then(|c| predict(c, &decode)),
            ttft_measured_s: mean_of(&ttft, |o| o.seconds),
            ttft_fitted_s: predict(&fit.coefficients, &ttft),
            ttft_held_out_s: held_out.as_ref().and_then(|c| predict(c, &ttft)),
        });
    }
    out
}
