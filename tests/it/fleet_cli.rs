//! `--replicas` and `--router` on the command line: `serve` runs a fleet
//! behind one endpoint, bench runs against an embedded fleet, and every bad
//! input is one line naming the culprit, exit 2.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli_support::{assert_one_line_error, codendum, run, write_file, Finished, Running};

fn serve(cwd: &Path, extra: &[&str]) -> Finished {
    let mut cmd = codendum(cwd);
    cmd.args(["serve", "--port", "0"]).args(extra);
    run(cmd)
}

fn bench(cwd: &Path, extra: &[&str]) -> Finished {
    let mut cmd = codendum(cwd);
    cmd.args([
        "bench",
        "--shapes",
        "short",
        "--concurrency",
        "4",
        "--requests-per-level",
        "8",
        "--output-tokens",
        "8",
        "--yes",
        "--no-report",
        "--results-dir",
        "results",
        "--time-scale",
        "50",
    ])
    .args(extra);
    run(cmd)
}

#[test]
fn bad_fleet_options_are_one_line_errors_with_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let f = serve(d, &["--replicas", "0"]);
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(&f, "--replicas");
    let f = serve(d, &["--replicas", "2", "--router", "sticky"]);
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(
        &f,
        "round-robin, least-loaded, power-of-two, session, prefix-aware",
    );
    assert!(f.stderr.contains("--router"), "{}", f.both());
    let f = bench(
        d,
        &["--base-url", "http://127.0.0.1:9/v1", "--replicas", "2"],
    );
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(&f, "--replicas");
    let f = bench(
        d,
        &["--base-url", "http://127.0.0.1:9/v1", "--router", "session"],
    );
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(&f, "--router");
    let base = codendum_core::profile::EMBEDDED_PROFILES[0].1;
    for (table, culprit) in [
        ("[fleet]\nreplicas = 0\n", "fleet.replicas"),
        ("[fleet]\nrouter = \"sticky\"\n", "sticky"),
        ("[fleet]\nreplica = 2\n", "replica"),
    ] {
        let text = base.replace("[targets]", &format!("{table}\n[targets]"));
        let path = write_file(d, "fleet.toml", &text);
        let f = serve(d, &["--profile", path.to_str().expect("utf8")]);
        assert_eq!(f.code, Some(2), "{}", f.both());
        assert_one_line_error(&f, culprit);
    }
}

#[test]
fn bench_runs_against_an_embedded_fleet_and_notes_a_router_without_replicas() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = bench(dir.path(), &["--replicas", "3", "--router", "least-loaded"]);
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(
        f.stderr.contains("3 replicas behind a least-loaded router"),
        "{}",
        f.both()
    );
    let f = bench(dir.path(), &["--router", "session"]);
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(
        f.stderr
            .contains("note: --router session has no effect with one replica"),
        "{}",
        f.both()
    );
    // The profile's [fleet] table is the default.
    let text = codendum_core::profile::EMBEDDED_PROFILES[0].1.replace(
        "[targets]",
        "[fleet]\nreplicas = 2\nrouter = \"power-of-two\"\n\n[targets]",
    );
    let path = write_file(dir.path(), "two.toml", &text);
    let f = bench(dir.path(), &["--profile", path.to_str().expect("utf8")]);
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(
        f.stderr.contains("2 replicas behind a power-of-two router"),
        "{}",
        f.both()
    );
}

#[test]
fn serve_runs_a_fleet_behind_one_endpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args(["serve", "--port", "0", "--time-scale", "50"])
        .args(["--replicas", "2", "--router", "session"]);
    let mut running = Running::spawn(cmd, dir.path(), "serve");
    let stderr = dir.path().join("serve.stderr");
    let start = Instant::now();
    let base = loop {
        let text = std::fs::read_to_string(&stderr).unwrap_or_default();
        if let Some(rest) = text.split("listening on ").nth(1) {
            break rest.split_whitespace().next().expect("url").to_string();
        }
        assert!(!running.has_exited(), "serve ended: {text}");
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "serve did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let rt = crate::cli_support::runtime();
    let client = reqwest::Client::new();
    let body = serde_json::json!({"model": "qwen3-coder", "max_tokens": 5, "ignore_eos": true,
        "messages": [{"role": "user", "content": "hello"}]});
    let resp = rt
        .block_on(
            client
                .post(format!("{base}/chat/completions"))
                .header("x-session-id", "ses_cli")
                .json(&body)
                .send(),
        )
        .expect("serve answers");
    assert_eq!(resp.status().as_u16(), 200);
    let origin = base.trim_end_matches("/v1");
    let page = rt
        .block_on(async {
            reqwest::get(format!("{origin}/metrics"))
                .await?
                .text()
                .await
        })
        .expect("metrics");
    assert!(
        page.contains("vllm:generation_tokens_total{engine=\"1\""),
        "{page}"
    );
    let snap = codendum_core::prom::ServerSnapshot::from_text(&page).expect("parses");
    assert_eq!(snap.generation_tokens, Some(5.0));
    running.signal("INT");
    let f = running.wait(Duration::from_secs(20));
    assert!(
        f.stderr
            .contains("fleet of 2 twins behind a session router"),
        "{}",
        f.both()
    );
}
