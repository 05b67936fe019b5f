//! What the capture makes of OpenCode-shaped sessions through the embedded
//! twin: kinds (title, agent, subagent, compaction), the client time between
//! an answer and the session's next request, prompt.json and
//! client-times.json as the classroom reads them.

use std::time::Duration;

use codendum::classroom::{ClientTimeKind, ClientTimes, PromptSet};
use serde_json::{json, Value};

use crate::capture_support::{calls, capture, post, session, step_body, tools, twin, SYSTEM};

#[tokio::test]
async fn kinds_and_the_client_time_of_a_session() {
    let twin = twin().await;
    let dir = tempfile::tempdir().expect("dir");
    let cap = capture(&twin.base_url(), dir.path()).await;
    let base = cap.base_url();
    let http = reqwest::Client::new();
    let title = json!({"model": "qwen3-coder", "stream": true, "max_tokens": 8192, "messages": [
        {"role": "system", "content": "You are a title generator. Output a thread title."},
        {"role": "user", "content": "Generate a title for this conversation:"},
        {"role": "user", "content": "Add a method to ChatServer"}]});
    let (t, names) = tokio::join!(
        post(&http, &base, "ses_main", None, &title),
        session(&base, "ses_main", &[0.30, 0.45, 0.60])
    );
    assert_eq!(t.status, 200);
    assert_eq!(
        names,
        vec![vec!["read"], vec!["edit"], vec!["bash"], vec![]]
    );
    let sub = [
        json!({"role": "system", "content": "You explore."}),
        json!({"role": "user", "content": "find it"}),
    ];
    let s = post(
        &http,
        &base,
        "ses_sub",
        Some("ses_main"),
        &step_body(&sub, true),
    )
    .await;
    assert_eq!(s.status, 200);
    let compaction = json!({"model": "qwen3-coder", "stream": true, "messages": [
        {"role": "system", "content": "You summarise coding sessions."},
        {"role": "user", "content": "Summarize this session so far: read ChatServer, edited it, ran the tests."}]});
    let c = post(&http, &base, "ses_main", None, &compaction).await;
    assert_eq!(c.status, 200);
    cap.shutdown(Duration::from_secs(2))
        .await
        .expect("shutdown");

    let lines = calls(dir.path());
    let kind_of = |k: &str| lines.iter().filter(|l| l["kind"] == k).count();
    assert_eq!(
        (
            kind_of("title"),
            kind_of("agent"),
            kind_of("subagent"),
            kind_of("compaction")
        ),
        (1, 4, 1, 1)
    );
    let sub_line = lines
        .iter()
        .find(|l| l["kind"] == "subagent")
        .expect("subagent");
    assert_eq!(
        (
            sub_line["session"].as_str(),
            sub_line["parent_session"].as_str()
        ),
        (Some("ses_sub"), Some("ses_main"))
    );
    let agent: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "agent").collect();
    assert!(
        agent[0]["client_time_s"].is_null(),
        "the first step has no previous answer"
    );
    let expected = [
        (0.30, "file_tool"),
        (0.45, "after_edit"),
        (0.60, "build_test"),
    ];
    for (step, (pause, kind)) in agent[1..].iter().zip(expected) {
        let ct = step["client_time_s"].as_f64().expect("client time");
        assert!(
            ct >= pause && ct < pause + 0.25,
            "client time {ct} for a pause of {pause}"
        );
        assert_eq!(step["client_time_kind"], kind);
    }
    let after_answer = lines
        .iter()
        .find(|l| l["kind"] == "compaction")
        .expect("compaction");
    assert_eq!(after_answer["client_time_kind"], "user_pause");

    let times =
        ClientTimes::from_path(&dir.path().join("client-times.json")).expect("client-times.json");
    for (pause, kind) in expected {
        let kind = ClientTimeKind::parse(kind).expect("kind");
        let samples = times.samples(kind);
        assert_eq!(samples.len(), 1, "{kind:?}");
        assert!(samples[0] >= pause && samples[0] < pause + 0.25);
    }
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("client-times.json")).expect("read"),
    )
    .expect("json");
    assert_eq!(file["schema_version"], 1);
    assert!(file["kinds"]["file_tool"]["p50_s"].as_f64().is_some());
    let prompt = PromptSet::from_file(&dir.path().join("prompt.json"))
        .expect("prompt.json reads as --prompt-file");
    assert_eq!(prompt.system, SYSTEM);
    assert_eq!(Value::Array(prompt.tools), tools());
    let header: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("capture.json")).expect("read"),
    )
    .expect("json");
    assert_eq!(
        (header["schema_version"].as_u64(), header["calls"].as_u64()),
        (Some(1), Some(7))
    );
    twin.shutdown().await;
}

#[tokio::test]
async fn client_times_are_written_as_they_are_measured() {
    let twin = twin().await;
    let dir = tempfile::tempdir().expect("dir");
    let cap = capture(&twin.base_url(), dir.path()).await;
    session(&cap.base_url(), "ses_live", &[0.05, 0.05, 0.05]).await;
    // Before any shutdown: the files are there once the writer caught up.
    assert!(
        cap.flushed(Duration::from_secs(10)).await,
        "the disk took them"
    );
    let times = ClientTimes::from_path(&dir.path().join("client-times.json"))
        .expect("written incrementally");
    assert_eq!(times.samples(ClientTimeKind::BuildTest).len(), 1);
    assert!(dir.path().join("prompt.json").is_file());
    assert_eq!(calls(dir.path()).len(), 4);
    cap.shutdown(Duration::from_secs(2))
        .await
        .expect("shutdown");
    twin.shutdown().await;
}
