use super::*;
use codendum_core::profile::Profile;
use codendum_core::results::profile_check::FIELDS;
use std::path::Path;

const METRICS_032: &str = include_str!("../../fixtures/vllm-0.32/metrics-busy.txt");
const SMOLLM2: &str = include_str!("../../fixtures/profiles/vllm-032-smollm2.toml");

fn classroom_64k() -> Profile {
    Profile::load("classroom-64k").expect("embedded profile")
}

fn smollm2() -> Profile {
    Profile::parse("vllm-032-smollm2", SMOLLM2, Path::new("x.toml"), None).expect("fixture")
}

/// What the recorded vLLM 0.32 states (models.json and metrics-busy.txt).
fn models_032() -> Vec<ModelInfo> {
    vec![ModelInfo {
        id: "smollm2".into(),
        max_model_len: Some(8192),
    }]
}

fn answers_032() -> ServerAnswers {
    ServerAnswers {
        models: Ok(models_032()),
        metrics: vec![("http://h/metrics".into(), Ok(METRICS_032.to_string()))],
    }
}

fn fields(diffs: &[Difference]) -> Vec<&str> {
    diffs.iter().map(|d| d.field.as_str()).collect()
}

#[test]
fn equal_values_match_and_each_difference_names_both_values() {
    let server = classroom_64k().server;
    let same = StatedSettings {
        model_ids: Some(vec!["qwen3-coder".into()]),
        max_model_len: Some(65_536),
        model_name_label: None,
        kv_cache_tokens: Some(1_362_640),
        block_size: Some(16),
        enable_prefix_caching: Some(true),
        metrics_source: "/metrics".into(),
    };
    let c = compare(&server, &same);
    assert!(c.differences.is_empty(), "{c:?}");
    assert_eq!(c.matched, FIELDS);
    assert!(c.not_stated.is_empty());

    let other = StatedSettings {
        max_model_len: Some(8192),
        block_size: Some(128),
        enable_prefix_caching: Some(false),
        ..same
    };
    let c = compare(&server, &other);
    assert_eq!(
        fields(&c.differences),
        ["max_model_len", "block_size", "enable_prefix_caching"]
    );
    let d = &c.differences[0];
    assert_eq!(
        (&d.profile, &d.server, d.source.as_str()),
        (
            &Setting::Tokens(65_536),
            &Setting::Tokens(8192),
            "/v1/models"
        )
    );
    assert_eq!(d.to_string(), "max_model_len 8192 (profile 65536)");
    assert_eq!(c.differences[1].source, "/metrics");
    assert_eq!(
        c.differences[2].to_string(),
        "enable_prefix_caching false (profile true)"
    );
    assert_eq!(c.matched, ["served_model_name", "kv_cache_tokens"]);
}

#[test]
fn a_field_the_server_does_not_state_is_not_a_difference() {
    let server = classroom_64k().server;
    let c = compare(&server, &StatedSettings::default());
    assert!(c.differences.is_empty() && c.matched.is_empty());
    assert_eq!(c.not_stated, FIELDS);
    // llama.cpp: /v1/models without max_model_len, no /metrics.
    let models = [ModelInfo {
        id: "qwen3-coder".into(),
        max_model_len: None,
    }];
    let c = compare(
        &server,
        &StatedSettings::from_models(&models, "qwen3-coder"),
    );
    assert_eq!(c.matched, ["served_model_name"]);
    assert_eq!(c.not_stated[0], "max_model_len");
    assert_eq!(c.not_stated.len(), 4);
}

#[test]
fn the_served_name_is_one_of_the_ids_else_the_metrics_label() {
    let server = classroom_64k().server;
    let listed = |ids: &[&str]| StatedSettings {
        model_ids: Some(ids.iter().map(|s| s.to_string()).collect()),
        ..StatedSettings::default()
    };
    let c = compare(&server, &listed(&["qwen3-coder", "qwen3-coder-lora"]));
    assert_eq!(c.matched, ["served_model_name"]);
    let c = compare(&server, &listed(&["smollm2"]));
    assert_eq!(
        c.differences[0].to_string(),
        "served_model_name smollm2 (profile qwen3-coder)"
    );
    let c = compare(&server, &listed(&[]));
    assert_eq!(c.differences[0].server.to_string(), "(no model)");
    // Without /v1/models: the label, the served name or (no
    // --served-model-name) the model path.
    for (label, matches) in [
        ("qwen3-coder", true),
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", true),
        ("smollm2", false),
    ] {
        let stated = StatedSettings {
            model_name_label: Some(label.into()),
            metrics_source: "http://h/metrics".into(),
            ..StatedSettings::default()
        };
        let c = compare(&server, &stated);
        assert_eq!(c.matched.len(), usize::from(matches), "{label}");
        if !matches {
            assert_eq!(c.differences[0].source, "http://h/metrics");
        }
    }
}

