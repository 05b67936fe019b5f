//! Live fleets scraped directly: `bench` through a round-robin router to two
//! twins with one `--metrics-url` per replica, and `classroom` against the
//! embedded twin fleet (`--replicas 2`, one `/metrics` with an `engine`
//! label per replica). Each run reports every replica's figures next to the
//! fleet's, the imbalance, `replica-timeline.jsonl`, and a report whose
//! server timeline has one line per replica.

use serde_json::Value;

use crate::cli_support::{codendum, only_folder, read_json, read_jsonl, run_in};
use codendum_testkit::live::LiveFleet;

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

fn served(replicas: &[Value]) -> f64 {
    replicas.iter().map(|r| num(&r["requests_served"])).sum()
}

fn assert_report_has_replicas(folder: &std::path::Path, names: &[String]) {
    let html = std::fs::read_to_string(folder.join("report.html")).expect("report.html");
    let md = std::fs::read_to_string(folder.join("report.md")).expect("report.md");
    for needle in [
        "Running requests per replica",
        "KV-cache usage per replica",
        "Imbalance",
    ] {
        assert!(html.contains(needle), "report.html has {needle:?}");
    }
    assert!(
        md.contains("## Replicas"),
        "report.md has the replica table"
    );
    for n in names {
        assert!(md.contains(n.as_str()), "report.md names {n}");
        assert!(html.contains(n.as_str()), "report.html names {n}");
    }
}

#[test]
fn bench_against_two_replicas_reports_each_and_the_imbalance() {
    let fleet = LiveFleet::start(2);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--base-url", &fleet.base_url()])
        .args(["--metrics-url", &fleet.metrics_urls()])
        .args(["--concurrency", "1,4", "--shapes", "short"])
        .args(["--output-tokens", "16", "--requests-per-level", "8"])
        .args(["--yes", "--results-dir", "results"]);
    let run = run_in(cmd, dir.path(), "bench");
    assert_eq!(run.code, Some(0), "{}", run.both());
    assert!(
        run.stderr
            .contains("Imbalance (max over mean of requests served)"),
        "{}",
        run.both()
    );
    let folder = only_folder(&dir.path().join("results"));
    let summary = read_json(&folder.join("summary.json"));
    let names = fleet.instances();
    for level in summary["levels"].as_array().expect("levels") {
        let f = &level["fleet"];
        assert_eq!(f["source"], "scrape");
        let replicas = f["replicas"].as_array().expect("replicas");
        let got: Vec<&str> = replicas
            .iter()
            .map(|r| r["replica"].as_str().unwrap())
            .collect();
        assert_eq!(got, names.iter().map(String::as_str).collect::<Vec<_>>());
        // The sampler reads every replica at the level's start and end, so
        // the replicas' finished requests add up to the level's requests.
        assert_eq!(served(replicas), num(&level["successes"]), "{level}");
        let max = replicas
            .iter()
            .map(|r| num(&r["requests_served"]))
            .fold(0.0, f64::max);
        let want = max / (served(replicas) / 2.0);
        assert!((num(&f["imbalance"]) - want).abs() < 1e-9, "{f}");
        // The fleet's peak is at least each replica's and at most their sum.
        let peaks: Vec<f64> = replicas.iter().map(|r| num(&r["peak_running"])).collect();
        let fleet_peak = num(&level["peak_running"]);
        assert!(peaks.iter().all(|p| *p <= fleet_peak) && fleet_peak <= peaks.iter().sum::<f64>());
        assert!(fleet_peak <= num(&level["concurrency"]));
    }
    let lines = read_jsonl(&folder.join("replica-timeline.jsonl"), false);
    assert!(
        lines.len() >= 4,
        "samples of both replicas: {}",
        lines.len()
    );
    assert!(lines
        .iter()
        .all(|l| names.iter().any(|n| l["replica"] == n.as_str())));
    // The fleet's timeline keeps its meaning: the sum of the replicas.
    let timeline = read_jsonl(&folder.join("server-timeline.jsonl"), false);
    assert!(timeline.iter().all(|s| s.get("replica").is_none()));
    assert_report_has_replicas(&folder, &names);
}

#[test]
fn classroom_against_the_twin_fleet_reports_each_engine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args(["classroom", "--replicas", "2", "--router", "round-robin"])
        .args(["--users", "4", "--duration", "60", "--ramp-up", "5"])
        .args(["--follow-ups", "0", "--seed", "7"])
        .args(["--yes", "--results-dir", "results"]);
    let run = run_in(cmd, dir.path(), "classroom");
    assert_eq!(run.code, Some(0), "{}", run.both());
    let folder = only_folder(&dir.path().join("results"));
    let summary = read_json(&folder.join("summary.json"));
    let f = &summary["summary"]["server_fleet"];
    let replicas = f["replicas"]
        .as_array()
        .unwrap_or_else(|| panic!("server_fleet: {summary}"));
    assert_eq!(replicas.len(), 2, "{f}");
    let names: Vec<String> = replicas
        .iter()
        .map(|r| r["replica"].as_str().unwrap().to_string())
        .collect();
    assert!(
        names[0].ends_with("engine=0") && names[1].ends_with("engine=1"),
        "{names:?}"
    );
    // Round-robin spreads the calls: both engines served, and the fleet's
    // finished requests are the calls the class made (all ended in it).
    assert!(
        replicas.iter().all(|r| num(&r["requests_served"]) > 0.0),
        "{f}"
    );
    assert_eq!(
        served(replicas),
        num(&summary["summary"]["requests"]),
        "{f}"
    );
    assert!(
        num(&f["imbalance"]) >= 1.0 && num(&f["imbalance"]) <= 2.0,
        "{f}"
    );
    let fleet_hit = num(&summary["summary"]["server"]["prefix_cache_hit_rate"]);
    let hits: Vec<f64> = replicas
        .iter()
        .map(|r| num(&r["prefix_hit_rate"]))
        .collect();
    let (lo, hi) = (hits[0].min(hits[1]), hits[0].max(hits[1]));
    assert!(
        lo - 1e-9 <= fleet_hit && fleet_hit <= hi + 1e-9,
        "fleet {fleet_hit} within {hits:?}"
    );
    assert_report_has_replicas(&folder, &names);
}

