//! The client against a paced loopback server: TTFT and gaps measured to the
//! millisecond scale, and the stream failures (incomplete, dropped, stalled).

use crate::client_support;

use std::time::Duration;

use client_support::{chat_event, paced_script, spawn_plain, Step, TEXT_CHUNKS};
use codendum::client::{ClientOptions, HttpClient};
use codendum_core::openai::{CallRequest, Endpoint, ErrorKind, TokenSource, Transport};
use serde_json::json;

fn request() -> CallRequest {
    CallRequest {
        endpoint: Endpoint::Chat,
        body: json!({"model": "m", "messages": [], "stream": true}).into(),
        api_key: None,
        headers: Vec::new(),
        record_gaps: true,
        first_token: None,
    }
}

fn client(base: &str, timeout: Duration) -> HttpClient {
    let opts = ClientOptions {
        timeout,
        ..ClientOptions::default()
    };
    HttpClient::new(
        &codendum_core::access::BaseUrl::parse(base).expect("base URL"),
        opts,
    )
    .expect("client")
}

#[tokio::test]
async fn ttft_and_gaps_follow_the_server_pacing() {
    let mut end = vec![Step::Chunk(chat_event("{}", Some("stop")))];
    end.push(Step::Chunk(
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":6}}\n\ndata: [DONE]\n\n".into(),
    ));
    end.push(Step::End);
    let base = spawn_plain(paced_script(end)).await;
    let o = client(&base, Duration::from_secs(20)).call(request()).await;
    assert!(o.is_ok(), "{:?}", o.error);
    let ttft = o.ttft.expect("ttft");
    eprintln!("measured ttft {ttft:.4} s, gaps {:?}", o.gaps);
    // Lower bounds only, which load cannot break: the server sends its first
    // text at 200 ms and the rest 50 ms apart. How close the client comes
    // to the pacing is a timing check of the perf binary (client_pacing).
    assert!(ttft >= 0.195, "ttft {ttft}");
    assert_eq!(o.text_chunks, TEXT_CHUNKS);
    assert_eq!(o.gaps.len() as u64, TEXT_CHUNKS - 1);
    assert!(
        o.e2e >= 0.445,
        "e2e {} (the last text leaves at 450 ms)",
        o.e2e
    );
    assert_eq!(o.output_tokens(), (6, TokenSource::Server));
    assert_eq!(o.message.content, "t0 t1 t2 t3 t4 t5 ");
}

#[tokio::test]
async fn body_ending_without_done_or_finish_is_incomplete() {
    let base = spawn_plain(paced_script(vec![Step::End])).await;
    let o = client(&base, Duration::from_secs(20)).call(request()).await;
    let e = o.error.clone().expect("error");
    assert_eq!(e.kind, ErrorKind::Incomplete);
    assert!(o.ttft.is_some());
    // The client's count stands in for the missing usage.
    assert_eq!(o.output_tokens(), (TEXT_CHUNKS, TokenSource::Client));
}

#[tokio::test]
async fn finish_reason_without_done_is_success() {
    let end = vec![Step::Chunk(chat_event("{}", Some("length"))), Step::End];
    let base = spawn_plain(paced_script(end)).await;
    let o = client(&base, Duration::from_secs(20)).call(request()).await;
    assert!(o.is_ok(), "{:?}", o.error);
    assert_eq!(o.finish_reason.as_deref(), Some("length"));
}

#[tokio::test]
async fn dropped_connection_is_a_stream_error() {
    let base = spawn_plain(paced_script(vec![Step::Drop])).await;
    let o = client(&base, Duration::from_secs(20)).call(request()).await;
    let e = o.error.expect("error");
    assert_eq!(e.kind, ErrorKind::StreamError, "{}", e.message);
    assert_eq!(o.text_chunks, TEXT_CHUNKS);
}

#[tokio::test]
async fn stall_longer_than_the_timeout_is_a_timeout() {
    let script = vec![
        Step::Chunk(chat_event(r#"{"content":"x"}"#, None)),
        Step::Stall(5_000),
        Step::End,
    ];
    let base = spawn_plain(script).await;
    let o = client(&base, Duration::from_millis(300))
        .call(request())
        .await;
    let e = o.error.expect("error");
    assert_eq!(e.kind, ErrorKind::Timeout);
    assert!(o.ttft.is_some(), "the text before the stall was measured");
    assert!((0.29..1.5).contains(&o.e2e), "e2e {}", o.e2e);
}

#[tokio::test]
async fn times_are_simulated_seconds_on_a_scaled_clock() {
    // The server paces in real time (20 ms); the client's clock runs 10x.
    let script = vec![
        Step::At(20),
        Step::Chunk(chat_event(r#"{"content":"x"}"#, Some("stop"))),
        Step::Chunk("data: [DONE]\n\n".into()),
        Step::End,
    ];
    let base = spawn_plain(script).await;
    let opts = ClientOptions {
        timeout: Duration::from_secs(30),
        clock: codendum_core::clock::Clock::scaled(10.0),
        ..ClientOptions::default()
    };
    let o = HttpClient::new(
        &codendum_core::access::BaseUrl::parse(base).expect("base URL"),
        opts,
    )
    .expect("client")
    .call(request())
    .await;
    assert!(o.is_ok(), "{:?}", o.error);
    let ttft = o.ttft.expect("ttft");
    assert!((0.19..0.8).contains(&ttft), "ttft {ttft} simulated s");
}

#[tokio::test]
async fn an_event_past_the_sse_limit_is_a_stream_error_naming_it() {
    use codendum_core::openai::sse::MAX_EVENT_BYTES;
    // A tool call whose arguments never end: one data line over the limit,
    // sent in 64 KiB chunks.
    let mut script = vec![Step::Chunk(chat_event(
        r#"{"role":"assistant","content":""}"#,
        None,
    ))];
    let piece = "x".repeat(64 * 1024);
    script.push(Step::Chunk(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".into(),
    ));
    for _ in 0..(MAX_EVENT_BYTES / piece.len() + 2) {
        script.push(Step::Chunk(piece.clone()));
    }
    script.push(Step::Stall(5_000));
    let base = spawn_plain(script).await;
    let o = client(&base, Duration::from_secs(20)).call(request()).await;
    let e = o.error.clone().expect("error");
    assert_eq!(e.kind, ErrorKind::StreamError);
    assert!(
        e.message.contains(&MAX_EVENT_BYTES.to_string()),
        "{}",
        e.message
    );
    assert!(
        o.e2e < 4.0,
        "abandoned at once, not after the stall: {}",
        o.e2e
    );
}

#[tokio::test]
async fn a_role_chunk_then_done_is_an_empty_answer() {
    let script = vec![
        Step::Chunk(chat_event(r#"{"role":"assistant","content":""}"#, None)),
        Step::Chunk(chat_event("{}", Some("stop"))),
        Step::Chunk("data: [DONE]\n\n".into()),
        Step::End,
    ];
    let base = spawn_plain(script).await;
    let o = client(&base, Duration::from_secs(20)).call(request()).await;
    let e = o.error.clone().expect("an empty answer is an error");
    assert_eq!(e.kind, ErrorKind::EmptyAnswer);
    assert_eq!(e.kind.as_str(), "empty_answer");
    assert!(o.ttft.is_none());
}
