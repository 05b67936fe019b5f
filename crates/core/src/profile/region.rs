//! `[calibration]` of a fitted profile: the region its calibration runs
//! measured (written by `codendum calibrate`), and the one warning every
//! command gives when a run goes outside it.

use serde::{Deserialize, Serialize};

/// What the calibration runs of a fitted profile measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationRegion {
    /// Longest context a measured request reached (prompt + output), tokens.
    pub max_context_tokens: u64,
    /// Most requests in flight in a measured cell.
    pub max_batch: u32,
    /// Shortest prompt measured, tokens.
    pub min_prompt_tokens: u64,
    /// Longest prompt measured, tokens.
    pub max_prompt_tokens: u64,
}

/// A count with thousands separators: `19,000`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl CalibrationRegion {
    /// The warning for a run whose contexts reach `context_tokens` and whose
    /// batch reaches `batch` (either unknown: `None`), or `None` inside the
    /// region. One line, naming each figure beyond the region.
    pub fn outside(&self, context_tokens: Option<u64>, batch: Option<u32>) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(c) = context_tokens.filter(|&c| c > self.max_context_tokens) {
            parts.push(format!(
                "contexts up to {} tokens; calibrated up to {}",
                grouped(c),
                grouped(self.max_context_tokens)
            ));
        }
        if let Some(b) = batch.filter(|&b| b > self.max_batch) {
            parts.push(format!(
                "{b} requests in flight; calibrated up to {}",
                self.max_batch
            ));
        }
        (!parts.is_empty()).then(|| {
            format!(
                "outside the fitted profile's calibrated region ({}): the twin extrapolates there",
                parts.join("; ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: CalibrationRegion = CalibrationRegion {
        max_context_tokens: 4_096,
        max_batch: 16,
        min_prompt_tokens: 256,
        max_prompt_tokens: 3_968,
    };

    #[test]
    fn inside_the_region_nothing_is_said() {
        assert_eq!(R.outside(Some(4_096), Some(16)), None);
        assert_eq!(R.outside(None, None), None);
    }

    #[test]
    fn each_figure_beyond_the_region_is_named_with_its_limit() {
        let w = R.outside(Some(19_000), Some(40)).expect("outside");
        assert!(
            w.contains("contexts up to 19,000 tokens; calibrated up to 4,096"),
            "{w}"
        );
        assert!(
            w.contains("40 requests in flight; calibrated up to 16"),
            "{w}"
        );
        assert_eq!(grouped(1_362_640), "1,362,640");
        assert_eq!(grouped(999), "999");
    }
}
