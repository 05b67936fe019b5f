//! What a profile's `[targets]` mean, shared by the capacity suite
//! (`codendum::acceptance`) and `codendum plan` (`codendum::plan`), so that both
//! judge `[targets.classroom]` by one definition:
//!
//! - the judging rule, [`crate::bound::Bound::judge`], which every key
//!   uses;
//! - [`classroom`]: the keys of `[targets.classroom]`, their parser and one
//!   judging function per key.
//!
//! [`capacity`] reads `[targets.capacity]` (the class a server must carry
//! at a tier, judged on a capacity search's answer).
//!
//! The capacity suite adds the benchmark levels (`[[targets.bench]]`) and
//! the quick tables; their parser is [`bench::parse_targets`], and it
//! checks values with the same rules ([`KeyKind`]).

pub mod bench;
pub mod capacity;
pub mod classroom;

pub use self::classroom::slo::{parse_class_slo, parse_tiers, Tier};
pub use self::classroom::{
    judge_coding_request_p50, judge_error_rate, judge_output_speed_p50, judge_preemptions,
    judge_server_errors, judge_server_output, judge_ttft_p95, parse_classroom_targets,
    ClassroomCheck, ClassroomKey, ClassroomTargets,
};

use crate::error::ConfigError;

/// What the value of a known target key must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A number ≥ 0, integer or float (seconds, tokens per second).
    Number,
    /// A whole number ≥ 0 (a count).
    Count,
    /// Text (a prompt shape).
    Text,
}

impl KeyKind {
    /// Whether `value` is of this kind.
    pub fn admits(self, value: &toml::Value) -> bool {
        match self {
            KeyKind::Number => value
                .as_float()
                .or_else(|| value.as_integer().map(|i| i as f64))
                .is_some_and(|x| x.is_finite() && x >= 0.0),
            KeyKind::Count => value.as_integer().is_some_and(|i| i >= 0),
            KeyKind::Text => value.is_str(),
        }
    }

    /// What this kind is, for error messages: `a number ≥ 0`.
    pub fn describe(self) -> &'static str {
        match self {
            KeyKind::Number => "a number ≥ 0",
            KeyKind::Count => "a whole number ≥ 0",
            KeyKind::Text => "text",
        }
    }
}

/// Checks that `value` (the table at `path`, e.g. `targets.classroom`) is a
/// table and that every known key in it holds a value of its kind, so that
/// errors name the key. Unknown keys are left to the caller.
pub fn check_value_kinds(
    path: &str,
    value: &toml::Value,
    keys: &[(&str, KeyKind)],
) -> Result<(), ConfigError> {
    let table = value
        .as_table()
        .ok_or_else(|| ConfigError::invalid(path, "must be a table"))?;
    for (key, v) in table {
        let Some((_, kind)) = keys.iter().find(|(k, _)| k == key) else {
            continue;
        };
        if !kind.admits(v) {
            return Err(ConfigError::invalid(
                path,
                format!("{key} = {v} is not {}", kind.describe()),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_kinds_admit_their_values_only() {
        let v = |s: &str| -> toml::Value {
            toml::from_str::<toml::Table>(&format!("x = {s}")).expect("toml")["x"].clone()
        };
        assert!(KeyKind::Number.admits(&v("3")) && KeyKind::Number.admits(&v("0.5")));
        assert!(!KeyKind::Number.admits(&v("-1")) && !KeyKind::Number.admits(&v("nan")));
        assert!(!KeyKind::Number.admits(&v("\"fast\"")));
        assert!(KeyKind::Count.admits(&v("0")) && !KeyKind::Count.admits(&v("0.5")));
        assert!(KeyKind::Text.admits(&v("\"short\"")) && !KeyKind::Text.admits(&v("1")));
    }
}
