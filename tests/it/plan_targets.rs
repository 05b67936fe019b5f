//! Judging cells against `[targets.classroom]` and classifying the limit,
//! on synthetic cell results.

use codendum::plan::limit::classify;
use codendum::plan::run::verdicts;
use codendum::plan::{classroom_targets, judge_cell, Bottleneck, CellResult, CellSpec, JudgedCell};
use codendum_core::profile::Profile;
use codendum_core::results::classroom_summary::ClassroomSummary;
use codendum_core::targets::ClassroomTargets;

/// A cell whose summary carries the same figures as its own fields (as
/// [`codendum::plan::figures::figures`] makes it): targets judge the summary.
fn cell(users: u32, seqs: u32) -> CellResult {
    let mut summary = ClassroomSummary::from_records(users as usize, &[], &[]);
    summary.ttft_p95_s = Some(40.0);
    summary.task_time_p50_s = Some(600.0);
    summary.server.output_tokens_per_s = Some(110.0);
    summary.server.preemptions = Some(0);
    CellResult {
        spec: CellSpec {
            profile: "classroom-64k".into(),
            max_num_seqs: seqs,
            overridden: true,
            users,
            seed: None,
        },
        server_output_tok_per_s: Some(110.0),
        ttft_p50_s: Some(10.0),
        ttft_p95_s: Some(40.0),
        output_speed_p50_tok_s: Some(7.0),
        coding_request_p50_s: Some(600.0),
        coding_request_p95_s: Some(1200.0),
        coding_requests: 50,
        completed: 45,
        peak_running: Some(f64::from(seqs)),
        peak_waiting: Some(10.0),
        peak_kv_usage: Some(0.1),
        preemptions: Some(0),
        prefix_hit_rate: Some(0.98),
        server_errors: 0,
        pinned_share: Some(0.6),
        blocked_share: Some(0.0),
        summary,
    }
}

fn embedded_targets() -> ClassroomTargets {
    let p = Profile::load("classroom-64k").expect("profile");
    classroom_targets(&p.name, &p.targets).expect("targets")
}

#[test]
fn the_profiles_targets_are_read_and_judged() {
    let t = embedded_targets();
    let keys: Vec<&str> = t.limits().iter().map(|(k, _)| k.name()).collect();
    assert_eq!(
        keys,
        [
            "ttft_p95_s",
            "coding_request_p50_s",
            "server_output_tok_per_s",
            "preemptions",
            "server_errors"
        ]
    );
    assert!(judge_cell(&t, &cell(40, 16)).iter().all(|c| c.met));
    let mut slow = cell(40, 16);
    slow.summary.ttft_p95_s = Some(80.0);
    slow.summary.server.output_tokens_per_s = Some(90.0);
    slow.summary.server.preemptions = None;
    let missed: Vec<String> = judge_cell(&t, &slow)
        .into_iter()
        .filter(|c| !c.met)
        .map(|c| c.key)
        .collect();
    assert_eq!(
        missed,
        ["ttft_p95_s", "server_output_tok_per_s", "preemptions"]
    );

    let table: toml::Table =
        toml::from_str("[classroom]\nttft_p95_s = 30\nnew_key = 1\n").expect("toml");
    let e = classroom_targets("x", &table)
        .expect_err("an unknown key")
        .to_string();
    assert!(
        e.contains("--profile") && e.contains("x:") && e.contains("new_key"),
        "{e}"
    );
    assert!(classroom_targets("x", &toml::Table::new())
        .expect("none")
        .is_empty());
    let bad: toml::Table = toml::from_str("[classroom]\nttft_p95_s = \"fast\"\n").expect("toml");
    let e = classroom_targets("x", &bad)
        .expect_err("not a number")
        .to_string();
    assert!(e.contains("--profile") && e.contains("ttft_p95_s"), "{e}");
}

/// `c` judged against `t`.
fn judged(t: &ClassroomTargets, c: CellResult) -> JudgedCell {
    let checks = judge_cell(t, &c);
    let meets_targets = checks.iter().all(|k| k.met);
    JudgedCell {
        result: c,
        checks,
        meets_targets,
    }
}

