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
//! Glue the lead writes (sketch, with the real types' names):
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

use codendum_core::openai::Endpoint;
pub use codendum_core::results::level::ServerWindow;
use futures::future::BoxFuture;

/// Facts about the server apart from generating text.
pub trait ServerInfo: Send + Sync {
    /// The model to use when none was configured (the first id of
    /// `/v1/models`).
    fn model_id(&self) -> BoxFuture<'_, Result<String, String>>;

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
