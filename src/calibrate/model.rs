//! The step-time model of `twin::model` written as a linear model in its
//! coefficients, for fitting:
//!
//! ```text
//! seconds = step_s · steps + expert_s · Σ weight · φ(tokens) + context_s · context_tokens
//!         + prefill_token_s · prefill_tokens + prefill_pair_s · prefill_pairs + path_s · path
//!         + decode_token_s · decode_tokens
//! φ(n) = 1 - (1 - share)^n        (share = experts per token / experts; dense: no term)
//! ```
//!
//! `step_s` is the fixed cost of a step plus the read of the weights every
//! step needs; the two are one number to any timing (both are paid once per
//! step), so the fit reports them together.

/// The coefficients, in [`Coefficients::NAMES`] order.
pub const PARAMS: usize = 7;

/// One expert-coverage term: a share of steps and the tokens each of them
/// held.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpertUse {
    /// Weight of the term (a share of the steps, or 1 for a whole step).
    pub weight: f64,
    /// Tokens in the step (fractional for a mean batch).
    pub tokens: f64,
}

/// The multipliers of each coefficient in one observation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Terms {
    /// Steps (multiplies `step_s`).
    pub steps: f64,
    /// Expert-coverage terms (multiply `expert_s` through φ).
    pub experts: Vec<ExpertUse>,
    /// Context tokens read (multiplies `context_s`).
    pub context_tokens: f64,
    /// Prompt tokens computed (multiplies `prefill_token_s`).
    pub prefill_tokens: f64,
    /// Prompt token pairs computed (multiplies `prefill_pair_s`).
    pub prefill_pairs: f64,
    /// 1 for a time to first token (multiplies `path_s`), else 0.
    pub path: f64,
    /// Sequences decoded per step (multiplies `decode_token_s`).
    pub decode_tokens: f64,
}

impl Terms {
    /// The design row for an expert share per token (`None`: dense).
    pub fn row(&self, share: Option<f64>) -> [f64; PARAMS] {
        let phi = |n: f64| match share {
            Some(q) => 1.0 - (1.0 - q).powf(n.max(0.0)),
            None => 0.0,
        };
        let experts = self.experts.iter().map(|e| e.weight * phi(e.tokens)).sum();
        [
            self.steps,
            experts,
            self.context_tokens,
            self.prefill_tokens,
            self.prefill_pairs,
            self.path,
            self.decode_tokens,
        ]
    }
}

/// Fitted (or fixed) coefficients, seconds per unit.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Coefficients {
    /// Seconds per step: fixed cost plus the weights every step reads.
    pub step_s: f64,
    /// Seconds to read all expert weights (a step reads the share φ).
    pub expert_s: f64,
    /// Seconds per context token read by a decoding sequence in one step.
    pub context_s: f64,
    /// Seconds per prompt token computed.
    pub prefill_token_s: f64,
    /// Seconds per prompt token pair computed (attention).
    pub prefill_pair_s: f64,
    /// Seconds of the path to the first token (network, HTTP, tokenising).
    pub path_s: f64,
    /// Seconds of compute per sequence decoded in a step.
    pub decode_token_s: f64,
}

impl Coefficients {
    /// Names of the coefficients, in row order.
    pub const NAMES: [&'static str; PARAMS] = [
        "step_s",
        "expert_s",
        "context_s",
        "prefill_token_s",
        "prefill_pair_s",
        "path_s",
        "decode_token_s",
    ];

    /// As an array in row order.
    pub fn to_array(self) -> [f64; PARAMS] {
        [
            self.step_s,
            self.expert_s,
            self.context_s,
            self.prefill_token_s,
            self.prefill_pair_s,
            self.path_s,
            self.decode_token_s,
        ]
    }

    /// From an array in row order.
    pub fn from_array(a: [f64; PARAMS]) -> Self {
        Coefficients {
            step_s: a[0],
            expert_s: a[1],
            context_s: a[2],
            prefill_token_s: a[3],
            prefill_pair_s: a[4],
            path_s: a[5],
            decode_token_s: a[6],
        }
    }

    /// Predicted seconds for terms under an expert share.
    pub fn predict(&self, terms: &Terms, share: Option<f64>) -> f64 {
        terms
            .row(share)
            .iter()
            .zip(self.to_array())
            .map(|(x, c)| x * c)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dense_model_has_no_expert_term() {
        let t = Terms {
            steps: 1.0,
            experts: vec![ExpertUse {
                weight: 1.0,
                tokens: 16.0,
            }],
            ..Terms::default()
        };
        assert_eq!(t.row(None)[1], 0.0);
        let moe = t.row(Some(1.0 / 16.0))[1];
        assert!((moe - (1.0 - (15.0f64 / 16.0).powi(16))).abs() < 1e-12);
    }
}
