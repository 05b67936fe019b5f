use super::*;

fn parse(text: &str) -> Result<ProfileTargets, ConfigError> {
    let table: toml::Table = toml::from_str(text).expect("toml");
    parse_targets(&table)
}

#[test]
fn full_and_quick_tables_are_read() {
    let t = parse(
        r#"
        [classroom]
        ttft_p95_s = 75
        coding_request_p50_s = 900.5
        server_output_tok_per_s = 95
        preemptions = 0
        server_errors = 0
        [[bench]]
        shape = "short"
        concurrency = 16
        ttft_p95_s = 30
        errors = 0
        [quick.classroom]
        ttft_p95_s = 10
        [[quick.bench]]
        shape = "long"
        concurrency = 1
        output_tok_per_s = 20
        "#,
    )
    .expect("parses");
    let c = t.full.classroom.expect("classroom");
    assert_eq!(c.ttft_p95_s, Some(75.0));
    assert_eq!(c.coding_request_p50_s, Some(900.5));
    assert_eq!(c.server_errors, Some(0));
    assert_eq!(t.full.bench[0].group_name(), "bench-short-c16");
    assert_eq!(t.quick.bench[0].limit("output_tok_per_s"), Some(20.0));
    assert_eq!(t.full.bench[0].metrics(), ["ttft_p95", "errors"]);
    assert_eq!(t.quick.classroom.and_then(|c| c.ttft_p95_s), Some(10.0));
}

#[test]
fn unknown_keys_are_named_with_their_table() {
    let e = parse("[classroom]\nttft_p99_s = 3\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ttft_p99_s") && e.contains("targets.classroom"),
        "{e}"
    );
    let e = parse("[[quick.bench]]\nshape = \"short\"\nconcurrency = 1\nttft = 1\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`ttft`") && e.contains("targets.quick.bench[0]"),
        "{e}"
    );
    let e = parse("[latency]\nx = 1\n").unwrap_err().to_string();
    assert!(e.contains("`latency`"), "{e}");
    let e = parse("[quick.plan]\nx = 1\n").unwrap_err().to_string();
    assert!(e.contains("`plan`") && e.contains("targets.quick"), "{e}");
}

#[test]
fn bad_levels_and_values_are_refused() {
    let cases = [
        ("[[bench]]\nshape = \"medium\"\nconcurrency = 1\nerrors = 0\n", "medium"),
        ("[[bench]]\nshape = \"short\"\nconcurrency = 0\nerrors = 0\n", "concurrency"),
        ("[[bench]]\nshape = \"short\"\nconcurrency = 4\n", "no target"),
        ("[[bench]]\nshape = \"short\"\nconcurrency = 4\nttft_p95_s = -1\n", "ttft_p95_s"),
        ("[classroom]\nttft_p95_s = nan\n", "ttft_p95_s"),
        ("[classroom]\npreemptions = -1\n", "preemptions"),
        (
            "[[bench]]\nshape = \"short\"\nconcurrency = 4\nerrors = 0\n[[bench]]\nshape = \"SHORT\"\nconcurrency = 4\nerrors = 1\n",
            "twice",
        ),
        ("bench = 3\n", "array"),
    ];
    for (text, needle) in cases {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains(needle), "{text}: {e}");
    }
}

#[test]
fn every_bench_target_key_names_a_level_metric_with_a_bound() {
    for key in BENCH_TARGET_KEYS {
        let m = level_metric(key).unwrap_or_else(|| panic!("{key} is no level metric"));
        assert_eq!(bench_target_metric(key).map(|m| m.column), Some(key));
        assert!(bound_of(m).is_some(), "{key} has no better direction");
        assert!(
            matches!(m.unit, Unit::Seconds | Unit::TokensPerSecond | Unit::Count),
            "{key}: {:?}",
            m.unit
        );
    }
    let names: Vec<&str> = BENCH_TARGET_KEYS
        .iter()
        .filter_map(|k| bench_target_metric(k))
        .map(|m| m.trial_name())
        .collect();
    assert_eq!(
        names,
        [
            "ttft_p50",
            "ttft_p95",
            "ttft_p99",
            "e2e_p50",
            "e2e_p95",
            "tpot_mean",
            "output_tok_per_s",
            "total_tok_per_s",
            "errors",
            "preemptions"
        ]
    );
    assert!(
        bench_target_metric("peak_running").is_none(),
        "not a target"
    );
}

