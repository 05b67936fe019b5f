//! Open-loop load: rate levels start requests at their scheduled instants
//! whatever the server does, latency counts from the scheduled start, the
//! client's own lateness is recorded, a level above capacity is marked
//! saturated, and sweeps and the SLO search run as levels of one folder.

use std::sync::Arc;

use codendum::bench::arrival::Arrival;
use codendum::bench::config::OpenLoop;
use codendum::bench::{run_reading_facts, BenchDeps, Load};
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_core::results::slo::Slo;
use codendum_twin::inproc::InProcTransport;
use codendum_twin::TwinOptions;
use tokio::sync::watch;

use crate::bench_driver::{config, run, FakeInfo, FakeServer, TestBench};
use crate::cli_support::{assert_one_line_error, codendum, only_folder, read_json, run_in};

fn rates(r: &[f64], arrival: Arrival, cap: Option<u32>) -> Load {
    Load::Rates {
        rates: r.to_vec(),
        closed_first: false,
        open: OpenLoop {
            arrival,
            max_concurrency: cap,
        },
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_the_client_sent_late_counts_from_its_scheduled_start() {
    // A deliberately slow client: one request at a time (--max-concurrency
    // 1) that takes 1 s, offered 4 per second. Request k is due at k/4 s
    // but can only go at k s: it was sent 0.75·k s late, and its latency
    // counts from when it was due.
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::real();
    let server = FakeServer::new(&clock, &[1.0]);
    let info = FakeInfo { tokenize: true };
    let (_tx, rx) = watch::channel(false);
    let mut c = config(dir.path(), &[1], 8);
    c.load = rates(&[4.0], Arrival::Constant, Some(1));
    let out = run(&c, &server, &info, None, rx).await;
    let level = &out.levels[0];
    let rate = level.rate.as_ref().expect("a rate level");
    assert_eq!(rate.rate_per_s, 4.0);
    assert_eq!(rate.max_concurrency, Some(1));
    let records = codendum_core::results::read_bench_requests(&out.folder)
        .unwrap()
        .items;
    assert_eq!(records.len(), 8);
    for r in &records {
        let k = r.index as f64;
        let due = r.scheduled_at.expect("due");
        let lag = r.send_lag_s.expect("lag");
        assert!(
            (due - r.started_at).abs() < 1e-9,
            "started_at is when it was due"
        );
        assert!((lag - 0.75 * k).abs() < 1e-3, "request {k}: lag {lag}");
        assert!(
            (r.e2e_s - (1.0 + 0.75 * k)).abs() < 1e-3,
            "request {k}: e2e {}",
            r.e2e_s
        );
        let ttft = r.ttft_s.expect("ttft");
        assert!(
            (ttft - (0.1 + 0.75 * k)).abs() < 1e-3,
            "request {k}: ttft {ttft}"
        );
    }
    // Offered 4/s; sent 1/s (the client could not keep up).
    assert!((rate.offered_rate_per_s.unwrap() - 4.0).abs() < 1e-9);
    assert!((rate.achieved_rate_per_s.unwrap() - 1.0).abs() < 1e-3);
    assert!((rate.send_lag_max_s.unwrap() - 5.25).abs() < 1e-3);
    assert!(
        rate.saturated,
        "the backlog grew through the level: {rate:?}"
    );
    // The default summaries of the level are from the scheduled start too.
    assert!(level.e2e_p95_s.unwrap() > 5.0);
}

#[tokio::test(start_paused = true)]
async fn requests_start_on_schedule_whatever_the_server_does() {
    // A server that takes 3 s per request, offered 2 per second without a
    // cap: every request is sent when due (no lag), 6 in flight at the end.
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::real();
    let server = FakeServer::new(&clock, &[3.0]);
    let info = FakeInfo { tokenize: true };
    let (_tx, rx) = watch::channel(false);
    let mut c = config(dir.path(), &[1], 12);
    c.load = rates(&[2.0], Arrival::Constant, None);
    let out = run(&c, &server, &info, None, rx).await;
    let rate = out.levels[0].rate.clone().expect("rate");
    assert!(rate.send_lag_max_s.unwrap() < 1e-3, "{rate:?}");
    let seen = server.seen();
    assert_eq!(seen.len(), 12);
    assert_eq!(
        seen.iter().map(|(_, n)| *n).max(),
        Some(6),
        "3 s × 2/s in flight"
    );
    // Every prompt says its level's rate in its unique tag.
    assert!(seen
        .iter()
        .all(|(p, _)| p.starts_with("[codendum-bench run=test-run shape=short rate=2/s i=")));
}

#[tokio::test(start_paused = true)]
async fn slo_share_and_goodput_count_requests_meeting_every_objective() {
    // Requests alternate 1 s and 3 s (TTFT 0.1 s and 0.3 s): with
    // e2e ≤ 2 s, half of them meet the SLO.
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::real();
    let server = FakeServer::new(&clock, &[1.0, 3.0]);
    let info = FakeInfo { tokenize: true };
    let (_tx, rx) = watch::channel(false);
    let mut c = config(dir.path(), &[2], 8);
    c.slo = Some(Slo::parse("--slo", "e2e=2s").unwrap());
    let out = run(&c, &server, &info, None, rx).await;
    let l = &out.levels[0];
    assert_eq!(l.slo_share, Some(0.5));
    let goodput = l.goodput_per_s.unwrap();
    assert!((goodput - 4.0 / l.wall_time_s).abs() < 1e-9, "{goodput}");
}

/// The embedded twin in process, in virtual time (the runtime is paused).
fn twin() -> InProcTransport {
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = Clock::real();
    InProcTransport::start(opts)
}

async fn twin_bench(c: &TestBench) -> codendum::bench::BenchOutcome {
    let mut c = c.clone();
    let profile = Profile::load("classroom-64k").expect("profile");
    c.run.client.model = Some(profile.server.served_model_name.clone());
    let transport = Arc::new(twin());
    let info = FakeInfo { tokenize: true };
    let (_tx, rx) = watch::channel(false);
    let deps = BenchDeps {
        transport: transport.as_ref(),
        info: &info,
        metrics: None,
        clock: Clock::real(),
        stop: rx,
        events: codendum::events::Events::silent(),
        measure_client_cpu: false,
    };
    run_reading_facts(&c.config, &c.run, deps)
        .await
        .expect("runs")
}

#[tokio::test(start_paused = true)]
async fn against_the_twin_queueing_follows_its_capacity() {
    // The twin's closed-loop throughput at its 16 seats is its capacity μ
    // (short prompts, 64 output tokens). Offered half of it, a rate level
    // keeps up: no backlog, TTFT near the unloaded one. Offered twice it,
    // the level saturates and completes about μ per second while requests
    // pile up.
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), &[1, 16], 48);
    c.output_tokens = 64;
    let closed = twin_bench(&c).await;
    let (single, full) = (&closed.levels[0], &closed.levels[1]);
    let mu = full.requests_per_s;
    assert!(mu > 0.0);
    let mut c = config(dir.path(), &[1], 96);
    c.output_tokens = 64;
    c.load = rates(&[0.5 * mu, 2.0 * mu], Arrival::Poisson, None);
    let open = twin_bench(&c).await;
    let (under, over) = (&open.levels[0], &open.levels[1]);
    let (ru, ro) = (under.rate.clone().unwrap(), over.rate.clone().unwrap());
    assert!(!ru.saturated, "half the capacity keeps up: {ru:?}");
    assert!(
        under.ttft_p50_s.unwrap() < 3.0 * single.ttft_p50_s.unwrap(),
        "TTFT near the unloaded one: {:?} vs {:?}",
        under.ttft_p50_s,
        single.ttft_p50_s
    );
    assert!(ro.saturated, "twice the capacity saturates: {ro:?}");
    // Completions per second of wall time stay near μ (the level's wall
    // time runs past the arrivals as the queue drains).
    let throughput = over.requests_per_s;
    assert!(
        (throughput - mu).abs() < 0.2 * mu,
        "throughput {throughput} vs capacity {mu}"
    );
    assert!(over.ttft_p95_s.unwrap() > 4.0 * under.ttft_p95_s.unwrap());
}

