//! Conformance of the twin over real loopback HTTP: chunk shapes as
//! vllm-server.md shows them, errors, endpoints, /metrics.

use std::sync::Arc;

use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_twin::answer::{AnswerRequest, PlannedAnswer, Responder};
use codendum_twin::{start, TwinHandle, TwinOptions};
use serde_json::{json, Value};

struct ToolPersona;

impl Responder for ToolPersona {
    fn plan(&self, _r: &AnswerRequest<'_>) -> PlannedAnswer {
        PlannedAnswer {
            parts: vec![
                codendum_twin::answer::AnswerPart::Text("I'll read it.".into()),
                codendum_twin::answer::AnswerPart::ToolCall {
                    name: "read".into(),
                    arguments: "{\"filePath\": \"src/Server.java\"}".into(),
                },
            ],
        }
    }
}

async fn twin_with(responder: Option<Arc<dyn Responder>>, keys: Vec<Secret>) -> TwinHandle {
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = Clock::scaled(1000.0);
    opts.api_keys = keys;
    opts.seed = 7;
    if let Some(r) = responder {
        opts.responder = r;
    }
    start(opts, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("twin starts")
}

fn events(body: &str) -> Vec<String> {
    assert!(body.ends_with("data: [DONE]\n\n"), "ends with [DONE]");
    body.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            assert!(e.starts_with("data: "), "only data lines: {e}");
            e["data: ".len()..].to_string()
        })
        .collect()
}

#[tokio::test]
async fn chat_stream_has_vllms_chunks() {
    let twin = twin_with(Some(Arc::new(ToolPersona)), Vec::new()).await;
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", twin.base_url()))
        .json(
            &json!({"model":"qwen3-coder","stream":true,"stream_options":{"include_usage":true},
            "messages":[{"role":"user","content":"Read the server file"}],
            "tools":[{"type":"function","function":{"name":"read","parameters":{}}}]}),
        )
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let ct = resp.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .to_string();
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    let body = resp.text().await.expect("body");
    let ev = events(&body);
    let chunks: Vec<Value> = ev[..ev.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).expect("json chunk"))
        .collect();
    let first = &chunks[0];
    let id = first["id"].as_str().expect("id");
    assert!(id.starts_with("chatcmpl-") && id.len() == 9 + 16, "{id}");
    assert!(id[9..].chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["model"], "qwen3-coder");
    assert!(first["created"].as_i64().expect("created") > 1_600_000_000);
    assert_eq!(
        first["choices"][0]["delta"],
        json!({"role":"assistant","content":""})
    );
    assert!(first["choices"][0]["logprobs"].is_null());
    assert!(first["choices"][0]["finish_reason"].is_null());
    assert!(first["prompt_token_ids"].is_null() && first["prompt_text"].is_null());
    // content deltas: one token each, then the tool call
    let second = &chunks[1];
    assert_eq!(second["choices"][0]["delta"]["content"], "I");
    assert!(second["choices"][0]["token_ids"].is_null());
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "I'll read it.");
    let head = chunks
        .iter()
        .find(|c| c["choices"][0]["delta"]["tool_calls"][0]["id"].is_string())
        .expect("tool head");
    let call = &head["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["index"], 0);
    assert_eq!(call["function"]["name"], "read");
    assert!(call["id"]
        .as_str()
        .expect("id")
        .starts_with("chatcmpl-tool-"));
    let args: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    let args: Value = serde_json::from_str(&args).expect("arguments are JSON");
    assert_eq!(args["filePath"], "src/Server.java");
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["delta"], json!({}));
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert!(finish["choices"][0]["stop_reason"].is_null());
    let usage = &chunks[chunks.len() - 1];
    assert_eq!(usage["choices"], json!([]));
    let u = &usage["usage"];
    assert_eq!(
        u["total_tokens"].as_u64(),
        Some(u["prompt_tokens"].as_u64().expect("p") + u["completion_tokens"].as_u64().expect("c"))
    );
    // one chunk per completion token, plus role, finish, usage
    assert_eq!(
        u["completion_tokens"].as_u64(),
        Some(chunks.len() as u64 - 3)
    );
    assert!(chunks.iter().all(|c| c["id"] == first["id"]));
    twin.shutdown().await;
}

