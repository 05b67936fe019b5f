//! `bench --prometheus-url` against a REAL Prometheus (Debian's package,
//! started here on a free loopback port, scraping two twin replicas every
//! second), compared with direct scraping of the same twins during the same
//! run (a 1 s sampler in this test).
//!
//! Tolerances, and why: counters over the whole run agree exactly (both
//! timelines start before the first request and end after the fleet is
//! idle). Over a level, codendum reads Prometheus's boundary readings two
//! steps late (a scrape surely after the boundary): a level's requests all
//! end before its end and a request of the next level takes longer than
//! two seconds (64 tokens at the twin's pace), so each level's requests
//! served add up exactly to its requests. The test's own direct sampler
//! reads every second without boundary readings, so against it a level's
//! count may differ by the requests ending within a second of a boundary
//! (at most the concurrency at each end), and gauge peaks, read at other
//! instants, by at most the level's concurrency. The latency histograms
//! come through Prometheus too: each level's time split counts its
//! requests, and the whole run's split equals the direct one.

use std::path::Path;
use std::time::Duration;

use codendum::scrape::{Sampler, Scraper};
use codendum_core::clock::Clock;
use codendum_core::prom::{
    align_timeline, fleet_figures, LatencyHistograms, ReplicaSample, TimelineSample,
};
use codendum_core::server_figures::TimeSplit;
use serde_json::Value;

use codendum_testkit::cli::{codendum, only_folder, read_json, read_jsonl, run_in};
use codendum_testkit::live::{LiveFleet, Prometheus};

/// Direct per-replica samples put on the run's time axis (seconds since
/// the run's `started_utc`).
fn aligned(
    samples: &[ReplicaSample],
    started: chrono::DateTime<chrono::Utc>,
) -> Vec<ReplicaSample> {
    let mut out = Vec::new();
    for s in samples {
        let t = align_timeline(vec![s.sample.clone()], started)[0].t;
        let mut s = s.clone();
        s.sample.t = t;
        out.push(s);
    }
    out
}

