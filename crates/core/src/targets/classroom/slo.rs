//! `[targets.classroom]` written on the command line: one service level
//! (`--slo ttft_p95=10s,speed_p50=10`) or several named tiers
//! (`--tiers interactive:ttft_p95=10s,speed_p50=10,relaxed:ttft_p95=60s`),
//! each read into the [`ClassroomTargets`] the profile's table gives, so
//! that they are judged by the same functions.
//!
//! | key | target | value |
//! |---|---|---|
//! | `ttft_p95` | `ttft_p95_s` ≤ | a duration: `10s`, `500ms`, `1.5m`, bare seconds |
//! | `coding_request_p50` | `coding_request_p50_s` ≤ | a duration |
//! | `speed_p50` | `output_speed_p50_tok_per_s` ≥ | tokens per second |
//! | `server_output` | `server_output_tok_per_s` ≥ | tokens per second |
//! | `errors` | `error_rate` ≤ | a share: `1%` or `0.01` |
//! | `preemptions` | `preemptions` ≤ | a count |
//! | `server_errors` | `server_errors` ≤ | a count |
//!
//! The profile's own key names (`ttft_p95_s=10`) are read too.

use super::{ClassroomKey, ClassroomTargets};
use crate::results::metrics::Unit;

/// A named service level: the targets a class must meet to be carried at
/// it (`interactive`: TTFT P95 ≤ 10 s and 10 tok/s per student).
#[derive(Debug, Clone, PartialEq)]
pub struct Tier {
    /// The tier's name, as given (`interactive`).
    pub name: String,
    /// What a class must meet.
    pub targets: ClassroomTargets,
}

impl ClassroomKey {
    /// The key's short name on the command line: `ttft_p95`, `speed_p50`,
    /// `errors` (the module's table).
    pub fn short_name(self) -> &'static str {
        match self {
            ClassroomKey::TtftP95 => "ttft_p95",
            ClassroomKey::CodingRequestP50 => "coding_request_p50",
            ClassroomKey::ServerOutput => "server_output",
            ClassroomKey::Preemptions => "preemptions",
            ClassroomKey::ServerErrors => "server_errors",
            ClassroomKey::OutputSpeedP50 => "speed_p50",
            ClassroomKey::ErrorRate => "errors",
        }
    }

    /// The key named `name`: its short name or its profile name.
    pub fn from_name(name: &str) -> Option<ClassroomKey> {
        ClassroomKey::ALL
            .into_iter()
            .find(|k| k.short_name() == name || k.name() == name)
    }
}

