//! The Prometheus parser and the vLLM view, against recorded and hand-written pages.

use codendum_core::prom::{parse, LineProblem, MetricType, ParseError, ServerSnapshot};
use proptest::prelude::*;

const BUSY: &str = include_str!("../../fixtures/metrics/vllm-0.30-metrics-busy.txt");
const IDLE: &str = include_str!("../../fixtures/metrics/vllm-0.30-metrics-idle.txt");
const OLD_NAMES: &str = include_str!("../../fixtures/metrics/vllm-old-names.txt");
const TWO_ENGINES: &str = include_str!("../../fixtures/metrics/vllm-two-engines.txt");
const NOT_VLLM: &str = include_str!("../../fixtures/metrics/not-vllm-exporter.txt");
const HTML: &str = include_str!("../../fixtures/metrics/broken-proxy-error.html");
const UNTERMINATED: &str = include_str!("../../fixtures/metrics/broken-unterminated-label.txt");

const MODEL: &str = "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8";

#[test]
fn busy_page_gives_the_recorded_figures() {
    let s = ServerSnapshot::from_text(BUSY).expect("busy page parses");
    assert_eq!(s.running, Some(16.0));
    assert_eq!(s.waiting, Some(12.0));
    assert_eq!(s.kv_usage, Some(0.08517392142689442));
    assert_eq!(s.prefix_cache_hits, Some(8_509_296.0));
    assert_eq!(s.prefix_cache_queries, Some(8_837_300.0));
    assert_eq!(s.kv_capacity_tokens, Some(1_362_640));
    assert_eq!(s.block_size, Some(16));
    assert_eq!(s.preemptions, Some(0.0));
    assert_eq!(s.model_name.as_deref(), Some(MODEL));
    assert_eq!(s.prompt_tokens, Some(8_837_300.0));
    assert_eq!(s.generation_tokens, Some(178_196.0));
    let by_source = s.prompt_tokens_by_source.as_ref().expect("by source");
    assert_eq!(by_source.get("local_compute"), Some(&328_004.0));
    assert_eq!(by_source.get("local_cache_hit"), Some(&8_509_296.0));
    assert_eq!(by_source.get("external_kv_transfer"), Some(&0.0));
    let finished = s.finished_requests.as_ref().expect("finished");
    assert_eq!(finished.get("stop"), Some(&731.0));
    assert_eq!(finished.get("length"), Some(&9.0));
    assert_eq!(finished.get("abort"), Some(&2.0));
    assert_eq!(s.finished_total(), Some(742.0));
    let rate = s.prefix_hit_rate().expect("hit rate");
    assert!((rate - 8_509_296.0 / 8_837_300.0).abs() < 1e-12);
}

#[test]
fn busy_page_keeps_every_sample_and_its_metadata() {
    let page = parse(BUSY).expect("busy page parses");
    let sample_lines = BUSY
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    assert_eq!(page.samples.len(), sample_lines);
    assert!(
        page.samples
            .iter()
            .filter(|s| s.name.starts_with("vllm:"))
            .count()
            > 300
    );
    assert_eq!(
        page.metric_type("vllm:time_to_first_token_seconds"),
        Some(MetricType::Histogram)
    );
    assert_eq!(
        page.metric_type("vllm:num_requests_running"),
        Some(MetricType::Gauge)
    );
    // HELP text ending with a space is kept as written.
    let help = page.help("http_request_size_bytes").expect("help");
    assert!(help.ends_with("No percentile calculated. "), "{help:?}");
    let inf_bucket = page
        .samples_named("vllm:time_to_first_token_seconds_bucket")
        .find(|s| s.label("le").as_deref() == Some("+Inf"))
        .expect("+Inf bucket");
    assert_eq!(inf_bucket.value, 742.0);
}

