//! Window figures over a server timeline, interval rates, and timeline files.

use std::io::Write;

use chrono::{DateTime, TimeZone, Utc};
use codendum_core::prom::{
    align_timeline, counter_increase, parse_timeline, read_timeline, window_stats, IntervalRates,
    ServerSnapshot, TimelineError, TimelineSample,
};

fn utc(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_790_000_000 + secs, 0)
        .single()
        .expect("valid time")
}

/// A sample at `t` with gauges and counters (preemptions, prompt, generation, queries, hits).
fn sample(t: f64, running: f64, kv: f64, counters: [f64; 5]) -> TimelineSample {
    let [preemptions, prompt, generation, queries, hits] = counters;
    TimelineSample {
        utc: utc(t as i64),
        t,
        snapshot: Some(ServerSnapshot {
            running: Some(running),
            waiting: Some(running / 2.0),
            kv_usage: Some(kv),
            preemptions: Some(preemptions),
            prompt_tokens: Some(prompt),
            generation_tokens: Some(generation),
            prefix_cache_queries: Some(queries),
            prefix_cache_hits: Some(hits),
            ..ServerSnapshot::default()
        }),
        error: None,
    }
}

fn failed(t: f64) -> TimelineSample {
    TimelineSample {
        utc: utc(t as i64),
        t,
        snapshot: None,
        error: Some("http://127.0.0.1:9/metrics is unreachable: connection refused".into()),
    }
}

#[test]
fn counter_increase_is_never_negative() {
    assert_eq!(counter_increase(10.0, 15.0), 5.0);
    assert_eq!(counter_increase(10.0, 4.0), 4.0, "restart: counted from 0");
    assert_eq!(counter_increase(10.0, 10.0), 0.0);
}

#[test]
fn window_takes_peaks_inside_and_increases_from_the_baseline() {
    let timeline = vec![
        sample(0.0, 1.0, 0.01, [0.0, 100.0, 10.0, 100.0, 0.0]),
        sample(1.0, 8.0, 0.05, [1.0, 1100.0, 60.0, 1100.0, 500.0]),
        failed(2.0),
        sample(3.0, 16.0, 0.12, [3.0, 2100.0, 200.0, 2100.0, 1300.0]),
        sample(4.0, 12.0, 0.09, [3.0, 2600.0, 300.0, 2600.0, 1700.0]),
        sample(5.0, 30.0, 0.50, [9.0, 9000.0, 900.0, 9000.0, 9000.0]),
    ];
    let w = window_stats(&timeline, 0.5, 4.0);
    assert_eq!(w.samples, 4);
    assert_eq!(w.failed_scrapes, 1);
    assert_eq!(w.peak_running, Some(16.0));
    assert_eq!(w.peak_waiting, Some(8.0));
    assert_eq!(w.peak_kv_usage, Some(0.12));
    // Baseline is the sample at t=0.
    assert_eq!(w.preemptions, Some(3.0));
    assert_eq!(w.prompt_tokens, Some(2500.0));
    assert_eq!(w.generation_tokens, Some(290.0));
    assert_eq!(w.prefix_cache_queries, Some(2500.0));
    assert_eq!(w.prefix_cache_hits, Some(1700.0));
    assert_eq!(w.prefix_hit_rate, Some(1700.0 / 2500.0));

    // Contiguous windows share no increment.
    let first = window_stats(&timeline, 0.0, 3.0);
    let second = window_stats(&timeline, 3.0, 5.0);
    let whole = window_stats(&timeline, 0.0, 5.0);
    assert_eq!(
        first.prompt_tokens.unwrap_or(0.0) + second.prompt_tokens.unwrap_or(0.0),
        whole.prompt_tokens.unwrap_or(-1.0)
    );
    assert_eq!(whole.prompt_tokens, Some(8900.0));
}

#[test]
fn a_counter_reset_counts_the_new_value_from_zero() {
    let timeline = vec![
        sample(0.0, 4.0, 0.1, [5.0, 10_000.0, 500.0, 10_000.0, 9_000.0]),
        sample(1.0, 4.0, 0.1, [6.0, 12_000.0, 700.0, 12_000.0, 10_000.0]),
        // The server restarted between t=1 and t=2.
        sample(2.0, 1.0, 0.0, [0.0, 300.0, 20.0, 300.0, 0.0]),
        sample(3.0, 2.0, 0.0, [2.0, 1_300.0, 80.0, 1_300.0, 600.0]),
    ];
    let w = window_stats(&timeline, 0.0, 3.0);
    assert_eq!(w.preemptions, Some(1.0 + 0.0 + 2.0));
    assert_eq!(w.prompt_tokens, Some(2_000.0 + 300.0 + 1_000.0));
    assert_eq!(w.generation_tokens, Some(200.0 + 20.0 + 60.0));
    assert_eq!(w.prefix_cache_hits, Some(1_000.0 + 0.0 + 600.0));
    assert_eq!(w.prefix_hit_rate, Some(1_600.0 / 3_300.0));
    let rates = IntervalRates::between(&timeline[1], &timeline[2]).expect("rates");
    assert_eq!(rates.prompt_tokens_per_s, Some(300.0));
    assert_eq!(rates.preemptions, Some(0.0));
}

