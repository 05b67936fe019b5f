//! `codendum bench` as a workload of the run lifecycle ([`super::run`]):
//! its plan against the server (the calibration's cells chosen for it), the
//! 1 s sampler or Prometheus as the driver's server figures, the run, and
//! the router's figures folded into `summary.json`.

use super::fleet_bench::finish_bench;
use super::guard::TimelineFlag;
use super::run::Ran;
use super::sampling::RunMetrics;
use super::workload::{Ctx, Finished, RunIo, Started, Workload};
use crate::bench::{
    plan_text, run_bench, BenchConfig, BenchDeps, BenchOutcome, BenchPlan, Load, SpeedGuess,
};
use crate::settings::{RunSettings, Server};
use codendum_core::error::Error;
use codendum_core::profile::Profile;
use codendum_core::results::{FolderKind, RunFolder, Verdict};

/// Runs the benchmark `config` against `server`; an interrupted run still
/// writes its folder and returns [`Error::Interrupted`] naming it.
pub async fn run(
    server: &Server,
    settings: &RunSettings,
    config: &BenchConfig,
    io: RunIo<'_>,
) -> Result<BenchOutcome, Error> {
    super::run::run(server, settings, &Bench(config), io).await
}

/// Runs the benchmark as the settings ask: once, or `--repeat` times.
pub async fn run_as_asked(
    server: &Server,
    settings: &RunSettings,
    config: &BenchConfig,
    io: RunIo<'_>,
) -> Result<Ran<BenchOutcome>, Error> {
    super::run::run_as_asked(server, settings, &Bench(config), io).await
}

/// The bench workload.
struct Bench<'a>(&'a BenchConfig);

impl Finished for BenchOutcome {
    fn folder(&self) -> &std::path::Path {
        &self.folder
    }

    fn verdict(&self) -> Option<&Verdict> {
        self.summary.verdict.as_ref()
    }

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn table(&self) -> String {
        crate::bench::progress::render_table(&self.levels)
    }
}

impl Workload for Bench<'_> {
    type Prepared = BenchPlan;
    type Output = BenchOutcome;
    const TIMELINE: TimelineFlag = TimelineFlag::Report;
    const KIND: FolderKind = FolderKind::Bench;

    fn max_in_flight(&self) -> usize {
        let open_cap = self
            .0
            .load
            .open_loop()
            .and_then(|o| o.max_concurrency)
            .unwrap_or(0);
        self.0.top_concurrency().max(open_cap) as usize
    }

    fn plan_on_twin(&self) -> bool {
        matches!(self.0.load, Load::Calibration { .. })
    }

    fn seed(&self) -> u64 {
        self.0.seed
    }

    fn slo(&self) -> Option<codendum_core::results::slo::Slo> {
        self.0.slo
    }

    fn again(&self, plan: &BenchPlan) -> Option<BenchPlan> {
        Some(plan.clone())
    }

    fn run_estimate_s(&self, plan: &BenchPlan, ctx: &Ctx<'_>) -> Option<f64> {
        let speed = speed_for(self.0, ctx)?;
        match self.0.load {
            Load::Closed | Load::Calibration { .. } | Load::Cells(_) => {
                Some(crate::bench::estimate_duration(self.0, plan, &speed).as_secs_f64())
            }
            _ => None,
        }
    }

    async fn prepare(&self, ctx: &Ctx<'_>) -> Result<(BenchPlan, String), Error> {
        let config = self.0;
        let plan = BenchPlan::new(config, ctx.facts);
        for note in &plan.notes {
            ctx.events.note(format!("calibration: {note}"));
        }
        if let Some(w) = ctx
            .conn
            .profile
            .as_ref()
            .and_then(|p| region_warning(config, &plan, p))
        {
            ctx.events.warn(w);
        }
        let speed = speed_for(config, ctx);
        let text = plan_text(
            config,
            &plan,
            (&ctx.facts.label, &ctx.facts.model),
            speed.as_ref(),
        );
        Ok((plan, text))
    }

    async fn execute(
        &self,
        plan: BenchPlan,
        ctx: &Ctx<'_>,
        started: Started,
    ) -> Result<BenchOutcome, Error> {
        let conn = ctx.conn;
        let Started {
            folder,
            sampling,
            router,
            ..
        } = started;
        let path = folder.path().to_path_buf();
        let t0 = conn.clock.now_secs();
        let metrics = sampling.metrics(conn);
        let deps = BenchDeps {
            transport: conn.client.sender(),
            info: conn.client.info(),
            metrics: metrics.as_ref().map(RunMetrics::as_dyn),
            clock: conn.clock.clone(),
            stop: ctx.stop.clone(),
            events: ctx.events.clone(),
            measure_client_cpu: !conn.is_embedded(),
        };
        // Under --repeat, the run at index i (from 0) builds its prompts from --seed + i.
        let reseeded;
        let config = if ctx.run_index == 0 {
            self.0
        } else {
            reseeded = BenchConfig {
                seed: self.0.seed.wrapping_add(u64::from(ctx.run_index)),
                ..self.0.clone()
            };
            &reseeded
        };
        let outcome = run_bench(config, (&plan, ctx.facts), ctx.run, folder, deps).await;
        let read = sampling
            .finish(
                &conn.clock,
                &RunFolder::at(&path),
                (t0, conn.clock.now_secs()),
                ctx.events,
            )
            .await;
        let mut outcome = outcome?;
        finish_bench(&mut outcome, &conn.clock, &read, ctx.events)?;
        let server_errors: u64 = outcome
            .summary
            .levels
            .iter()
            .flat_map(|l| l.errors.iter())
            .filter(|(kind, _)| super::router_watch::is_server_error(kind))
            .map(|(_, g)| g.count)
            .sum();
        outcome.summary.router =
            super::router_watch::finish(router, server_errors, ctx.events).await;
        if outcome.summary.router.is_some() {
            RunFolder::at(&outcome.folder).write_bench_summary(&outcome.summary)?;
        }
        Ok(outcome)
    }
}

/// The plan's speed guess: a calibration run's length depends on the
/// server it measures, known for the twin, else estimated from its first
/// cells (`None`).
fn speed_for(config: &BenchConfig, ctx: &Ctx<'_>) -> Option<SpeedGuess> {
    match (&config.load, &ctx.conn.profile) {
        (Load::Calibration { .. }, Some(p)) => Some(speed_of(p)),
        (Load::Calibration { .. }, None) => None,
        _ => Some(SpeedGuess::default()),
    }
}

/// The fitted profile's warning when the run's contexts (prompt + output)
/// or its requests in flight (up to the seats) go beyond its calibration.
fn region_warning(config: &BenchConfig, plan: &BenchPlan, profile: &Profile) -> Option<String> {
    let context = plan
        .cells
        .iter()
        .map(|c| c.shape.input_tokens() + u64::from(config.output_tokens))
        .max();
    let batch = plan
        .cells
        .iter()
        .map(|c| c.concurrency.min(profile.server.max_num_seqs))
        .max();
    profile.region_warning(context, batch)
}

/// The plan's speed guess for the embedded twin: its own model.
fn speed_of(p: &Profile) -> SpeedGuess {
    let m = codendum_twin::model::PhysicalStepModel::new(&p.hardware);
    let seats = u64::from(p.server.max_num_seqs);
    SpeedGuess {
        single_stream_tok_per_s: m.decode_tokens_per_s(1, 2_000),
        peak_output_tok_per_s: m.decode_tokens_per_s(seats, 2_000),
        prefill_tok_per_s: 1.0 / (p.hardware.prefill.ms_per_token / 1e3).max(1e-6),
    }
}
