//! How long one engine step takes: a physical model of a memory-bandwidth
//! bound mixture-of-experts decoder, behind the [`StepModel`] trait so another
//! GPU or model is a new hardware TOML (or another implementation).
//!
//! ```text
//! t_step = t_fixed + (W_dense + W_experts * phi(N)) / BW + sum_i(ctx_i) * kv_bytes / BW
//!        + c * decode_tokens + t_prefill
//! phi(N) = 1 - (1 - k/E)^N
//! t_prefill = a * prefill_tokens + b * prefill_pairs
//! ```
//!
//! `c` (`[compute] ms_per_decode_token`, default 0) is the compute a decode
//! token costs. It is added to the memory terms rather than taken as a
//! roofline `max(memory, compute)`: a CPU, or a GPU past its ridge point,
//! does not overlap the two completely, and the sum is linear in every
//! coefficient, so `codendum calibrate` fits it by least squares
//! (docs/twin-calibration.md has the fits that decided it).

use std::time::Duration;

use codendum_core::profile::hardware::HardwareProfile;

/// What one engine step computes, in aggregate (all counts in tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepShape {
    /// Tokens in the step: decode tokens plus prefill chunk tokens (N).
    pub num_tokens: u64,
    /// Sequences that decode one token in this step.
    pub num_decode: u64,
    /// Sum over decoding sequences of their context length (tokens whose KV
    /// the step reads).
    pub decode_context_tokens: u64,
    /// Prompt tokens computed in this step (prefill chunks).
    pub prefill_tokens: u64,
    /// Sum over prefill-chunk tokens of the number of earlier tokens each one
    /// attends to (`n * computed + n * (n - 1) / 2` per chunk).
    pub prefill_pairs: u64,
}

/// Decides how long a step takes on the modelled hardware.
pub trait StepModel: Send + Sync + std::fmt::Debug {
    /// Modelled duration of one step (simulated time).
    fn step_time(&self, shape: &StepShape) -> Duration;
}

/// The bandwidth-bound step-time model with the parameters of a
/// [`HardwareProfile`].
#[derive(Debug, Clone, PartialEq)]
pub struct PhysicalStepModel {
    t_fixed_s: f64,
    bw_bytes_s: f64,
    dense_bytes: f64,
    expert_bytes: f64,
    /// 1 - k/E
    miss_share: f64,
    kv_bytes: f64,
    prefill_s_per_token: f64,
    prefill_s_per_pair: f64,
    decode_token_s: f64,
}

impl PhysicalStepModel {
    /// Builds the model from a hardware profile.
    pub fn new(hw: &HardwareProfile) -> Self {
        PhysicalStepModel {
            t_fixed_s: hw.hardware.step_fixed_ms / 1e3,
            bw_bytes_s: hw.hardware.memory_bandwidth_gb_s * 1e9,
            dense_bytes: hw.model.dense_weight_gb * 1e9,
            expert_bytes: hw.model.expert_weight_gb * 1e9,
            miss_share: 1.0
                - f64::from(hw.model.experts_per_token) / f64::from(hw.model.experts_total),
            kv_bytes: hw.model.kv_bytes_per_token as f64,
            prefill_s_per_token: hw.prefill.ms_per_token / 1e3,
            prefill_s_per_pair: hw.prefill.ns_per_token_pair / 1e9,
            decode_token_s: hw.compute.ms_per_decode_token / 1e3,
        }
    }

    /// Share of the experts that `n` tokens touch: `1 - (1 - k/E)^n` (0..1).
    pub fn expert_share(&self, n: u64) -> f64 {
        let n = i32::try_from(n).unwrap_or(i32::MAX);
        1.0 - self.miss_share.powi(n)
    }

    /// Modelled step time in seconds.
    pub fn step_seconds(&self, s: &StepShape) -> f64 {
        if s.num_tokens == 0 {
            return 0.0;
        }
        let weights = (self.dense_bytes + self.expert_bytes * self.expert_share(s.num_tokens))
            / self.bw_bytes_s;
        let kv = s.decode_context_tokens as f64 * self.kv_bytes / self.bw_bytes_s;
        let prefill = s.prefill_tokens as f64 * self.prefill_s_per_token
            + s.prefill_pairs as f64 * self.prefill_s_per_pair;
        let compute = s.num_decode as f64 * self.decode_token_s;
        self.t_fixed_s + weights + kv + compute + prefill
    }