/// The valid short names, for error messages.
fn valid_names() -> String {
    ClassroomKey::ALL
        .iter()
        .map(|k| k.short_name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One `KEY=VALUE` read into `targets`; the error says why (without the
/// flag's name, which the caller adds).
fn read_item(item: &str, targets: &mut ClassroomTargets) -> Result<(), String> {
    let (name, value) = item
        .split_once('=')
        .ok_or_else(|| format!("{item:?} is not KEY=VALUE (e.g. ttft_p95=10s)"))?;
    let (name, value) = (name.trim(), value.trim());
    let key = ClassroomKey::from_name(name)
        .ok_or_else(|| format!("unknown target {name:?}; valid: {}", valid_names()))?;
    if targets.limit(key).is_some() {
        return Err(format!("{} is given twice", key.short_name()));
    }
    let limit = match key.metric().unit {
        Unit::Seconds => crate::results::slo::duration(value)
            .ok_or_else(|| format!("{name}: {value:?} is not a duration above 0 (10s, 500ms, 2m)")),
        Unit::Fraction => share(value).ok_or_else(|| {
            format!("{name}: {value:?} is not a share between 0 and 1 (1% or 0.01)")
        }),
        Unit::Count => value
            .parse::<u64>()
            .map(|n| n as f64)
            .map_err(|_| format!("{name}: {value:?} is not a whole number ≥ 0")),
        _ => value
            .trim_end_matches("tok/s")
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("{name}: {value:?} is not a number ≥ 0 (tokens per second)")),
    }?;
    targets.set_limit(key, limit);
    Ok(())
}

/// A share: `1%`, `0.5 %` or a fraction `0.01`, in `[0, 1]`.
fn share(raw: &str) -> Option<f64> {
    let v = match raw.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok()? / 100.0,
        None => raw.parse::<f64>().ok()?,
    };
    (v.is_finite() && (0.0..=1.0).contains(&v)).then_some(v)
}

/// Reads `--slo` for a class: comma-separated `KEY=VALUE` items (the
/// module's table), at least one, none twice.
pub fn parse_class_slo(raw: &str) -> Result<ClassroomTargets, String> {
    let mut targets = ClassroomTargets::default();
    for item in crate::flags::list(raw) {
        read_item(item, &mut targets)?;
    }
    if targets.is_empty() {
        return Err("no target given (e.g. ttft_p95=10s,speed_p50=10)".into());
    }
    Ok(targets)
}

/// Reads `--tiers`: comma-separated items, where `NAME:KEY=VALUE` starts
/// the tier `NAME` and a plain `KEY=VALUE` adds to the tier before it.
/// Names are letters, digits, `-` and `_`, each given once; every tier
/// names at least one target.
pub fn parse_tiers(raw: &str) -> Result<Vec<Tier>, String> {
    let mut tiers: Vec<Tier> = Vec::new();
    for item in crate::flags::list(raw) {
        let item = match item.split_once(':') {
            Some((name, rest)) if !name.contains('=') => {
                let name = name.trim();
                if name.is_empty()
                    || !name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    return Err(format!(
                        "{name:?} is not a tier name (letters, digits, - and _)"
                    ));
                }
                if tiers.iter().any(|t| t.name == name) {
                    return Err(format!("tier {name} is given twice"));
                }
                tiers.push(Tier {
                    name: name.to_string(),
                    targets: ClassroomTargets::default(),
                });
                rest
            }
            _ => item,
        };
        let Some(tier) = tiers.last_mut() else {
            return Err(format!(
                "{item:?} comes before any tier name (e.g. interactive:ttft_p95=10s)"
            ));
        };
        read_item(item, &mut tier.targets).map_err(|e| format!("tier {}: {e}", tier.name))?;
    }
    if tiers.is_empty() {
        return Err("no tier given (e.g. interactive:ttft_p95=10s,relaxed:ttft_p95=60s)".into());
    }
    if let Some(t) = tiers.iter().find(|t| t.targets.is_empty()) {
        return Err(format!("tier {} names no target", t.name));
    }
    Ok(tiers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_level_reads_every_key_in_its_unit() {
        let t = parse_class_slo(
            "ttft_p95=10s, speed_p50=12.5, coding_request_p50=15m, errors=1%, server_errors=0, \
             preemptions=2, server_output=95tok/s",
        )
        .expect("parses");
        assert_eq!(t.ttft_p95_s, Some(10.0));
        assert_eq!(t.output_speed_p50_tok_per_s, Some(12.5));
        assert_eq!(t.coding_request_p50_s, Some(900.0));
        assert_eq!(t.error_rate, Some(0.01));
        assert_eq!((t.server_errors, t.preemptions), (Some(0), Some(2)));
        assert_eq!(t.server_output_tok_per_s, Some(95.0));
        let t = parse_class_slo("ttft_p95_s=500ms,error_rate=0.05").expect("profile names");
        assert_eq!((t.ttft_p95_s, t.error_rate), (Some(0.5), Some(0.05)));
    }

    #[test]
    fn tiers_start_at_their_names() {
        let tiers =
            parse_tiers("interactive:ttft_p95=10s,speed_p50=10,relaxed:ttft_p95=60s").unwrap();
        assert_eq!(tiers.len(), 2);
        assert_eq!(tiers[0].name, "interactive");
        assert_eq!(tiers[0].targets.ttft_p95_s, Some(10.0));
        assert_eq!(tiers[0].targets.output_speed_p50_tok_per_s, Some(10.0));
        assert_eq!(tiers[1].name, "relaxed");
        assert_eq!(tiers[1].targets.ttft_p95_s, Some(60.0));
        assert_eq!(tiers[1].targets.output_speed_p50_tok_per_s, None);
    }

    #[test]
    fn bad_levels_and_tiers_say_why_on_one_line() {
        for (raw, culprit) in [
            ("ttft=2s", "unknown target \"ttft\""),
            ("ttft_p95", "not KEY=VALUE"),
            ("ttft_p95=-3s", "not a duration"),
            ("ttft_p95=3s,ttft_p95=4s", "given twice"),
            ("errors=150%", "not a share"),
            ("server_errors=0.5", "not a whole number"),
            ("speed_p50=fast", "not a number"),
            ("", "no target"),
        ] {
            let e = parse_class_slo(raw).expect_err(raw);
            assert!(e.contains(culprit) && !e.contains('\n'), "{raw}: {e}");
        }
        for (raw, culprit) in [
            ("ttft_p95=10s", "before any tier name"),
            ("a b:ttft_p95=10s", "not a tier name"),
            ("a:ttft_p95=10s,a:ttft_p95=20s", "tier a is given twice"),
            ("a:ttft=1s", "tier a: unknown target"),
            ("", "no tier"),
        ] {
            let e = parse_tiers(raw).expect_err(raw);
            assert!(e.contains(culprit), "{raw}: {e}");
        }
    }
}
