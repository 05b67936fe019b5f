//! Flag values as types, each parsed and checked once while the command
//! line is read (their `FromStr`), so that nothing below checks them again:
//! levels, rates, shapes, seconds, speed-ups, fractions, bounded counts,
//! URL lists, the CA file, the SLO. An error is a few words saying why
//! (the command line adds the flag's name) and never repeats a key.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use codendum_core::flags;
use codendum_core::flags::MAX_CONCURRENCY;
use codendum_core::profile::fleet::RouterPolicy;
use codendum_core::results::slo::Slo;
use codendum_core::shape::Shape;
use codendum_core::targets::{parse_class_slo, parse_tiers, ClassroomTargets, Tier};

/// Concurrency levels (`--concurrency 1,8,16`): at least one, each in
/// `1..=4096`, none twice, in run order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Levels(pub Vec<u32>);

impl FromStr for Levels {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let levels = items(raw, |item| {
            let n = flags::whole_number(item)?;
            if n == 0 || n > MAX_CONCURRENCY {
                return Err(format!("{n} is outside 1..={MAX_CONCURRENCY}"));
            }
            Ok(n)
        })?;
        unique(&levels, |n| n.to_string())?;
        non_empty(levels, "no level given").map(Levels)
    }
}

/// Open-loop rates (`--rate 0.2,0.4`), requests per second: at least one,
/// each above 0, none twice.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates(pub Vec<f64>);

impl FromStr for Rates {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let rates = items(raw, |item| {
            let r: f64 = item
                .parse()
                .map_err(|_| format!("{item:?} is not a number (requests per second)"))?;
            if !(r.is_finite() && r > 0.0) {
                return Err(format!("{r} is not a rate above 0 (requests per second)"));
            }
            Ok(r)
        })?;
        unique(&rates, |r| r.to_string())?;
        non_empty(rates, "no rate given").map(Rates)
    }
}

/// Prompt shapes (`--shapes short,long`): known names or input tokens, at
/// least one, none twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shapes(pub Vec<Shape>);

impl FromStr for Shapes {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let shapes = items(raw, |item| OneShape::from_str(item).map(|s| s.0))?;
        unique(&shapes, |s| s.name().to_string())?;
        non_empty(shapes, "no shape given").map(Shapes)
    }
}

/// One prompt shape (`plan --shape short`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OneShape(pub Shape);

impl FromStr for OneShape {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        Shape::from_name(raw).map(OneShape).ok_or_else(|| {
            format!(
                "unknown shape {:?} (known: short, long, or input tokens 16..=1048576)",
                raw.trim()
            )
        })
    }
}

/// A time above 0 s (`--timeout`, `--duration`, `--level-duration`,
/// `--watch`), below 10⁷ s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seconds(pub Duration);

impl FromStr for Seconds {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let v = number(raw)?;
        if v.is_finite() && v > 0.0 && v < 1.0e7 {
            Ok(Seconds(Duration::from_secs_f64(v)))
        } else {
            Err(format!("{v} is not a positive number of seconds"))
        }
    }
}

/// A time of 0 s or more (`--ramp-up`, `--pause-min`, `--pause-max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecondsOrZero(pub Duration);

impl FromStr for SecondsOrZero {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        if number(raw)? == 0.0 {
            return Ok(SecondsOrZero(Duration::ZERO));
        }
        Seconds::from_str(raw).map(|s| SecondsOrZero(s.0))
    }
}

/// How much faster than real time the embedded twin runs (`--time-scale`):
/// above 0, at most 10,000.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeScale(pub f64);

impl FromStr for TimeScale {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let v = number(raw)?;
        if v.is_finite() && v > 0.0 && v <= 10_000.0 {
            Ok(TimeScale(v))
        } else {
            Err(format!("{v} is not a speed-up between 0 and 10000"))
        }
    }
}

/// How much faster a replay sends its recorded timeline (`--speed`): above
/// 0, at most 10⁶.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speed(pub f64);

impl FromStr for Speed {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let v = number(raw)?;
        if v.is_finite() && v > 0.0 && v <= 1.0e6 {
            Ok(Speed(v))
        } else {
            Err(format!("{v} is not a speed-up above 0"))
        }
    }
}

/// A number above 0 (`--burstiness`, `--tolerance`, `--memory-bandwidth-gb-s`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Positive(pub f64);

impl FromStr for Positive {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let v = number(raw)?;
        if v.is_finite() && v > 0.0 {
            Ok(Positive(v))
        } else {
            Err(format!("{v} is not a number above 0"))
        }
    }
}

/// A fraction from 0 to 1 (`--max-error-rate`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fraction(pub f64);

impl FromStr for Fraction {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let v = number(raw)?;
        if (0.0..=1.0).contains(&v) {
            Ok(Fraction(v))
        } else {
            Err(format!(
                "{v} is not a fraction from 0 to 1 (0.05 = 5 % of the calls)"
            ))
        }
    }
}

