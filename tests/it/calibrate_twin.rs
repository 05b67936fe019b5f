//! `codendum calibrate` against servers the fitting code never saw: for each
//! of the three fixture profiles (`fixtures/calibration/`), the embedded twin
//! runs the calibration workload in virtual time, `calibrate` fits it, and
//! then the twin with the fitted profile and the twin with the true one run
//! levels and shapes that were not in the fit, and a 40-student class.
//!
//! The bars: output tok/s and TPOT within 5 %, TTFT P50 within 10 %
//! on the unseen levels; in the class, server output within 10 %, TTFT P50
//! and P95 within 15 %, coding requests completed within 15 %.
//! `cargo test --release --test it calibrate_twin -- --nocapture` prints the
//! table the README quotes.

use codendum_core::shape::Shape;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;

use codendum::app::calibrate::run as calibrate_run;
use codendum::bench::calibration::{calibration_plan, CalibrationInputs};
use codendum::bench::config::Cell;
use codendum::bench::{
    run_bench, BenchConfig, BenchDeps, BenchPlan, Load, ServerFacts, ServerInfo, ServerLoad,
    ServerMetrics,
};
use codendum::calibrate::{CalibrateOptions, FactOverrides, FitOptions, DEFAULT_BANDWIDTH_GB_S};
use codendum::plan::cell::run_cell;
use codendum::plan::config::{CellSpec, PlanConfig};
use codendum::settings::RunSettings;
use codendum_core::access::ClientSettings;
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_core::prom::TimelineSample;
use codendum_core::results::{FolderKind, LevelSummary, RunFolder};
use codendum_core::server_figures::ServerWindow;
use codendum_twin::inproc::InProcTransport;
use codendum_twin::TwinOptions;

pub(crate) const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/calibration");

/// The twin's `/v1/models` and `/tokenize` seen from the bench.
struct TwinInfo {
    profile: Profile,
}

impl ServerInfo for TwinInfo {
    fn model_id(&self) -> BoxFuture<'_, Result<String, String>> {
        let id = self.profile.server.served_model_name.clone();
        Box::pin(async move { Ok(id) })
    }
    fn tokenize<'a>(
        &'a self,
        _m: &'a str,
        p: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, String>> {
        let n = codendum_twin::tokenizer::count(p) as u64;
        Box::pin(async move { Ok(Some(n)) })
    }
    fn max_model_len<'a>(&'a self, _m: &'a str) -> BoxFuture<'a, Option<u64>> {
        let l = u64::from(self.profile.server.max_model_len);
        Box::pin(async move { Some(l) })
    }
    fn server_version(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { Some(codendum_twin::VLLM_VERSION.to_string()) })
    }
}

/// The engine's readings at each level's start and end, as a sampler
/// would write them.
struct TwinReadings {
    transport: Arc<InProcTransport>,
    pending: Mutex<Vec<TimelineSample>>,
}

impl ServerMetrics for TwinReadings {
    fn load_now(&self) -> BoxFuture<'_, Option<ServerLoad>> {
        Box::pin(async { Some(ServerLoad::default()) })
    }
    fn window(&self, _t0: f64, _t1: f64) -> ServerWindow {
        ServerWindow::default()
    }
    fn sample_now(&self) -> BoxFuture<'_, ()> {
        self.pending
            .lock()
            .expect("lock")
            .push(self.transport.sample());
        Box::pin(async {})
    }
    fn drain_timeline(&self) -> Vec<serde_json::Value> {
        let mut p = self.pending.lock().expect("lock");
        p.drain(..)
            .map(|s| serde_json::to_value(s).expect("json"))
            .collect()
    }
}

/// Runs `cells` against the twin of `profile` in virtual time; returns the
/// results folder and its levels.
pub(crate) fn bench_twin(
    profile: &Profile,
    cells: Vec<Cell>,
    output_tokens: u32,
    root: &Path,
) -> (PathBuf, Vec<LevelSummary>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let clock = Clock::scaled(1.0);
        let mut opts = TwinOptions::new(profile.clone());
        opts.clock = clock.clone();
        let transport = Arc::new(InProcTransport::start(opts));
        let info = TwinInfo {
            profile: profile.clone(),
        };
        let readings = TwinReadings {
            transport: Arc::clone(&transport),
            pending: Mutex::new(Vec::new()),
        };
        let mut run = RunSettings::new(ClientSettings::new(Duration::from_secs(3_600)));
        run.results_dir = root.to_path_buf();
        let config = BenchConfig {
            load: Load::Cells(cells),
            output_tokens,
            ..BenchConfig::default()
        };
        // The twin states its engine settings and profile, as a server
        // running the profile would.
        let facts = ServerFacts::read(&info, None, "embedded twin".into())
            .await
            .expect("facts")
            .with_twin_profile(profile);
        let plan = BenchPlan::new(&config, &facts);
        let folder = RunFolder::create(&run.results_dir, FolderKind::Bench, clock.utc_now())
            .expect("folder");
        let (_tx, stop) = tokio::sync::watch::channel(false);
        let deps = BenchDeps {
            transport: transport.as_ref(),
            info: &info,
            metrics: Some(&readings),
            clock,
            stop,
            events: codendum::events::Events::silent(),
            measure_client_cpu: false,
        };
        let outcome = run_bench(&config, (&plan, &facts), &run, folder, deps)
            .await
            .expect("bench runs");
        transport.stop();
        (outcome.folder, outcome.levels)
    })
}