    /// Output tokens/s of a steady decode batch: `batch` sequences, each with
    /// `context` tokens of context, no prefill.
    pub fn decode_tokens_per_s(&self, batch: u64, context: u64) -> f64 {
        let shape = StepShape {
            num_tokens: batch,
            num_decode: batch,
            decode_context_tokens: batch * context,
            ..StepShape::default()
        };
        let t = self.step_seconds(&shape);
        if t > 0.0 {
            batch as f64 / t
        } else {
            0.0
        }
    }
}

impl StepModel for PhysicalStepModel {
    fn step_time(&self, shape: &StepShape) -> Duration {
        Duration::from_secs_f64(self.step_seconds(shape).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codendum_core::profile::hardware::GB10_QWEN3_CODER_TOML;

    fn gb10() -> PhysicalStepModel {
        PhysicalStepModel::new(&HardwareProfile::parse(GB10_QWEN3_CODER_TOML).expect("parses"))
    }

    fn within(actual: f64, expected: f64, tol: f64) -> bool {
        (actual - expected).abs() <= expected * tol
    }

    #[test]
    fn one_user_decodes_about_31_tokens_per_s() {
        let r = gb10().decode_tokens_per_s(1, 9_500);
        assert!(within(r, 31.0, 0.08), "1 running at 9.5K: {r:.1} tok/s");
    }

    #[test]
    fn sixteen_running_reach_110_to_115() {
        let r = gb10().decode_tokens_per_s(16, 13_000);
        assert!(within(r, 112.5, 0.08), "16 running at 13K: {r:.1} tok/s");
        assert!((110.0 * 0.92..=115.0 * 1.08).contains(&r));
    }

    #[test]
    fn twentyfour_running_reach_137_to_150() {
        let r = gb10().decode_tokens_per_s(24, 13_000);
        assert!(
            (137.0 * 0.92..=150.0 * 1.08).contains(&r),
            "24 at 13K: {r:.1}"
        );
    }

    #[test]
    fn expert_share_matches_the_reference_table() {
        let m = gb10();
        for (n, share) in [(1, 0.0625), (16, 0.644), (24, 0.787), (48, 0.955)] {
            assert!((m.expert_share(n) - share).abs() < 0.005, "phi({n})");
        }
    }

    #[test]
    fn prefill_of_512_tokens_costs_about_a_seventh_of_a_second() {
        let m = gb10();
        let shape = StepShape {
            num_tokens: 512,
            prefill_tokens: 512,
            prefill_pairs: 512 * 511 / 2,
            ..StepShape::default()
        };
        let t = m.step_seconds(&shape);
        // 0.154 s prefill + ~0.14 s weights + fixed: a short uncached prompt
        // touches nearly every expert.
        assert!(
            (0.25..0.35).contains(&t),
            "512-token prefill step: {t:.3} s"
        );
    }

    #[test]
    fn unknown_key_is_rejected_by_name() {
        let bad = GB10_QWEN3_CODER_TOML.replace("step_fixed_ms", "step_fixd_ms");
        let err = HardwareProfile::parse(&bad).expect_err("must fail");
        assert!(err.contains("step_fixd_ms"), "{err}");
    }

    #[test]
    fn a_decode_compute_cost_grows_with_the_batch_not_the_context() {
        let text = format!("{GB10_QWEN3_CODER_TOML}\n[compute]\nms_per_decode_token = 2.0\n");
        let m = PhysicalStepModel::new(&HardwareProfile::parse(&text).expect("parses"));
        let base = gb10();
        let step =
            |m: &PhysicalStepModel, b: u64| f64::from(b as u32) / m.decode_tokens_per_s(b, 1_000);
        // 2 ms more per decoding sequence in every step, nothing else.
        for b in [1u64, 8, 24] {
            let extra = step(&m, b) - step(&base, b);
            assert!(
                (extra - 0.002 * b as f64).abs() < 1e-9,
                "batch {b}: {extra}"
            );
        }
    }

    #[test]
    fn empty_step_takes_no_time() {
        assert_eq!(gb10().step_time(&StepShape::default()), Duration::ZERO);
    }
}
