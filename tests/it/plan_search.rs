//! `codendum plan` without `--users`: the search for the largest class.
//! A real search on a two-seat profile written to a temporary file (so any
//! profile path `Profile` loads can be searched), checked against the two
//! cells run again as a plain plan; the answers at both ends of the range;
//! the limit classification on synthetic cells; and the bad inputs.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use codendum::plan::limit::{classify, meets_ceilings};
use codendum::plan::verdicts::judge;
use codendum::plan::{
    classroom_targets, plan_search, run_plan, run_search, Bottleneck, CellResult, CellSpec,
    PlanConfig, PlanResults,
};
use codendum_core::profile::Profile;
use codendum_core::results::classroom_summary::ClassroomSummary;
use serde_json::Value;

use crate::cli_support::{assert_one_line_error, codendum, run};

/// A two-seat server with the lab's hardware and `targets` as its
/// `[targets.classroom]`; returns the file's path.
fn profile(dir: &Path, name: &str, targets: &str) -> String {
    let text = format!(
        "[server]\nserved_model_name = \"qwen3-coder\"\n\
         model = \"Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8\"\nmax_model_len = 65536\n\
         max_num_seqs = 2\nmax_num_batched_tokens = 8192\nblock_size = 16\n\
         kv_cache_tokens = 1362640\nhardware = \"gb10-qwen3-coder-30b-a3b-fp8\"\n\
         enable_prefix_caching = true\n\n[targets.classroom]\n{targets}\n"
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("profile");
    path.display().to_string()
}

fn search(profile: &str, max_users: u32, duration_s: u64, jobs: usize, dir: &Path) -> PlanConfig {
    PlanConfig {
        users: Vec::new(),
        max_users: Some(max_users),
        profiles: vec![profile.to_string()],
        duration: Duration::from_secs(duration_s),
        seed: 3,
        seeds: 1,
        jobs,
        results_dir: dir.to_path_buf(),
        ..PlanConfig::new()
    }
}

fn text(r: &PlanResults) -> String {
    serde_json::to_string_pretty(r).expect("json")
}

#[test]
fn a_search_finds_a_class_that_meets_and_one_more_that_misses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tiny = profile(
        dir.path(),
        "tiny",
        "ttft_p95_s = 25\npreemptions = 0\nserver_errors = 0\nserver_output_tok_per_s = 1",
    );
    let lines = Mutex::new(Vec::new());
    let (found, folder) = plan_search(&search(&tiny, 8, 60, 2, dir.path()), &|v, c, ok| {
        let line = codendum::plan::search_text::probe_line(v, c, ok);
        lines.lock().expect("lines").push(line);
    })
    .expect("search runs");
    let s = &found.search.as_ref().expect("a search").variants[0];
    let n = s.carries;
    assert!(n >= 1 && !s.at_least && s.meets_floors, "{s:?}");
    assert_eq!(s.first_failure, Some(n + 1));
    assert!(
        s.failed_targets.contains(&"ttft_p95_s".to_string()),
        "{s:?}"
    );
    // Two seats for up to eight students: the seats fill, so the limit is judged with a probe.
    assert_eq!(s.seats_probe.as_ref().map(|p| p.max_num_seqs), Some(4));
    assert!(s.limit.is_some());
    assert!(
        s.summary
            .starts_with(&format!("tiny carries {n} students; the limit is ")),
        "{}",
        s.summary
    );
    let lines = lines.into_inner().expect("lines");
    assert_eq!(lines.len(), s.probes.len());
    assert!(
        lines.iter().any(|l| l.contains("students: meets targets")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("students: misses ttft_p95_s")),
        "{lines:?}"
    );

    // Run both cells again as a plain plan: the same figures, the same verdicts.
    let plain = run_plan(
        &PlanConfig {
            users: vec![n, n + 1],
            max_users: None,
            ..search(&tiny, 8, 60, 1, dir.path())
        },
        &|_| {},
    )
    .expect("plain plan");
    assert!(plain.cells[0].meets_targets && meets_ceilings(&plain.cells[0]));
    assert!(!meets_ceilings(&plain.cells[1]));
    for c in &plain.cells {
        let same = found
            .cells
            .iter()
            .find(|f| f.result.spec.users == c.result.spec.users)
            .expect("the search probed it");
        assert_eq!(same, c);
    }
    // The same answer with one thread (no speculation) as with two.
    let again =
        run_search(&search(&tiny, 8, 60, 1, dir.path()), &|_, _, _| {}).expect("search runs");
    assert_eq!(text(&again), text(&found));
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("plan.json")).expect("json"))
            .expect("valid");
    assert_eq!(json["search"]["variants"][0]["carries"], n);
    assert_eq!(json["parameters"]["max_users"], 8);
    assert_eq!(json["verdicts"][0]["largest_class"], n);
    let md = std::fs::read_to_string(folder.join("plan.md")).expect("md");
    assert!(
        md.contains("## The search") && md.contains(&s.summary),
        "{md}"
    );
    let html = std::fs::read_to_string(folder.join("plan.html")).expect("html");
    assert!(html.contains("<h2>The search</h2>"));
}

