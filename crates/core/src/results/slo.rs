//! Service-level objectives per request and the goodput they give
//! (`--slo`), as `vllm bench serve --goodput` counts them.
//!
//! `--slo ttft=2s,tpot=100ms,e2e=60s`: a request meets the SLO when it
//! succeeded and each given figure of it is at most its threshold (TTFT
//! and E2E from the request's scheduled start on a rate level). A key may
//! carry a percentile, `ttft_p95=2s`: the same threshold, and the level
//! meets its SLO when at least that share of its requests meet every
//! threshold (the lowest percentile given; 95 % when none is).
//!
//! Per level: the **SLO share** (requests meeting the SLO over the level's
//! requests, failures included) and the **goodput** (such requests per
//! second of level wall time).

use serde::{Deserialize, Serialize};

use super::records::RequestRecord;
use crate::error::ConfigError;

/// The share of requests that must meet the SLO when no key names a
/// percentile.
pub const DEFAULT_SLO_SHARE: f64 = 0.95;

/// Per-request thresholds, seconds, and the share a level needs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// Most time to first token, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_s: Option<f64>,
    /// Most mean time per output token, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_s: Option<f64>,
    /// Most end-to-end latency, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_s: Option<f64>,
    /// The share of a level's requests that must meet every threshold (a
    /// fraction).
    pub share: f64,
}

impl Slo {
    /// Parses `--slo` (see the module documentation). Durations take `ms`,
    /// `s` or `m`; a bare number is seconds.
    pub fn parse(flag: &str, raw: &str) -> Result<Slo, ConfigError> {
        let mut slo = Slo {
            ttft_s: None,
            tpot_s: None,
            e2e_s: None,
            share: DEFAULT_SLO_SHARE,
        };
        let mut share: Option<f64> = None;
        let mut any = false;
        for item in crate::flags::list(raw) {
            let (key, value) = item.split_once('=').ok_or_else(|| {
                ConfigError::invalid(flag, format!("{item:?} is not KEY=VALUE (e.g. ttft=2s)"))
            })?;
            let (name, percentile) = match key.trim().split_once("_p") {
                Some((name, p)) => {
                    let p: f64 = p
                        .parse()
                        .ok()
                        .filter(|p| (1.0..100.0).contains(p))
                        .ok_or_else(|| {
                            ConfigError::invalid(
                                flag,
                                format!("{key:?}: the percentile must be 1 to 99"),
                            )
                        })?;
                    (name, Some(p / 100.0))
                }
                None => (key.trim(), None),
            };
            let seconds = duration(value.trim()).ok_or_else(|| {
                ConfigError::invalid(
                    flag,
                    format!("{value:?} is not a duration above 0 (2s, 100ms)"),
                )
            })?;
            let slot = match name {
                "ttft" => &mut slo.ttft_s,
                "tpot" => &mut slo.tpot_s,
                "e2e" => &mut slo.e2e_s,
                other => {
                    return Err(ConfigError::invalid(
                        flag,
                        format!(
                        "unknown SLO key {other:?}; valid: ttft, tpot, e2e (optionally with _pNN)"
                    ),
                    ))
                }
            };
            if slot.is_some() {
                return Err(ConfigError::invalid(flag, format!("{name} is given twice")));
            }
            *slot = Some(seconds);
            if let Some(p) = percentile {
                share = Some(share.map_or(p, |s: f64| s.min(p)));
            }
            any = true;
        }
        if !any {
            return Err(ConfigError::invalid(
                flag,
                "no objective given (e.g. ttft=2s)",
            ));
        }
        slo.share = share.unwrap_or(DEFAULT_SLO_SHARE);
        Ok(slo)
    }

    /// Whether one request meets every threshold (a failure never does; a
    /// figure the request lacks does not meet its threshold).
    pub fn met_by(&self, r: &RequestRecord) -> bool {
        let within =
            |limit: Option<f64>, v: Option<f64>| limit.is_none_or(|l| v.is_some_and(|v| v <= l));
        r.ok && within(self.ttft_s, r.ttft_s)
            && within(self.tpot_s, r.tpot_s)
            && within(self.e2e_s, Some(r.e2e_s))
    }

    /// The SLO as written back: `ttft ≤ 2 s, tpot ≤ 0.1 s (95 % of requests)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (name, v) in [
            ("ttft", self.ttft_s),
            ("tpot", self.tpot_s),
            ("e2e", self.e2e_s),
        ] {
            if let Some(v) = v {
                parts.push(format!("{name} ≤ {v} s"));
            }
        }
        format!(
            "{} ({} % of requests)",
            parts.join(", "),
            self.share * 100.0
        )
    }
}