fn fitted_profile(truth: &Profile, run: &Path, out: &Path) -> Profile {
    let options = CalibrateOptions {
        runs: vec![run.to_path_buf()],
        name: format!("fitted-{}", truth.name),
        overrides: FactOverrides::default(),
        fit: FitOptions {
            bootstrap_rounds: 50,
            seed: 7,
        },
        memory_bandwidth_gb_s: DEFAULT_BANDWIDTH_GB_S,
        targets_from: None,
    };
    let file = out.join(format!("fitted-{}.toml", truth.name));
    let (calibration, written) = calibrate_run(&options, Some(&file)).expect("calibrates");
    println!(
        "{}: true hardware {:?}\n{}",
        truth.name,
        truth.hardware,
        codendum::calibrate::write::summary_text(&calibration)
    );
    Profile::load(written.profile.to_str().expect("utf8")).expect("fitted profile loads")
}

/// Levels and shapes that were not in the calibration run.
fn unseen_cells(seats: u32) -> Vec<Cell> {
    let mid = (seats * 3 / 4).max(3);
    vec![
        Cell {
            shape: Shape::Sized(768),
            concurrency: 3,
            requests: 12,
        },
        Cell {
            shape: Shape::Sized(1_536),
            concurrency: mid,
            requests: u64::from(mid) * 2,
        },
        Cell {
            shape: Shape::Sized(6_000),
            concurrency: 1,
            requests: 4,
        },
        Cell {
            shape: Shape::Sized(12_000),
            concurrency: 2,
            requests: 4,
        },
    ]
}

/// A `bench --calibration` run of `truth`'s twin in virtual time (the
/// calibration plan for its seats and context, 128 output tokens), under
/// `root`; its folder.
pub(crate) fn calibration_run(truth: &Profile, root: &Path) -> PathBuf {
    let plan = calibration_plan(&CalibrationInputs {
        ladder: Vec::new(),
        seats: Some(truth.server.max_num_seqs),
        max_model_len: Some(u64::from(truth.server.max_model_len)),
        output_tokens: 128,
    });
    bench_twin(truth, plan.cells, 128, root).0
}

fn ratio(fitted: Option<f64>, truth: Option<f64>) -> f64 {
    fitted.expect("fitted figure") / truth.expect("true figure") - 1.0
}

fn check_profile(file: &str) -> Vec<String> {
    let truth = Profile::load(&format!("{FIXTURES}/{file}")).expect("fixture loads");
    let dir = tempfile::tempdir().expect("tempdir");
    let run = calibration_run(&truth, dir.path());
    let fitted = fitted_profile(&truth, &run, dir.path());
    let region = fitted
        .calibration
        .expect("a fitted profile records its region");
    assert_eq!(region.max_batch, truth.server.max_num_seqs, "{region:?}");
    assert!(region.max_context_tokens > 30_000, "{region:?}");
    let cells = unseen_cells(truth.server.max_num_seqs);
    let (_, want) = bench_twin(&truth, cells.clone(), 200, dir.path());
    let (_, got) = bench_twin(&fitted, cells, 200, dir.path());
    let mut lines = Vec::new();
    for (w, g) in want.iter().zip(&got) {
        let out = ratio(Some(g.output_tok_per_s), Some(w.output_tok_per_s));
        let tpot = ratio(g.tpot_mean_s, w.tpot_mean_s);
        let ttft = ratio(g.ttft_p50_s, w.ttft_p50_s);
        lines.push(format!(
            "{file} {}@{}: output {:+.1} %, TPOT {:+.1} %, TTFT P50 {:+.1} %",
            w.shape,
            w.concurrency,
            out * 100.0,
            tpot * 100.0,
            ttft * 100.0
        ));
        assert!(out.abs() <= 0.05, "{}", lines.last().expect("line"));
        assert!(tpot.abs() <= 0.05, "{}", lines.last().expect("line"));
        assert!(ttft.abs() <= 0.10, "{}", lines.last().expect("line"));
    }
    lines.push(class_check(file, &truth, &fitted));
    lines
}