/// A whole number in `LO..=HI` (`--requests-per-level`, `--output-tokens`,
/// `--block-size`, `--sweep`, `--users`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count<const LO: u64, const HI: u64>(pub u64);

/// A whole number of at least 1.
pub type AtLeastOne = Count<1, { u64::MAX }>;

impl<const LO: u64, const HI: u64> FromStr for Count<LO, HI> {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        let n: u64 = raw
            .parse()
            .map_err(|_| format!("{raw:?} is not a whole number"))?;
        match (n < LO, n > HI) {
            (false, false) => Ok(Count(n)),
            _ if HI == u64::MAX => Err(format!("must be at least {LO}")),
            _ => Err(format!("{n} is outside {LO}..={HI}")),
        }
    }
}

impl<const LO: u64, const HI: u64> Count<LO, HI> {
    /// The number as a `u32` (every bound used with it fits).
    pub fn get_u32(self) -> u32 {
        u32::try_from(self.0).unwrap_or(u32::MAX)
    }

    /// The number as a `usize`.
    pub fn get_usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

/// Whole numbers, comma-separated (`plan --users 10,20`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WholeNumbers(pub Vec<u32>);

impl FromStr for WholeNumbers {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        items(raw, flags::whole_number).map(WholeNumbers)
    }
}

/// Names, comma-separated, at least one (`plan --profile a,b`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names(pub Vec<String>);

impl FromStr for Names {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        non_empty(flags::names(raw), "no name given").map(Names)
    }
}

/// Router policies, comma-separated (`plan --router a,b`).
#[derive(Debug, Clone, PartialEq)]
pub struct Routers(pub Vec<RouterPolicy>);

impl FromStr for Routers {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        items(raw, |item| item.parse::<RouterPolicy>()).map(Routers)
    }
}

/// One router policy (`--router session`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Router(pub RouterPolicy);

impl FromStr for Router {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        raw.parse().map(Router)
    }
}

/// An http(s) URL with a host (`--prometheus-url`, `--router-metrics-url`),
/// without a trailing slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl(pub String);

impl FromStr for HttpUrl {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        codendum_core::access::http_url("", raw)
            .map(HttpUrl)
            .map_err(reason)
    }
}

/// http(s) URLs, comma-separated, at least one (`--metrics-url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrls(pub Vec<String>);

impl FromStr for HttpUrls {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let urls = items(raw, |item| HttpUrl::from_str(item).map(|u| u.0))?;
        non_empty(urls, "no URL given").map(HttpUrls)
    }
}

/// A PEM bundle holding at least one certificate (`--cacert`), read once
/// here to check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaFile(pub PathBuf);

impl FromStr for CaFile {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let path = PathBuf::from(raw.trim());
        codendum_core::access::read_pem_bundle(&path).map_err(|e| e.to_string())?;
        Ok(CaFile(path))
    }
}

/// Per-request objectives (`--slo ttft_p95=2s,tpot=100ms`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SloValue(pub Slo);

impl FromStr for SloValue {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        Slo::parse("", raw).map(SloValue).map_err(reason)
    }
}

/// Service tiers of a class (`capacity --tiers
/// interactive:ttft_p95=10s,speed_p50=10,relaxed:ttft_p95=60s`), read by
/// the targets module.
#[derive(Debug, Clone, PartialEq)]
pub struct TiersValue(pub Vec<Tier>);

impl FromStr for TiersValue {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        parse_tiers(raw).map(TiersValue)
    }
}

/// One service level of a class (`capacity --slo
/// ttft_p95=10s,speed_p50=10`), read by the targets module.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassSloValue(pub ClassroomTargets);

impl FromStr for ClassSloValue {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        parse_class_slo(raw).map(ClassSloValue)
    }
}

/// A PromQL label filter (`--prometheus-selector job="vllm"`), not empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector(pub String);

impl FromStr for Selector {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let s = raw.trim();
        if s.trim_matches(['{', '}', ' ']).is_empty() {
            Err("empty: give a label filter such as job=\"vllm\"".into())
        } else {
            Ok(Selector(s.to_string()))
        }
    }
}

/// A non-empty text (`--model`, provenance), trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(pub String);

impl FromStr for Text {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let t = raw.trim();
        if t.is_empty() {
            Err("is empty".into())
        } else {
            Ok(Text(t.to_string()))
        }
    }
}

macro_rules! shown_as_number {
    ($($t:ty => |$v:ident| $e:expr;)*) => {
        $(impl std::fmt::Display for $t {
            /// The value as the command line takes it (for `--help`'s defaults).
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let $v = self;
                write!(f, "{}", $e)
            }
        })*
    };
}

