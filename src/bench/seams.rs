//! The small interfaces the driver needs besides [`codendum_core::openai::Transport`],
//! so the HTTP client and the `/metrics` sampler (or the twin) plug in with a
//! few lines of glue:
//!
//! - [`ServerInfo`]: the model id, the server version, `/tokenize`;
//! - [`ServerMetrics`]: the load right now (busy guard), the figures of a
//!   time window (per-level server columns), and the timeline samples to
//!   write to `server-timeline.jsonl`.
//!
//! Errors cross these seams as plain messages: the driver only reports them.
//!
//! The glue that implements them for the real client and sampler lives in
//! `crate::app::seams` (sketch, with the real types' names):
//!
//! ```text
//! impl ServerInfo for openai::client::HttpClient {
//!     fn model_id(&self)            -> first id of self.models(), errors to_string()
//!     fn tokenize(&self, m, p)      -> self.tokenize(m, p).await.map_err(|e| e.to_string())
//! }
//! impl ServerMetrics for prom::SamplerHandle {
//!     fn load_now(&self)            -> latest snapshot's running/waiting (None if it failed)
//!     fn window(&self, t0, t1)      -> WindowStats mapped field by field into ServerWindow
//!     fn drain_timeline(&self)      -> new TimelineSamples as serde_json::to_value
//! }
//! ```

pub use crate::client::ModelInfo;
use codendum_core::error::Error;
use codendum_core::openai::Endpoint;
use codendum_core::results::profile_check::ProfileCheck;
use codendum_core::results::EngineSettings;
use codendum_core::server_figures::ServerWindow;
use futures::future::BoxFuture;

/// Facts about the server apart from generating text.
pub trait ServerInfo: Send + Sync {
    /// The model to use when none was configured (the first id of
    /// `/v1/models`).
    fn model_id(&self) -> BoxFuture<'_, Result<String, String>>;

    /// The served models with their context limits (`/v1/models`), read in
    /// one request. The default asks [`Self::model_id`] and
    /// [`Self::max_model_len`].
    fn models(&self) -> BoxFuture<'_, Result<Vec<ModelInfo>, String>> {
        Box::pin(async move {
            let id = self.model_id().await?;
            let max_model_len = self.max_model_len(&id).await;
            Ok(vec![ModelInfo { id, max_model_len }])
        })
    }

    /// Tokens the server counts for `prompt` with `model` (vLLM's
    /// `/tokenize`). `Ok(None)`: the server has no such endpoint.
    fn tokenize<'a>(
        &'a self,
        model: &'a str,
        prompt: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, String>>;

    /// Tokens the server counts for `prompt` sent as `endpoint` sends it:
    /// for chat, as one user message with the chat template applied (vLLM's
    /// `/tokenize` with `messages`), so sizing matches what the server will
    /// count per request. The default asks [`Self::tokenize`] for the raw
    /// text.
    fn tokenize_as_sent<'a>(
        &'a self,
        _endpoint: Endpoint,
        model: &'a str,
        prompt: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, String>> {
        self.tokenize(model, prompt)
    }

    /// The context limit the server states for `model` (`max_model_len`
    /// in vLLM's `/v1/models`), tokens; `None` when it does not say.
    fn max_model_len<'a>(&'a self, _model: &'a str) -> BoxFuture<'a, Option<u64>> {
        Box::pin(async { None })
    }

    /// Prompt tokens the server counts for `prompt`, from the `usage` of a
    /// non-streamed request (for servers without usage in streams).
    /// `Ok(None)`: the server does not say.
    fn prompt_tokens_unstreamed<'a>(
        &'a self,
        _endpoint: Endpoint,
        _model: &'a str,
        _prompt: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, String>> {
        Box::pin(async { Ok(None) })
    }

    /// The server's version (vLLM's `/version`), when it tells.
    fn server_version(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }
}

/// The scheduler load at one instant, summed over replicas.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ServerLoad {
    /// Requests running (`vllm:num_requests_running`).
    pub running: f64,
    /// Requests waiting (`vllm:num_requests_waiting`).
    pub waiting: f64,
}

/// The `/metrics` side of a run (the 1 s sampler). Pass `None` instead of an
/// implementation when the server has no reachable `/metrics`.
pub trait ServerMetrics: Send + Sync {
    /// One fresh reading of the load; `None` when `/metrics` could not be read.
    fn load_now(&self) -> BoxFuture<'_, Option<ServerLoad>>;

