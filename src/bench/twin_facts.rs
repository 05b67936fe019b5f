//! The embedded twin's `/v1/models`, `/tokenize` and `max_model_len` for a
//! bench run against it in process (`plan --rate`, `calibrate --check`).

use futures::future::BoxFuture;

use super::{run_reading_facts, BenchConfig, BenchDeps, BenchOutcome, ServerInfo};
use crate::settings::RunSettings;
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_twin::inproc::InProcTransport;

/// Runs `config` against the twin in process (no `/metrics`, silent,
/// never interrupted), then stops the twin.
pub async fn run_on_twin(
    (config, run): (&BenchConfig, &RunSettings),
    transport: &InProcTransport,
    info: &TwinFacts,
    clock: Clock,
) -> Result<BenchOutcome, Error> {
    let (_tx, stop) = tokio::sync::watch::channel(false);
    let deps = BenchDeps {
        transport,
        info,
        metrics: None,
        clock,
        stop,
        events: crate::events::Events::silent(),
        measure_client_cpu: false,
    };
    let outcome = run_reading_facts(config, run, deps).await;
    transport.stop();
    outcome
}

/// What the twin in process tells the bench about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TwinFacts {
    /// The served model name.
    pub model: String,
    /// `max_model_len` to state, tokens (`None`: states none).
    pub max_model_len: Option<u64>,
    /// Whether prompts are counted by the twin's tokenizer (`/tokenize`);
    /// `false`: sized from a probe's usage, as against a server without it.
    pub tokenize: bool,
}

impl ServerInfo for TwinFacts {
    fn model_id(&self) -> BoxFuture<'_, Result<String, String>> {
        let model = self.model.clone();
        Box::pin(async move { Ok(model) })
    }

    fn tokenize<'a>(
        &'a self,
        _model: &'a str,
        prompt: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, String>> {
        let n = self
            .tokenize
            .then(|| codendum_twin::tokenizer::count(prompt) as u64);
        Box::pin(async move { Ok(n) })
    }

    fn max_model_len<'a>(&'a self, _model: &'a str) -> BoxFuture<'a, Option<u64>> {
        let l = self.max_model_len;
        Box::pin(async move { l })
    }
}