#[test]
fn windows_without_data_say_so() {
    let timeline = vec![failed(0.0), failed(1.0)];
    let w = window_stats(&timeline, 0.0, 10.0);
    assert_eq!((w.samples, w.failed_scrapes), (2, 2));
    assert_eq!(w.peak_running, None);
    assert_eq!(w.preemptions, None);
    assert_eq!(w.prefix_hit_rate, None);
    let one = vec![sample(5.0, 3.0, 0.2, [0.0; 5])];
    let w = window_stats(&one, 0.0, 10.0);
    assert_eq!(w.peak_running, Some(3.0));
    assert_eq!(w.prompt_tokens, None, "one sample: no interval to measure");
    assert_eq!(window_stats(&[], 0.0, 1.0).samples, 0);
}

#[test]
fn interval_rates_divide_increases_by_the_simulated_interval() {
    let a = sample(10.0, 4.0, 0.1, [0.0, 1_000.0, 100.0, 1_000.0, 400.0]);
    let b = sample(15.0, 4.0, 0.1, [1.0, 6_000.0, 600.0, 5_000.0, 3_400.0]);
    let r = IntervalRates::between(&a, &b).expect("rates");
    assert_eq!(r.dt, 5.0);
    assert_eq!(r.prompt_tokens_per_s, Some(1_000.0));
    assert_eq!(r.generation_tokens_per_s, Some(100.0));
    assert_eq!(r.prefix_hit_rate, Some(0.75));
    assert_eq!(r.preemptions, Some(1.0));
    assert_eq!(
        IntervalRates::between(&b, &a),
        None,
        "time must move forward"
    );
    assert_eq!(IntervalRates::between(&a, &failed(20.0)), None);
}

#[test]
fn timeline_files_round_trip_and_tolerate_a_truncated_last_line() {
    let samples = vec![
        sample(0.0, 1.0, 0.01, [0.0, 1.0, 2.0, 3.0, 1.0]),
        failed(1.0),
        sample(2.0, 2.0, 0.02, [0.0, 5.0, 6.0, 7.0, 2.0]),
    ];
    let mut text = String::new();
    for s in &samples {
        text.push_str(&serde_json::to_string(s).expect("json"));
        text.push('\n');
    }
    text.push('\n');
    // A line as `metrics --json` prints it, with `rates`.
    text.push_str(
        r#"{"utc":"2026-09-29T10:00:05Z","t":5.0,"snapshot":{"running":3.0},"rates":{"dt":5.0,"prompt_tokens_per_s":10.0}}"#,
    );
    text.push('\n');
    text.push_str(r#"{"utc":"2026-09-29T10:00:10Z","t":10.0,"snap"#);
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(text.as_bytes()).expect("write");
    let read = read_timeline(file.path()).expect("readable");
    assert_eq!(read.len(), 4);
    assert_eq!(&read[..3], &samples[..]);
    assert_eq!(read[3].snapshot.as_ref().and_then(|s| s.running), Some(3.0));

    let broken_middle = "{\"utc\":\"2026-09-29T10:00:05Z\",\"t\":1}\nnot json\n{\"utc\":\"2026-09-29T10:00:05Z\",\"t\":2}\n";
    match parse_timeline(broken_middle) {
        Err(TimelineError::BadLine { line, .. }) => assert_eq!(line, 2),
        other => panic!("expected a bad line, got {other:?}"),
    }
    assert!(matches!(
        read_timeline(std::path::Path::new("/nonexistent/timeline.jsonl")),
        Err(TimelineError::Io { .. })
    ));
}

#[test]
fn a_timeline_recorded_elsewhere_is_aligned_by_utc() {
    // The operator's watch started 20 s before the run and sampled every 5 s.
    let recorded: Vec<TimelineSample> = [0, 5, 10, 15, 20, 25]
        .iter()
        .rev()
        .map(|&s| {
            let mut x = sample(1_000.0 + s as f64, s as f64, 0.1, [0.0; 5]);
            x.utc = utc(s);
            x
        })
        .collect();
    let aligned = align_timeline(recorded, utc(20));
    let ts: Vec<f64> = aligned.iter().map(|s| s.t).collect();
    assert_eq!(ts, vec![-20.0, -15.0, -10.0, -5.0, 0.0, 5.0]);
    let w = window_stats(&aligned, 0.0, 5.0);
    assert_eq!(w.samples, 2);
    assert_eq!(w.peak_running, Some(25.0));
}