#[test]
fn idle_page_reads_zeros_that_are_really_there() {
    let s = ServerSnapshot::from_text(IDLE).expect("idle page parses");
    assert_eq!(s.running, Some(0.0));
    assert_eq!(s.waiting, Some(0.0));
    assert_eq!(s.kv_usage, Some(0.0));
    assert_eq!(s.preemptions, Some(0.0));
    assert_eq!(s.prefix_cache_queries, Some(0.0));
    assert_eq!(s.prefix_hit_rate(), None, "no queries yet: no rate");
    assert_eq!(s.kv_capacity_tokens, Some(1_362_640));
    assert_eq!(s.model_name.as_deref(), Some(MODEL));
}

#[test]
fn older_names_and_block_count_capacity_are_read() {
    let s = ServerSnapshot::from_text(OLD_NAMES).expect("old page parses");
    assert_eq!(s.kv_usage, Some(0.25));
    assert_eq!(s.prefix_cache_queries, Some(1.17e10));
    assert_eq!(s.prefix_cache_hits, Some(2.925e9));
    assert_eq!(s.prefix_hit_rate(), Some(0.25));
    assert_eq!(s.preemptions, Some(7.0));
    assert_eq!(s.kv_capacity_tokens, Some(27_000 * 16));
    assert_eq!(s.block_size, Some(16));
    assert_eq!(s.prompt_tokens, Some(123_456.0));
    assert_eq!(s.prompt_tokens_by_source, None, "absent, not zero");
    assert_eq!(
        s.model_name.as_deref(),
        Some("meta-llama/Llama-3.1-8B-Instruct")
    );
    let page = parse(OLD_NAMES).expect("parses");
    let prompt = page
        .samples_named("vllm:prompt_tokens_total")
        .next()
        .expect("prompt");
    assert_eq!(prompt.timestamp_ms, Some(1_790_000_000_000));
}

#[test]
fn two_engines_are_summed_and_kv_usage_weighted_by_capacity() {
    let s = ServerSnapshot::from_text(TWO_ENGINES).expect("parses");
    assert_eq!(s.running, Some(16.0));
    assert_eq!(s.waiting, Some(2.0));
    assert_eq!(s.preemptions, Some(4.0));
    assert_eq!(s.prefix_cache_queries, Some(4000.0));
    assert_eq!(s.prefix_cache_hits, Some(3000.0));
    assert_eq!(s.generation_tokens, Some(768.0));
    assert_eq!(s.kv_capacity_tokens, Some(400_000));
    // (0.5 × 300k + 0.2 × 100k) / 400k; the deprecated duplicate is not added.
    let kv = s.kv_usage.expect("kv");
    assert!((kv - 0.425).abs() < 1e-12, "{kv}");
    let by_source = s.prompt_tokens_by_source.as_ref().expect("by source");
    assert_eq!(by_source.get("local_cache_hit"), Some(&3000.0));
    let finished = s.finished_requests.as_ref().expect("finished");
    assert_eq!(finished.get("stop"), Some(&9.0));
    assert_eq!(finished.get("length"), Some(&1.0));
}

#[test]
fn replicas_are_summed() {
    let busy = ServerSnapshot::from_text(BUSY).expect("busy");
    let two = ServerSnapshot::from_text(TWO_ENGINES).expect("two");
    let sum = ServerSnapshot::sum(&[busy.clone(), two.clone(), ServerSnapshot::default()]);
    assert_eq!(sum.running, Some(32.0));
    assert_eq!(sum.kv_capacity_tokens, Some(1_762_640));
    assert_eq!(sum.prefix_cache_hits, Some(8_512_296.0));
    let expected_kv = (0.08517392142689442 * 1_362_640.0 + 0.425 * 400_000.0) / 1_762_640.0;
    assert!((sum.kv_usage.expect("kv") - expected_kv).abs() < 1e-12);
    assert_eq!(
        sum.model_name.as_deref(),
        Some("Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8, qwen3-coder")
    );
    assert_eq!(
        ServerSnapshot::sum(&[busy.clone(), busy.clone()]).kv_usage,
        busy.kv_usage
    );
    assert_eq!(ServerSnapshot::sum(&[]), ServerSnapshot::default());
}

