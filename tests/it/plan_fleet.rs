//! `codendum plan --replicas … --router …`: a fleet of one replica gives the
//! single server's figures; session affinity keeps a higher prefix hit rate
//! than round-robin; the fewest replicas per router on a two-seat profile
//! where one replica misses the TTFT ceiling and two under session
//! affinity meet it; the fleet section of the report; and the bad inputs.

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use codendum::plan::fleet::answers;
use codendum::plan::{run_plan, PlanConfig, PlanResults};
use codendum_core::profile::fleet::RouterPolicy;

use crate::cli_support::{assert_one_line_error, codendum, run};

/// A two-seat server with the lab's hardware and `targets` as its
/// `[targets.classroom]`; returns the file's path.
fn profile(dir: &Path, targets: &str) -> String {
    let text = format!(
        "[server]\nserved_model_name = \"qwen3-coder\"\n\
         model = \"Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8\"\nmax_model_len = 65536\n\
         max_num_seqs = 2\nmax_num_batched_tokens = 8192\nblock_size = 16\n\
         kv_cache_tokens = 1362640\nhardware = \"gb10-qwen3-coder-30b-a3b-fp8\"\n\
         enable_prefix_caching = true\n\n[targets.classroom]\n{targets}\n"
    );
    let path = dir.join("tiny.toml");
    std::fs::write(&path, text).expect("profile");
    path.display().to_string()
}

fn config(profile: &str, users: u32, duration_s: u64, dir: &Path) -> PlanConfig {
    PlanConfig {
        users: vec![users],
        profiles: vec![profile.to_string()],
        duration: Duration::from_secs(duration_s),
        seed: 3,
        jobs: 2,
        results_dir: dir.to_path_buf(),
        ..PlanConfig::new()
    }
}

/// Six students on two seats per replica, TTFT P95 at most 15 s: one
/// replica queues them (P95 far above), two behind a session router do not.
/// Run once for the tests that read it.
fn fleet_plan() -> &'static (PlanResults, String) {
    static PLAN: OnceLock<(PlanResults, String)> = OnceLock::new();
    PLAN.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let tiny = profile(dir.path(), "ttft_p95_s = 15");
        let mut c = config(&tiny, 6, 90, dir.path());
        c.replicas = vec![2, 1];
        c.routers = vec![RouterPolicy::Session, RouterPolicy::RoundRobin];
        let (results, folder) = codendum::plan::plan(&c, &|_| {}).expect("plan runs");
        let md = std::fs::read_to_string(folder.join("plan.md")).expect("plan.md");
        (results, md)
    })
}

fn cell<'a>(r: &'a PlanResults, name: &str) -> &'a codendum::plan::JudgedCell {
    r.cells
        .iter()
        .find(|c| c.result.spec.profile == name)
        .unwrap_or_else(|| panic!("no cell {name}"))
}

#[test]
fn one_replica_gives_the_single_server_figures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tiny = profile(dir.path(), "ttft_p95_s = 15");
    let single = run_plan(&config(&tiny, 4, 60, dir.path()), &|_| {}).expect("single");
    let mut c = config(&tiny, 4, 60, dir.path());
    c.replicas = vec![1];
    c.routers = vec![RouterPolicy::Session];
    let fleet = run_plan(&c, &|_| {}).expect("one replica");
    assert_eq!(
        single.cells, fleet.cells,
        "the same cells, figure for figure"
    );
    assert_eq!(single.verdicts, fleet.verdicts);
    assert!(single.fleet.is_none());
    let f = fleet.fleet.as_ref().expect("a fleet section when asked");
    assert_eq!(f.variants.len(), 1);
    assert_eq!(f.variants[0].replicas, 1);
    assert!(single.cells[0].result.summary.requests > 0);
}