#[tokio::test(start_paused = true)]
async fn find_rate_brackets_the_highest_rate_meeting_the_slo() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), &[16], 32);
    c.output_tokens = 32;
    c.slo = Some(Slo::parse("--slo", "ttft_p90=2s").unwrap());
    c.load = Load::FindRate {
        open: OpenLoop {
            arrival: Arrival::Constant,
            max_concurrency: None,
        },
    };
    let out = twin_bench(&c).await;
    let search = &out.summary.rate_search[0];
    assert!(search.levels >= 3 && search.levels <= 14, "{search:?}");
    let (met, missed) = search.bracket;
    assert!(
        (missed - met) / missed <= 0.05 + 1e-9,
        "a 5 % bracket: {search:?}"
    );
    let best = search.highest_rate_per_s.expect("a rate meets a 2 s TTFT");
    // Every measured rate at or below the answer met the SLO; every one
    // above it missed.
    for step in &search.steps {
        assert_eq!(step.meets, step.rate_per_s <= best + 1e-9, "{search:?}");
    }
    assert!(search
        .line()
        .contains("highest rate meeting ttft ≤ 2 s (90 % of requests)"));
    // The levels are levels of the folder: two closed-loop, then the rates.
    assert_eq!(out.levels.len() as u32, 2 + search.levels);
}