#[test]
fn a_page_that_is_not_vllm_parses_with_every_field_absent() {
    let page = parse(NOT_VLLM).expect("parses");
    assert_eq!(page.samples.len(), 14);
    let quoted = page
        .samples_named("http_requests_total")
        .find(|s| s.label("method").as_deref() == Some("POST"))
        .expect("POST sample");
    assert_eq!(
        quoted.label("path").as_deref(),
        Some("/a \"quoted\" \\ path\n")
    );
    assert_eq!(quoted.timestamp_ms, Some(1_395_066_363_000));
    assert_eq!(
        page.help("http_requests_total"),
        Some("Requests served, by \"path\" \\ method.\nSecond help line. ")
    );
    let rule = page
        .samples_named("job:request_latency_seconds:mean5m")
        .next();
    assert_eq!(rule.map(|s| s.value), Some(0.0123));
    assert!(page.samples_named("queue_depth").all(|s| s.value.is_nan()));
    let temps: Vec<f64> = page
        .samples_named("temperature_celsius")
        .map(|s| s.value)
        .collect();
    assert_eq!(temps, vec![f64::NEG_INFINITY, f64::INFINITY]);
    let snapshot = ServerSnapshot::from_exposition(&page);
    assert_eq!(snapshot, ServerSnapshot::default());
    assert!(!snapshot.has_vllm_metrics());
    assert_eq!(serde_json::to_string(&snapshot).expect("json"), "{}");
}

#[test]
fn html_is_rejected_at_line_one() {
    match parse(HTML) {
        Err(ParseError::Malformed {
            line,
            problem,
            excerpt,
        }) => {
            assert_eq!(line, 1);
            assert_eq!(problem, LineProblem::BadMetricName);
            assert!(excerpt.starts_with("<!DOCTYPE html>"));
        }
        other => panic!("HTML must be rejected, got {other:?}"),
    }
}

#[test]
fn broken_label_names_its_line() {
    let err = parse(UNTERMINATED).expect_err("broken");
    assert!(matches!(
        err,
        ParseError::Malformed {
            line: 5,
            problem: LineProblem::Unterminated,
            ..
        }
    ));
    assert!(err.to_string().starts_with("line 5: "), "{err}");
}

#[test]
fn empty_and_comment_only_pages_are_rejected_not_read_as_zeros() {
    assert_eq!(parse("").expect_err("empty"), ParseError::NoSamples);
    assert_eq!(parse("\n\n  \n").expect_err("blank"), ParseError::NoSamples);
    assert_eq!(
        parse("# HELP a b\n# TYPE a gauge\n").expect_err("meta"),
        ParseError::NoSamples
    );
    assert!(ServerSnapshot::from_text("").is_err());
}

#[test]
fn each_kind_of_malformed_line_is_reported() {
    let cases = [
        ("ok 1\n{a=\"b\"} 1\n", 2, LineProblem::BadMetricName),
        ("m{1a=\"b\"} 1", 1, LineProblem::BadLabelName),
        ("m{a \"b\"} 1", 1, LineProblem::ExpectedEquals),
        ("m{a=b} 1", 1, LineProblem::ExpectedQuote),
        ("m{a=\"b\\t\"} 1", 1, LineProblem::BadEscape),
        ("m{a=\"b\" c=\"d\"} 1", 1, LineProblem::ExpectedCommaOrBrace),
        ("m{a=\"b\"", 1, LineProblem::Unterminated),
        ("m{a=\"b\"}", 1, LineProblem::MissingValue),
        ("\n\nm twelve", 3, LineProblem::BadValue),
        ("m 1 12.5", 1, LineProblem::BadTimestamp),
        ("m 1 12 extra", 1, LineProblem::TrailingText),
        ("# TYPE m gauge extra\nm 1", 1, LineProblem::BadMetadata),
        ("# TYPE m flavour\nm 1", 1, LineProblem::UnknownType),
        ("# HELP 9m help\nm 1", 1, LineProblem::BadMetadata),
        ("{\"error\": \"not found\"}", 1, LineProblem::BadMetricName),
    ];
    for (text, want_line, want_problem) in cases {
        match parse(text) {
            Err(ParseError::Malformed { line, problem, .. }) => {
                assert_eq!((line, problem), (want_line, want_problem), "{text:?}");
            }
            other => panic!("{text:?}: expected an error, got {other:?}"),
        }
    }
}

