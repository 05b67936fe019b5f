//! Parsing of one `--faults` term (see the grammar in [`super`]).

use std::time::Duration;

use super::{bad, Fault, FaultTerm, When, MAX_FAULT_SECONDS, MAX_HUGE_CHUNK};
use codendum_core::error::ConfigError;

pub(super) fn parse_term(raw: &str) -> Result<FaultTerm, ConfigError> {
    let (fault, rest) = raw
        .split_once('@')
        .ok_or_else(|| bad(raw, "expected FAULT@WHEN (e.g. drop@0.05)"))?;
    let mut parts: Vec<&str> = rest.split(':').map(str::trim).collect();
    let when_text = if parts.first() == Some(&"every") && parts.len() > 1 {
        let n = parts.remove(1);
        parts[0] = n;
        format!("every:{n}")
    } else {
        parts.first().map(|s| s.to_string()).unwrap_or_default()
    };
    let when = parse_when(raw, &when_text)?;
    let mut fault = parse_fault(raw, fault.trim())?;
    let mut after = None;
    for opt in &parts[1..] {
        let (key, value) = opt
            .split_once('=')
            .ok_or_else(|| bad(raw, format!("option {opt:?} is not KEY=VALUE")))?;
        match (key.trim(), &mut fault) {
            ("retry-after", Fault::Status { retry_after, .. }) => {
                *retry_after = Some(parse_duration(raw, value)?);
            }
            ("after", f) if f.is_mid_stream() => {
                after = Some(
                    value
                        .trim()
                        .parse()
                        .map_err(|_| bad(raw, "after= wants a whole number of events"))?,
                );
            }
            (k, _) => return Err(bad(raw, format!("option {k:?} does not apply here"))),
        }
    }
    Ok(FaultTerm { fault, when, after })
}

fn parse_when(raw: &str, text: &str) -> Result<When, ConfigError> {
    if let Some(n) = text.strip_prefix("every:") {
        let n: u64 = n
            .parse()
            .map_err(|_| bad(raw, "every: wants a whole number"))?;
        if n == 0 {
            return Err(bad(raw, "every:0 never strikes"));
        }
        return Ok(When::Every(n));
    }
    if let Some(range) = text.strip_prefix('#') {
        let (a, b) = range.split_once("..").unwrap_or((range, range));
        let num = |s: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| bad(raw, "#A..B wants request numbers"))
        };
        let (a, b) = (num(a)?, num(b)?);
        if a == 0 || b < a {
            return Err(bad(raw, "requests are numbered from 1 and A <= B"));
        }
        return Ok(When::Range(a, b));
    }
    let (number, scale) = match text.strip_suffix('%') {
        Some(p) => (p, 100.0),
        None => (text, 1.0),
    };
    let p: f64 = number
        .trim()
        .parse()
        .map_err(|_| bad(raw, "WHEN is a rate (0.05, 5%), every:N or #A..B"))?;
    let p = p / scale;
    if !(0.0..=1.0).contains(&p) {
        return Err(bad(raw, "a rate is between 0 and 1 (0% and 100%)"));
    }
    Ok(When::Rate(p))
}

fn parse_fault(raw: &str, text: &str) -> Result<Fault, ConfigError> {
    let (name, value) = match text.split_once('=') {
        Some((n, v)) => (n.trim(), Some(v.trim())),
        None => (text, None),
    };
    let need = |what: &str| value.ok_or_else(|| bad(raw, format!("{name} needs ={what}")));
    Ok(match name {
        "drop" | "malformed" | "no-done" | "bad-utf8" if value.is_some() => {
            return Err(bad(raw, format!("{name} takes no value")))
        }
        "drop" => Fault::Drop,
        "malformed" => Fault::Malformed,
        "no-done" => Fault::NoDone,
        "bad-utf8" => Fault::BadUtf8,
        "stall" => Fault::Stall(parse_duration(raw, need("DURATION")?)?),
        "slow-headers" => Fault::SlowHeaders(parse_duration(raw, need("DURATION")?)?),
        "huge-chunk" => Fault::HugeChunk(parse_size(raw, need("SIZE")?)?),
        "status" => {
            let code: u16 = need("CODE")?
                .parse()
                .map_err(|_| bad(raw, "status wants a number"))?;
            if !(400..=599).contains(&code) {
                return Err(bad(raw, "status must be in 400..=599"));
            }
            Fault::Status {
                code,
                retry_after: None,
            }
        }
        other => return Err(bad(raw, format!("unknown fault {other:?}"))),
    })
}

fn parse_duration(raw: &str, text: &str) -> Result<Duration, ConfigError> {
    let text = text.trim();
    let (number, unit) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else {
        (text, 1.0)
    };
    let v: f64 = number
        .trim()
        .parse()
        .map_err(|_| bad(raw, format!("{text:?} is not a duration (30s, 500ms, 2m)")))?;
    let secs = v * unit;
    if !(secs.is_finite() && (0.0..=MAX_FAULT_SECONDS).contains(&secs)) {
        return Err(bad(raw, format!("{text:?} is outside 0..=1e6 s")));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_size(raw: &str, text: &str) -> Result<usize, ConfigError> {
    let units: [(&str, usize); 6] = [
        ("KiB", 1 << 10),
        ("MiB", 1 << 20),
        ("KB", 1000),
        ("MB", 1_000_000),
        ("B", 1),
        ("", 1),
    ];
    let (number, mult) = units
        .iter()
        .find_map(|(u, m)| text.strip_suffix(u).map(|n| (n, *m)))
        .unwrap_or((text, 1));
    let n: usize = number
        .trim()
        .parse()
        .map_err(|_| bad(raw, format!("{text:?} is not a size (1MiB, 512KiB)")))?;
    match n.checked_mul(mult) {
        Some(s) if s > 0 && s <= MAX_HUGE_CHUNK => Ok(s),
        _ => Err(bad(raw, "a huge chunk is 1 B to 64 MiB")),
    }
}