#[test]
fn limits_are_classified_from_the_server_figures() {
    let t = embedded_targets();
    let limit = |c: CellResult, more_seats: Option<bool>| {
        let j = judged(&t, c);
        assert!(!j.meets_targets, "the cell misses");
        classify(&j, more_seats)
    };
    // An 80-student cell whose coding requests take too long (its other
    // figures meet the profile's targets).
    let slow = || {
        let mut c = cell(80, 16);
        c.summary.task_time_p50_s = Some(1000.0);
        c
    };
    assert_eq!(limit(slow(), Some(false)), Bottleneck::DecodeThroughput);
    assert_eq!(limit(slow(), Some(true)), Bottleneck::Seats);
    // Seats full and no more seats tried: the seats are what was seen.
    assert_eq!(limit(slow(), None), Bottleneck::Seats);
    let mut kv = slow();
    kv.preemptions = Some(3);
    assert_eq!(limit(kv, Some(true)), Bottleneck::KvMemory);
    let mut full = slow();
    full.peak_kv_usage = Some(0.95);
    assert_eq!(limit(full, Some(false)), Bottleneck::KvMemory);
    let mut blocked = slow();
    blocked.pinned_share = Some(0.1);
    blocked.blocked_share = Some(0.5);
    assert_eq!(limit(blocked, Some(false)), Bottleneck::KvMemory);
    // Nothing queued, the coding requests too slow.
    let mut idle = slow();
    idle.pinned_share = Some(0.0);
    assert_eq!(limit(idle, Some(false)), Bottleneck::RequestSpeed);
    // Nothing queued and only TTFT missed (no time split: prefill counts
    // as the heavier phase).
    let mut reading = cell(80, 16);
    reading.pinned_share = Some(0.0);
    reading.summary.ttft_p95_s = Some(100.0);
    assert_eq!(limit(reading, None), Bottleneck::Prefill);
}

#[test]
fn verdicts_give_the_largest_class_and_the_limit() {
    let t = embedded_targets();
    let profile = Profile::load("classroom-64k").expect("profile");
    let judge = |c: CellResult| judged(&t, c);
    let mut c80 = cell(80, 16);
    c80.summary.ttft_p95_s = Some(200.0);
    let mut c120 = cell(120, 16);
    c120.summary.ttft_p95_s = Some(400.0);
    let mut c120_32 = cell(120, 32);
    c120_32.summary.ttft_p95_s = Some(300.0);
    let cells = vec![
        judge(cell(20, 16)),
        judge(cell(40, 16)),
        judge(c80),
        judge(c120),
        judge(cell(20, 32)),
        judge(cell(40, 32)),
        judge(cell(80, 32)),
        judge(c120_32),
    ];
    let v = verdicts(&cells, &[profile], &[t]);
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].variant, "classroom-64k @ 16 seqs");
    assert_eq!((v[0].largest_class, v[0].first_miss), (Some(40), Some(80)));
    // 80 students meet the targets with 32 seats: the 16-seat variant is limited by seats.
    assert_eq!(v[0].limit, Some(Bottleneck::Seats));
    assert_eq!((v[1].largest_class, v[1].first_miss), (Some(80), Some(120)));
    // No variant with more than 32 seats was tried: the full seats are what
    // the figures show (decode throughput needs more seats tried and missed).
    assert_eq!(v[1].limit, Some(Bottleneck::Seats));
    assert!(
        v[1].summary.contains("80 students meet the targets"),
        "{}",
        v[1].summary
    );
}

#[test]
fn a_floor_missed_by_a_small_class_is_not_its_limit() {
    let t = embedded_targets();
    let profile = Profile::load("classroom-64k").expect("profile");
    // 20 students are too few for the server-output floor (80 < 95 tok/s)
    // and within every ceiling; 80 students miss a ceiling.
    let mut small = cell(20, 16);
    small.summary.server.output_tokens_per_s = Some(80.0);
    small.server_output_tok_per_s = Some(80.0);
    let mut large = cell(80, 16);
    large.summary.ttft_p95_s = Some(200.0);
    let cells = vec![
        judged(&t, small),
        judged(&t, cell(40, 16)),
        judged(&t, large),
    ];
    let v = verdicts(&cells, &[profile], &[t]);
    assert_eq!((v[0].largest_class, v[0].first_miss), (None, Some(20)));
    // The limit is judged where a ceiling was missed: 80 students, seats full.
    assert_eq!(v[0].limit, Some(Bottleneck::Seats));
    assert!(
        v[0].summary.contains(
            "even the smallest class tried (20 students) stays within the ceilings but misses the floor (server_output_tok_per_s 80.0 (target ≥ 95.0)); 80 students miss the ceilings, limited by seats"
        ),
        "{}",
        v[0].summary
    );
    // A class that met every target before the floor was missed.
    let t = embedded_targets();
    let profile = Profile::load("classroom-64k").expect("profile");
    let mut middle = cell(40, 16);
    middle.summary.server.output_tokens_per_s = Some(80.0);
    middle.server_output_tok_per_s = Some(80.0);
    let mut large = cell(80, 16);
    large.summary.ttft_p95_s = Some(200.0);
    let cells = vec![
        judged(&t, cell(20, 16)),
        judged(&t, middle),
        judged(&t, large),
    ];
    let v = verdicts(&cells, &[profile], &[t]);
    assert_eq!((v[0].largest_class, v[0].first_miss), (Some(20), Some(40)));
    assert!(
        v[0].summary.contains(
            "20 students meet the targets; 40 students stay within the ceilings but miss the floor (server_output_tok_per_s 80.0 (target ≥ 95.0)); 80 students miss the ceilings, limited by seats"
        ),
        "{}",
        v[0].summary
    );
}
