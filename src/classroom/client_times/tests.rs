use std::collections::BTreeMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;

#[test]
fn tool_kinds_follow_names_and_bash_commands() {
    let k = |n: &str, a: &str| ClientTimeKind::of_tool(n, a);
    assert_eq!(k("read", "{}"), Some(ClientTimeKind::FileTool));
    assert_eq!(k("write", "{}"), Some(ClientTimeKind::AfterEdit));
    assert_eq!(
        k("bash", r#"{"command":"cd app && mvn -q test"}"#),
        Some(ClientTimeKind::BuildTest)
    );
    assert_eq!(
        k("bash", r#"{"command":"python -m pytest -q"}"#),
        Some(ClientTimeKind::BuildTest)
    );
    assert_eq!(
        k("bash", r#"{"command":"ls -la src"}"#),
        Some(ClientTimeKind::Bash)
    );
    assert_eq!(k("bash", "not json"), Some(ClientTimeKind::Bash));
    assert_eq!(k("todowrite", "{}"), Some(ClientTimeKind::OtherTool));
    assert_eq!(k("task", "{}"), None);
    assert_eq!(
        ClientTimeKind::FileTool.heavier(ClientTimeKind::BuildTest),
        ClientTimeKind::BuildTest
    );
    for kind in ClientTimeKind::ALL {
        assert_eq!(ClientTimeKind::parse(kind.as_str()), Some(kind));
    }
}

#[test]
fn files_round_trip_and_draws_come_from_the_samples() {
    let mut samples = BTreeMap::new();
    samples.insert(ClientTimeKind::FileTool, vec![0.25, 0.75, 1.5]);
    samples.insert(ClientTimeKind::Bash, vec![]);
    let times = ClientTimes::from_samples(samples);
    let file = times.to_file("test");
    assert_eq!(file.kinds.len(), 1, "empty kinds are left out");
    let stats = &file.kinds["file_tool"];
    assert_eq!(stats.count, 3);
    assert_eq!(stats.p50_s, Some(0.75));
    let text = serde_json::to_string(&file).unwrap();
    let back = ClientTimes::parse(&text).unwrap();
    assert_eq!(back.samples(ClientTimeKind::FileTool), &[0.25, 0.75, 1.5]);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for _ in 0..50 {
        let d = back
            .draw(ClientTimeKind::FileTool, &mut rng)
            .unwrap()
            .as_secs_f64();
        assert!([0.25, 0.75, 1.5].contains(&d), "{d}");
    }
    assert!(back.draw(ClientTimeKind::AfterEdit, &mut rng).is_none());
    assert!(ClientTimes::built_in().is_built_in() && !back.is_built_in());
}

#[test]
fn bad_files_are_one_line_errors_naming_the_culprit() {
    let unknown = r#"{"schema_version":1,"kinds":{"compile_time":{"samples_s":[1.0]}}}"#;
    let e = ClientTimes::parse(unknown).unwrap_err();
    assert!(
        e.contains("unknown tool kind \"compile_time\"") && !e.contains('\n'),
        "{e}"
    );
    let newer = r#"{"schema_version":2,"kinds":{}}"#;
    assert!(ClientTimes::parse(newer)
        .unwrap_err()
        .contains("schema_version 2"));
    let negative = r#"{"schema_version":1,"kinds":{"bash":{"samples_s":[-1]}}}"#;
    assert!(ClientTimes::parse(negative)
        .unwrap_err()
        .contains("bash.samples_s[0]"));
    assert!(ClientTimes::parse("[]")
        .unwrap_err()
        .contains("schema_version"));
}

#[test]
fn a_capture_folder_is_read_through_its_header() {
    let dir = tempfile::tempdir().unwrap();
    let times = ClientTimes::from_samples(BTreeMap::from([(ClientTimeKind::AfterEdit, vec![2.0])]));
    let file = serde_json::to_string(&times.to_file("t")).unwrap();
    std::fs::write(dir.path().join(CLIENT_TIMES_FILE), file).unwrap();
    std::fs::write(
        dir.path().join(CAPTURE_HEADER_FILE),
        r#"{"schema_version":9}"#,
    )
    .unwrap();
    let e = ClientTimes::from_path(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("capture.json") && e.contains("schema_version 9"),
        "{e}"
    );
    std::fs::write(
        dir.path().join(CAPTURE_HEADER_FILE),
        r#"{"schema_version":1}"#,
    )
    .unwrap();
    let read = ClientTimes::from_path(dir.path()).unwrap();
    assert_eq!(read.samples(ClientTimeKind::AfterEdit), &[2.0]);
}
