//! What a real vLLM 0.32 showed, against its recorded answers
//! (fixtures/vllm-0.32/): shapes that cannot fit are not sent, a run where
//! a level or shape produced nothing exits 1, chat prompts are sized with
//! the chat template, and a live server is given no profile nobody stated.

use std::path::Path;

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::cli_support::{codendum, only_folder, read_json, read_jsonl, run_in, runtime};
use codendum_testkit::servers::fixture;

/// vLLM's `/tokenize`: about 3.7 characters a token, plus the 30 tokens
/// SmolLM2's chat template adds around one user message (the recorded
/// answer: 32 tokens with messages for a 2-token "Hello there").
struct Tokenizer;

impl Respond for Tokenizer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let count = match (body.get("messages"), body.get("prompt")) {
            (Some(m), _) => {
                let text = m[0]["content"].as_str().unwrap_or("");
                (text.len() as f64 / 3.7).ceil() as u64 + 30
            }
            (None, Some(p)) => (p.as_str().unwrap_or("").len() as f64 / 3.7).ceil() as u64,
            _ => return ResponseTemplate::new(400),
        };
        ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "count": count, "max_model_len": 8192, "tokens": [], "token_strs": null
        }))
    }
}

/// A vLLM 0.32 with `--max-model-len 8192`; `chat` answers every stream.
fn vllm(rt: &tokio::runtime::Runtime, chat: ResponseTemplate) -> MockServer {
    rt.block_on(async {
        let s = MockServer::start().await;
        let json = |name: &str| {
            ResponseTemplate::new(200)
                .insert_header("content-type", "application/json")
                .set_body_string(fixture(name))
        };
        Mock::given(method("GET"))
            .and(path("/v1/models"))
            .respond_with(json("vllm-0.32/models.json"))
            .mount(&s)
            .await;
        Mock::given(method("GET"))
            .and(path("/version"))
            .respond_with(json("vllm-0.32/version.json"))
            .mount(&s)
            .await;
        Mock::given(method("POST"))
            .and(path("/tokenize"))
            .respond_with(Tokenizer)
            .mount(&s)
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(chat)
            .mount(&s)
            .await;
        s
    })
}

fn stream() -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(fixture("vllm-0.32/sse-chat-usage.txt"))
}

/// `bench` against `server` (no /metrics there: --allow-busy), in `dir`.
fn bench(dir: &Path, server: &MockServer, extra: &[&str]) -> crate::cli_support::Finished {
    let mut cmd = codendum(dir);
    cmd.args(["bench", "--base-url", &format!("{}/v1", server.uri())])
        .args(["--concurrency", "1", "--requests-per-level", "2"])
        .args(["--yes", "--allow-busy", "--results-dir", "results"])
        .args(extra);
    run_in(cmd, dir, "bench")
}

#[test]
fn a_shape_that_cannot_fit_is_not_sent_and_the_run_exits_1() {
    let rt = runtime();
    let server = vllm(&rt, stream());
    let dir = tempfile::tempdir().expect("tempdir");
    let done = bench(dir.path(), &server, &["--shapes", "short,long"]);
    assert_eq!(done.code, Some(1), "{}", done.both());
    let why = "shape long not run: 16384 prompt + 256 output tokens exceed the server's max_model_len of 8192";
    assert!(done.stderr.contains(why), "{}", done.stderr);
    let last = done.stderr.lines().last().unwrap_or("");
    assert!(
        last.contains("shape long did not fit in max_model_len 8192"),
        "{last}"
    );
    let folder = only_folder(&dir.path().join("results"));
    let summary = read_json(&folder.join("summary.json"));
    assert_eq!(summary["skipped_shapes"][0]["shape"], "long", "{summary}");
    assert_eq!(summary["skipped_shapes"][0]["max_model_len"], 8192);
    let levels = summary["levels"].as_array().expect("levels");
    assert!(levels.iter().all(|l| l["shape"] == "short"), "{levels:?}");
    let records = read_jsonl(&folder.join("requests.jsonl"), false);
    assert!(records.iter().all(|r| r["shape"] == "short"));
    let report = std::fs::read_to_string(folder.join("report.md")).expect("report.md");
    assert!(report.contains(why), "the report says what was not run");
    // Nothing near 16K tokens went to the server.
    let sent = rt.block_on(server.received_requests()).expect("recorded");
    let longest = sent.iter().map(|r| r.body.len()).max().unwrap_or(0);
    assert!(longest < 10_000, "a {longest}-byte request was sent");
}

#[test]
fn a_level_where_nothing_succeeded_exits_1() {
    let rt = runtime();
    let refuse = ResponseTemplate::new(400)
        .insert_header("content-type", "application/json")
        .set_body_string(fixture("vllm-0.32/error-400-too-long.json"));
    let server = vllm(&rt, refuse);
    let dir = tempfile::tempdir().expect("tempdir");
    let done = bench(dir.path(), &server, &["--shapes", "short"]);
    assert_eq!(done.code, Some(1), "{}", done.both());
    let last = done.stderr.lines().last().unwrap_or("");
    assert!(
        last.contains("no request succeeded at 1 concurrent (short)"),
        "{last}"
    );
    let summary = read_json(&only_folder(&dir.path().join("results")).join("summary.json"));
    assert_eq!(
        summary["levels"][0]["errors"]["http_400"]["count"], 2,
        "{summary}"
    );
}