shown_as_number! {
    Seconds => |s| s.0.as_secs_f64();
    SecondsOrZero => |s| s.0.as_secs_f64();
    TimeScale => |s| s.0;
    Speed => |s| s.0;
    Positive => |s| s.0;
    Fraction => |s| s.0;
}

impl<const LO: u64, const HI: u64> std::fmt::Display for Count<LO, HI> {
    /// The number (for `--help`'s defaults).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The reason of a core check's error, without a flag's name (the command
/// line adds it).
fn reason(e: codendum_core::error::ConfigError) -> String {
    match e {
        codendum_core::error::ConfigError::Invalid { reason, .. } => reason,
        other => other.to_string(),
    }
}

fn number(raw: &str) -> Result<f64, String> {
    let raw = raw.trim();
    raw.parse::<f64>()
        .map_err(|_| format!("{raw:?} is not a number"))
}

fn items<T>(raw: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    flags::list(raw).map(parse).collect()
}

fn unique<T: PartialEq>(values: &[T], show: impl Fn(&T) -> String) -> Result<(), String> {
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(format!("{} is given twice", show(v)));
        }
    }
    Ok(())
}

fn non_empty<T>(values: Vec<T>, empty: &str) -> Result<Vec<T>, String> {
    if values.is_empty() {
        Err(empty.to_string())
    } else {
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_in_range_once_each_and_in_order() {
        assert_eq!("1, 8,16".parse::<Levels>().unwrap().0, vec![1, 8, 16]);
        assert!("4096".parse::<Levels>().is_ok());
        for bad in ["", " , ", "0", "4097", "1,1", "x", "-1", "1.5"] {
            assert!(bad.parse::<Levels>().is_err(), "{bad}");
        }
        assert_eq!("8,8".parse::<Levels>().unwrap_err(), "8 is given twice");
    }

    #[test]
    fn rates_shapes_and_seconds() {
        assert_eq!("0.5,2".parse::<Rates>().unwrap().0, vec![0.5, 2.0]);
        for bad in ["0", "-1", "x", "1,1", ""] {
            assert!(bad.parse::<Rates>().is_err(), "{bad}");
        }
        assert_eq!(
            "long,short".parse::<Shapes>().unwrap().0,
            vec![Shape::Long, Shape::Short]
        );
        let e = "short,medium".parse::<Shapes>().unwrap_err();
        assert!(e.contains("medium"), "{e}");
        assert!("short,short".parse::<Shapes>().is_err());
        assert_eq!(
            "1.5".parse::<Seconds>().unwrap().0,
            Duration::from_millis(1500)
        );
        for bad in ["0", "-1", "nan", "inf", "1e8"] {
            assert!(bad.parse::<Seconds>().is_err(), "{bad}");
        }
        assert_eq!("0".parse::<SecondsOrZero>().unwrap().0, Duration::ZERO);
        assert!("-2".parse::<SecondsOrZero>().is_err());
    }

    #[test]
    fn scales_fractions_and_counts() {
        assert!("10000".parse::<TimeScale>().is_ok());
        assert!("0".parse::<TimeScale>().is_err() && "10001".parse::<TimeScale>().is_err());
        assert!("1".parse::<Fraction>().is_ok() && "1.01".parse::<Fraction>().is_err());
        assert_eq!("7".parse::<AtLeastOne>().unwrap().0, 7);
        assert_eq!("0".parse::<AtLeastOne>().unwrap_err(), "must be at least 1");
        assert_eq!(
            "51".parse::<Count<1, 50>>().unwrap_err(),
            "51 is outside 1..=50"
        );
        assert!("x".parse::<Count<1, 50>>().is_err());
    }

    #[test]
    fn urls_and_objectives() {
        assert_eq!(
            "http://a:8000/metrics/, http://b:8000/metrics"
                .parse::<HttpUrls>()
                .unwrap()
                .0,
            vec!["http://a:8000/metrics", "http://b:8000/metrics"]
        );
        assert!("a:8000/metrics".parse::<HttpUrls>().is_err());
        assert!("ttft_p95=2s".parse::<SloValue>().is_ok());
        let e = "speed=fast".parse::<SloValue>().unwrap_err();
        assert!(!e.starts_with("invalid"), "the flag is added above: {e}");
    }
}

/// A recorded-session format named on the command line (`replay --format`,
/// `export-trace --source-format`): one of the readers' names, or an alias
/// (`aiperf`, `weka`, `agentx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionFormat(pub codendum_core::trace::SourceFormat);

impl FromStr for SessionFormat {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        use codendum_core::trace::SourceFormat;
        let raw = raw.trim();
        SourceFormat::parse(raw).map(SessionFormat).ok_or_else(|| {
            let known: Vec<&str> = SourceFormat::ALL.iter().map(|f| f.as_str()).collect();
            format!("{raw:?} is not a format: {} (or aiperf)", known.join(", "))
        })
    }
}