impl Slo {
    /// How a level fares against the SLO, by the one judging rule
    /// ([`crate::bound::Bound::judge`]): its SLO share and the share's
    /// 95 % (Wilson) interval against the share the SLO asks. A level
    /// without a share (no request) misses it.
    pub fn judge(&self, level: &super::LevelSummary) -> crate::bound::Outcome {
        crate::bound::Bound::Min.judge(
            level.slo_share,
            level.intervals.get("slo_share").copied(),
            self.share,
        )
    }
}

/// A duration: `2s`, `100ms`, `1.5m`, or bare seconds; above 0.
pub(crate) fn duration(raw: &str) -> Option<f64> {
    let (number, scale) = if let Some(n) = raw.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = raw.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = raw.strip_suffix('m') {
        (n, 60.0)
    } else {
        (raw, 1.0)
    };
    let v: f64 = number.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v * scale)
}

/// A level's SLO share and goodput: the share of `records` meeting `slo`
/// (failures included in the count), and such requests per second of
/// `wall_s`.
pub fn slo_figures(
    slo: &Slo,
    records: &[RequestRecord],
    wall_s: f64,
) -> (Option<f64>, Option<f64>) {
    if records.is_empty() {
        return (None, None);
    }
    let met = records.iter().filter(|r| slo.met_by(r)).count() as f64;
    let share = met / records.len() as f64;
    let goodput = (wall_s > 0.0).then(|| met / wall_s);
    (Some(share), goodput)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::TokenSource;

    fn record(ttft: f64, tpot: f64, e2e: f64, ok: bool) -> RequestRecord {
        RequestRecord {
            shape: "short".into(),
            concurrency: 0,
            index: 0,
            started_at: 0.0,
            ttft_s: Some(ttft),
            e2e_s: e2e,
            tpot_s: Some(tpot),
            prompt_tokens: Some(512),
            output_tokens: 64,
            tokens_counted_by: TokenSource::Server,
            finish_reason: Some("length".into()),
            ok,
            error_kind: (!ok).then(|| "timeout".into()),
            error_message: None,
            status: Some(200),
            scheduled_at: None,
            send_lag_s: None,
        }
    }

    #[test]
    fn slos_parse_with_units_and_percentiles() {
        let s = Slo::parse("--slo", "ttft_p95=2s,tpot=100ms,e2e=1.5m").unwrap();
        assert_eq!(s.ttft_s, Some(2.0));
        assert!((s.tpot_s.unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(s.e2e_s, Some(90.0));
        assert_eq!(s.share, 0.95);
        let s = Slo::parse("--slo", "ttft_p90=1,e2e_p99=30").unwrap();
        assert_eq!(s.share, 0.90, "the lowest percentile given");
        assert_eq!(
            Slo::parse("--slo", "e2e=10").unwrap().share,
            DEFAULT_SLO_SHARE
        );
    }

    #[test]
    fn bad_slos_name_the_flag_and_the_culprit() {
        for (raw, culprit) in [
            ("queue=2s", "unknown SLO key \"queue\""),
            ("ttft", "not KEY=VALUE"),
            ("ttft=-1s", "not a duration"),
            ("ttft=2s,ttft=3s", "given twice"),
            ("ttft_p100=2s", "percentile"),
            ("", "no objective"),
        ] {
            let e = Slo::parse("--slo", raw).unwrap_err().to_string();
            assert!(e.contains("--slo") && e.contains(culprit), "{raw}: {e}");
        }
    }

    #[test]
    fn goodput_counts_requests_meeting_every_threshold() {
        let slo = Slo::parse("--slo", "ttft=1s,tpot=50ms").unwrap();
        let records = [
            record(0.5, 0.04, 3.0, true),  // meets both
            record(1.5, 0.04, 3.0, true),  // TTFT too late
            record(0.5, 0.06, 4.0, true),  // TPOT too slow
            record(0.2, 0.01, 1.0, false), // failed
            record(1.0, 0.05, 3.5, true),  // at both limits: meets
        ];
        let (share, goodput) = slo_figures(&slo, &records, 10.0);
        assert_eq!(share, Some(2.0 / 5.0));
        assert_eq!(goodput, Some(0.2));
        assert_eq!(slo_figures(&slo, &[], 10.0), (None, None));
    }
}
