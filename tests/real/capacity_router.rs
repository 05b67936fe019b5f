//! `codendum capacity` through the real vLLM Router (`consistent_hash`) in
//! front of two two-seat twins, each behind a tap: the search runs its
//! steps on the fleet, stops at its server-time budget and says what more
//! time would buy, and the continuous class's students (the replacements
//! too) each stay on one replica.

use std::time::Duration;

use codendum_testkit::cli::{codendum, only_folder, read_json, runtime, start_twin, Running};
use codendum_testkit::router::{SessionTap, VllmRouter};

/// A two-seat server with the lab's hardware.
const TINY: &str = "[server]\nserved_model_name = \"qwen3-coder\"\n\
    model = \"Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8\"\nmax_model_len = 65536\n\
    max_num_seqs = 2\nmax_num_batched_tokens = 8192\nblock_size = 16\n\
    kv_cache_tokens = 1362640\nhardware = \"gb10-qwen3-coder-30b-a3b-fp8\"\n\
    enable_prefix_caching = true\n";

pub fn capacity_through_the_real_router() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tiny = dir.path().join("tiny.toml");
    std::fs::write(&tiny, TINY).expect("profile");
    let tiny = tiny.display().to_string();
    let rt = runtime();
    // The twins answer 20 times faster than real time; the search's own
    // clock is real, so its targets are in the twins' quick seconds.
    let twins = [start_twin(&rt, &tiny, 20.0), start_twin(&rt, &tiny, 20.0)];
    let taps: Vec<SessionTap> = twins
        .iter()
        .map(|t| SessionTap::start(&rt, t.addr()))
        .collect();
    let origins: Vec<String> = taps.iter().map(|t| t.origin.clone()).collect();
    let router = VllmRouter::start("consistent_hash", &origins);
    let per_replica = twins
        .iter()
        .map(|t| t.metrics_url())
        .collect::<Vec<_>>()
        .join(",");
    let mut cmd = codendum(dir.path());
    cmd.args(["capacity", "--base-url", &router.base_url])
        .args(["--metrics-url", &per_replica])
        .args(["--profile", &tiny])
        .args(["--tiers", "fast:ttft_p95=0.3s,slow:ttft_p95=3s"])
        .args(["--max-users", "8", "--hold", "15", "--join-over", "2"])
        .args(["--settle", "3", "--budget", "60"])
        .args(["--pause-min", "1", "--pause-max", "2", "--follow-ups", "1"])
        .args(["--yes", "--allow-busy", "--no-report"])
        .args(["--results-dir", "fleet"]);
    // The prediction, then steps of about 20 s up to the 60 s budget and
    // the last step's calls: well within three minutes.
    let run = Running::spawn(cmd, dir.path(), "capacity").wait(Duration::from_secs(180));
    assert_eq!(run.code, Some(0), "{}", run.both());
    assert!(
        run.stderr.contains("students carried: fast "),
        "{}",
        run.both()
    );
    let results = read_json(&only_folder(&dir.path().join("fleet")).join("capacity.json"));
    let steps = results["steps"].as_array().expect("steps");
    assert!(!steps.is_empty(), "{results:#}");
    for s in steps {
        assert!(s["measured"]["requests"].as_u64() > Some(0), "{s}");
        assert_eq!(s["tiers"].as_array().map(Vec::len), Some(2), "{s}");
    }
    eprintln!("{}", run.stderr);
    // The budget: the steps' server time stays within it.
    let server_time_s = results["server_time_s"].as_f64().expect("server time");
    assert!(server_time_s <= 60.0 + 1.0, "{server_time_s} s");
    let answers = results["answers"].as_array().expect("answers");
    assert_eq!(answers.len(), 2, "{results:#}");
    // Every student session, the replacements too, on one replica.
    let sessions: Vec<_> = taps.iter().map(SessionTap::sessions).collect();
    let students = sessions.iter().flatten().count();
    assert!(students > 0, "the taps saw the class's sessions");
    let both: Vec<_> = sessions[0].intersection(&sessions[1]).collect();
    assert!(both.is_empty(), "sessions on both replicas: {both:?}");
}