/// Several seeds: each its own bisection (the further ones bracketed from
/// the first answer), the answer the range over them and how many seeds
/// each class meets the ceilings in; the same whatever the threads.
#[test]
fn several_seeds_answer_with_a_range_and_its_support() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tiny = profile(
        dir.path(),
        "tiny",
        "ttft_p95_s = 25\npreemptions = 0\nserver_errors = 0\nserver_output_tok_per_s = 1",
    );
    let config = PlanConfig {
        seeds: 4,
        ..search(&tiny, 8, 60, 2, dir.path())
    };
    let labels = Mutex::new(Vec::new());
    let found = run_search(&config, &|v, _, _| {
        labels.lock().expect("labels").push(v.to_string());
    })
    .expect("search runs");
    let v = &found.search.as_ref().expect("a search").variants[0];
    let seeds = v.seeds.as_ref().expect("several seeds");
    assert_eq!(seeds.seeds, [3, 4, 5, 6]);
    assert_eq!(seeds.carries[0], v.carries, "the first seed's answer");
    let (lo, hi) = seeds.range;
    assert_eq!(lo, *seeds.carries.iter().min().expect("answers"));
    assert_eq!(hi, *seeds.carries.iter().max().expect("answers"));
    // Each class said meets in as many seeds as carry at least it.
    for (size, k) in &seeds.support {
        let carried = seeds.carries.iter().filter(|c| *c >= size).count() as u32;
        assert_eq!(*k, carried, "{size}");
    }
    assert!(
        seeds.support.first().is_some_and(|(_, k)| *k >= 2),
        "a majority: {seeds:?}"
    );
    assert_eq!(seeds.probes.len(), 3);
    assert!(v.summary.starts_with("tiny carries "), "{}", v.summary);
    assert!(v.summary.contains(" over 4 seeds: "), "{}", v.summary);
    assert!(
        labels
            .lock()
            .expect("labels")
            .iter()
            .any(|l| l == "tiny, seed 6"),
        "each further seed's probes are named by it"
    );
    let one_thread = run_search(
        &PlanConfig {
            jobs: 1,
            ..config.clone()
        },
        &|_, _, _| {},
    )
    .expect("search runs");
    assert_eq!(text(&one_thread), text(&found));
    assert_eq!(found.verdicts[0].largest_class, Some(seeds.majority));
}

#[test]
fn the_ends_of_the_range_are_said_as_such() {
    let dir = tempfile::tempdir().expect("tempdir");
    let strict = profile(dir.path(), "strict", "ttft_p95_s = 0.01");
    let r = run_search(&search(&strict, 3, 30, 2, dir.path()), &|_, _, _| {}).expect("runs");
    let v = &r.search.as_ref().expect("search").variants[0];
    assert_eq!((v.carries, v.first_failure), (0, Some(1)));
    assert!(v.summary.contains("even 1 student misses"), "{}", v.summary);
    assert!(
        v.summary.contains("at 1 student it misses") && !v.summary.contains("1 students"),
        "{}",
        v.summary
    );
    assert_eq!(r.verdicts[0].largest_class, None);

    let loose = profile(dir.path(), "loose", "ttft_p95_s = 100000");
    let r = run_search(&search(&loose, 3, 30, 2, dir.path()), &|_, _, _| {}).expect("runs");
    let v = &r.search.as_ref().expect("search").variants[0];
    assert!(
        v.at_least && v.carries == 3 && v.first_failure.is_none(),
        "{v:?}"
    );
    assert!(
        v.summary.contains("carries at least 3 students"),
        "{}",
        v.summary
    );

    let floor = profile(
        dir.path(),
        "floor",
        "ttft_p95_s = 100000\nserver_output_tok_per_s = 100000",
    );
    let r = run_search(&search(&floor, 3, 30, 2, dir.path()), &|_, _, _| {}).expect("runs");
    let v = &r.search.as_ref().expect("search").variants[0];
    assert!(v.at_least && !v.meets_floors, "{v:?}");
    assert_eq!(v.floors_missed, ["server_output_tok_per_s"]);
    assert!(v.summary.contains("misses its floor"), "{}", v.summary);
}

/// A cell that missed `missed` with the given server figures.
fn failed(missed: &[&str], pinned: f64, blocked: f64, kv: f64, preemptions: u64) -> CellResult {
    let mut summary = ClassroomSummary::from_records(41, &[], &[]);
    let ok = |key: &str| !missed.contains(&key);
    summary.ttft_p95_s = Some(if ok("ttft_p95_s") { 10.0 } else { 100.0 });
    summary.task_time_p50_s = Some(if ok("coding_request_p50_s") {
        300.0
    } else {
        1000.0
    });
    summary.server.output_tokens_per_s = Some(110.0);
    summary.server.preemptions = Some(preemptions);
    CellResult {
        spec: CellSpec {
            profile: "classroom-64k".into(),
            max_num_seqs: 16,
            overridden: false,
            users: 41,
            seed: None,
        },
        server_output_tok_per_s: Some(110.0),
        ttft_p50_s: Some(5.0),
        ttft_p95_s: summary.ttft_p95_s,
        output_speed_p50_tok_s: Some(7.0),
        coding_request_p50_s: summary.task_time_p50_s,
        coding_request_p95_s: Some(1200.0),
        coding_requests: 50,
        completed: 45,
        peak_running: Some(16.0),
        peak_waiting: Some(10.0),
        peak_kv_usage: Some(kv),
        preemptions: Some(preemptions),
        prefix_hit_rate: Some(0.98),
        server_errors: 0,
        pinned_share: Some(pinned),
        blocked_share: Some(blocked),
        summary,
    }
}