/// A twin fleet of two replicas under `router`, on `rt`, 50 × real time.
fn twin_fleet(
    rt: &tokio::runtime::Runtime,
    router: codendum_core::profile::fleet::RouterPolicy,
) -> codendum_twin::fleet::FleetHandle {
    use codendum_core::profile::fleet::FleetSpec;
    use codendum_core::profile::Profile;
    use codendum_twin::fleet::start_fleet;
    use codendum_twin::TwinOptions;
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = codendum_core::clock::Clock::scaled(50.0);
    let spec = FleetSpec {
        replicas: 2,
        router,
    };
    rt.block_on(start_fleet(
        opts,
        spec,
        "127.0.0.1:0".parse().expect("addr"),
    ))
    .expect("fleet")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A short bench against `fleet` (one API key, `requests` at concurrency 4).
fn short_bench(dir: &std::path::Path, fleet: &codendum_twin::fleet::FleetHandle, requests: u32) {
    let mut cmd = codendum(dir);
    cmd.args(["bench", "--base-url", &fleet.base_url()])
        .args(["--metrics-url", &fleet.metrics_url()])
        .args(["--api-key", "sk-test-student-02"])
        .args(["--concurrency", "4", "--shapes", "short"])
        .args(["--output-tokens", "16"])
        .args(["--requests-per-level", &requests.to_string()])
        .args(["--yes", "--results-dir", "results"]);
    let run = run_in(cmd, dir, "bench");
    assert_eq!(run.code, Some(0), "{}", run.both());
}

/// Every bench request carries an `x-session-id` of its own, as each new
/// OpenCode session does: a session-affinity router keyed on it spreads the
/// run over the replicas, where the one API key alone would pin all of it
/// to the replica the key hashes to.
#[test]
fn bench_requests_carry_their_own_session_for_an_affinity_router() {
    let rt = runtime();
    let fleet = twin_fleet(&rt, codendum_core::profile::fleet::RouterPolicy::Session);
    let dir = tempfile::tempdir().expect("tempdir");
    short_bench(dir.path(), &fleet, 16);
    let served = fleet.core().served();
    rt.block_on(fleet.shutdown());
    // The 16 sessions hash to both replicas (the ids are fixed by shape,
    // level and index, so this split is the same on every run).
    assert!(
        served.iter().all(|&s| s > 0),
        "served per replica: {served:?}"
    );
    assert!(served.iter().sum::<u64>() >= 16, "{served:?}");
    let folder = only_folder(&dir.path().join("results"));
    let summary = read_json(&folder.join("summary.json"));
    let level = &summary["levels"][0];
    assert!(num(&level["fleet"]["imbalance"]) < 2.0, "{level}");
}

/// `codendum metrics` against a fleet's page (one `engine` label per
/// replica) shows a row per replica under the fleet's table, with the
/// requests each finished and their imbalance; `--json` carries the same
/// readings.
#[test]
fn metrics_shows_each_replica_of_a_fleet() {
    let rt = runtime();
    let fleet = twin_fleet(&rt, codendum_core::profile::fleet::RouterPolicy::RoundRobin);
    let dir = tempfile::tempdir().expect("tempdir");
    short_bench(dir.path(), &fleet, 8);
    let mut cmd = codendum(dir.path());
    cmd.args(["metrics", "--metrics-url", &fleet.metrics_url()]);
    let table = run_in(cmd, dir.path(), "metrics");
    let mut cmd = codendum(dir.path());
    cmd.args(["metrics", "--json", "--metrics-url", &fleet.metrics_url()]);
    let json = run_in(cmd, dir.path(), "metrics");
    let served = fleet.core().served();
    rt.block_on(fleet.shutdown());
    assert_eq!(table.code, Some(0), "{}", table.both());
    let host = fleet_host(&fleet_url_host(&table.stdout));
    let rows: Vec<&str> = table
        .stdout
        .lines()
        .filter(|l| l.contains(" engine="))
        .collect();
    assert_eq!(rows.len(), 2, "{}", table.stdout);
    for (i, row) in rows.iter().enumerate() {
        assert!(row.starts_with(&format!("{host} engine={i}")), "{row}");
        // The last two columns: requests finished, tokens generated.
        let finished: u64 = row
            .split_whitespace()
            .rev()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .expect(row);
        assert_eq!(finished, served[i], "{row}");
    }
    assert!(
        table
            .stdout
            .contains("imbalance (max over mean of requests finished): 1.00"),
        "{}",
        table.stdout
    );
    let line: Value = serde_json::from_str(json.stdout.trim()).expect("one JSON line");
    let replicas = line["replicas"]
        .as_array()
        .expect("replicas in the JSON line");
    assert_eq!(replicas.len(), 2, "{line}");
    assert_eq!(replicas[1]["replica"], format!("{host} engine=1").as_str());
    assert!(replicas[0]["snapshot"]["generation_tokens"].as_f64() > Some(0.0));
}

/// The `host:port` in the table's `server` row.
fn fleet_url_host(table: &str) -> String {
    table
        .lines()
        .find_map(|l| l.strip_prefix("server"))
        .map(|u| u.trim().to_string())
        .expect("a server row")
}

fn fleet_host(url: &str) -> String {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string()
}