#[test]
fn a_sweep_writes_its_levels_and_a_chart_of_latency_against_rate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args([
        "bench",
        "--sweep",
        "3",
        "--concurrency",
        "8",
        "--shapes",
        "short",
    ]);
    cmd.args([
        "--requests-per-level",
        "16",
        "--output-tokens",
        "16",
        "--time-scale",
        "50",
    ]);
    cmd.args(["--slo", "ttft=2s", "--results-dir", "results"]);
    let done = run_in(cmd, dir.path(), "bench");
    assert_eq!(done.code, Some(0), "{}", done.both());
    let folder = only_folder(&dir.path().join("results"));
    let levels = read_json(&folder.join("summary.json"))["levels"].clone();
    let levels = levels.as_array().expect("levels");
    assert_eq!(levels.len(), 5, "c1, c8, then 3 rates");
    assert!(levels[0]["rate"].is_null() && levels[1]["rate"].is_null());
    let rates: Vec<f64> = levels[2..]
        .iter()
        .map(|l| l["rate"]["rate_per_s"].as_f64().expect("rate"))
        .collect();
    let (low, high) = (
        levels[0]["requests_per_s"].as_f64().unwrap(),
        levels[1]["requests_per_s"].as_f64().unwrap(),
    );
    for (i, r) in rates.iter().enumerate() {
        let want = low + (high - low) * (i + 1) as f64 / 4.0;
        assert!((r - want).abs() < 1e-9, "{rates:?}");
    }
    let csv = std::fs::read_to_string(folder.join("summary.csv")).expect("csv");
    assert!(csv.lines().next().unwrap().contains("rate_per_s"), "{csv}");
    let report = std::fs::read_to_string(folder.join("report.html")).expect("html");
    assert!(report.contains("Latency against the offered rate"));
}

#[test]
fn bad_open_loop_flags_are_one_line_naming_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (args, culprit) in [
        (&["--rate", "0"][..], "--rate"),
        (&["--rate", "1", "--concurrency", "4"][..], "--rate"),
        (&["--rate", "1", "--slo", "queue=2s"][..], "--slo"),
        (
            &["--rate", "1", "--arrival", "gamma", "--burstiness=-1"][..],
            "--burstiness",
        ),
        (&["--find-rate"][..], "--find-rate"),
        (&["--max-concurrency", "4"][..], "--max-concurrency"),
        (&["--sweep", "0"][..], "--sweep"),
    ] {
        let mut cmd = codendum(dir.path());
        cmd.arg("bench")
            .args(args)
            .args(["--results-dir", "results"]);
        let done = run_in(cmd, dir.path(), "bench");
        assert_eq!(done.code, Some(2), "{args:?}: {}", done.both());
        assert_one_line_error(&done, culprit);
    }
}

#[test]
fn plan_rate_searches_each_profile_in_virtual_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args([
        "plan",
        "--rate",
        "--slo",
        "ttft_p95=2s",
        "--profile",
        "classroom-64k",
    ]);
    cmd.args([
        "--output-tokens",
        "64",
        "--requests-per-level",
        "32",
        "--results-dir",
        "results",
    ]);
    let done = run_in(cmd, dir.path(), "plan");
    assert_eq!(done.code, Some(0), "{}", done.both());
    assert!(
        done.stderr
            .contains("classroom-64k: short: highest rate meeting ttft ≤ 2 s (95 % of requests): "),
        "{}",
        done.both()
    );
    let folder = only_folder(&dir.path().join("results"));
    let summary = read_json(&folder.join("summary.json"));
    let search = &summary["rate_search"][0];
    assert!(
        search["highest_rate_per_s"]
            .as_f64()
            .is_some_and(|r| r > 0.0),
        "{search:#}"
    );
    assert_eq!(summary["provenance"]["profile"], "classroom-64k");
    // Without --slo the search has nothing to meet.
    let mut cmd = codendum(dir.path());
    cmd.args(["plan", "--rate"]);
    let done = run_in(cmd, dir.path(), "plan-no-slo");
    assert_eq!(done.code, Some(2), "{}", done.both());
}
