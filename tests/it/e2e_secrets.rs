//! Secrets: API keys given by flag, environment, `.env` or keys
//! file are sent to the server but never printed or written. Every command
//! runs with keys (bench, classroom, metrics, report, compare, serve), some
//! of them failing, and then every byte they left behind — results
//! folders, reports, comparisons, stdout and stderr — is searched for
//! every key.

use crate::cli_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cli_support::{codendum, only_folder, run_in, runtime, write_file, Finished, Running};
use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_twin::{start, TwinOptions};

const FLAG_KEY: &str = "sk-test-flag-0001";
const ENV_KEY: &str = "sk-test-env-0002";
const DOTENV_KEY: &str = "sk-test-dotenv-3";
const STUDENT_KEYS: [&str; 2] = ["sk-test-student-01", "sk-test-student-02"];
const SERVE_KEY: &str = "sk-test-serve-0004";
const WRONG_KEY: &str = "sk-test-wrong-0005";

fn all_keys() -> Vec<&'static str> {
    let mut keys = vec![FLAG_KEY, ENV_KEY, DOTENV_KEY, SERVE_KEY, WRONG_KEY];
    keys.extend(STUDENT_KEYS);
    keys
}

const TINY_BENCH: &[&str] = &[
    "bench",
    "--concurrency",
    "1,2",
    "--shapes",
    "short",
    "--requests-per-level",
    "2",
    "--output-tokens",
    "4",
    "--yes",
];

const TINY_CLASS: &[&str] = &[
    "classroom",
    "--users",
    "2",
    "--duration",
    "60",
    "--ramp-up",
    "5",
    "--pause-min",
    "1",
    "--pause-max",
    "2",
    "--follow-ups",
    "0",
    "--time-scale",
    "50",
    "--yes",
];

/// Every file under `dir`, except the inputs that hold keys on purpose.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("list").flatten() {
        let p = entry.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            if name != ".env" && name != "keys.csv" && name != "dup.csv" {
                out.push(p);
            }
        }
    }
}

fn assert_ok(f: &Finished, what: &str) {
    assert_eq!(f.code, Some(0), "{what}:\n{}", f.both());
}