    /// Figures over `[t0, t1]`, seconds on the run's [`codendum_core::clock::Clock`]
    /// (the same clock the sampler stamps samples with).
    fn window(&self, t0: f64, t1: f64) -> ServerWindow;

    /// Takes one extra reading now (at a level's start and end, so that a
    /// level shorter than the sampling interval still has its figures). The
    /// default takes none.
    fn sample_now(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// Samples taken since the last call, to append to
    /// `server-timeline.jsonl` (the sampler's `TimelineSample`s as JSON).
    /// The default writes none.
    fn drain_timeline(&self) -> Vec<serde_json::Value> {
        Vec::new()
    }

    /// What each `/metrics` URL's reads so far show (one server, a
    /// restarted one, several behind one URL), by replica name. The default
    /// knows nothing.
    fn continuity(&self) -> Vec<(String, codendum_core::prom::continuity::Continuity)> {
        Vec::new()
    }

    /// Requests the server finished over `[t0, t1]` (clock seconds), all
    /// URLs together, as its `/metrics` counted them; `None` when unknown.
    fn requests_finished(&self, _t0: f64, _t1: f64) -> Option<f64> {
        None
    }
}

/// What a run learns from its server before it starts, read once (one
/// `/v1/models`, one `/version`) and kept apart from what the run was asked
/// to do: nothing here is written back into the settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerFacts {
    /// How results name the server: its base URL without credentials, or
    /// the embedded twin's description.
    pub label: String,
    /// The served models, as `/v1/models` lists them.
    pub models: Vec<ModelInfo>,
    /// The model requested: the one asked for, else the server's first.
    pub model: String,
    /// The context limit the server states for that model, tokens.
    pub max_model_len: Option<u64>,
    /// The server's version (`/version`), when it tells.
    pub server_version: Option<String>,
    /// The engine settings the server states (the embedded twin's
    /// profile), recorded for `codendum calibrate`.
    pub stated_engine: Option<EngineSettings>,
    /// The embedded twin's profile name (recorded as provenance).
    pub twin_profile: Option<String>,
    /// A stated profile checked against the live server.
    pub profile_check: Option<ProfileCheck>,
}

impl ServerFacts {
    /// Reads the server's models and version once; `model` is the one
    /// asked for (`None`: the server's first). Fails when the server lists
    /// no model or cannot be asked.
    pub async fn read(
        info: &dyn ServerInfo,
        model: Option<&str>,
        label: String,
    ) -> Result<ServerFacts, Error> {
        let models = match (info.models().await, model) {
            (Ok(m), _) => m,
            // A server that cannot list its models still runs a named one.
            (Err(_), Some(_)) => Vec::new(),
            (Err(e), None) => {
                return Err(Error::Failed(format!(
                    "cannot list the server's models at /v1/models (pass --model): {e}"
                )))
            }
        };
        let model = match model {
            Some(m) => m.to_string(),
            None => models
                .first()
                .map(|m| m.id.clone())
                .ok_or_else(|| Error::Failed("the server lists no model; pass --model".into()))?,
        };
        let max_model_len = match models.iter().find(|m| m.id == model) {
            Some(listed) => listed.max_model_len,
            // A model the list does not name: ask for it by name.
            None => info.max_model_len(&model).await,
        };
        Ok(ServerFacts {
            label,
            models,
            model,
            max_model_len,
            server_version: info.server_version().await,
            stated_engine: None,
            twin_profile: None,
            profile_check: None,
        })
    }

    /// The facts of the embedded twin running `profile`: its settings are
    /// stated, its profile recorded.
    pub fn with_twin_profile(mut self, profile: &codendum_core::profile::Profile) -> Self {
        self.stated_engine = Some(EngineSettings {
            max_num_seqs: profile.server.max_num_seqs,
            max_num_batched_tokens: profile.server.max_num_batched_tokens,
            enable_prefix_caching: profile.server.enable_prefix_caching,
        });
        self.twin_profile = Some(profile.name.clone());
        self
    }

    /// What results record of the server's provenance: what was `stated`,
    /// with the embedded twin's own profile.
    pub fn provenance(
        &self,
        stated: &codendum_core::access::Provenance,
    ) -> codendum_core::access::Provenance {
        let mut provenance = stated.clone();
        if let Some(p) = &self.twin_profile {
            provenance.profile = Some(p.clone());
        }
        provenance
    }

    /// The server's seats (`max_num_seqs`), when it states them.
    pub fn seats(&self) -> Option<u32> {
        self.stated_engine.map(|e| e.max_num_seqs)
    }
}
