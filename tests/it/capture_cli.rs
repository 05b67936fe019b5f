//! The `codendum capture` binary and `classroom --client-times`: the listen
//! address on stderr, a clean stop on SIGTERM with the files written, one
//! stderr line for an unreachable upstream, the key nowhere; bad input as
//! one-line errors with exit 2.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::capture_support::{any_file_contains, calls, post, step_body, twin, KEY, SYSTEM};
use crate::cli_support::{assert_one_line_error, codendum, run, runtime, write_file, Running};

/// Waits for the capture's "listening on http://ADDR/v1" line; the base URL.
fn listening(logs: &Path, name: &str) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(logs.join(format!("{name}.stderr"))).unwrap_or_default();
        if let Some(rest) = text.split("listening on ").nth(1) {
            return rest.split_whitespace().next().unwrap_or("").to_string();
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no listen line: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_binary_captures_until_sigterm_and_writes_no_key() {
    let rt = runtime();
    let twin = rt.block_on(twin());
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("cap");
    let mut cmd = codendum(dir.path());
    cmd.args([
        "capture",
        "--upstream",
        &twin.base_url(),
        "--listen",
        "127.0.0.1:0",
        "--out",
    ])
    .arg(&out);
    let running = Running::spawn(cmd, dir.path(), "capture");
    let base = listening(dir.path(), "capture");
    let r = rt.block_on(async {
        let http = reqwest::Client::new();
        post(
            &http,
            &base,
            "ses_cli",
            None,
            &step_body(
                &[
                    json!({"role": "system", "content": SYSTEM}),
                    json!({"role": "user", "content": "go"}),
                ],
                true,
            ),
        )
        .await
    });
    assert_eq!(r.status, 200);
    running.signal("TERM");
    let f = running.wait(Duration::from_secs(20));
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert_eq!(f.stderr.matches("listening on").count(), 1, "{}", f.both());
    assert_eq!(calls(&out).len(), 1);
    for name in ["capture.json", "prompt.json", "client-times.json"] {
        assert!(out.join(name).is_file(), "{name}");
    }
    assert!(!any_file_contains(&out, KEY) && !f.both().contains(KEY));
    rt.block_on(twin.shutdown());
}

#[test]
fn an_unreachable_upstream_is_one_stderr_line_per_call() {
    let rt = runtime();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let dir = tempfile::tempdir().expect("dir");
    let mut cmd = codendum(dir.path());
    cmd.args([
        "capture",
        "--upstream",
        &format!("http://127.0.0.1:{port}/v1"),
        "--listen",
        "127.0.0.1:0",
        "--out",
        "cap",
    ]);
    let running = Running::spawn(cmd, dir.path(), "capture");
    let base = listening(dir.path(), "capture");
    let r = rt.block_on(async {
        post(
            &reqwest::Client::new(),
            &base,
            "ses_u",
            None,
            &step_body(&[], true),
        )
        .await
    });
    assert_eq!(r.status, 502);
    running.signal("INT");
    let f = running.wait(Duration::from_secs(20));
    assert_eq!(f.code, Some(0), "{}", f.both());
    let lines = lines_with(&f.stderr, "unreachable");
    assert_eq!(lines.len(), 1, "{}", f.both());
    assert!(lines[0].contains(&format!("127.0.0.1:{port}")) && !f.stderr.contains("panicked"));
}

/// The lines of `text` that contain `needle`.
fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

fn bad(dir: &Path, args: &[&str], culprit: &str) {
    let mut cmd = codendum(dir);
    cmd.args(args);
    let f = run(cmd);
    assert_eq!(f.code, Some(2), "exit 2 for {args:?}:\n{}", f.both());
    assert_one_line_error(&f, culprit);
}

#[test]
fn bad_capture_flags_are_named() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    bad(
        d,
        &["capture", "--upstream", "ftp://x/v1", "--out", "c"],
        "--upstream",
    );
    bad(
        d,
        &[
            "capture",
            "--upstream",
            "http://127.0.0.1:9/api",
            "--out",
            "c",
        ],
        "--upstream",
    );
    bad(
        d,
        &[
            "capture",
            "--upstream",
            "http://127.0.0.1:9/v1",
            "--listen",
            "nowhere",
            "--out",
            "c",
        ],
        "--listen",
    );
    std::fs::create_dir_all(d.join("old")).expect("mkdir");
    write_file(&d.join("old"), "capture.json", r#"{"schema_version":1}"#);
    bad(
        d,
        &[
            "capture",
            "--upstream",
            "http://127.0.0.1:9/v1",
            "--out",
            "old",
        ],
        "--out",
    );
}

#[test]
fn bad_client_times_files_are_named() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    let classroom = |file: &str, culprit: &str| {
        bad(
            d,
            &[
                "classroom",
                "--users",
                "1",
                "--duration",
                "30",
                "--yes",
                "--time-scale",
                "50",
                "--results-dir",
                "r",
                "--client-times",
                file,
            ],
            culprit,
        )
    };
    write_file(
        d,
        "unknown.json",
        r#"{"schema_version":1,"kinds":{"compile_wait":{"samples_s":[1.0]}}}"#,
    );
    classroom("unknown.json", "compile_wait");
    write_file(d, "newer.json", r#"{"schema_version":2,"kinds":{}}"#);
    classroom("newer.json", "schema_version 2");
    std::fs::create_dir_all(d.join("cap2")).expect("mkdir");
    write_file(
        &d.join("cap2"),
        "capture.json",
        r#"{"schema_version":3,"kind":"capture"}"#,
    );
    write_file(
        &d.join("cap2"),
        "client-times.json",
        r#"{"schema_version":1,"kinds":{}}"#,
    );
    classroom("cap2", "schema_version 3");
    classroom("missing.json", "missing.json");
    assert!(!d.join("r").exists(), "no run started");
}

#[test]
fn bad_tls_files_are_named() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    let key_pair = |name: &str| {
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        write_file(d, &format!("{name}.pem"), &cert.pem());
        write_file(d, &format!("{name}-key.pem"), &key.serialize_pem());
    };
    key_pair("a");
    key_pair("b");
    write_file(d, "junk.pem", "not a certificate");
    for (cert, key, culprit) in [
        ("junk.pem", "a-key.pem", "--tls-cert"),
        ("a.pem", "junk.pem", "--tls-key"),
        ("a.pem", "b-key.pem", "does not go with"),
        ("missing.pem", "a-key.pem", "missing.pem"),
    ] {
        let args = [
            "capture",
            "--upstream",
            "http://127.0.0.1:9/v1",
            "--listen",
            "127.0.0.1:0",
            "--out",
            "c",
            "--tls-cert",
            cert,
            "--tls-key",
            key,
        ];
        bad(d, &args, culprit);
    }
    bad(
        d,
        &[
            "capture",
            "--upstream",
            "http://127.0.0.1:9/v1",
            "--out",
            "c",
            "--tls-cert",
            "a.pem",
        ],
        "--tls-key",
    );
    assert!(
        !d.join("c").join("capture.json").exists(),
        "nothing captured"
    );
}

