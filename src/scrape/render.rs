//! The pure half of `codendum metrics`: the human table of one snapshot and
//! the `--watch` line (the command itself is `codendum metrics`).

use codendum_core::prom::snapshot::ServerSnapshot;
use codendum_core::prom::window::{IntervalRates, TimelineSample};

/// An integer with thousands separators (`8,509,296`); "n/a" when absent.
pub fn format_count(value: Option<f64>) -> String {
    let Some(v) = value.filter(|v| v.is_finite()) else {
        return "n/a".to_string();
    };
    let rounded = v.round();
    if rounded.abs() >= 1e18 {
        return format!("{rounded:e}");
    }
    let digits = (rounded.abs() as u64).to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if rounded < 0.0 {
        grouped.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    grouped
}

/// A fraction as a percent with one decimal (`0.0852` → `8.5 %`); "n/a" when absent.
pub fn format_percent(fraction: Option<f64>) -> String {
    match fraction.filter(|f| f.is_finite()) {
        Some(f) => format!("{:.1} %", f * 100.0),
        None => "n/a".to_string(),
    }
}

/// The human table of one snapshot (`codendum metrics` without `--watch`).
pub fn render_table(snapshot: &ServerSnapshot, urls: &[String]) -> String {
    let hits = match (snapshot.prefix_cache_hits, snapshot.prefix_cache_queries) {
        (Some(_), Some(_)) => format!(
            "{} ({} of {} prompt tokens)",
            format_percent(snapshot.prefix_hit_rate()),
            format_count(snapshot.prefix_cache_hits),
            format_count(snapshot.prefix_cache_queries)
        ),
        _ => "n/a".to_string(),
    };
    let capacity = match snapshot.kv_capacity_tokens {
        Some(c) => format!("{} tokens", format_count(Some(c as f64))),
        None => "n/a".to_string(),
    };
    let rows = [
        ("server", urls.join(", ")),
        (
            "model",
            snapshot.model_name.clone().unwrap_or_else(|| "n/a".into()),
        ),
        ("running", format_count(snapshot.running)),
        ("waiting", format_count(snapshot.waiting)),
        ("KV cache usage", format_percent(snapshot.kv_usage)),
        ("KV capacity", capacity),
        ("preemptions", format_count(snapshot.preemptions)),
        ("prefix-cache hits", hits),
        ("prompt tokens", format_count(snapshot.prompt_tokens)),
        (
            "generation tokens",
            format_count(snapshot.generation_tokens),
        ),
    ];
    let mut text = String::new();
    for (name, value) in rows {
        text.push_str(&format!("{name:<18} {value}\n"));
    }
    if !snapshot.has_vllm_metrics() {
        text.push_str("note: the page holds no vLLM metrics (is this a vLLM server?)\n");
    }
    text
}

fn format_rate(rate: Option<f64>) -> String {
    match rate.filter(|r| r.is_finite()) {
        Some(r) => format!("{r:.1}"),
        None => "-".to_string(),
    }
}

/// One `--watch` line: gauges now, rates since the previous sample.
pub fn render_watch_line(sample: &TimelineSample, rates: Option<&IntervalRates>) -> String {
    let empty = ServerSnapshot::default();
    let s = sample.snapshot.as_ref().unwrap_or(&empty);
    let hit_rate = rates.and_then(|r| r.prefix_hit_rate);
    format!(
        "{}  running {}  waiting {}  KV {}  prompt {} tok/s  generation {} tok/s  prefix hits {}  preemptions {}",
        sample.utc.format("%Y-%m-%dT%H:%M:%SZ"),
        format_count(s.running),
        format_count(s.waiting),
        format_percent(s.kv_usage),
        format_rate(rates.and_then(|r| r.prompt_tokens_per_s)),
        format_rate(rates.and_then(|r| r.generation_tokens_per_s)),
        if hit_rate.is_some() { format_percent(hit_rate) } else { "-".to_string() },
        rates
            .and_then(|r| r.preemptions)
            .map_or_else(|| "-".to_string(), |p| format!("+{}", format_count(Some(p)))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_get_thousands_separators() {
        assert_eq!(format_count(Some(8_509_296.0)), "8,509,296");
        assert_eq!(format_count(Some(999.4)), "999");
        assert_eq!(format_count(Some(1000.0)), "1,000");
        assert_eq!(format_count(Some(-1_234_567.0)), "-1,234,567");
        assert_eq!(format_count(Some(0.0)), "0");
        assert_eq!(format_count(None), "n/a");
        assert_eq!(format_count(Some(f64::NAN)), "n/a");
    }

    #[test]
    fn fractions_print_as_percent_with_one_decimal() {
        assert_eq!(format_percent(Some(0.08517392142689442)), "8.5 %");
        assert_eq!(format_percent(Some(1.0)), "100.0 %");
        assert_eq!(format_percent(None), "n/a");
    }

    #[test]
    fn a_page_without_vllm_metrics_says_so() {
        let table = render_table(&ServerSnapshot::default(), &["http://h/metrics".into()]);
        assert!(table.contains("running            n/a\n"), "{table}");
        assert!(table.contains("no vLLM metrics"), "{table}");
    }
}