fn replica_samples(folder: &Path) -> Vec<ReplicaSample> {
    read_jsonl(&folder.join("replica-timeline.jsonl"), false)
        .into_iter()
        .map(|v| serde_json::from_value(v).expect("a replica sample"))
        .collect()
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

/// The whole run: every counter of every replica agrees exactly.
fn assert_whole_run_agrees(
    direct: &[ReplicaSample],
    through: &[ReplicaSample],
    instances: &[String],
) {
    let all_direct = fleet_figures(direct, "scrape", f64::MIN, f64::MAX).expect("two replicas");
    let all_prom = fleet_figures(through, "prometheus", f64::MIN, f64::MAX).expect("two replicas");
    for (d, p) in all_direct.replicas.iter().zip(&all_prom.replicas) {
        assert_eq!(p.replica, d.replica);
        assert!(instances.contains(&p.replica), "{}", p.replica);
        assert_eq!(p.requests_served, d.requests_served, "{}", p.replica);
        assert_eq!(p.prompt_tokens, d.prompt_tokens, "{}", p.replica);
        assert_eq!(p.generation_tokens, d.generation_tokens, "{}", p.replica);
        assert_eq!(p.preemptions, d.preemptions, "{}", p.replica);
        assert_eq!(p.prefix_hit_rate, d.prefix_hit_rate, "{}", p.replica);
        assert!(
            p.requests_served.unwrap() > 0.0,
            "both replicas served: {p:?}"
        );
    }
    assert_eq!(all_prom.imbalance, all_direct.imbalance);
}

/// One level read through Prometheus, next to the same window of the
/// direct timeline.
fn assert_level_agrees(level: &Value, direct: &[ReplicaSample]) {
    let c = num(&level["concurrency"]);
    let t0 = num(&level["started_at_s"]);
    let t1 = t0 + num(&level["wall_time_s"]);
    let fleet_json = &level["fleet"];
    assert_eq!(fleet_json["source"], "prometheus");
    let d = fleet_figures(direct, "scrape", t0, t1).expect("two replicas");
    let replicas = fleet_json["replicas"].as_array().expect("replicas");
    assert_eq!(replicas.len(), 2);
    let level_served: f64 = replicas.iter().map(|r| num(&r["requests_served"])).sum();
    assert_eq!(level_served, num(&level["successes"]), "{level}");
    for (p, d) in replicas.iter().zip(&d.replicas) {
        assert_eq!(p["replica"], d.replica.as_str());
        let served = num(&p["requests_served"]);
        let direct_served = d.requests_served.unwrap();
        assert!(
            (served - direct_served).abs() <= 2.0 * c,
            "served {served} vs {direct_served} at {c}"
        );
        let running = num(&p["peak_running"]);
        let direct_running = d.peak_running.unwrap();
        assert!(
            (running - direct_running).abs() <= c,
            "peak running {running} vs {direct_running} at {c}"
        );
        assert!(running <= c && direct_running <= c);
        eprintln!(
            "level {c}: {} served {served} (direct {direct_served}), peak running {running} (direct {direct_running}), peak KV {} (direct {:?})",
            d.replica, p["peak_kv_usage"], d.peak_kv_usage
        );
    }
    assert!(num(&fleet_json["imbalance"]) >= 1.0);
    // The fleet's own figures come from Prometheus too.
    assert!(num(&level["peak_running"]) <= c, "{level}");
    assert_eq!(level["failed_scrapes"], 0, "{level}");
    // The server's time split comes through Prometheus as well: every
    // request of the level, once, in each phase the twin exports.
    let split = &level["time_split"];
    for phase in ["queue", "prefill", "decode", "ttft", "e2e"] {
        assert_eq!(
            num(&split[phase]["requests"]),
            num(&level["successes"]),
            "{phase}: {split}"
        );
    }
    let (server, client) = (
        num(&split["ttft"]["mean_s"]),
        num(&split["client_ttft_mean_s"]),
    );
    assert!(
        server > 0.0 && server <= client,
        "server TTFT {server} s within the client's {client} s"
    );
}

/// The whole run's time split (first to last reading, fleet sum).
fn whole_run_split(timeline: &[TimelineSample]) -> TimeSplit {
    let with: Vec<&LatencyHistograms> = timeline
        .iter()
        .filter_map(|s| s.snapshot.as_ref()?.latency.as_ref())
        .collect();
    let (first, last) = (
        with.first().expect("histograms"),
        with.last().expect("histograms"),
    );
    last.split_since(first).expect("a time split")
}

pub fn bench_through_prometheus_gives_the_direct_figures() {
    let fleet = LiveFleet::start(2);
    let prom = Prometheus::start(&fleet.instances());
    let urls: Vec<String> = fleet.twins.iter().map(|t| t.metrics_url()).collect();
    let direct = fleet.rt.block_on(async {
        Sampler::start(
            Scraper::new(reqwest::Client::new(), urls),
            Clock::real(),
            Duration::from_secs(1),
        )
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--base-url", &fleet.base_url()])
        .args(["--metrics-url", &fleet.metrics_urls()])
        .args(["--prometheus-url", &prom.url])
        .args(["--concurrency", "2,4", "--shapes", "short"])
        .args(["--output-tokens", "64", "--requests-per-level", "8"])
        .args(["--yes", "--results-dir", "results"]);
    let run = run_in(cmd, dir.path(), "bench");
    assert_eq!(run.code, Some(0), "{}", run.both());
    let (direct_fleet, direct_replicas) = fleet.rt.block_on(direct.stop_fleet());

    let folder = only_folder(&dir.path().join("results"));
    let summary = read_json(&folder.join("summary.json"));
    let started: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(summary["started_utc"].clone()).expect("started_utc");
    let direct = aligned(&direct_replicas, started);
    let instances = fleet.instances();
    assert_whole_run_agrees(&direct, &replica_samples(&folder), &instances);

    // The levels share their boundary readings: their requests served add
    // up to every request of the run (the sizing calls come before).
    let levels = summary["levels"].as_array().expect("levels");
    let served_in_levels: f64 = levels
        .iter()
        .flat_map(|l| l["fleet"]["replicas"].as_array().expect("replicas"))
        .map(|r| num(&r["requests_served"]))
        .sum();
    let successes: f64 = levels.iter().map(|l| num(&l["successes"])).sum();
    assert_eq!(served_in_levels, successes);
    for level in levels {
        assert_level_agrees(level, &direct);
    }
    let timeline = read_jsonl(&folder.join("server-timeline.jsonl"), false);
    let through: Vec<TimelineSample> = timeline
        .iter()
        .map(|v| serde_json::from_value(v.clone()).expect("a timeline sample"))
        .collect();
    // Both timelines start before the first request and end after the
    // last: the histograms' increases are the same.
    assert_eq!(whole_run_split(&through), whole_run_split(&direct_fleet));
    assert!(
        timeline.len() >= 5,
        "one sample a second: {}",
        timeline.len()
    );
    let report = std::fs::read_to_string(folder.join("report.html")).expect("report.html");
    for i in &instances {
        assert!(report.contains(i.as_str()), "the report names replica {i}");
    }
}
