//! Workloads on the embedded twin in virtual time: a current-thread tokio
//! runtime whose clock is paused, so every wait (engine steps, the
//! students' pauses) passes at once and a 15-minute class takes about a
//! second. Each call runs on a thread of its own, so it never nests in the
//! caller's runtime.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::bench::{run_on_twin, BenchConfig, TwinFacts};
use crate::classroom::{run_classroom, ClassroomConfig, LiveStatus, RecordSink};
use crate::settings::RunSettings;
use codendum_core::access::ClientSettings;
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::profile::Profile;
use codendum_core::prom::TimelineSample;
use codendum_core::results::classroom_records::{CallRecord, TaskRecord};
use codendum_core::results::classroom_summary::ClassroomSummary;
use codendum_core::results::LevelSummary;
use codendum_twin::inproc::{InProcTransport, StatsSampler};
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

/// The twin in this process as a run's server in virtual time: requests go
/// straight to its engine, its facts are the profile's, its `/metrics` page
/// is written when asked. A [`crate::settings::Server::Virtual`] connects
/// to one.
#[derive(Debug)]
pub struct VirtualTwin {
    transport: Arc<InProcTransport>,
    facts: TwinFacts,
}

impl VirtualTwin {
    /// Starts the twin `opts` describes on the current (paused) runtime;
    /// a request longer than `timeout` (simulated) fails as an HTTP
    /// client's would.
    pub fn start(opts: TwinOptions, timeout: Duration) -> VirtualTwin {
        let facts = TwinFacts {
            model: opts.profile.server.served_model_name.clone(),
            max_model_len: Some(u64::from(opts.profile.server.max_model_len)),
            tokenize: true,
        };
        let transport = InProcTransport::start(opts).with_timeout(Some(timeout));
        VirtualTwin {
            transport: Arc::new(transport),
            facts,
        }
    }

    /// Writes the twin's `/metrics` page when called.
    pub fn page(&self) -> Arc<dyn Fn() -> String + Send + Sync> {
        let state = Arc::clone(self.transport.state());
        Arc::new(move || state.metrics_page())
    }

    /// Stops its engine (requests still in flight fail).
    pub fn stop(&self) {
        self.transport.stop();
    }
}

impl codendum_core::openai::Transport for VirtualTwin {
    fn call(
        &self,
        request: codendum_core::openai::CallRequest,
    ) -> futures::future::BoxFuture<'_, codendum_core::openai::CallOutcome> {
        self.transport.call(request)
    }
}

impl crate::bench::ServerInfo for VirtualTwin {
    fn model_id(&self) -> futures::future::BoxFuture<'_, Result<String, String>> {
        self.facts.model_id()
    }

    fn tokenize<'a>(
        &'a self,
        model: &'a str,
        prompt: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Option<u64>, String>> {
        self.facts.tokenize(model, prompt)
    }

    fn tokenize_as_sent<'a>(
        &'a self,
        endpoint: codendum_core::openai::Endpoint,
        model: &'a str,
        prompt: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Option<u64>, String>> {
        // As the twin's `/tokenize` counts a chat prompt: one user message
        // with the chat template applied.
        match endpoint {
            codendum_core::openai::Endpoint::Chat => {
                let message = serde_json::json!({"role": "user", "content": prompt});
                let text = codendum_twin::tokenizer::render_chat(&[message], &[]);
                let n = codendum_twin::tokenizer::count(&text) as u64;
                Box::pin(async move { Ok(Some(n)) })
            }
            codendum_core::openai::Endpoint::Completions => self.facts.tokenize(model, prompt),
        }
    }

    fn max_model_len<'a>(&'a self, model: &'a str) -> futures::future::BoxFuture<'a, Option<u64>> {
        self.facts.max_model_len(model)
    }

    fn server_version(&self) -> futures::future::BoxFuture<'_, Option<String>> {
        Box::pin(async { Some(codendum_twin::VLLM_VERSION.to_string()) })
    }
}

/// How often a class's engine is sampled, simulated seconds (as the live
/// sampler reads `/metrics`).
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// Keeps no record: a simulated class's summary is all its callers want.
pub struct NoRecords;