#[test]
fn the_recorded_032_server_reads_and_differs_from_classroom_64k() {
    let stated = StatedSettings::from_metrics_page(METRICS_032, "m").expect("parses");
    assert_eq!(stated.block_size, Some(128));
    assert_eq!(stated.kv_cache_tokens, Some(93_184));
    assert_eq!(stated.enable_prefix_caching, Some(true));
    assert_eq!(stated.model_name_label.as_deref(), Some("smollm2"));

    let c = check(&classroom_64k(), &answers_032());
    assert_eq!(
        fields(&c.differences),
        [
            "served_model_name",
            "max_model_len",
            "kv_cache_tokens",
            "block_size"
        ]
    );
    assert_eq!(c.matched, ["enable_prefix_caching"]);
    assert_eq!(c.read, ["/v1/models", "http://h/metrics"]);
    let warning = c.warning().expect("differs");
    assert_eq!(
        warning,
        "the server does not run profile classroom-64k: \
         served_model_name smollm2 (profile qwen3-coder); max_model_len 8192 (profile 65536); \
         kv_cache_tokens 93184 (profile 1362640); block_size 128 (profile 16)"
    );
    let msg = c.verdict("http://h/v1").expect_err("fails");
    assert!(
        msg.starts_with("the server does not run profile classroom-64k: served_model_name")
            && msg.ends_with("block_size 128 (profile 16) (http://h/v1)"),
        "{msg}"
    );
}

#[test]
fn a_matching_profile_passes_and_says_what_was_not_stated() {
    let c = check(&smollm2(), &answers_032());
    assert!(c.differences.is_empty(), "{c:?}");
    assert_eq!(c.matched, FIELDS);
    assert_eq!(c.warning(), None);
    assert_eq!(c.verdict("http://h/v1"), Ok(None));

    // /metrics out of reach: the /v1/models fields pass, the rest is said.
    let answers = ServerAnswers {
        models: Ok(models_032()),
        metrics: vec![(
            "http://h/metrics".into(),
            Err("http://h/metrics answered HTTP 404".into()),
        )],
    };
    let c = check(&smollm2(), &answers);
    assert_eq!(c.matched, ["served_model_name", "max_model_len"]);
    assert_eq!(
        c.not_stated,
        ["kv_cache_tokens", "block_size", "enable_prefix_caching"]
    );
    let note = c.verdict("http://h/v1").expect("passes").expect("a note");
    assert!(
        note.ends_with(
            "not stated: kv_cache_tokens, block_size, enable_prefix_caching (http://h/metrics answered HTTP 404)"
        ),
        "{note}"
    );
}

#[test]
fn nothing_stated_fails_saying_why() {
    let answers = ServerAnswers {
        models: Err("HTTP 503: Service Unavailable".into()),
        metrics: vec![(
            "http://h/metrics".into(),
            Err("http://h/metrics is unreachable: connection refused".into()),
        )],
    };
    let c = check(&smollm2(), &answers);
    assert_eq!(c.not_stated, FIELDS);
    let msg = c.verdict("http://h/v1").expect_err("nothing to compare");
    assert!(
        msg.starts_with("cannot check that http://h/v1 runs profile vllm-032-smollm2")
            && msg.contains("/v1/models: HTTP 503")
            && msg.contains("connection refused"),
        "{msg}"
    );
    // A page that is not Prometheus text is unreadable, not a difference.
    let answers = ServerAnswers {
        models: Ok(models_032()),
        metrics: vec![("http://h/metrics".into(), Ok("<html>".into()))],
    };
    let c = check(&smollm2(), &answers);
    assert!(c.differences.is_empty());
    assert!(
        c.unreadable[0].contains("did not answer Prometheus"),
        "{c:?}"
    );
}

#[test]
fn each_replica_is_compared_and_named() {
    let other = METRICS_032.replace("block_size=\"128\"", "block_size=\"16\"");
    let answers = ServerAnswers {
        models: Ok(models_032()),
        metrics: vec![
            ("http://a/metrics".into(), Ok(METRICS_032.to_string())),
            ("http://b/metrics".into(), Ok(other)),
        ],
    };
    let c = check(&smollm2(), &answers);
    assert_eq!(fields(&c.differences), ["block_size"]);
    assert_eq!(c.differences[0].source, "http://b/metrics");
    assert!(!c.matched.contains(&"block_size".to_string()));
    assert!(c.matched.contains(&"max_model_len".to_string()));
    assert!(
        c.differences_text().ends_with("at http://b/metrics"),
        "{}",
        c.differences_text()
    );
}

#[test]
fn the_check_is_a_field_of_the_summary_and_reads_back() {
    let c = check(&classroom_64k(), &answers_032());
    let dir = tempfile::tempdir().expect("tempdir");
    let mut summary: codendum_core::results::BenchSummary = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/fixtures/bench/sample-run/summary.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("fixture"),
    )
    .expect("a bench summary");
    assert_eq!(summary.profile_check, None);
    summary.profile_check = Some(c.clone());
    codendum_core::results::RunFolder::at(dir.path())
        .write_bench_summary(&summary)
        .expect("written");
    let text = std::fs::read_to_string(dir.path().join("summary.json")).expect("read");
    let last_key = text
        .rfind("\n  \"")
        .map(|i| &text[i + 4..])
        .and_then(|t| t.split('"').next());
    assert_eq!(last_key, Some("profile_check"), "the check comes last");
    assert_eq!(read_profile_check(dir.path()), Some(c));
}
