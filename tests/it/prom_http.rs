//! The scraper, the sampler and `codendum metrics` against loopback mock servers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codendum::app::metrics::{run_metrics, MetricsOptions};
use codendum::events::Events;
use codendum::scrape::{Sampler, ScrapeError, Scraper};
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::prom::parse_timeline;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const BUSY: &str = include_str!("../../fixtures/metrics/vllm-0.30-metrics-busy.txt");
const HTML: &str = include_str!("../../fixtures/metrics/broken-proxy-error.html");

/// A small vLLM page whose counters advance with every call `k`:
/// prompt +1000, generation +100, queries +1000, hits +750, preemptions +1.
fn page(k: f64) -> String {
    let m = r#"{engine="0",model_name="qwen3-coder"}"#;
    format!(
        "# TYPE vllm:num_requests_running gauge\n\
         vllm:num_requests_running{m} {running}\n\
         vllm:num_requests_waiting{m} 1.0\n\
         vllm:kv_cache_usage_perc{m} {kv}\n\
         vllm:num_preemptions_total{m} {k}\n\
         vllm:prompt_tokens_total{m} {prompt:e}\n\
         vllm:generation_tokens_total{m} {generation}\n\
         vllm:prefix_cache_queries_total{m} {prompt}\n\
         vllm:prefix_cache_hits_total{m} {hits}\n",
        running = 2.0 + k,
        kv = 0.01 * k,
        prompt = 1000.0 * k,
        generation = 100.0 * k,
        hits = 750.0 * k,
    )
}

struct Advancing {
    calls: AtomicUsize,
}

impl Respond for Advancing {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let k = self.calls.fetch_add(1, Ordering::SeqCst) as f64;
        ResponseTemplate::new(200).set_body_string(page(k))
    }
}

/// A mock `/metrics` that only answers a scraper sending `Accept: text/plain`.
async fn advancing_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/metrics"))
        .and(header("accept", "text/plain"))
        .respond_with(Advancing {
            calls: AtomicUsize::new(0),
        })
        .mount(&server)
        .await;
    server
}

async fn static_server(status: u16, body: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/metrics"))
        .respond_with(ResponseTemplate::new(status).set_body_string(body))
        .mount(&server)
        .await;
    server
}

fn scraper_for(urls: &[String]) -> Scraper {
    Scraper::new(reqwest::Client::new(), urls.to_vec()).with_timeout(Duration::from_secs(30))
}

/// A URL on a loopback port nobody listens on.
fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/metrics")
}

fn opts(urls: &[String], watch: Option<f64>, json: bool, count: Option<u64>) -> MetricsOptions {
    MetricsOptions {
        urls: urls.to_vec(),
        watch: watch.map(Duration::from_secs_f64),
        json,
        count,
    }
}

#[tokio::test]
async fn watch_json_prints_rates_from_counter_increases() {
    let server = advancing_server().await;
    let urls = vec![format!("{}/metrics", server.uri())];
    let clock = Clock::scaled(50.0);
    let (mut out, (events, said)) = (Vec::new(), Events::recording());
    run_metrics(
        &opts(&urls, Some(1.0), true, Some(3)),
        &scraper_for(&urls),
        &clock,
        &mut out,
        &events,
    )
    .await
    .expect("watch runs");
    let text = String::from_utf8(out).expect("utf-8");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(said.events().is_empty());
    assert!(
        lines[0].get("rates").is_none(),
        "no rate before the second sample"
    );
    for k in 1..3 {
        let rates = &lines[k]["rates"];
        let dt = rates["dt"].as_f64().expect("dt");
        let t_prev = lines[k - 1]["t"].as_f64().expect("t");
        let t_now = lines[k]["t"].as_f64().expect("t");
        assert!((dt - (t_now - t_prev)).abs() < 1e-9);
        // Later than the one before; how much later depends on the machine
        // (a late scrape is followed by an on-time one), so no bound here.
        assert!(dt > 0.0, "samples in order, got {dt}");
        let prompt_rate = rates["prompt_tokens_per_s"].as_f64().expect("prompt rate");
        assert!(
            (prompt_rate * dt - 1000.0).abs() < 1e-6,
            "{prompt_rate} × {dt}"
        );
        let gen_rate = rates["generation_tokens_per_s"].as_f64().expect("gen rate");
        assert!((gen_rate * dt - 100.0).abs() < 1e-6);
        assert_eq!(rates["prefix_hit_rate"].as_f64(), Some(0.75));
        assert_eq!(rates["preemptions"].as_f64(), Some(1.0));
        assert_eq!(
            lines[k]["snapshot"]["running"].as_f64(),
            Some(2.0 + k as f64)
        );
    }
    // What `metrics --json` prints is a timeline the classroom can fold in.
    let timeline = parse_timeline(&text).expect("readable as a timeline");
    assert_eq!(timeline.len(), 3);
    assert_eq!(
        timeline[2].snapshot.as_ref().and_then(|s| s.prompt_tokens),
        Some(2000.0)
    );
}