#[test]
fn tolerant_of_crlf_blank_lines_whitespace_and_openmetrics_eof() {
    let text =
        "# TYPE a counter\r\n\r\na_total{x=\"1\" , } 2 \r\n  b  3\t\n# EOF\nthis is ignored\n";
    let page = parse(text).expect("parses");
    assert_eq!(page.samples.len(), 2);
    assert_eq!(page.samples[0].name, "a_total");
    assert_eq!(page.samples[0].label("x").as_deref(), Some("1"));
    assert_eq!(page.samples[1].value, 3.0);
}

// ---- round trip: render random families, parse them back ------------------

#[derive(Debug, Clone)]
struct Line {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
    style: u8,
    timestamp: Option<i64>,
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn render_value(v: f64, style: u8) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    match style % 3 {
        0 => format!("{v:?}"),
        1 => format!("{v:e}"),
        _ => {
            // Old Go clients: `1.17e+010`.
            let text = format!("{v:e}");
            let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
            let exponent: i32 = exponent.parse().unwrap_or(0);
            let sign = if exponent < 0 { '-' } else { '+' };
            format!("{mantissa}e{sign}{:03}", exponent.abs())
        }
    }
}

fn line_strategy() -> impl Strategy<Value = Line> {
    let value = prop_oneof![
        any::<f64>(),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        (-1e6f64..1e6),
    ];
    (
        "[a-zA-Z_:][a-zA-Z0-9_:]{0,24}",
        proptest::collection::btree_map("[a-zA-Z_][a-zA-Z0-9_]{0,8}", "[ -~\n\\\\\"é]{0,12}", 0..5),
        value,
        any::<u8>(),
        proptest::option::of(any::<i64>()),
    )
        .prop_map(|(name, labels, value, style, timestamp)| Line {
            name,
            labels: labels.into_iter().collect(),
            value,
            style,
            timestamp,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn rendered_pages_parse_back_to_the_same_values(
        lines in proptest::collection::vec(line_strategy(), 1..20),
        help in "[ -~\n\\\\]{0,30}",
    ) {
        let mut text = String::new();
        for line in &lines {
            let escaped_help = help.replace('\\', "\\\\").replace('\n', "\\n");
            text.push_str(&format!("# HELP {} {}\n# TYPE {} gauge\n", line.name, escaped_help, line.name));
            text.push_str(&line.name);
            if !line.labels.is_empty() {
                let parts: Vec<String> = line
                    .labels
                    .iter()
                    .rev() // any order
                    .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                    .collect();
                text.push_str(&format!("{{{}}}", parts.join(",")));
            }
            text.push(' ');
            text.push_str(&render_value(line.value, line.style));
            if let Some(ts) = line.timestamp {
                text.push_str(&format!(" {ts}"));
            }
            text.push('\n');
        }
        let page = parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(page.samples.len(), lines.len());
        for (sample, line) in page.samples.iter().zip(&lines) {
            prop_assert_eq!(sample.name, line.name.as_str());
            prop_assert!(
                sample.value.to_bits() == line.value.to_bits()
                    || (sample.value.is_nan() && line.value.is_nan()),
                "{} != {}", sample.value, line.value
            );
            prop_assert_eq!(sample.timestamp_ms, line.timestamp);
            let mut got: Vec<(String, String)> =
                sample.labels().map(|(k, v)| (k.to_string(), v.into_owned())).collect();
            got.sort();
            prop_assert_eq!(&got, &line.labels);
            // Blanks between the name and the help text are separators.
            prop_assert_eq!(page.help(&line.name), Some(help.trim_start_matches(' ')));
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = parse(&text);
        let _ = ServerSnapshot::from_text(&text);
    }
}
