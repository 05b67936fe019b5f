//! The harness checking itself as a user runs it: this very binary started
//! as a child against a chat server that is not vLLM, with `/metrics` in one
//! of the [`MetricsCase`]s, one bench trial selected, under a hard deadline.

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use codendum_testkit::servers::{has_requests, MetricsCase, Servers};

/// The bench trial the child runs (its workload: the quick bench levels of
/// classroom-64k).
const TRIAL: &str = "classroom-64k::bench-short-c1::errors";
const DEADLINE: Duration = Duration::from_secs(90);
const AFTER_SIGNAL: Duration = Duration::from_secs(12);

fn child(dir: &Path, servers: &Servers, case: MetricsCase) -> Command {
    let exe = std::env::current_exe().expect("the harness knows its path");
    let mut cmd = Command::new(exe);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("CODENDUM_") {
            cmd.env_remove(&name);
        }
    }
    cmd.current_dir(dir)
        .env(super::CHILD_ENV, "1")
        .env("CODENDUM_BASE_URL", servers.base_url())
        .env("CODENDUM_METRICS_URL", servers.metrics_url(case))
        .env("CODENDUM_ALLOW_BUSY", "1")
        .env("CODENDUM_PROFILE", "classroom-64k")
        .env("CODENDUM_CAPACITY_PROFILES", "classroom-64k")
        .env("CODENDUM_RESULTS_DIR", dir.join("results"))
        .args(["--exact", TRIAL, "--test-threads", "1"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join("stdout")).expect("stdout"))
        .stderr(std::fs::File::create(dir.join("stderr")).expect("stderr"));
    cmd
}

fn output(dir: &Path) -> String {
    let read = |n: &str| std::fs::read_to_string(dir.join(n)).unwrap_or_default();
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        read("stdout"),
        read("stderr")
    )
}

fn wait(child: &mut std::process::Child, limit: Duration) -> Result<ExitStatus, String> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the harness did not end within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn summary(dir: &Path) -> Result<serde_json::Value, String> {
    let root = dir.join("results");
    let folder = std::fs::read_dir(&root)
        .map_err(|e| format!("no results in {}: {e}", root.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("summary.json").is_file())
        .ok_or("no run folder with a summary.json")?;
    let text = std::fs::read_to_string(folder.join("summary.json")).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// The bench trial runs to its verdict and the harness exits by itself.
pub fn ends_by_itself(case: MetricsCase) -> Result<(), String> {
    let servers = Servers::start(Duration::ZERO);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut running = child(dir.path(), &servers, case)
        .spawn()
        .map_err(|e| e.to_string())?;
    let status =
        wait(&mut running, DEADLINE).map_err(|e| format!("{e}\n{}", output(dir.path())))?;
    let out = output(dir.path());
    if !status.success() {
        return Err(format!(
            "{}: the trial failed ({status})\n{out}",
            case.name()
        ));
    }
    let s = summary(dir.path())?;
    let peak = &s["levels"][0]["peak_running"];
    match (case, peak.is_null()) {
        (MetricsCase::Fine, true) => {
            Err(format!("no server figures although /metrics answers: {s}"))
        }
        (c, false) if c != MetricsCase::Fine => Err(format!("server figures from nowhere: {peak}")),
        _ => Ok(()),
    }
}

/// Ctrl-C during the bench workload: the harness ends within the grace,
/// the trial fails naming the interruption, and the folder is written.
pub fn ends_after_ctrl_c(case: MetricsCase) -> Result<(), String> {
    let servers = Servers::start(Duration::from_millis(400));
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut running = child(dir.path(), &servers, case)
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let results = dir.path().join("results");
    while !has_requests(&results) {
        if start.elapsed() > Duration::from_secs(90) {
            let _ = running.kill();
            return Err(format!(
                "no request finished within 90 s\n{}",
                output(dir.path())
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let signalled = Instant::now();
    let kill = Command::new("kill")
        .args(["-INT", &running.id().to_string()])
        .status()
        .map_err(|e| e.to_string())?;
    if !kill.success() {
        return Err("kill -INT failed".into());
    }
    let status = wait(&mut running, AFTER_SIGNAL + Duration::from_secs(5))?;
    let took = signalled.elapsed();
    let out = output(dir.path());
    if took > AFTER_SIGNAL {
        return Err(format!(
            "{}: took {took:?} after Ctrl-C\n{out}",
            case.name()
        ));
    }
    if status.success() || !out.contains("interrupted") {
        return Err(format!(
            "{}: the trial should fail as interrupted ({status})\n{out}",
            case.name()
        ));
    }
    let s = summary(dir.path())?;
    if s["interrupted"] != true {
        return Err(format!(
            "summary.json does not say interrupted: {}",
            s["interrupted"]
        ));
    }
    Ok(())
}
