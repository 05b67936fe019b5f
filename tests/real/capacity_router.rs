//! `codendum capacity` through the real vLLM Router (`consistent_hash`) in
//! front of two two-seat twins, each behind a tap: the search runs its
//! steps on the fleet, stops at its server-time budget and says what more
//! time would buy, and the continuous class's students (the replacements
//! too) each stay on one replica.

use std::time::Duration;

use codendum_testkit::cli::{codendum, only_folder, read_json, runtime, Running};
use codendum_testkit::profiles::write_gb10_with_seats;
use codendum_testkit::vllm_router::{RoutedTwins, SessionTap};

pub fn capacity_through_the_real_router() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tiny = write_gb10_with_seats(dir.path(), "tiny.toml", 2);
    let tiny = tiny.display().to_string();
    let rt = runtime();
    // The twins answer 20 times faster than real time; the search's own
    // clock is real, so its targets are in the twins' quick seconds.
    // Bound, not left to `..`: the twins run until the end of the test.
    let RoutedTwins {
        twins: _twins,
        taps,
        router,
        per_replica,
    } = RoutedTwins::start(&rt, &[&tiny, &tiny], 20.0, "consistent_hash");
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
    eprintln!("{}", run.stderr);
    assert!(
        run.stderr.contains("students carried: fast "),
        "{}",
        run.both()
    );
    let results = read_json(&only_folder(&dir.path().join("fleet")).join("capacity.json"));
    let steps = results["steps"].as_array().expect("steps");
    assert!(!steps.is_empty(), "{results:#}");
    // A short window may see no call start (a student in one long call):
    // that step is too close to call, not missed; the search still saw
    // calls.
    let calls: u64 = steps
        .iter()
        .map(|s| s["measured"]["requests"].as_u64().expect("calls"))
        .sum();
    assert!(calls > 0, "{results:#}");
    for s in steps {
        assert_eq!(s["tiers"].as_array().map(Vec::len), Some(2), "{s}");
    }
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
