//! Chunk parsing, answer assembly and the TTFT rule, on recorded streams
//! with made-up arrival times (no network).

use codendum_core::openai::chunk::{parse_chunk, Assembler, ChunkError};
use codendum_core::openai::stream::StreamMeter;
use codendum_core::openai::{ErrorKind, TokenSource, Usage};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/fixtures/sse/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Feeds a body event by event: the i-th blank-line-separated block arrives
/// at `sent_at + times[i]` (the last time repeats for later blocks).
fn meter_over(body: &[u8], times: &[f64], record_gaps: bool) -> codendum_core::openai::CallOutcome {
    let text = String::from_utf8(body.to_vec())
        .unwrap()
        .replace("\r\n", "\n");
    let mut meter = StreamMeter::new(10.0, record_gaps);
    let mut last = 10.0;
    for (i, block) in text.split_inclusive("\n\n").enumerate() {
        last = 10.0 + times.get(i).or(times.last()).copied().unwrap_or(0.0);
        meter.on_bytes(block.as_bytes(), last);
    }
    meter.on_end(last);
    meter.finish(200, last)
}

#[test]
fn role_only_chunk_is_not_the_first_token() {
    let c = parse_chunk(br#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#)
        .unwrap();
    assert!(!c.carries_text());
    let c = parse_chunk(br#"{"choices":[{"index":0,"delta":{"role":"assistant"}}]}"#).unwrap();
    assert!(!c.carries_text());
    let c = parse_chunk(br#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#).unwrap();
    assert!(c.carries_text());
}

#[test]
fn reasoning_tool_calls_and_text_count_as_tokens() {
    for body in [
        r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning":"hmm"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}"#,
        r#"{"choices":[{"index":0,"text":"def"}]}"#,
    ] {
        assert!(
            parse_chunk(body.as_bytes()).unwrap().carries_text(),
            "{body}"
        );
    }
    let usage_only = r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;
    assert!(!parse_chunk(usage_only.as_bytes()).unwrap().carries_text());
}

#[test]
fn ttft_is_measured_to_the_first_text_chunk() {
    // Role chunk at 0.1 s, text at 0.3 s, tool call deltas at 0.35/0.40 s.
    let o = meter_over(
        &fixture("vllm-chat-tool-call.txt"),
        &[0.1, 0.3, 0.35, 0.40, 0.45, 0.46, 0.47],
        true,
    );
    assert!(o.is_ok(), "{:?}", o.error);
    assert!((o.ttft.unwrap() - 0.3).abs() < 1e-9);
    assert!((o.e2e - 0.47).abs() < 1e-9);
    assert_eq!(o.text_chunks, 3);
    let gaps: Vec<f64> = o.gaps.iter().map(|&g| f64::from(g)).collect();
    assert_eq!(gaps.len(), 2);
    assert!((gaps[0] - 0.05).abs() < 1e-6 && (gaps[1] - 0.05).abs() < 1e-6);
    assert_eq!(o.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        o.usage,
        Some(Usage {
            prompt_tokens: 7412,
            completion_tokens: 41
        })
    );
    assert_eq!(o.message.content, "I'll");
    assert_eq!(o.message.tool_calls.len(), 1);
    let call = &o.message.tool_calls[0];
    assert_eq!(call.id, "chatcmpl-tool-5f0c6e1a9b2d4c7e");
    assert_eq!(call.name, "read");
    assert_eq!(call.arguments, r#"{"filePath": "src/Server.java"}"#);
}

#[test]
fn reasoning_first_sets_ttft_and_is_assembled() {
    let o = meter_over(
        &fixture("crlf-reasoning.txt"),
        &[0.05, 0.2, 0.25, 0.3, 0.35, 0.4, 0.4],
        false,
    );
    assert!(o.is_ok());
    assert!((o.ttft.unwrap() - 0.2).abs() < 1e-9);
    assert_eq!(o.message.reasoning, "The user wants a greeting.");
    assert_eq!(o.message.content, "Hello, world!\n");
    assert!(o.gaps.is_empty(), "gaps only when asked for");
    // No usage in this stream: the client's count is used and marked.
    assert_eq!(o.usage, None);
    assert_eq!(o.output_tokens(), (4, TokenSource::Client));
}

#[test]
fn completions_stream_and_parallel_tool_calls() {
    let o = meter_over(&fixture("vllm-completions.txt"), &[0.2], false);
    assert!(o.is_ok());
    assert_eq!(o.message.content, "def add(a, b):\n    return a + b\n");
    assert_eq!(o.finish_reason.as_deref(), Some("length"));
    assert_eq!(o.output_tokens(), (11, TokenSource::Server));

    let mut a = Assembler::new();
    for body in [
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"read"}},{"index":1,"id":"c1","type":"function","function":{"name":"glob"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"pattern\":"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"*.py\"}"}}]}}]}"#,
    ] {
        assert!(a.apply(&parse_chunk(body.as_bytes()).unwrap()));
    }
    let calls = &a.message.tool_calls;
    assert_eq!(
        (calls[0].name.as_str(), calls[0].arguments.as_str()),
        ("read", "{}")
    );
    assert_eq!(
        (calls[1].id.as_str(), calls[1].arguments.as_str()),
        ("c1", r#"{"pattern":"*.py"}"#)
    );
}

