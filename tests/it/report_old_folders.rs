//! Results folders written before the call records took one set of field
//! names (schema versions 1 and 2) still read: their lines come back under
//! today's names with the same values, and `report` and `compare` work on
//! them.

use std::path::{Path, PathBuf};

use codendum_core::openai::TokenSource;
use codendum_core::results::classroom_records::CallRecord;
use codendum_core::results::{read_jsonl, RequestRecord};
use serde_json::Value;

use crate::cli_support::{codendum, run};

/// A committed fixture folder.
fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(path)
}

/// The complete lines of a folder's `requests.jsonl` (a run that died may
/// leave its last line half written), as raw JSON and as `T`.
fn lines<T: serde::de::DeserializeOwned>(folder: &Path) -> (Vec<Value>, Vec<T>) {
    let text = std::fs::read_to_string(folder.join("requests.jsonl")).expect("requests.jsonl");
    let raw: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let typed: Vec<T> = read_jsonl(text.as_bytes(), "requests.jsonl")
        .expect("old lines read")
        .items;
    assert_eq!(raw.len(), typed.len(), "{}", folder.display());
    (raw, typed)
}

#[test]
fn old_bench_lines_read_under_todays_names() {
    for folder in ["bench/sample-run", "results-v2/bench"] {
        let (raw, records) = lines::<RequestRecord>(&fixture(folder));
        assert!(!records.is_empty(), "{folder}");
        for (old, new) in raw.iter().zip(&records) {
            assert!(old.get("prompt_tokens").is_none(), "{folder}: an old line");
            assert_eq!(old["input_tokens"].as_u64(), new.prompt_tokens, "{folder}");
            assert_eq!(old["e2e_s"].as_f64(), Some(new.e2e_s), "{folder}");
            assert_eq!(new.ended_at(), new.started_at + new.e2e_s);
        }
        let written = serde_json::to_value(&records[0]).expect("json");
        assert!(written.get("prompt_tokens").is_some(), "{written}");
        assert!(written.get("input_tokens").is_none(), "{written}");
    }
}

#[test]
fn old_classroom_and_replay_lines_read_under_todays_names() {
    for folder in ["results-v2/classroom", "results-v2/replay"] {
        let (raw, records) = lines::<CallRecord>(&fixture(folder));
        assert!(!records.is_empty(), "{folder}");
        for (old, new) in raw.iter().zip(&records) {
            assert!(old.get("e2e_s").is_none(), "{folder}: an old line");
            assert_eq!(old["duration_s"].as_f64(), Some(new.e2e_s), "{folder}");
            assert_eq!(old["token_source"], "server", "{folder}");
            assert_eq!(new.tokens_counted_by, TokenSource::Server, "{folder}");
            assert_eq!(old["prompt_tokens"].as_u64(), new.prompt_tokens, "{folder}");
        }
        let written = serde_json::to_value(&records[0]).expect("json");
        for (now, before) in [
            ("e2e_s", "duration_s"),
            ("tokens_counted_by", "token_source"),
        ] {
            assert!(written.get(now).is_some(), "{written}");
            assert!(written.get(before).is_none(), "{written}");
        }
    }
}

#[test]
fn report_and_compare_read_old_folders_of_every_kind() {
    let dir = tempfile::tempdir().expect("dir");
    for (folder, title) in [
        ("bench/sample-run", "# Benchmark report"),
        ("results-v2/bench", "# Benchmark report"),
        ("results-v2/classroom", "# Classroom report"),
        ("results-v2/replay", "# Replay report"),
    ] {
        let copy = dir.path().join(folder.replace('/', "-"));
        std::fs::create_dir_all(&copy).expect("mkdir");
        for entry in std::fs::read_dir(fixture(folder)).expect("fixture") {
            let from = entry.expect("entry").path();
            std::fs::copy(&from, copy.join(from.file_name().expect("name"))).expect("copy");
        }
        let mut cmd = codendum(dir.path());
        cmd.arg("report").arg(&copy);
        let f = run(cmd);
        assert_eq!(f.code, Some(0), "{folder}: {}", f.both());
        let report = std::fs::read_to_string(copy.join("report.md")).expect("report.md");
        assert!(report.starts_with(title), "{folder}: {report}");
        let mut cmd = codendum(dir.path());
        cmd.arg("compare").arg(&copy).arg(&copy);
        let f = run(cmd);
        assert_eq!(f.code, Some(0), "{folder}: {}", f.both());
        assert!(copy.join("compare.md").is_file(), "{folder}");
    }
}
