//! A server restarted mid-run: `codendum serve` killed
//! with SIGKILL during a bench and started again on the same port. The run
//! names the restart (stderr, `summary.json`, the verdict, the report),
//! marks the levels after it, and sums the counters per process: the
//! server's generated tokens over the run never exceed what the client
//! received plus what the failed calls could have had.
//!
//! The bench reaches the server through a forwarder that holds a new
//! connection until the server accepts it, as the lab's proxy in front of
//! a restarting vLLM does: without it, a bench whose server is down burns
//! through its requests with instant connection refusals and can end
//! before a slow machine has the server back.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use codendum_core::prom::{read_timeline, window_stats, ServerSnapshot};
use codendum_core::results::{read_bench_requests, SERVER_TIMELINE_JSONL};

use crate::cli_support::{codendum, only_folder, read_json, runtime, Running};
use crate::verdict_server_loss::{serve_on, wait_for_a_request};

/// Requests the server behind `base` finished since it started.
fn finished_on(rt: &tokio::runtime::Runtime, base: &str) -> f64 {
    let url = format!("{}/metrics", base.trim_end_matches("/v1"));
    rt.block_on(async {
        let Ok(response) = reqwest::get(&url).await else {
            return 0.0;
        };
        let text = response.text().await.unwrap_or_default();
        ServerSnapshot::from_text(&text)
            .ok()
            .and_then(|s| s.finished_total())
            .unwrap_or(0.0)
    })
}

/// Forwards every connection to `backend`, waiting up to 60 s for the
/// backend to accept it; returns the forwarder's address.
fn hold_while_down(rt: &tokio::runtime::Runtime, backend: SocketAddr) -> SocketAddr {
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind the forwarder");
    let addr = listener.local_addr().expect("its address");
    rt.spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
                let mut server = loop {
                    match tokio::net::TcpStream::connect(backend).await {
                        Ok(s) => break s,
                        Err(_) if tokio::time::Instant::now() < deadline => {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                        Err(_) => return,
                    }
                };
                let _ = server.set_nodelay(true);
                let _ = client.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            });
        }
    });
    addr
}

#[test]
fn a_bench_whose_server_restarts_names_the_restart_and_counts_each_process_once() {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let results = dir.path().join("results");
    let (first, base) = serve_on(dir.path(), 0, "serve-1", &[]);
    let port: u16 = base
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/v1")
        .parse()
        .expect("a port");
    let output_tokens = 64u64;
    let front = hold_while_down(&rt, SocketAddr::from(([127, 0, 0, 1], port)));
    let front_base = format!("http://{front}/v1");
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--base-url", &front_base, "--concurrency", "2"]);
    // /metrics read from the server itself, as from the GPU host.
    let metrics = format!("http://127.0.0.1:{port}/metrics");
    cmd.args(["--metrics-url", &metrics]);
    cmd.args(["--shapes", "short", "--requests-per-level", "150"]);
    cmd.args(["--output-tokens", &output_tokens.to_string()]);
    cmd.args(["--timeout", "5", "--yes", "--allow-busy"]);
    cmd.arg("--results-dir").arg(&results);
    let bench = Running::spawn(cmd, dir.path(), "bench");
    wait_for_a_request(&results);
    first.signal("KILL");
    drop(first);
    let (_second, again) = serve_on(dir.path(), port, "serve-2", &[]);
    assert_eq!(again, base, "the same port");
    // Let the restarted server carry a good part of the run.
    // A hang guard far above what it takes (a few seconds at 10x).
    let deadline = Instant::now() + Duration::from_secs(120);
    while finished_on(&rt, &base) < 20.0 {
        assert!(
            Instant::now() < deadline,
            "the restarted server finished fewer than 20 requests within 120 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let done = bench.wait(Duration::from_secs(180));
    let folder = only_folder(&results);
    let summary = read_json(&folder.join("summary.json"));
    let found = &summary["metrics_continuity"][0];
    assert_eq!(found["status"], "restarted", "{:#}", summary);
    let restarts = found["restarts"].as_array().expect("restarts");
    assert_eq!(restarts.len(), 1, "one restart: {found:#}");
    assert_eq!(restarts[0]["evidence"], "its process start time changed");
    let at = restarts[0]["at_s"].as_f64().expect("at_s");
    // stderr says it as it shows, and the verdict lists it.
    assert!(
        done.stderr
            .contains(&format!("the server behind 127.0.0.1:{port} restarted")),
        "{}",
        done.both()
    );
    let verdict = &summary["verdict"];
    assert_eq!(
        verdict["server_restarts"][0].as_f64(),
        Some(at),
        "{verdict:#}"
    );
    assert!(
        verdict["line"]
            .as_str()
            .unwrap()
            .contains(&format!("the server restarted at {at:.1} s")),
        "{verdict:#}"
    );
    // The level that ran through the restart is marked.
    assert_eq!(summary["levels"][0]["server_restarted"], true);
    let report = std::fs::read_to_string(folder.join("report.md")).expect("report");
    assert!(report.contains("restarted at"), "{report}");
    // Counted per process: never negative, never twice. The old process's
    // tokens after its last read are lost, so the server's count is at most
    // what the client received plus what the failed calls could have had.
    let timeline = read_timeline(&folder.join(SERVER_TIMELINE_JSONL)).expect("timeline");
    let first_t = timeline.first().expect("reads").t;
    let last_t = timeline.last().expect("reads").t;
    let server = window_stats(&timeline, first_t, last_t)
        .generation_tokens
        .expect("generated tokens");
    let records = read_bench_requests(&folder).expect("records").items;
    let received: u64 = records
        .iter()
        .filter(|r| r.ok)
        .map(|r| r.output_tokens)
        .sum();
    let failed = records.iter().filter(|r| !r.ok).count() as u64;
    assert!(server >= 0.0);
    assert!(
        server <= (received + failed * output_tokens) as f64,
        "server {server} tokens, client {received} + {failed} failed calls"
    );
    assert!(
        server >= 0.5 * received as f64,
        "both processes counted: server {server}, client {received}"
    );
}