#[test]
fn continuous_usage_keeps_the_last() {
    let mut a = Assembler::new();
    for (i, body) in [
        r#"{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"b"}}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#,
    ]
    .iter()
    .enumerate()
    {
        a.apply(&parse_chunk(body.as_bytes()).unwrap());
        assert_eq!(a.usage.unwrap().completion_tokens, i as u64 + 1);
    }
}

#[test]
fn error_events_and_bad_chunks() {
    match parse_chunk(br#"{"error":{"message":"boom","code":500}}"#) {
        Err(ChunkError::Server(m)) => assert_eq!(m, "boom"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        parse_chunk(br#"{"object":"error","message":"old style"}"#),
        Err(ChunkError::Server(m)) if m == "old style"
    ));
    assert!(matches!(
        parse_chunk(b"{not json"),
        Err(ChunkError::BadJson(_))
    ));
    assert!(matches!(
        parse_chunk(b"{\"choices\":[{\"index\":0,\"text\":\"\xff\xfe\"}]}"),
        Err(ChunkError::BadJson(_))
    ));

    let o = meter_over(
        &fixture("mid-stream-error.txt"),
        &[0.1, 0.2, 0.3, 0.4, 0.5],
        false,
    );
    let e = o.error.as_ref().expect("stream error");
    assert_eq!(e.kind, ErrorKind::StreamError);
    assert!(
        e.message.contains("The engine died unexpectedly."),
        "{}",
        e.message
    );
    assert!((o.e2e - 0.4).abs() < 1e-9);
    assert_eq!(o.message.content, "Partial");
}

#[test]
fn end_of_body_rules() {
    // Finish reason seen, no [DONE], no final blank line: success.
    let o = meter_over(&fixture("comments-multiline.txt"), &[0.1], false);
    assert!(o.is_ok(), "{:?}", o.error);
    assert_eq!(o.message.content, "multi-line");
    // Neither [DONE] nor a finish reason: incomplete.
    let body = br#"data: {"choices":[{"index":0,"delta":{"content":"cut"}}]}"#;
    let o = meter_over(body, &[0.1], false);
    assert_eq!(o.error.map(|e| e.kind), Some(ErrorKind::Incomplete));
    // A bad chunk stops the stream as bad_json.
    let o = meter_over(b"data: {\"choices\":[\n\ndata: [DONE]\n\n", &[0.1], false);
    assert_eq!(o.error.map(|e| e.kind), Some(ErrorKind::BadJson));
}

#[test]
fn the_first_token_is_told_as_it_arrives_not_at_the_end() {
    let told = codendum_core::openai::FirstToken::default();
    let mut meter = StreamMeter::new(10.0, false).telling(Some(told.clone()));
    let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
    meter.on_bytes(role.as_bytes(), 10.1);
    assert_eq!(told.get(), None, "a role-only chunk is not a token");
    let text = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"fn\"}}]}\n\n";
    meter.on_bytes(text.as_bytes(), 10.3);
    let at_first = told.get().expect("told while the stream goes on");
    assert!((at_first - 0.3).abs() < 1e-9, "{at_first}");
    // Later tokens and the end leave it as it was.
    meter.on_bytes(text.as_bytes(), 12.0);
    meter.on_bytes(b"data: [DONE]\n\n", 12.5);
    meter.on_end(12.5);
    let o = meter.finish(200, 12.5);
    assert_eq!(o.ttft, Some(at_first));
    assert_eq!(told.get(), Some(at_first));
    // A retry forgets it.
    told.clear();
    assert_eq!(told.get(), None);
}
