//! The firehose server (the client-throughput rig) over real loopback HTTP
//! with the real `HttpClient`: every token arrives and is measured, the usage
//! chunk and `[DONE]` end each stream, and paced answers carry one server
//! stamp per token.

use std::sync::Arc;

use codendum::client::{ClientOptions, HttpClient};
use codendum_core::clock::Clock;
use codendum_core::openai::{CallRequest, Endpoint, Transport};
use codendum_twin::firehose::{parse_stamps, start, FirehoseOptions};
use serde_json::{json, Value};

fn request(body: Value) -> CallRequest {
    CallRequest {
        endpoint: Endpoint::Chat,
        body: body.into(),
        api_key: None,
        headers: Vec::new(),
        record_gaps: true,
        first_token: None,
    }
}

async fn client_for(base: &str, clock: Clock) -> Arc<HttpClient> {
    let opts = ClientOptions {
        max_connections: 8,
        clock,
        ..ClientOptions::default()
    };
    Arc::new(
        HttpClient::new(
            &codendum_core::access::BaseUrl::parse(base).expect("base URL"),
            opts,
        )
        .expect("client"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn firehose_streams_every_token_with_usage_and_done() {
    let _alone = crate::alone();
    let opts = FirehoseOptions {
        tokens: 300,
        batch: 7,
        clock: Clock::real(),
    };
    let server = start(opts, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("start");
    let client = client_for(&server.base_url(), Clock::real()).await;
    let mut tasks = Vec::new();
    for max_tokens in [Value::Null, json!(1), json!(64), json!(65)] {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let mut body = json!({"messages": [{"role": "user", "content": "go"}], "stream": true});
            if !max_tokens.is_null() {
                body["max_tokens"] = max_tokens;
            }
            client.call(request(body)).await
        }));
    }
    for (task, want) in tasks.into_iter().zip([300u64, 1, 64, 65]) {
        let o = task.await.expect("task");
        assert!(o.is_ok(), "{:?}", o.error);
        assert_eq!(o.usage.map(|u| u.completion_tokens), Some(want));
        assert_eq!(o.text_chunks, want);
        assert_eq!(o.gaps.len() as u64, want - 1);
        assert_eq!(o.message.content, " tok".repeat(want as usize));
        assert_eq!(o.finish_reason.as_deref(), Some("length"));
        assert!(o.ttft.is_some());
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paced_answers_carry_one_stamp_per_token_in_order() {
    let _alone = crate::alone();
    let clock = Clock::real();
    let opts = FirehoseOptions {
        clock: clock.clone(),
        ..FirehoseOptions::default()
    };
    let server = start(opts, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("start");
    let client = client_for(&server.base_url(), clock).await;
    let body = json!({"messages": [{"role": "user", "content": "go"}], "stream": true,
        "max_tokens": 5, "firehose": {"ttft_ms": 2, "itl_ms": 1}});
    let o = client.call(request(body)).await;
    assert!(o.is_ok(), "{:?}", o.error);
    let stamps = parse_stamps(&o.message.content);
    let received = stamps.received.expect("received stamp");
    assert_eq!(stamps.sent.len(), 5);
    // Pacing only ever delays: each token is written at or after its slot.
    assert!(stamps.sent[0] - received >= 2_000_000);
    assert!(stamps.sent.windows(2).all(|w| w[1] - w[0] >= 0));
    assert!(stamps.sent[4] - received >= 6_000_000);
    assert_eq!(o.gaps.len(), 4);
    server.shutdown().await;
}

#[tokio::test]
async fn bad_requests_are_refused_with_400() {
    let _alone = crate::alone();
    let server = start(
        FirehoseOptions::default(),
        "127.0.0.1:0".parse().expect("addr"),
    )
    .await
    .expect("start");
    let client = client_for(&server.base_url(), Clock::real()).await;
    let o = client
        .call(request(json!({"stream": true, "max_tokens": 0})))
        .await;
    assert_eq!(o.status, Some(400));
    assert!(!o.is_ok());
    server.shutdown().await;
}