#[test]
fn chat_prompts_are_sized_with_the_chat_template() {
    let rt = runtime();
    let server = vllm(&rt, stream());
    let dir = tempfile::tempdir().expect("tempdir");
    let done = bench(dir.path(), &server, &["--shapes", "short"]);
    assert_eq!(done.code, Some(0), "{}", done.both());
    let summary = read_json(&only_folder(&dir.path().join("results")).join("summary.json"));
    let sizing = &summary["prompt_sizing"];
    assert_eq!(sizing["method"], "tokenize", "{sizing}");
    let measured = sizing["shapes"][0]["measured_tokens"]
        .as_f64()
        .expect("measured");
    assert!(
        (measured - 512.0).abs() <= 512.0 * 0.01,
        "{measured} tokens"
    );
    let sent = rt.block_on(server.received_requests()).expect("recorded");
    let tokenize: Vec<Value> = sent
        .iter()
        .filter(|r| r.url.path() == "/tokenize")
        .map(|r| serde_json::from_slice(&r.body).expect("json"))
        .collect();
    assert!(!tokenize.is_empty());
    assert!(
        tokenize.iter().all(|b| b.get("messages").is_some()),
        "chat prompts are tokenized as messages: {tokenize:?}"
    );
}

#[test]
fn a_live_server_is_given_no_profile_nobody_stated() {
    let rt = runtime();
    let server = vllm(&rt, stream());
    for (extra, expected) in [
        (&[][..], Value::Null),
        (
            &["--profile", "lab-gb10-2026"][..],
            Value::from("lab-gb10-2026"),
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut args = vec!["--shapes", "short"];
        args.extend_from_slice(extra);
        let done = bench(dir.path(), &server, &args);
        assert_eq!(done.code, Some(0), "{}", done.both());
        let summary = read_json(&only_folder(&dir.path().join("results")).join("summary.json"));
        assert_eq!(summary["provenance"]["profile"], expected, "{extra:?}");
    }
}

#[test]
fn the_recorded_032_page_reads_with_its_new_families() {
    let s = codendum_core::prom::ServerSnapshot::from_text(&fixture("vllm-0.32/metrics-busy.txt"))
        .expect("the 0.32 page parses");
    assert_eq!(s.running, Some(22.0));
    assert_eq!(s.waiting, Some(0.0));
    assert_eq!(s.model_name.as_deref(), Some("smollm2"));
    // CPU vLLM uses 128-token blocks.
    assert_eq!(s.block_size, Some(128));
    assert!(s.kv_capacity_tokens.is_some());
}

/// The recorded stream without its usage chunk (a proxy that strips it).
fn stream_without_usage() -> (ResponseTemplate, String) {
    let mut body = String::new();
    let mut content = String::new();
    for event in fixture("vllm-0.32/sse-chat-usage.txt").split("\n\n") {
        let Some(data) = event.strip_prefix("data: ") else {
            continue;
        };
        if data.contains("\"usage\"") && data.contains("\"choices\":[]") {
            continue;
        }
        if let Ok(v) = serde_json::from_str::<Value>(data) {
            if let Some(c) = v["choices"][0]["delta"]["content"].as_str() {
                content.push_str(c);
            }
        }
        body.push_str(event);
        body.push_str("\n\n");
    }
    let template = ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body);
    (template, content)
}

#[test]
fn a_stream_without_usage_is_counted_by_the_servers_tokenize() {
    let rt = runtime();
    let (chat, content) = stream_without_usage();
    assert!(!content.is_empty());
    let server = vllm(&rt, chat);
    let dir = tempfile::tempdir().expect("tempdir");
    let done = bench(dir.path(), &server, &["--shapes", "short"]);
    assert_eq!(done.code, Some(0), "{}", done.both());
    let folder = only_folder(&dir.path().join("results"));
    let expected = (content.len() as f64 / 3.7).ceil() as u64;
    for r in read_jsonl(&folder.join("requests.jsonl"), false) {
        assert_eq!(r["tokens_counted_by"], "tokenized", "{r}");
        assert_eq!(r["output_tokens"], expected, "{r}");
        // The prompt as the server counts it: chat template included.
        assert!(r["prompt_tokens"].as_u64().is_some_and(|n| n > 500), "{r}");
    }
    let summary = read_json(&folder.join("summary.json"));
    assert_eq!(summary["levels"][0]["tokens_client_counted"], false);
    let report = std::fs::read_to_string(folder.join("report.md")).expect("report");
    assert!(
        !report.contains("counted by the client"),
        "exact counts need no caveat"
    );
}