#[test]
fn session_affinity_keeps_the_prefix_cache_warmer_than_round_robin() {
    let (r, md) = fleet_plan();
    let session = cell(r, "tiny ×2 session");
    let round = cell(r, "tiny ×2 round-robin");
    let (hs, hr) = (
        session.result.prefix_hit_rate.expect("hit rate"),
        round.result.prefix_hit_rate.expect("hit rate"),
    );
    assert!(hs > hr + 0.01, "session {hs} vs round-robin {hr}");
    // Each replica's figures, and the round-robin spread more evenly.
    for c in [session, round] {
        let f = c.result.summary.server_fleet.as_ref().expect("per replica");
        assert_eq!(f.replicas.len(), 2);
        let served: f64 = f.replicas.iter().filter_map(|x| x.requests_served).sum();
        assert!(served >= c.result.summary.requests as f64 * 0.9, "{served}");
        assert!(f
            .replicas
            .iter()
            .all(|x| x.peak_running.unwrap_or(0.0) <= 2.0));
    }
    let imb = |c: &codendum::plan::JudgedCell| {
        let f = c.result.summary.server_fleet.as_ref().expect("fleet");
        f.imbalance.expect("imbalance")
    };
    assert!(imb(round) < 1.05, "round-robin imbalance {}", imb(round));
    assert!(imb(session) >= imb(round));
    assert!(md.contains("## Fleets"), "{md}");
    assert!(md.contains("| tiny ×2 session | 6 | 2 | session |"), "{md}");
}

#[test]
fn the_fewest_replicas_per_router() {
    let (r, md) = fleet_plan();
    let one = cell(r, "tiny");
    assert!(!one.meets_targets, "one replica misses: {:?}", one.checks);
    let two = cell(r, "tiny ×2 session");
    assert!(
        two.meets_targets,
        "two behind session meet: {:?}",
        two.checks
    );
    let f = r.fleet.as_ref().expect("fleet");
    assert_eq!(f.answers, answers(&f.variants, &r.cells));
    let session = f
        .answers
        .iter()
        .find(|a| a.router == "session")
        .expect("session");
    assert_eq!(session.replicas_needed, Some(2));
    assert_eq!(session.users, 6);
    let round = f
        .answers
        .iter()
        .find(|a| a.router == "round-robin")
        .expect("round-robin");
    let rr_two = cell(r, "tiny ×2 round-robin").meets_targets;
    assert_eq!(round.replicas_needed, rr_two.then_some(2));
    let expect = if rr_two {
        "6 students (tiny @ 2 seqs): session needs 2 replicas, round-robin 2"
    } else {
        "6 students (tiny @ 2 seqs): session needs 2 replicas, round-robin more than 2"
    };
    assert_eq!(f.lines, vec![expect.to_string()]);
    assert!(md.contains(expect), "{md}");
}

#[test]
fn bad_fleet_input_is_one_line_and_a_lone_router_is_a_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (args, culprit) in [
        (
            &["plan", "--users", "2", "--replicas", "0"][..],
            "--replicas",
        ),
        (
            &["plan", "--users", "2", "--replicas", "65"][..],
            "--replicas",
        ),
        (
            &["plan", "--users", "2", "--replicas", "two"][..],
            "--replicas",
        ),
        (
            &[
                "plan",
                "--users",
                "2",
                "--replicas",
                "2",
                "--router",
                "sticky",
            ][..],
            "valid: round-robin, least-loaded, power-of-two, session, prefix-aware",
        ),
    ] {
        let f = run({
            let mut cmd = codendum(dir.path());
            cmd.args(args);
            cmd
        });
        assert_eq!(f.code, Some(2), "{args:?}: {}", f.both());
        assert_one_line_error(&f, culprit);
        assert!(f.stderr.contains("--replicas") || f.stderr.contains("--router"));
    }
    let results = dir.path().join("results");
    let f = run({
        let mut cmd = codendum(dir.path());
        cmd.args([
            "plan",
            "--users",
            "2",
            "--duration",
            "20",
            "--router",
            "session",
        ])
        .args(["--profile", "classroom-64k", "--results-dir"])
        .arg(&results);
        cmd
    });
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(
        f.stderr
            .contains("--router session has no effect with one replica"),
        "{}",
        f.both()
    );
}
