//! Hardware TOMLs: the accelerator and model figures of the twin's step-time
//! model (`twin::model`), named by a profile's `server.hardware`.

use serde::Deserialize;

/// `[hardware]` table of a hardware TOML.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareSection {
    /// Display name of the accelerator.
    pub name: String,
    /// Effective memory bandwidth, GB/s (1e9 bytes per second).
    pub memory_bandwidth_gb_s: f64,
    /// Fixed cost of every step, milliseconds.
    pub step_fixed_ms: f64,
}

/// `[model]` table of a hardware TOML.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// Model path the figures belong to.
    pub name: String,
    /// Weights read by every step regardless of the batch, GB (1e9 bytes);
    /// 0 when a fit folded them into `hardware.step_fixed_ms`.
    pub dense_weight_gb: f64,
    /// All expert weights together, GB (1e9 bytes).
    pub expert_weight_gb: f64,
    /// Experts per layer (E).
    pub experts_total: u32,
    /// Experts each token is routed to (k); 0 for a dense model (then
    /// `expert_weight_gb` is 0 too).
    pub experts_per_token: u32,
    /// KV-cache bytes per token of context.
    pub kv_bytes_per_token: u64,
}

/// `[prefill]` table of a hardware TOML.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefillSection {
    /// Compute cost per prompt token, milliseconds.
    pub ms_per_token: f64,
    /// Attention cost per (token, earlier token) pair, nanoseconds.
    pub ns_per_token_pair: f64,
}

/// `[compute]` table of a hardware TOML: costs that grow with the tokens a
/// step computes rather than the bytes it reads (a CPU; a GPU at large
/// batches). Added to the memory-bound terms; absent means 0.
#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeSection {
    /// Compute cost of each sequence's decode token in a step,
    /// milliseconds per token (0: decode is bound by memory only).
    #[serde(default)]
    pub ms_per_decode_token: f64,
}

/// A hardware TOML: accelerator + model figures of the step-time model.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareProfile {
    /// The accelerator.
    pub hardware: HardwareSection,
    /// The served model.
    pub model: ModelSection,
    /// Prompt processing cost.
    pub prefill: PrefillSection,
    /// Per-token compute cost of decoding (default: none).
    #[serde(default)]
    pub compute: ComputeSection,
}

impl HardwareProfile {
    /// Parses a hardware TOML. Unknown keys are rejected; the error names them.
    pub fn parse(text: &str) -> Result<Self, String> {
        let hw: HardwareProfile = toml::from_str(text).map_err(|e| e.to_string())?;
        hw.validate()?;
        Ok(hw)
    }

    fn validate(&self) -> Result<(), String> {
        let positive = [(
            "hardware.memory_bandwidth_gb_s",
            self.hardware.memory_bandwidth_gb_s,
        )];
        for (name, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{name} must be a positive number"));
            }
        }
        let non_negative = [
            ("hardware.step_fixed_ms", self.hardware.step_fixed_ms),
            ("model.dense_weight_gb", self.model.dense_weight_gb),
            ("model.expert_weight_gb", self.model.expert_weight_gb),
            ("prefill.ms_per_token", self.prefill.ms_per_token),
            ("prefill.ns_per_token_pair", self.prefill.ns_per_token_pair),
            (
                "compute.ms_per_decode_token",
                self.compute.ms_per_decode_token,
            ),
        ];
        for (name, v) in non_negative {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} must be a number >= 0"));
            }
        }
        if self.model.experts_total == 0 || self.model.experts_per_token > self.model.experts_total
        {
            return Err("model.experts_per_token must be <= model.experts_total (> 0)".into());
        }
        if self.model.experts_per_token == 0 && self.model.expert_weight_gb > 0.0 {
            return Err("model.experts_per_token is 0 but model.expert_weight_gb is not".into());
        }
        Ok(())
    }
}

/// The embedded GB10 hardware TOML, for tests and defaults.
pub const GB10_QWEN3_CODER_TOML: &str =
    include_str!("../../../../profiles/hardware/gb10-qwen3-coder-30b-a3b-fp8.toml");