#[test]
fn the_limit_is_read_from_the_failing_class() {
    let p = Profile::load("classroom-64k").expect("profile");
    let t = classroom_targets(&p.name, &p.targets).expect("targets");
    let limit = |cell: CellResult, probe: Option<bool>| {
        let judged = judge(&t, cell);
        assert!(!meets_ceilings(&judged), "the cell fails");
        classify(&judged, probe)
    };
    let pinned = || failed(&["coding_request_p50_s"], 0.9, 0.0, 0.1, 0);
    assert_eq!(limit(pinned(), Some(true)), Bottleneck::Seats);
    assert_eq!(limit(pinned(), None), Bottleneck::Seats);
    assert_eq!(limit(pinned(), Some(false)), Bottleneck::DecodeThroughput);
    let kv = failed(&["preemptions"], 0.9, 0.0, 0.99, 4);
    assert_eq!(limit(kv, Some(true)), Bottleneck::KvMemory);
    let blocked = failed(&["ttft_p95_s"], 0.1, 0.6, 0.5, 0);
    assert_eq!(limit(blocked, None), Bottleneck::KvMemory);
    let prefill = failed(&["ttft_p95_s"], 0.0, 0.0, 0.1, 0);
    assert_eq!(limit(prefill, None), Bottleneck::Prefill);
    let slow = failed(&["coding_request_p50_s"], 0.05, 0.0, 0.1, 0);
    assert_eq!(limit(slow, None), Bottleneck::RequestSpeed);
    let mut errors = failed(&[], 0.0, 0.0, 0.1, 0);
    errors
        .summary
        .errors_by_kind
        .insert(codendum_core::openai::ErrorKind::Http503, 3);
    assert_eq!(limit(errors, None), Bottleneck::ServerErrors);
    // A profile whose max_model_len the class's prompts exceed: the server
    // refuses most calls with 400. Its figures (short TTFTs, nothing
    // waiting) would read as "request speed"; the limit is the refusals.
    let refused = || {
        let mut c = failed(&["coding_request_p50_s"], 0.0, 0.0, 0.0, 0);
        c.summary.requests = 36;
        c.summary
            .errors_by_kind
            .insert(codendum_core::openai::ErrorKind::Http400, 18);
        c
    };
    assert_eq!(limit(refused(), None), Bottleneck::Refused);
    let mut few = refused();
    few.summary
        .errors_by_kind
        .insert(codendum_core::openai::ErrorKind::Http400, 17);
    assert_ne!(
        limit(few, None),
        Bottleneck::Refused,
        "17 of 36 is not half"
    );
}

#[test]
fn bad_searches_are_one_line_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A profile with no [targets] at all, loaded from a path.
    let with = profile(dir.path(), "with", "ttft_p95_s = 1");
    let bare_text: String = std::fs::read_to_string(&with)
        .expect("profile")
        .split("[targets")
        .next()
        .expect("server part")
        .to_string();
    let bare = dir.path().join("bare.toml");
    std::fs::write(&bare, bare_text).expect("bare");
    let bare = bare.display().to_string();
    let e = run_search(&search(&bare, 10, 30, 1, dir.path()), &|_, _, _| {})
        .expect_err("no targets")
        .to_string();
    assert!(
        e.contains("--profile") && e.contains("bare has no [targets.classroom]"),
        "{e}"
    );
    for (args, culprit) in [
        (&["plan", "--profile", bare.as_str()][..], "bare has no"),
        (
            &["plan", "--users", "20", "--max-users", "50"][..],
            "--max-users",
        ),
        (&["plan", "--max-users", "0"][..], "--max-users"),
        (&["plan", "--max-users", "many"][..], "--max-users"),
        (&["plan", "--seeds", "0"][..], "--seeds"),
        (&["plan", "--seeds", "101"][..], "--seeds"),
    ] {
        let f = run({
            let mut cmd = codendum(dir.path());
            cmd.args(args);
            cmd
        });
        assert_eq!(f.code, Some(2), "{args:?}: {}", f.both());
        assert_one_line_error(&f, culprit);
    }
    // With --users a profile without targets is still planned (nothing judged).
    let listed = run_plan(
        &PlanConfig {
            users: vec![1],
            max_users: None,
            ..search(&bare, 10, 30, 1, dir.path())
        },
        &|_| {},
    )
    .expect("a plain plan");
    assert!(listed.search.is_none() && listed.cells[0].meets_targets);
}
