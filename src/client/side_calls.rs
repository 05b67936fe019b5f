//! The small side calls a run needs besides the streams: the served models,
//! the exact prompt length (`/tokenize`) and the server's version, as JSON
//! requests through reqwest with the side-call key and the time limit.

use super::{error_chain, read_error, send_error_kind, HttpClient};
use codendum_core::openai::stream::truncate_message;
use codendum_core::openai::{CallError, Endpoint, ErrorKind};

/// One served model, from `GET /v1/models`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// The model name to send.
    pub id: String,
    /// The context limit in tokens, when the server says (vLLM does).
    pub max_model_len: Option<u64>,
}

impl HttpClient {
    /// The served models (`GET {base}/models`).
    pub async fn models(&self) -> Result<Vec<ModelInfo>, CallError> {
        let url = format!("{}/models", self.base_url);
        let (_, v) = self.json_call(self.http.get(url)).await?;
        let data = v
            .get("data")
            .and_then(|d| d.as_array())
            .ok_or_else(|| bad_json("/v1/models answer has no data list"))?;
        let models = data
            .iter()
            .filter_map(|m| {
                Some(ModelInfo {
                    id: m.get("id")?.as_str()?.to_string(),
                    max_model_len: m.get("max_model_len").and_then(|l| l.as_u64()),
                })
            })
            .collect();
        Ok(models)
    }

    /// The exact prompt length in tokens (`POST {origin}/tokenize`, vLLM
    /// only). `Ok(None)` when the server has no such endpoint (404).
    pub async fn tokenize(&self, model: &str, prompt: &str) -> Result<Option<u64>, CallError> {
        self.count_tokens(serde_json::json!({ "model": model, "prompt": prompt }))
            .await
    }

    /// The prompt tokens the server counts for `prompt`, from the `usage` of
    /// one non-streamed request for a single output token: for servers that
    /// send no usage in streams (llama.cpp's). `Ok(None)`: no usage in the
    /// answer either.
    pub async fn prompt_tokens_unstreamed(
        &self,
        endpoint: Endpoint,
        model: &str,
        prompt: &str,
    ) -> Result<Option<u64>, CallError> {
        let (path, body) = match endpoint {
            Endpoint::Chat => (
                "chat/completions",
                serde_json::json!({"model": model, "max_tokens": 1, "stream": false,
                    "messages": [{"role": "user", "content": prompt}]}),
            ),
            Endpoint::Completions => (
                "completions",
                serde_json::json!({"model": model, "max_tokens": 1, "stream": false, "prompt": prompt}),
            ),
        };
        let url = format!("{}/{path}", self.base_url);
        let (_, v) = self.json_call(self.http.post(url).json(&body)).await?;
        Ok(v.pointer("/usage/prompt_tokens")
            .and_then(|t| t.as_u64())
            .filter(|&t| t > 0))
    }

    /// The prompt length in tokens of `prompt` sent as one user message,
    /// chat template included (`POST {origin}/tokenize` with `messages`, as
    /// vLLM takes it). `Ok(None)` when the server has no such endpoint.
    pub async fn tokenize_chat(&self, model: &str, prompt: &str) -> Result<Option<u64>, CallError> {
        self.count_tokens(serde_json::json!({
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
        }))
        .await
    }

    /// `POST {origin}/tokenize` with `body`: its `count`, or `None` on 404.
    async fn count_tokens(&self, body: serde_json::Value) -> Result<Option<u64>, CallError> {
        let url = format!("{}/tokenize", self.origin);
        match self.json_call(self.http.post(url).json(&body)).await {
            Ok((_, v)) => v
                .get("count")
                .and_then(|c| c.as_u64())
                .map(Some)
                .ok_or_else(|| bad_json("/tokenize answer has no count")),
            Err(e) if e.status == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The server's version (`GET {origin}/version`), if it tells.
    pub async fn version(&self) -> Option<String> {
        let url = format!("{}/version", self.origin);
        let (_, v) = self.json_call(self.http.get(url)).await.ok()?;
        v.get("version")?.as_str().map(str::to_string)
    }

    /// Sends a non-streaming request with the side-call key and reads a
    /// JSON answer, within the time limit.
    async fn json_call(
        &self,
        rb: reqwest::RequestBuilder,
    ) -> Result<(u16, serde_json::Value), CallError> {
        let rb = match &self.api_key {
            Some(k) => rb.bearer_auth(k.expose()),
            None => rb,
        };
        let work = async {
            let response = rb.send().await.map_err(|e| CallError {
                kind: send_error_kind(&e),
                status: None,
                message: truncate_message(&error_chain(&e)),
                retry_after: None,
            })?;
            let status = response.status().as_u16();
            if !response.status().is_success() {
                return Err(read_error(response).await);
            }
            let bytes = response.bytes().await.map_err(|e| CallError {
                kind: ErrorKind::StreamError,
                status: Some(status),
                message: truncate_message(&error_chain(&e)),
                retry_after: None,
            })?;
            let v = serde_json::from_slice(&bytes).map_err(|e| CallError {
                status: Some(status),
                ..bad_json(&format!("answer is not JSON: {e}"))
            })?;
            Ok((status, v))
        };
        match self.clock.timeout(self.timeout, work).await {
            Ok(r) => r,
            Err(_) => Err(CallError {
                kind: ErrorKind::Timeout,
                status: None,
                message: format!("no answer within {:.1} s", self.timeout.as_secs_f64()),
                retry_after: None,
            }),
        }
    }
}

fn bad_json(message: &str) -> CallError {
    CallError {
        kind: ErrorKind::BadJson,
        status: None,
        message: truncate_message(message),
        retry_after: None,
    }
}
