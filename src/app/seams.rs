//! Glue between the drivers' small interfaces and the real parts: the HTTP
//! client answers [`ServerInfo`], the `/metrics` sampler answers
//! [`ServerMetrics`].

use futures::future::BoxFuture;

use crate::bench::{ServerInfo, ServerLoad, ServerMetrics};
use crate::client::HttpClient;
use crate::scrape::{SamplerHandle, Scraper};
use codendum_core::openai::Endpoint;
use codendum_core::server_figures::ServerWindow;

impl ServerInfo for HttpClient {
    fn model_id(&self) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            let models = self.models().await.map_err(|e| e.message)?;
            models
                .into_iter()
                .next()
                .map(|m| m.id)
                .ok_or_else(|| "the server lists no model at /v1/models".to_string())
        })
    }

    fn tokenize<'a>(
        &'a self,
        model: &'a str,
        prompt: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, String>> {
        Box::pin(async move {
            HttpClient::tokenize(self, model, prompt)
                .await
                .map_err(|e| e.message)
        })
    }

    fn tokenize_as_sent<'a>(
        &'a self,
        endpoint: Endpoint,
        model: &'a str,
        prompt: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, String>> {
        Box::pin(async move {
            let counted = match endpoint {
                Endpoint::Chat => HttpClient::tokenize_chat(self, model, prompt).await,
                Endpoint::Completions => HttpClient::tokenize(self, model, prompt).await,
            };
            counted.map_err(|e| e.message)
        })
    }

    fn max_model_len<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Option<u64>> {
        Box::pin(async move {
            let models = self.models().await.ok()?;
            models.into_iter().find(|m| m.id == model)?.max_model_len
        })
    }

    fn prompt_tokens_unstreamed<'a>(
        &'a self,
        endpoint: Endpoint,
        model: &'a str,
        prompt: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, String>> {
        Box::pin(async move {
            HttpClient::prompt_tokens_unstreamed(self, endpoint, model, prompt)
                .await
                .map_err(|e| e.message)
        })
    }

    fn server_version(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(self.version())
    }
}

/// The 1 s sampler seen as the bench driver's [`ServerMetrics`]: a fresh
/// scrape, windows over the recorded timeline (the sampler writes
/// `server-timeline.jsonl` itself, as it samples).
pub struct SampledMetrics<'a> {
    scraper: &'a Scraper,
    sampler: &'a SamplerHandle,
}

impl<'a> SampledMetrics<'a> {
    /// Wraps a scraper (for fresh readings) and a running sampler.
    pub fn new(scraper: &'a Scraper, sampler: &'a SamplerHandle) -> Self {
        SampledMetrics { scraper, sampler }
    }
}

impl ServerMetrics for SampledMetrics<'_> {
    fn load_now(&self) -> BoxFuture<'_, Option<ServerLoad>> {
        Box::pin(async move { load_now(self.scraper).await })
    }

    fn window(&self, t0: f64, t1: f64) -> ServerWindow {
        let w = self.sampler.window(t0, t1);
        ServerWindow {
            preemptions: w.preemptions,
            peak_kv_usage: w.peak_kv_usage,
            peak_running: w.peak_running,
            peak_waiting: w.peak_waiting,
            prefix_hit_rate: w.prefix_hit_rate,
            failed_scrapes: w.failed_scrapes as u64,
            time_split: w.time_split,
        }
    }

    fn sample_now(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.sampler.sample_now().await;
        })
    }

    fn continuity(&self) -> Vec<(String, codendum_core::prom::continuity::Continuity)> {
        self.sampler.continuity()
    }

    fn requests_finished(&self, t0: f64, t1: f64) -> Option<f64> {
        self.sampler.window(t0, t1).requests_finished
    }
}

/// One scrape's running and waiting requests; `None` when `/metrics` could
/// not be read or has no vLLM gauges.
pub async fn load_now(scraper: &crate::scrape::Scraper) -> Option<ServerLoad> {
    let snapshot = scraper.scrape().await.ok()?;
    Some(ServerLoad {
        running: snapshot.running?,
        waiting: snapshot.waiting.unwrap_or(0.0),
    })
}
