use super::*;
use crate::openai::ErrorKind;

fn value(text: &str) -> toml::Value {
    toml::Value::Table(toml::from_str(text).expect("toml"))
}

fn parse(text: &str) -> Result<ClassroomTargets, ConfigError> {
    parse_classroom_targets("targets.classroom", &value(text))
}

#[test]
fn every_key_is_read_with_its_kind() {
    let t = parse(
        "ttft_p95_s = 75\ncoding_request_p50_s = 900.5\nserver_output_tok_per_s = 95\n\
         preemptions = 0\nserver_errors = 2\n",
    )
    .expect("parses");
    assert_eq!(t.ttft_p95_s, Some(75.0));
    assert_eq!(t.coding_request_p50_s, Some(900.5));
    assert_eq!(t.server_errors, Some(2));
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
    assert_eq!(
        t.metrics(),
        [
            "ttft_p95",
            "coding_request_p50",
            "server_output_tok_per_s",
            "preemptions",
            "server_errors"
        ]
    );
    assert!(parse("").expect("empty").is_empty());
}

#[test]
fn unknown_keys_and_wrong_values_are_named() {
    let cases = [
        ("ttft_p99_s = 3\n", "ttft_p99_s"),
        ("ttft_p95_s = \"fast\"\n", "ttft_p95_s"),
        ("ttft_p95_s = -1\n", "ttft_p95_s"),
        ("ttft_p95_s = nan\n", "ttft_p95_s"),
        ("preemptions = 0.5\n", "preemptions"),
        ("server_errors = -1\n", "server_errors"),
    ];
    for (text, key) in cases {
        let e = parse(text).expect_err(text).to_string();
        assert!(e.contains(key) && e.contains("targets.classroom"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    let e = parse_classroom_targets("targets.classroom", &toml::Value::Integer(3))
        .expect_err("not a table")
        .to_string();
    assert!(e.contains("must be a table"), "{e}");
}

fn summary() -> ClassroomSummary {
    let mut s = ClassroomSummary::from_records(4, &[], &[]);
    s.ttft_p95_s = Some(40.0);
    s.task_time_p50_s = Some(600.0);
    s.server.output_tokens_per_s = Some(110.0);
    s.server.preemptions = Some(0);
    s
}

#[test]
fn each_key_measures_its_figure_and_compares_by_its_bound() {
    let s = summary();
    let c = judge_ttft_p95(&s, 40.0);
    assert_eq!((c.measured, c.passed), (Some(40.0), true));
    assert!(!judge_ttft_p95(&s, 39.9).passed);
    assert!(judge_coding_request_p50(&s, 600.0).passed);
    assert!(!judge_coding_request_p50(&s, 599.0).passed);
    assert!(judge_server_output(&s, 110.0).passed);
    assert!(!judge_server_output(&s, 111.0).passed);
    assert!(judge_preemptions(&s, 0).passed);
    let c = judge_server_errors(&s, 0);
    assert_eq!((c.measured, c.passed), (Some(0.0), true));
    let empty = ClassroomSummary::from_records(4, &[], &[]);
    for c in [
        judge_ttft_p95(&empty, 100.0),
        judge_coding_request_p50(&empty, 100.0),
        judge_server_output(&empty, 0.0),
        judge_preemptions(&empty, 10),
    ] {
        assert_eq!((c.measured, c.passed), (None, false), "{:?}", c.key);
    }
}

#[test]
fn server_errors_are_final_503_and_5xx_only() {
    let mut s = summary();
    s.errors_by_kind.insert(ErrorKind::Http503, 2);
    s.errors_by_kind.insert(ErrorKind::Http5xx, 1);
    s.errors_by_kind.insert(ErrorKind::Http429, 9);
    s.errors_by_kind.insert(ErrorKind::StreamError, 4);
    s.retries_after_429_503 = 7;
    assert_eq!(server_errors(&s), 3);
    assert!(judge_server_errors(&s, 3).passed);
    assert!(!judge_server_errors(&s, 2).passed);
}

#[test]
fn judge_checks_only_the_keys_given_in_order() {
    let t = ClassroomTargets {
        server_errors: Some(0),
        ttft_p95_s: Some(30.0),
        ..Default::default()
    };
    let checks = t.judge(&summary());
    let got: Vec<(ClassroomKey, bool)> = checks.iter().map(|c| (c.key, c.passed)).collect();
    assert_eq!(
        got,
        [
            (ClassroomKey::TtftP95, false),
            (ClassroomKey::ServerErrors, true)
        ]
    );
}

#[test]
fn every_classroom_target_is_a_class_figure_with_its_label() {
    for key in ClassroomKey::ALL {
        let m = class_metric(key.name()).expect("a target names a class figure");
        assert_eq!(m.label, key.label());
    }
    assert_eq!(ClassroomKey::ServerOutput.bound(), Bound::Min);
    assert_eq!(ClassroomKey::TtftP95.bound(), Bound::Max);
}