#[tokio::test]
async fn ignore_eos_gives_exactly_max_tokens_and_continuous_usage() {
    let twin = twin_with(None, Vec::new()).await;
    let body = reqwest::Client::new()
        .post(format!("{}/chat/completions", twin.base_url()))
        .json(
            &json!({"model":"qwen3-coder","stream":true,"ignore_eos":true,"max_tokens":256,
            "stream_options":{"include_usage":true,"continuous_usage_stats":true},
            "messages":[{"role":"user","content":"Say a lot"}]}),
        )
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("body");
    let ev = events(&body);
    let chunks: Vec<Value> = ev[..ev.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).expect("json"))
        .collect();
    assert!(
        chunks.iter().all(|c| c["usage"].is_object()),
        "usage on every chunk"
    );
    let last = &chunks[chunks.len() - 1];
    assert_eq!(last["usage"]["completion_tokens"], 256);
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "length"
    );
    assert_eq!(
        chunks[5]["usage"]["completion_tokens"], 5,
        "role chunk + 5 tokens"
    );
    twin.shutdown().await;
}

#[tokio::test]
async fn completions_shape_and_non_streaming() {
    let twin = twin_with(None, Vec::new()).await;
    let client = reqwest::Client::new();
    let body = client
        .post(format!("{}/completions", twin.base_url()))
        .json(&json!({"model":"qwen3-coder","prompt":"Once upon a time","max_tokens":5,"stream":true}))
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("body");
    let ev = events(&body);
    let c: Value = serde_json::from_str(&ev[0]).expect("json");
    assert!(c["id"].as_str().expect("id").starts_with("cmpl-"));
    assert_eq!(c["object"], "text_completion");
    let choice = &c["choices"][0];
    for k in [
        "logprobs",
        "finish_reason",
        "stop_reason",
        "prompt_token_ids",
        "token_ids",
    ] {
        assert!(choice[k].is_null(), "{k}");
    }
    assert!(choice["text"].is_string());
    let fin: Value = serde_json::from_str(&ev[ev.len() - 2]).expect("json");
    assert_eq!(fin["choices"][0]["finish_reason"], "length");

    let whole: Value = client
        .post(format!("{}/chat/completions", twin.base_url()))
        .json(&json!({"model":"qwen3-coder","max_tokens":12,
            "messages":[{"role":"user","content":"hello"}]}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(whole["object"], "chat.completion");
    assert_eq!(whole["usage"]["completion_tokens"], 12);
    assert_eq!(whole["choices"][0]["finish_reason"], "length");
    assert_eq!(whole["choices"][0]["message"]["role"], "assistant");
    twin.shutdown().await;
}

#[tokio::test]
async fn too_long_prompt_gets_vllms_400() {
    let twin = twin_with(None, Vec::new()).await;
    let client = reqwest::Client::new();
    let prompt = "word ".repeat(57_400);
    let tok: Value = client
        .post(format!("http://{}/tokenize", twin.addr()))
        .json(&json!({"model":"qwen3-coder","prompt":prompt}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let n = tok["count"].as_u64().expect("count");
    let resp = client
        .post(format!("{}/completions", twin.base_url()))
        .json(&json!({"model":"qwen3-coder","prompt":prompt,"max_tokens":8192}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.expect("json");
    let expected = format!(
        "This model's maximum context length is 65536 tokens. However, you requested 8192 output tokens and your prompt contains {n} input tokens, for a total of {} tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value={n})",
        n + 8192
    );
    assert_eq!(v["error"]["message"], expected);
    assert_eq!(v["error"]["type"], "BadRequestError");
    assert_eq!(v["error"]["param"], "input_tokens");
    assert_eq!(v["error"]["code"], 400);
    twin.shutdown().await;
}

#[tokio::test]
async fn wrong_key_gets_401_and_models_lists_max_model_len() {
    let twin = twin_with(None, vec![Secret::new("sk-good")]).await;
    let client = reqwest::Client::new();
    let bad = client
        .get(format!("{}/models", twin.base_url()))
        .bearer_auth("sk-bad")
        .send()
        .await
        .expect("send");
    assert_eq!(bad.status(), 401);
    assert_eq!(
        bad.text().await.expect("body"),
        "{\"error\":\"Unauthorized\"}"
    );
    let models: Value = client
        .get(format!("{}/models", twin.base_url()))
        .bearer_auth("sk-good")
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let m = &models["data"][0];
    assert_eq!(models["object"], "list");
    assert_eq!(m["id"], "qwen3-coder");
    assert_eq!(m["owned_by"], "vllm");
    assert_eq!(m["root"], "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8");
    assert_eq!(m["max_model_len"], 65536);
    let health = client
        .get(format!("http://{}/health", twin.addr()))
        .send()
        .await
        .expect("send");
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.expect("body"), "");
    let version: Value = client
        .get(format!("http://{}/version", twin.addr()))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(version, json!({"version":"0.30.0"}));
    twin.shutdown().await;
}

#[tokio::test]
async fn tokenize_agrees_with_usage() {
    let twin = twin_with(None, Vec::new()).await;
    let client = reqwest::Client::new();
    let messages = json!([{"role":"system","content":"You are a coding agent."},
        {"role":"user","content":"Write a Java HTTP server that serves files."}]);
    let tok: Value = client
        .post(format!("http://{}/tokenize", twin.addr()))
        .json(&json!({"model":"qwen3-coder","messages":messages}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(tok["max_model_len"], 65536);
    assert_eq!(
        tok["tokens"].as_array().expect("tokens").len() as u64,
        tok["count"].as_u64().expect("n")
    );
    let whole: Value = client
        .post(format!("{}/chat/completions", twin.base_url()))
        .json(&json!({"model":"qwen3-coder","max_tokens":3,"messages":messages}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(whole["usage"]["prompt_tokens"], tok["count"]);
    twin.shutdown().await;
}

fn sample(page: &str, line_start: &str) -> f64 {
    page.lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no sample {line_start}"))
}

#[tokio::test]
async fn metrics_parse_and_move() {
    let twin = twin_with(None, Vec::new()).await;
    let client = reqwest::Client::new();
    let before = client
        .get(twin.metrics_url())
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("body");
    for line in before.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            assert!(
                rest.starts_with("HELP ") || rest.starts_with("TYPE "),
                "{line}"
            );
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("name value");
        assert!(
            value == "+Inf" || value == "NaN" || value.parse::<f64>().is_ok(),
            "{line}"
        );
        if let Some(open) = series.find('{') {
            assert!(series.ends_with('}'), "{line}");
            for pair in series[open + 1..series.len() - 1].split("\",") {
                assert!(pair.contains("=\""), "{line}");
            }
        }
    }
    assert!(before.contains("kv_cache_size_tokens=\"1362640\""));
    assert!(before.contains("num_gpu_blocks=\"85165\""));
    let label = "{engine=\"0\",model_name=\"Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8\"}";
    assert_eq!(
        sample(&before, &format!("vllm:generation_tokens_total{label}")),
        0.0
    );
    for _ in 0..2 {
        client
            .post(format!("{}/chat/completions", twin.base_url()))
            .json(&json!({"model":"qwen3-coder","max_tokens":20,"ignore_eos":true,
                "messages":[{"role":"user","content":"The same long question about a Java server, again and again."}]}))
            .send()
            .await
            .expect("send")
            .text()
            .await
            .expect("body");
    }
    let after = client
        .get(twin.metrics_url())
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("body");
    assert_eq!(
        sample(&after, &format!("vllm:generation_tokens_total{label}")),
        40.0
    );
    assert!(sample(&after, &format!("vllm:prompt_tokens_total{label}")) > 10.0);
    assert!(sample(&after, &format!("vllm:prefix_cache_hits_total{label}")) > 0.0);
    assert_eq!(
        sample(
            &after,
            "vllm:request_success_total{engine=\"0\",finished_reason=\"length\""
        ),
        2.0
    );
    assert_eq!(
        sample(
            &after,
            &format!("vllm:time_to_first_token_seconds_count{label}")
        ),
        2.0
    );
    assert_eq!(
        sample(&after, &format!("vllm:num_requests_running{label}")),
        0.0
    );
    twin.shutdown().await;
}
