//! Snapshots of what `codendum calibrate` prints and writes: the fit summary
//! on stderr, the profile TOML and its hardware TOML, and the backtest table
//! of `calibrate --check` with the written profile. Two inputs: the recorded
//! run of a real vLLM 0.32 (`fixtures/vllm-0.32/calibration-run/`, fixed
//! data) and a run of the twin of `moe-slow` in virtual time (fixed seeds).
//! Both fits are deterministic (the bootstrap has a seed), so a change of the
//! printed format or of any fitted value shows here. Redacted: the
//! temporary folder, the repository's path and the run folder's UTC name.

use std::path::Path;

use codendum::bench::config::Cell;
use codendum_core::profile::Profile;
use codendum_core::shape::Shape;

use super::calibrate_inputs::{calibrate, stderr};
use super::calibrate_twin::{bench_twin, FIXTURES};

/// The snapshot settings of `snapshots/calibrate/`, with `tmp` and the
/// repository named by placeholders.
fn settings(tmp: &Path) -> insta::Settings {
    let tmp = tmp.to_str().expect("utf8");
    // The longer path first: a temporary folder may sit inside the repository.
    let mut s = super::snapshot_documents::settings_naming(
        "calibrate",
        &[(tmp, "[TMP]"), (env!("CARGO_MANIFEST_DIR"), "[REPO]")],
    );
    // A bench run's folder is named by its UTC start.
    s.add_filter(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z", "[RUN]");
    s
}

/// What one calibration printed and wrote, and the backtest of its profile
/// on the same runs.
struct Outputs {
    fit: String,
    profile: String,
    hardware: String,
    check: String,
    check_code: Option<i32>,
}

/// `calibrate RUN --out DIR/NAME.toml EXTRA…`, then `calibrate --check` of
/// the written profile against `RUN`.
fn fit_and_check(run: &Path, dir: &Path, name: &str, extra: &[&str]) -> Outputs {
    let out = dir.join(format!("{name}.toml"));
    let (run_s, out_s) = (run.to_str().expect("utf8"), out.to_str().expect("utf8"));
    let o = calibrate(&[&[run_s, "--out", out_s], extra].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let read = |p: &Path| std::fs::read_to_string(p).expect("written file");
    let c = calibrate(&["--check", out_s, run_s]);
    Outputs {
        fit: stderr(&o),
        profile: read(&out),
        hardware: read(&dir.join("hardware").join(format!("{name}.toml"))),
        check: stderr(&c),
        check_code: c.status.code(),
    }
}

fn assert_snapshots(prefix: &str, tmp: &Path, o: &Outputs) {
    settings(tmp).bind(|| {
        insta::assert_snapshot!(format!("{prefix}_fit_stderr"), o.fit);
        insta::assert_snapshot!(format!("{prefix}_profile_toml"), o.profile);
        insta::assert_snapshot!(format!("{prefix}_hardware_toml"), o.hardware);
        insta::assert_snapshot!(format!("{prefix}_check_stderr"), o.check);
    });
}

/// The real CPU server: a dense fit whose backtest on its own run misses
/// (docs/twin-calibration.md says why), so the table marks figures with
/// `!` and the exit is 1.
#[test]
fn calibrate_outputs_of_a_real_vllm_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vllm-0.32/calibration-run");
    let o = fit_and_check(
        &run,
        dir.path(),
        "cpu",
        &["--max-num-seqs", "16", "--max-num-batched-tokens", "4096"],
    );
    assert_eq!(o.check_code, Some(1), "{}", o.check);
    assert_snapshots("real_vllm", dir.path(), &o);
}

/// The twin of an MoE server on a ladder of batch sizes and prompt lengths:
/// the fit keeps the expert curve, says the source was the twin, and its
/// profile replays the run within the default 10 % (exit 0).
#[test]
fn calibrate_outputs_of_a_twin_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let truth = Profile::load(&format!("{FIXTURES}/moe-slow.toml")).expect("fixture loads");
    let ladder = [1u32, 2, 4, 8, 16].map(|n| Cell {
        shape: Shape::Sized(256),
        concurrency: n,
        requests: u64::from(2 * n.max(4)),
    });
    let prompts = [1_024, 4_096, 8_192].map(|t| Cell {
        shape: Shape::Sized(t),
        concurrency: 1,
        requests: 3,
    });
    let cells = ladder.into_iter().chain(prompts).collect();
    let run = bench_twin(&truth, cells, 64, &dir.path().join("runs")).0;
    let o = fit_and_check(&run, dir.path(), "moe", &["--bootstrap", "50"]);
    assert_eq!(o.check_code, Some(0), "{}", o.check);
    assert_snapshots("twin_moe_slow", dir.path(), &o);
}