fn class_check(file: &str, truth: &Profile, fitted: &Profile) -> String {
    let mut config = PlanConfig::new();
    config.duration = Duration::from_secs(900);
    config.seed = 3;
    let cell = |p: &Profile| {
        let spec = CellSpec {
            profile: p.name.clone(),
            max_num_seqs: p.server.max_num_seqs,
            overridden: false,
            users: 40,
            seed: None,
        };
        run_cell(&spec, p, &config).expect("class runs")
    };
    let (w, g) = (cell(truth), cell(fitted));
    // The class stays inside what the calibration measured, or says so.
    let outside = fitted.region_warning(
        g.summary.prompt_tokens_max,
        g.peak_running.map(|v| v.round() as u32),
    );
    if let Some(w) = &outside {
        assert!(w.contains("calibrated up to"), "{w}");
    }
    let out = ratio(g.server_output_tok_per_s, w.server_output_tok_per_s);
    let p50 = ratio(g.ttft_p50_s, w.ttft_p50_s);
    let p95 = ratio(g.ttft_p95_s, w.ttft_p95_s);
    let done = g.completed as f64 / (w.completed as f64).max(1.0) - 1.0;
    let line = format!(
        "{file} 40 students: server output {:+.1} %, TTFT P50 {:+.1} %, P95 {:+.1} %, completed {:+.1} % ({} vs {})",
        out * 100.0, p50 * 100.0, p95 * 100.0, done * 100.0, g.completed, w.completed
    );
    assert!(out.abs() <= 0.10, "{line}");
    assert!(p50.abs() <= 0.15 && p95.abs() <= 0.15, "{line}");
    assert!(done.abs() <= 0.15, "{line}");
    line
}

#[test]
fn calibrate_twin_dense_fast_gpu() {
    for l in check_profile("dense-fast.toml") {
        println!("{l}");
    }
}

#[test]
fn calibrate_twin_moe_slow_gpu() {
    for l in check_profile("moe-slow.toml") {
        println!("{l}");
    }
}

#[test]
fn calibrate_twin_expensive_prefill() {
    for l in check_profile("prefill-heavy.toml") {
        println!("{l}");
    }
}

#[test]
fn calibrate_twin_kv_heavy_without_gqa() {
    for l in check_profile("kv-heavy-mha.toml") {
        println!("{l}");
    }
}

#[test]
fn calibrate_twin_tiny_kv() {
    for l in check_profile("tiny-kv.toml") {
        println!("{l}");
    }
}

#[test]
fn calibrate_twin_moe_many_small_experts() {
    for l in check_profile("moe-many-experts.toml") {
        println!("{l}");
    }
}

#[test]
fn calibrate_twin_compute_bound_cpu() {
    for l in check_profile("cpu-compute.toml") {
        println!("{l}");
    }
}

#[test]
fn calibrate_twin_slow_prefill_without_prefix_cache() {
    for l in check_profile("slow-prefill.toml") {
        println!("{l}");
    }
}

/// The calibration workload on the GB10 twin (24 seats, 64K contexts): the
/// server time its cells take, in the twin's virtual time.
#[test]
fn calibration_run_of_a_gb10_takes_under_ten_minutes() {
    let profile = Profile::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/profiles/classroom-64k-high-concurrency.toml"
    ))
    .expect("profile loads");
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = calibration_plan(&CalibrationInputs {
        ladder: Vec::new(),
        seats: Some(profile.server.max_num_seqs),
        max_model_len: Some(u64::from(profile.server.max_model_len)),
        output_tokens: 128,
    });
    let cells = plan.cells.len();
    let (_, levels) = bench_twin(&profile, plan.cells, 128, dir.path());
    assert_eq!(levels.len(), cells);
    let server_s: f64 = levels.iter().map(|l| l.wall_time_s).sum();
    println!("GB10 calibration run: {cells} cells, {server_s:.0} s of server time");
    assert!(server_s < 600.0, "{server_s:.0} s");
    let longest = levels
        .iter()
        .map(|l| l.mean_input_tokens.unwrap_or(0.0))
        .fold(0.0, f64::max);
    assert!(longest > 30_000.0, "contexts reach 32K: {longest}");
}
