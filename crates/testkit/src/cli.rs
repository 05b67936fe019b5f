//! Helpers for the tests that run the `codendum` binary: a clean
//! environment, output captured to files, a hard time limit, a twin or a
//! wiremock server on loopback, and checks shared by several test files.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_twin::{start, TwinHandle, TwinOptions};

/// The longest any single command may run before the test fails.
pub const LIMIT: Duration = Duration::from_secs(60);

/// The `codendum` binary that cargo built for the running test binary:
/// `target/<profile>/codendum`, beside the `deps/` folder the test lives in.
pub fn codendum_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test binary in target/<profile>/deps");
    profile_dir.join(format!("codendum{}", std::env::consts::EXE_SUFFIX))
}

/// A `codendum` command run in `cwd` with no `CODENDUM_*` variables
/// inherited (so neither the developer's environment nor a `.env` outside
/// `cwd` leaks in), stdin closed.
pub fn codendum(cwd: &Path) -> Command {
    let mut cmd = Command::new(codendum_bin());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("CODENDUM_") {
            cmd.env_remove(&name);
        }
    }
    cmd.current_dir(cwd).stdin(Stdio::null());
    cmd
}

/// What a finished command left behind.
#[derive(Debug)]
pub struct Finished {
    /// Exit code; `None` when a signal ended the process.
    pub code: Option<i32>,
    /// Everything written to stdout.
    pub stdout: String,
    /// Everything written to stderr.
    pub stderr: String,
}

impl Finished {
    /// Both streams, for failure messages.
    pub fn both(&self) -> String {
        format!("--- stdout\n{}\n--- stderr\n{}", self.stdout, self.stderr)
    }
}

/// A running command whose stdout and stderr go to files (no pipe can fill
/// up and block it).
pub struct Running {
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

impl Running {
    /// Starts `cmd`, sending its output to `<logs>/<name>.stdout|stderr`.
    pub fn spawn(mut cmd: Command, logs: &Path, name: &str) -> Running {
        let out = logs.join(format!("{name}.stdout"));
        let err = logs.join(format!("{name}.stderr"));
        cmd.stdout(File::create(&out).expect("stdout file"))
            .stderr(File::create(&err).expect("stderr file"));
        let child = cmd.spawn().expect("codendum starts");
        Running { child, out, err }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has ended.
    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Sends a signal by name (`INT`, `TERM`, `KILL`) with the `kill` program.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{name} {} failed", self.pid());
    }

    /// Waits for the end (failing the test after `limit`, having killed it).
    pub fn wait(mut self, limit: Duration) -> Finished {
        let status = wait_with_limit(&mut self.child, limit);
        Finished {
            code: status.code(),
            stdout: std::fs::read_to_string(&self.out).unwrap_or_default(),
            stderr: std::fs::read_to_string(&self.err).unwrap_or_default(),
        }
    }
}

impl Drop for Running {
    /// A process a test left running (it failed, or it stops a server by
    /// dropping it) is killed, never left behind the test binary.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn wait_with_limit(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("codendum did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `cmd` to its end (within [`LIMIT`]), output kept in `logs`.
pub fn run_in(cmd: Command, logs: &Path, name: &str) -> Finished {
    Running::spawn(cmd, logs, name).wait(LIMIT)
}

/// Runs `cmd` to its end with a throw-away log folder.
pub fn run(cmd: Command) -> Finished {
    let logs = tempfile::tempdir().expect("tempdir");
    run_in(cmd, logs.path(), "run")
}

/// A tokio runtime for servers that live while the test's blocking
/// commands run.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Starts a twin of the given profile on 127.0.0.1:0 at `scale`× real time.
pub fn start_twin(rt: &tokio::runtime::Runtime, profile: &str, scale: f64) -> TwinHandle {
    let mut opts = TwinOptions::new(Profile::load(profile).expect("profile"));
    opts.clock = Clock::scaled(scale);
    opts.seed = 3;
    rt.block_on(start(opts, "127.0.0.1:0".parse().expect("addr")))
        .expect("twin starts")
}

/// The only entry of `dir` (a results folder under a results root).
pub fn only_folder(dir: &Path) -> PathBuf {
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(
        entries.len(),
        1,
        "one run folder in {}: {entries:?}",
        dir.display()
    );
    entries[0].clone()
}

/// Whether `dir` holds no file at any depth.
pub fn holds_no_file(dir: &Path) -> bool {
    match std::fs::read_dir(dir) {
        Err(_) => true,
        Ok(entries) => entries.flatten().all(|e| {
            let p = e.path();
            p.is_dir() && holds_no_file(&p)
        }),
    }
}

/// Reads a JSON file.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Every line of a JSON-lines file, each of which must parse; a trailing
/// line without its newline is dropped when `allow_torn_tail` (a killed
/// writer), otherwise it must parse too.
pub fn read_jsonl(path: &Path, allow_torn_tail: bool) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let complete = text.ends_with('\n') || text.is_empty();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let last = i + 1 == lines.len();
        match serde_json::from_str(line) {
            Ok(v) => out.push(v),
            Err(_) if last && !complete && allow_torn_tail => {}
            Err(e) => panic!("{} line {}: not JSON ({e}): {line}", path.display(), i + 1),
        }
    }
    out
}

/// numpy's default percentile: linear interpolation between closest ranks.
pub fn numpy_percentile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let h = (v.len() - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

/// A one-line error: exactly one non-empty line on stderr, starting with
/// `codendum:`, no panic or backtrace, and naming `culprit`.
pub fn assert_one_line_error(f: &Finished, culprit: &str) {
    let lines: Vec<&str> = f.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        !f.stderr.contains("panicked") && !f.stderr.contains("stack backtrace"),
        "a panic:\n{}",
        f.both()
    );
    assert_eq!(lines.len(), 1, "one line on stderr:\n{}", f.both());
    assert!(
        lines[0].starts_with("codendum: ") || lines[0].starts_with("error: "),
        "an error line: {}",
        lines[0]
    );
    assert!(
        lines[0].contains(culprit),
        "the error names {culprit:?}: {}",
        lines[0]
    );
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write file");
    path
}
