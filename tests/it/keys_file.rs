//! The API-keys file: every format the README and the reader
//! accept, read through `read_api_keys` from the fixtures in `fixtures/keys/`,
//! the bad ones refused in one line that names the file and the line but
//! never a key; and once through the binary (`codendum serve --proxy`), which
//! refuses a bad file before it listens and lets a good file's keys in.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codendum_core::access::read_api_keys;
use codendum_core::error::ConfigError;

use crate::cli_support::{assert_one_line_error, codendum, run, Running};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/keys")
        .join(name)
}

fn keys_of(name: &str) -> Vec<String> {
    read_api_keys(&fixture(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .iter()
        .map(|k| k.expose().to_string())
        .collect()
}

const THREE: [&str; 3] = ["sk-test-0001", "sk-test-0002", "sk-test-0003"];

#[test]
fn plain_lines_quoted_csv_bom_crlf_any_column_order_and_headerless_rows_all_read() {
    for name in [
        "one-per-line.txt",
        "quoted.csv",
        "bom-crlf.csv",
        "key-first.csv",
        "headerless.csv",
    ] {
        assert_eq!(keys_of(name), THREE, "{name}");
    }
}

#[test]
fn bad_files_are_one_line_errors_with_the_path_and_line_and_no_key() {
    for (name, detail) in [
        (
            "bad-no-key-column.csv",
            "line 1 is a header without a key column",
        ),
        // Line 2's quoted note runs over two lines: bob is on line 4.
        ("bad-row-without-key.csv", "line 4 has no key"),
        ("bad-short-row.csv", "line 3 has no key"),
        ("bad-empty.csv", "no keys"),
        ("bad-bom-blank.csv", "no keys"),
    ] {
        let err = read_api_keys(&fixture(name)).expect_err(name);
        assert!(
            matches!(&err, ConfigError::BadFile { path, .. } if path.ends_with(name)),
            "{name}: {err:?}"
        );
        let text = err.to_string();
        assert!(text.starts_with("API-keys file "), "{name}: {text}");
        assert!(text.contains(name), "{name}: names the file: {text}");
        assert!(text.contains(detail), "{name}: {detail:?} in {text}");
        assert!(!text.contains("sk-test"), "{name}: a key leaked: {text}");
        assert_eq!(text.lines().count(), 1, "{name}: one line: {text}");
    }
    let missing = fixture("no-such-file.csv");
    let err = read_api_keys(&missing).expect_err("missing");
    assert!(matches!(err, ConfigError::Unreadable { .. }), "{err:?}");
    assert!(err.to_string().contains("no-such-file.csv"), "{err}");
}

/// `codendum serve --proxy --api-keys-file FILE --port 0 --time-scale 50`.
fn serve_proxy(cwd: &Path, keys: &Path) -> std::process::Command {
    let mut cmd = codendum(cwd);
    cmd.args(["serve", "--proxy", "--port", "0", "--time-scale", "50"])
        .arg("--api-keys-file")
        .arg(keys);
    cmd
}

#[test]
fn serve_refuses_a_bad_keys_file_before_listening_and_names_no_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, detail) in [
        ("bad-no-key-column.csv", "line 1"),
        ("bad-row-without-key.csv", "line 4"),
        ("bad-empty.csv", "no keys"),
    ] {
        let start = Instant::now();
        let f = run(serve_proxy(dir.path(), &fixture(name)));
        assert_eq!(
            f.code,
            Some(2),
            "{name}: exit 2 for bad input:\n{}",
            f.both()
        );
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{name}: fails fast"
        );
        assert_one_line_error(&f, name);
        assert!(f.stderr.contains(detail), "{name}: {detail}: {}", f.stderr);
        assert!(!f.stderr.contains("listening on"), "{}", f.both());
        assert!(
            !f.stdout.contains("sk-test") && !f.stderr.contains("sk-test"),
            "{name}: a key leaked:\n{}",
            f.both()
        );
    }
}

#[test]
fn serve_lets_in_the_keys_of_a_quoted_bom_crlf_file_and_no_other() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let mut running = Running::spawn(
        serve_proxy(dir.path(), &fixture("bom-crlf.csv")),
        &logs,
        "serve",
    );
    let stderr = logs.join("serve.stderr");
    let start = Instant::now();
    let base = loop {
        let text = std::fs::read_to_string(&stderr).unwrap_or_default();
        if let Some(rest) = text.split("listening on ").nth(1) {
            break rest.split_whitespace().next().expect("url").to_string();
        }
        if running.has_exited() || start.elapsed() > Duration::from_secs(20) {
            running.signal("KILL");
            panic!("serve did not start: {text}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let rt = crate::cli_support::runtime();
    let client = reqwest::Client::new();
    // The quoted key (bob's) and the last row's; a header field is no key.
    for (key, status) in [
        ("sk-test-0002", 200),
        ("sk-test-0003", 200),
        ("API_Key", 401),
        ("sk-test-0004", 401),
    ] {
        let resp = rt
            .block_on(client.get(format!("{base}/models")).bearer_auth(key).send())
            .expect("serve answers");
        assert_eq!(resp.status().as_u16(), status, "{key}");
    }
    running.signal("INT");
    let f = running.wait(Duration::from_secs(20));
    assert_eq!(f.code, Some(0), "serve stops on Ctrl-C:\n{}", f.both());
    assert!(!f.both().contains("sk-test"), "a key leaked:\n{}", f.both());
}