#[tokio::test]
async fn watch_human_lines_show_gauges_and_rates() {
    let server = advancing_server().await;
    let urls = vec![format!("{}/metrics", server.uri())];
    let clock = Clock::scaled(50.0);
    let (mut out, (events, _said)) = (Vec::new(), Events::recording());
    run_metrics(
        &opts(&urls, Some(1.0), false, Some(3)),
        &scraper_for(&urls),
        &clock,
        &mut out,
        &events,
    )
    .await
    .expect("watch runs");
    let text = String::from_utf8(out).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].contains("running 2  waiting 1  KV 0.0 %"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("prompt - tok/s"), "{}", lines[0]);
    assert!(lines[2].contains("running 4"), "{}", lines[2]);
    assert!(lines[2].contains("KV 2.0 %"), "{}", lines[2]);
    assert!(lines[2].contains("prefix hits 75.0 %"), "{}", lines[2]);
    assert!(lines[2].contains("preemptions +1"), "{}", lines[2]);
}

#[tokio::test]
async fn once_prints_a_table_of_the_busy_page() {
    let server = static_server(200, BUSY).await;
    let urls = vec![format!("{}/metrics", server.uri())];
    let (mut out, (events, _said)) = (Vec::new(), Events::recording());
    run_metrics(
        &opts(&urls, None, false, None),
        &scraper_for(&urls),
        &Clock::real(),
        &mut out,
        &events,
    )
    .await
    .expect("once runs");
    let text = String::from_utf8(out).expect("utf-8");
    for expected in [
        "running            16\n",
        "waiting            12\n",
        "KV cache usage     8.5 %\n",
        "preemptions        0\n",
        "prefix-cache hits  96.3 % (8,509,296 of 8,837,300 prompt tokens)\n",
        "prompt tokens      8,837,300\n",
        "generation tokens  178,196\n",
        "KV capacity        1,362,640 tokens\n",
        "model              Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8\n",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    assert!(text.contains(&urls[0]));
}

#[tokio::test]
async fn once_against_a_dead_port_is_a_one_line_failure() {
    let urls = vec![dead_url()];
    let (mut out, (events, _said)) = (Vec::new(), Events::recording());
    let result = run_metrics(
        &opts(&urls, None, false, None),
        &scraper_for(&urls),
        &Clock::real(),
        &mut out,
        &events,
    )
    .await;
    match result {
        Err(e @ Error::Failed(_)) => {
            let message = e.to_string();
            assert_eq!(e.exit_code(), 1);
            assert!(message.contains(&urls[0]), "{message}");
            assert!(message.contains("unreachable"), "{message}");
            assert!(!message.contains('\n'), "{message}");
            assert_eq!(message.matches(&urls[0]).count(), 1, "{message}");
        }
        other => panic!("expected Error::Failed, got {other:?}"),
    }
    assert!(out.is_empty());
}

#[tokio::test]
async fn once_rejects_html_and_http_errors() {
    let html = static_server(200, HTML).await;
    let urls = vec![format!("{}/metrics", html.uri())];
    let (mut out, (events, _said)) = (Vec::new(), Events::recording());
    let e = run_metrics(
        &opts(&urls, None, true, None),
        &scraper_for(&urls),
        &Clock::real(),
        &mut out,
        &events,
    )
    .await
    .expect_err("HTML is not metrics");
    assert!(
        e.to_string().contains("did not answer Prometheus metrics"),
        "{e}"
    );
    assert!(e.to_string().contains("line 1"), "{e}");

    let missing = static_server(404, "not found").await;
    let url = format!("{}/metrics", missing.uri());
    match scraper_for(std::slice::from_ref(&url)).scrape().await {
        Err(ScrapeError::HttpStatus { status, .. }) => assert_eq!(status, 404),
        other => panic!("expected an HTTP status error, got {other:?}"),
    }
}

#[tokio::test]
async fn watch_keeps_trying_when_the_server_is_down() {
    let urls = vec![dead_url()];
    let (mut out, (events, said)) = (Vec::new(), Events::recording());
    run_metrics(
        &opts(&urls, Some(1.0), true, Some(2)),
        &scraper_for(&urls),
        &Clock::scaled(50.0),
        &mut out,
        &events,
    )
    .await
    .expect("watch never fails on a scrape");
    let notes = said.warnings();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes.iter().all(|l| l.contains("unreachable")), "{notes:?}");
    let timeline = parse_timeline(&String::from_utf8(out).expect("utf-8")).expect("timeline");
    assert_eq!(timeline.len(), 2);
    assert!(timeline
        .iter()
        .all(|s| s.snapshot.is_none() && s.error.is_some()));
}