#[test]
fn bench_keys_are_checked_in_trial_order_and_by_kind() {
    let t = parse(
        "[[bench]]\npreemptions = 0\nshape = \"long\"\ntotal_tok_per_s = 50.5\nconcurrency = 8\nttft_p50_s = 2\n",
    )
    .expect("parses");
    let b = &t.full.bench[0];
    assert_eq!(b.metrics(), ["ttft_p50", "total_tok_per_s", "preemptions"]);
    assert_eq!(
        (b.limit("ttft_p50_s"), b.limit("errors")),
        (Some(2.0), None)
    );
    let cases = [
        (
            "[[bench]]\nshape = \"short\"\nconcurrency = 1\nerrors = 0.5\n",
            "errors = 0.5 is not a whole number",
        ),
        (
            "[[bench]]\nconcurrency = 1\nerrors = 0\n",
            "missing key `shape`",
        ),
        (
            "[[bench]]\nshape = \"short\"\nerrors = 0\n",
            "missing key `concurrency`",
        ),
        (
            "[[bench]]\nshape = \"short\"\nconcurrency = 1\npeak_running = 3\n",
            "`peak_running`",
        ),
    ];
    for (text, needle) in cases {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains(needle), "{text}: {e}");
    }
}

#[test]
fn an_empty_table_has_no_targets() {
    let t = parse("").expect("empty");
    assert!(t.full.bench.is_empty() && t.full.classroom.is_none());
    assert_eq!(t.quick, ModeTargets::default());
}

#[test]
fn a_level_is_at_a_concurrency_or_at_a_rate() {
    let t = parse(
        r#"
        [[bench]]
        shape = "short"
        rate = 0.8
        ttft_p95_s = 2
        "#,
    )
    .expect("parses");
    assert_eq!(t.full.bench[0].rate, Some(0.8));
    assert_eq!(t.full.bench[0].group_name(), "bench-short-r0.8");
    for (text, culprit) in [
        (
            "shape = \"short\"\nrate = 1\nconcurrency = 4\nerrors = 0",
            "both `concurrency` and `rate`",
        ),
        (
            "shape = \"short\"\nerrors = 0",
            "missing key `concurrency` (or `rate`)",
        ),
        (
            "shape = \"short\"\nrate = 0\nerrors = 0",
            "rate 0 is not above 0",
        ),
    ] {
        let e = parse(&format!("[[bench]]\n{text}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(culprit), "{text}: {e}");
    }
}

#[test]
fn capacity_tables_are_read_per_mode_and_need_targets_to_judge_by() {
    let t = parse(
        "[capacity]\nstudents = 40\n[classroom]\nttft_p95_s = 75\n\
         [quick.capacity.fast]\nstudents = 8\nttft_p95_s = 10\n",
    )
    .expect("parses");
    assert_eq!(t.full.capacity.len(), 1);
    assert_eq!(t.full.capacity[0].students, 40);
    assert_eq!(t.quick.capacity[0].tier, "fast");
    let e = parse("[quick.capacity]\nstudents = 8\n")
        .expect_err("no classroom table")
        .to_string();
    assert!(
        e.contains("targets.quick.capacity: the tier classroom names no target of its own"),
        "{e}"
    );
    let e = parse("[capacity]\nstudents = 0\n")
        .expect_err("no one")
        .to_string();
    assert_eq!(
        e,
        "invalid targets.capacity: students = 0 is not at least 1 student"
    );
}