#[test]
fn no_command_ever_shows_a_key() {
    let rt = runtime();
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = Clock::scaled(20.0);
    opts.api_keys = [FLAG_KEY, ENV_KEY, DOTENV_KEY]
        .into_iter()
        .chain(STUDENT_KEYS)
        .map(Secret::new)
        .collect();
    let twin = rt
        .block_on(start(opts, "127.0.0.1:0".parse().expect("addr")))
        .expect("twin");
    let base = twin.base_url();

    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path();
    let logs = cwd.join("logs");
    std::fs::create_dir(&logs).expect("logs");
    write_file(
        cwd,
        "keys.csv",
        &format!(
            "user,key\nalice,{}\nbob,{}\n",
            STUDENT_KEYS[0], STUDENT_KEYS[1]
        ),
    );
    write_file(
        cwd,
        "dup.csv",
        &format!("{}\n{}\n", STUDENT_KEYS[0], STUDENT_KEYS[0]),
    );
    let dotenv_dir = cwd.join("with-dotenv");
    std::fs::create_dir(&dotenv_dir).expect("mkdir");
    write_file(
        &dotenv_dir,
        ".env",
        &format!("CODENDUM_API_KEY={DOTENV_KEY}\n"),
    );

    // bench: key by flag, by environment, by .env (live twin), and on the
    // embedded twin.
    let mut cmd = codendum(cwd);
    cmd.args(TINY_BENCH)
        .args(["--base-url", &base, "--api-key", FLAG_KEY])
        .args(["--results-dir", "bench-flag"]);
    assert_ok(&run_in(cmd, &logs, "bench-flag"), "bench, key by flag");
    let mut cmd = codendum(cwd);
    cmd.args(TINY_BENCH)
        .args(["--base-url", &base, "--results-dir", "bench-env"])
        .env("CODENDUM_API_KEY", ENV_KEY);
    assert_ok(&run_in(cmd, &logs, "bench-env"), "bench, key by env");
    let mut cmd = codendum(&dotenv_dir);
    cmd.args(TINY_BENCH)
        .args(["--base-url", &base, "--results-dir", "bench-dotenv"]);
    assert_ok(&run_in(cmd, &logs, "bench-dotenv"), "bench, key by .env");
    let mut cmd = codendum(cwd);
    cmd.args(TINY_BENCH)
        .args(["--time-scale", "50", "--api-key", FLAG_KEY])
        .args(["--results-dir", "bench-embedded"]);
    assert_ok(&run_in(cmd, &logs, "bench-embedded"), "embedded bench");

    // Error paths: a key the server refuses; a bad URL; a bad keys file.
    let mut cmd = codendum(cwd);
    cmd.args(TINY_BENCH)
        .args(["--base-url", &base, "--api-key", WRONG_KEY])
        .args(["--results-dir", "bench-wrong"]);
    let f = run_in(cmd, &logs, "bench-wrong");
    assert_ne!(f.code, Some(0), "a refused key fails:\n{}", f.both());
    assert!(
        f.stderr.contains("401") || f.stderr.contains("Unauthorized"),
        "the server refused the key: {}",
        f.stderr
    );
    let mut cmd = codendum(cwd);
    cmd.args(TINY_BENCH).args([
        "--base-url",
        &format!("htps://user:{WRONG_KEY}@127.0.0.1:9/v1"),
        "--api-key",
        FLAG_KEY,
    ]);
    assert_eq!(run_in(cmd, &logs, "bench-bad-url").code, Some(2));
    let mut cmd = codendum(cwd);
    cmd.args(TINY_CLASS)
        .args(["--api-keys-file", "dup.csv", "--results-dir", "class-dup"]);
    assert_eq!(run_in(cmd, &logs, "class-dup").code, Some(2));

    // classroom: keys file, and a single key from the environment.
    let mut cmd = codendum(cwd);
    cmd.args(TINY_CLASS)
        .args(["--api-keys-file", "keys.csv", "--results-dir", "class-file"]);
    assert_ok(&run_in(cmd, &logs, "class-file"), "classroom, keys file");
    let mut cmd = codendum(cwd);
    cmd.args(TINY_CLASS)
        .args(["--results-dir", "class-env"])
        .env("CODENDUM_API_KEY", ENV_KEY);
    assert_ok(&run_in(cmd, &logs, "class-env"), "classroom, key by env");

    // metrics, with a key in the environment it has no use for.
    let mut cmd = codendum(cwd);
    cmd.args([
        "metrics",
        "--base-url",
        &base,
        "--count",
        "2",
        "--watch",
        "0.2",
    ])
    .env("CODENDUM_API_KEY", ENV_KEY);
    assert_ok(&run_in(cmd, &logs, "metrics"), "metrics");
    let mut cmd = codendum(cwd);
    cmd.args(["metrics", "--base-url", &base, "--count", "1", "--json"])
        .env("CODENDUM_API_KEY", ENV_KEY);
    assert_ok(&run_in(cmd, &logs, "metrics-json"), "metrics --json");

    // report and compare over the folders written above.
    let flag_run = only_folder(&cwd.join("bench-flag"));
    let env_run = only_folder(&cwd.join("bench-env"));
    let mut cmd = codendum(cwd);
    cmd.arg("report")
        .arg(&flag_run)
        .env("CODENDUM_API_KEY", ENV_KEY);
    assert_ok(&run_in(cmd, &logs, "report"), "report");
    let mut cmd = codendum(cwd);
    cmd.arg("compare")
        .arg(&flag_run)
        .arg(&env_run)
        .args(["--out", "compared"])
        .env("CODENDUM_API_KEY", ENV_KEY);
    assert_ok(&run_in(cmd, &logs, "compare"), "compare");
    assert!(cwd.join("compared/compare.md").is_file());
    let class_runs = [
        only_folder(&cwd.join("class-file")),
        only_folder(&cwd.join("class-env")),
    ];
    let mut cmd = codendum(cwd);
    cmd.arg("compare")
        .args(&class_runs)
        .args(["--force", "--out", "compared-class"]);
    assert_ok(&run_in(cmd, &logs, "compare-class"), "compare classroom");

    serve_briefly(&rt, cwd, &logs);
    rt.block_on(twin.shutdown());

    let mut files = Vec::new();
    files_under(cwd, &mut files);
    assert!(files.len() > 40, "the runs wrote their files: {files:?}");
    for file in &files {
        let bytes = std::fs::read(file).expect("read");
        let text = String::from_utf8_lossy(&bytes);
        for key in all_keys() {
            assert!(
                !text.contains(key),
                "{} contains the key {key}",
                file.display()
            );
        }
    }
}

/// `codendum serve` with a key and a keys file: answers a right and a wrong
/// key, then stops on Ctrl-C, without ever echoing a key.
fn serve_briefly(rt: &tokio::runtime::Runtime, cwd: &Path, logs: &Path) {
    let mut cmd = codendum(cwd);
    cmd.args(["serve", "--port", "0", "--time-scale", "50"])
        .args(["--api-key", SERVE_KEY, "--api-keys-file", "keys.csv"]);
    let mut running = Running::spawn(cmd, logs, "serve");
    let stderr = logs.join("serve.stderr");
    let start = Instant::now();
    let base = loop {
        let text = std::fs::read_to_string(&stderr).unwrap_or_default();
        if let Some(rest) = text.split("listening on ").nth(1) {
            break rest.split_whitespace().next().expect("url").to_string();
        }
        assert!(!running.has_exited(), "serve ended: {text}");
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "serve did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let client = reqwest::Client::new();
    for (key, status) in [(SERVE_KEY, 200), (STUDENT_KEYS[1], 200), (WRONG_KEY, 401)] {
        let resp = rt
            .block_on(client.get(format!("{base}/models")).bearer_auth(key).send())
            .expect("serve answers");
        assert_eq!(resp.status().as_u16(), status, "{key}");
        let body = rt.block_on(resp.text()).expect("body");
        write_file(
            logs,
            &format!("serve-answer-{status}-{}.txt", &key[8..]),
            &body,
        );
    }
    running.signal("INT");
    let f = running.wait(Duration::from_secs(20));
    assert_eq!(f.code, Some(0), "serve stops on Ctrl-C:\n{}", f.both());
}