#[tokio::test]
async fn replicas_are_scraped_and_summed() {
    let a = static_server(200, BUSY).await;
    let b = static_server(200, BUSY).await;
    let urls = vec![
        format!("{}/metrics", a.uri()),
        format!("{}/metrics", b.uri()),
    ];
    let snapshot = scraper_for(&urls).scrape().await.expect("both answer");
    assert_eq!(snapshot.running, Some(32.0));
    assert_eq!(snapshot.kv_capacity_tokens, Some(2 * 1_362_640));
    let with_dead = vec![urls[0].clone(), dead_url()];
    assert!(matches!(
        scraper_for(&with_dead).scrape().await,
        Err(ScrapeError::Unreachable { .. })
    ));
    assert!(matches!(
        scraper_for(&[]).scrape().await,
        Err(ScrapeError::NoUrls)
    ));
}

#[tokio::test]
async fn sampler_records_a_timeline_on_a_scaled_clock() {
    let server = advancing_server().await;
    let urls = vec![format!("{}/metrics", server.uri())];
    let clock = Clock::scaled(20.0);
    let dir = tempfile::tempdir().expect("tempdir");
    let file_path = dir.path().join("server-timeline.jsonl");
    let file = std::fs::File::create(&file_path).expect("timeline file");
    let handle = Sampler::start_recording(
        scraper_for(&urls),
        clock.clone(),
        Duration::from_secs(1),
        codendum_core::results::JsonlWriter::new(file),
    );
    // Wait (in simulated time) until at least 4 samples exist; generous bound.
    let mut waited = 0;
    while handle.timeline().len() < 4 && waited < 600 {
        clock.sleep(Duration::from_secs(1)).await;
        waited += 1;
    }
    let latest = handle.latest().expect("a snapshot");
    assert!(latest.running.is_some());
    let timeline = handle.stop().await;
    assert!(timeline.len() >= 4, "{} samples", timeline.len());
    for pair in timeline.windows(2) {
        // In order; how far apart depends on the machine (a late scrape is
        // followed by an on-time one), so the spacing is checked by count.
        assert!(pair[1].t > pair[0].t, "{} then {}", pair[0].t, pair[1].t);
        assert!(pair[1].utc > pair[0].utc);
    }
    // At most one sample a tick: about one a simulated second (two to spare
    // for a late first sample); a sampler ignoring its interval scrapes
    // hundreds of times in the same span.
    let span = timeline[timeline.len() - 1].t - timeline[0].t;
    assert!(
        timeline.len() as f64 <= span + 3.0,
        "{} samples over {span} simulated seconds",
        timeline.len()
    );
    let last = timeline.len() - 1;
    let stats = codendum_core::prom::window_stats(&timeline, 0.0, timeline[last].t);
    assert_eq!(stats.samples, timeline.len());
    assert_eq!(stats.failed_scrapes, 0);
    assert_eq!(stats.prompt_tokens, Some(1000.0 * last as f64));
    assert_eq!(stats.prefix_hit_rate, Some(0.75));
    assert_eq!(stats.peak_running, Some(2.0 + last as f64));
    // The file holds every sample, written as it was taken.
    let written = codendum_core::prom::read_timeline(&file_path).expect("timeline reads");
    assert_eq!(written, timeline);
}

#[tokio::test]
async fn sampler_counts_failed_scrapes_and_keeps_going() {
    let urls = vec![dead_url()];
    let clock = Clock::scaled(20.0);
    let handle = Sampler::start(scraper_for(&urls), clock.clone(), Duration::from_secs(1));
    let mut waited = 0;
    while handle.failed_scrapes() < 3 && waited < 600 {
        clock.sleep(Duration::from_secs(1)).await;
        waited += 1;
    }
    assert!(handle.failed_scrapes() >= 3);
    assert_eq!(handle.latest(), None);
    let window = handle.window(0.0, clock.now_secs() + 1.0);
    assert_eq!(window.failed_scrapes, window.samples);
    assert_eq!(window.peak_running, None);
    let timeline = handle.stop().await;
    assert!(timeline.iter().all(|s| s
        .error
        .as_deref()
        .is_some_and(|e| e.contains("unreachable"))));
}