impl RecordSink for NoRecords {
    fn request(&self, _record: &CallRecord) -> std::io::Result<()> {
        Ok(())
    }
    fn task(&self, _record: &TaskRecord) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `work` on a paused current-thread runtime on a thread of its own.
pub fn on_paused_runtime<T: Send>(
    work: impl std::future::Future<Output = Result<T, Error>> + Send,
) -> Result<T, Error> {
    on_paused_runtime_with(|| work)
}

/// Runs the future `make` builds on a paused current-thread runtime on a
/// thread of its own (the future is built there, so it need not be `Send`).
pub fn on_paused_runtime_with<T: Send, F: std::future::Future<Output = Result<T, Error>>>(
    make: impl FnOnce() -> F + Send,
) -> Result<T, Error> {
    std::thread::scope(|s| {
        s.spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()
                .map_err(|e| Error::io("cannot start a simulation runtime", e))?
                .block_on(make())
        })
        .join()
        .unwrap_or_else(|_| Err(Error::Failed("the simulation stopped".into())))
    })
}

/// A bench of `config` (its cells, output tokens, endpoint, seed) against
/// the twin of `profile` in virtual time; its results folder goes under
/// `scratch`. The levels in run order.
pub fn bench_on_twin(
    profile: &Profile,
    config: BenchConfig,
    scratch: &Path,
) -> Result<Vec<LevelSummary>, Error> {
    on_paused_runtime(async move {
        let clock = Clock::scaled(1.0);
        let mut opts = TwinOptions::new(profile.clone());
        opts.clock = clock.clone();
        let transport = Arc::new(InProcTransport::start(opts));
        let mut client = ClientSettings::new(Duration::from_secs(3_600));
        client.model = Some(profile.server.served_model_name.clone());
        let mut run = RunSettings::new(client);
        run.results_dir = scratch.to_path_buf();
        run.yes = true;
        let info = TwinFacts {
            model: profile.server.served_model_name.clone(),
            max_model_len: Some(u64::from(profile.server.max_model_len)),
            tokenize: true,
        };
        Ok(run_on_twin((&config, &run), &transport, &info, clock)
            .await?
            .levels)
    })
}

/// A class on the twin, in virtual time: its summary and the engine's
/// timeline (clock seconds), and the clock at the class's start.
#[derive(Debug, Clone)]
pub struct SimulatedClass {
    /// The class's figures, server figures not filled in.
    pub summary: ClassroomSummary,
    /// The engine sampled every [`SAMPLE_INTERVAL`].
    pub timeline: Vec<TimelineSample>,
    /// Clock seconds at the class's start.
    pub origin: f64,
}

/// Runs `classroom` against the twin `opts` describes (one server; the
/// caller sets its clock to `clock`), on the current runtime: to be awaited
/// inside [`on_paused_runtime`].
pub async fn class_against(
    classroom: &ClassroomConfig,
    opts: TwinOptions,
    clock: Clock,
) -> Result<SimulatedClass, Error> {
    let transport = Arc::new(InProcTransport::start(opts));
    let sampler = StatsSampler::spawn(Arc::clone(&transport), SAMPLE_INTERVAL);
    let origin = clock.now_secs();
    let status = Arc::new(LiveStatus::new(clock.clone()));
    let run = run_classroom(
        classroom,
        transport.clone(),
        clock,
        Arc::new(NoRecords),
        status,
    )
    .await;
    let timeline = sampler.finish();
    transport.stop();
    Ok(SimulatedClass {
        summary: run?.summary,
        timeline,
        origin,
    })
}

/// A class of `classroom` (model and context limit from `profile`) against
/// the twin of `profile` with the agent persona of `seed` drawing from the
/// classroom's class, in virtual time.
pub fn class_on_twin(
    profile: &Profile,
    classroom: &ClassroomConfig,
    seed: u64,
) -> Result<SimulatedClass, Error> {
    on_paused_runtime(async move {
        let clock = Clock::scaled(1.0);
        let mut classroom = classroom.clone();
        classroom.model = profile.server.served_model_name.clone();
        classroom.context_limit = Some(u64::from(profile.server.max_model_len));
        classroom.seed = seed;
        let mut opts = TwinOptions::new(profile.clone());
        opts.clock = clock.clone();
        opts.responder = Arc::new(AgentPersona::with_spread(seed, classroom.agent_spread()));
        opts.seed = seed;
        class_against(&classroom, opts, clock).await
    })
}