#[test]
fn plain_http_on_every_interface_is_one_warning_line() {
    let rt = runtime();
    let twin = rt.block_on(twin());
    let dir = tempfile::tempdir().expect("dir");
    let mut cmd = codendum(dir.path());
    cmd.args([
        "capture",
        "--upstream",
        &twin.base_url(),
        "--listen",
        "0.0.0.0:0",
        "--out",
        "cap",
    ]);
    let running = Running::spawn(cmd, dir.path(), "capture");
    let base = listening(dir.path(), "capture").replace("0.0.0.0", "127.0.0.1");
    let r = rt.block_on(async {
        post(
            &reqwest::Client::new(),
            &base,
            "ses_lan",
            None,
            &step_body(&[json!({"role": "user", "content": "go"})], true),
        )
        .await
    });
    assert_eq!(r.status, 200);
    running.signal("TERM");
    let f = running.wait(Duration::from_secs(20));
    assert_eq!(f.code, Some(0), "{}", f.both());
    let warnings = lines_with(&f.stderr, "plain HTTP");
    assert_eq!(warnings.len(), 1, "{}", f.both());
    assert!(warnings[0].contains("--tls-cert"), "{}", warnings[0]);
    assert!(
        f.stderr
            .contains("1 call of 1 student passed on, every one recorded"),
        "{}",
        f.both()
    );
    rt.block_on(twin.shutdown());
}
