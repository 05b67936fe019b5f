//! What a replay and an export need is sizes, timing and prefix structure:
//! `capture --no-text` keeps no message text, and no export of a capture
//! (with or without text) holds a key or a word of any message.

use std::time::Duration;

use codendum::app::replay::{export_trace, TraceFormat};
use codendum::capture::{self, CaptureConfig};

use crate::capture_support::{any_file_contains, session, twin, KEY, SYSTEM};

/// Words of the session's messages (system prompt, user request, tool
/// descriptions, tool results' file name) that must appear nowhere.
const TEXTS: &[&str] = &[
    SYSTEM,
    "Add a method to ChatServer",
    "The read tool",
    "ChatServer.java",
];

#[tokio::test]
async fn no_text_captures_and_exports_hold_no_text_and_no_key() {
    let twin = twin().await;
    for keep_text in [true, false] {
        let dir = tempfile::tempdir().expect("dir");
        let out = dir.path().join("cap");
        let mut config =
            CaptureConfig::new(&twin.base_url(), "127.0.0.1:0", out.clone()).expect("config");
        config.keep_text = keep_text;
        let cap = capture::start(config).await.expect("capture");
        session(&cap.base_url(), "ses_private", &[0.01, 0.01, 0.01]).await;
        cap.shutdown(Duration::from_secs(2))
            .await
            .expect("shutdown");
        assert_eq!(out.join("prompt.json").exists(), keep_text);
        if !keep_text {
            for t in TEXTS {
                assert!(!any_file_contains(&out, t), "{t:?} in a --no-text capture");
            }
        }
        assert!(!any_file_contains(&out, KEY), "a key in the capture");
        let exports = dir.path().join("exports");
        std::fs::create_dir_all(&exports).expect("dir");
        for (format, name) in [
            (TraceFormat::Mooncake, "trace.jsonl"),
            (TraceFormat::Aiperf, "aiperf.jsonl"),
        ] {
            let calls = export_trace(
                &out,
                None,
                16,
                format,
                &exports.join(name),
                &mut std::io::sink(),
                &codendum::events::Events::silent(),
            )
            .expect("exports");
            assert_eq!(calls, 4, "the four agent steps");
        }
        for t in TEXTS.iter().chain([&KEY]) {
            assert!(!any_file_contains(&exports, t), "{t:?} in an export");
        }
        let lines = std::fs::read_to_string(exports.join("aiperf.jsonl")).expect("read");
        for line in lines.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("json");
            let mut keys: Vec<&str> = v
                .as_object()
                .expect("object")
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            let first = v.get("timestamp").is_some();
            let expected: &[&str] = if first {
                &[
                    "hash_ids",
                    "input_length",
                    "output_length",
                    "session_id",
                    "timestamp",
                ]
            } else {
                &[
                    "delay",
                    "hash_ids",
                    "input_length",
                    "output_length",
                    "session_id",
                ]
            };
            assert_eq!(keys, expected);
        }
    }
    twin.shutdown().await;
}
