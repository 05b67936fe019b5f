//! The SSE decoder gives the same events however a recorded stream is cut.

use codendum_core::openai::sse::{decode_all, OwnedSseEvent, SseDecoder};
use proptest::prelude::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/fixtures/sse/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const FIXTURES: [&str; 5] = [
    "vllm-chat-tool-call.txt",
    "vllm-completions.txt",
    "crlf-reasoning.txt",
    "comments-multiline.txt",
    "mid-stream-error.txt",
];

/// Decodes `body` fed in pieces cut at `cuts` (positions, any order).
fn decode_split(body: &[u8], cuts: &[usize]) -> Vec<OwnedSseEvent> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    cuts.sort_unstable();
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain(std::iter::once(body.len())) {
        decoder.push(&body[start..cut]);
        start = cut;
        while let Some(ev) = decoder.next_event() {
            out.push(ev.to_owned_event());
        }
    }
    if let Some(ev) = decoder.finish() {
        out.push(ev.to_owned_event());
    }
    out
}

fn data_texts(events: &[OwnedSseEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            OwnedSseEvent::Data(d) => String::from_utf8(d.clone()).unwrap(),
            OwnedSseEvent::Done => "[DONE]".to_string(),
            OwnedSseEvent::Oversized { limit } => format!("<oversized {limit}>"),
        })
        .collect()
}

#[test]
fn recorded_streams_decode_to_the_expected_events() {
    let chat = decode_all(&fixture("vllm-chat-tool-call.txt"));
    assert_eq!(chat.len(), 7);
    assert_eq!(chat.last(), Some(&OwnedSseEvent::Done));
    let texts = data_texts(&chat);
    assert!(texts[0].contains(r#""role":"assistant""#));
    assert!(texts[5].contains(r#""completion_tokens":41"#));

    let completions = decode_all(&fixture("vllm-completions.txt"));
    assert_eq!(completions.len(), 13);

    let crlf = data_texts(&decode_all(&fixture("crlf-reasoning.txt")));
    assert_eq!(crlf.len(), 7);
    assert!(crlf.iter().all(|t| !t.contains('\r')));

    let multi = data_texts(&decode_all(&fixture("comments-multiline.txt")));
    assert_eq!(
        multi,
        vec![
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            "{\"choices\":[{\"index\":0,\n\"delta\":{\"content\":\"multi\"}}]}",
            r#"{"choices":[{"index":0,"delta":{"content":"-line"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ]
    );

    let err = data_texts(&decode_all(&fixture("mid-stream-error.txt")));
    assert_eq!(err.len(), 5);
    assert!(err[3].starts_with(r#"{"error":"#));
}

#[test]
fn line_end_style_does_not_change_events() {
    let lf = fixture("vllm-chat-tool-call.txt");
    let text = String::from_utf8(lf.clone()).unwrap();
    let crlf = text.replace('\n', "\r\n");
    let cr = text.replace('\n', "\r");
    let expected = decode_all(&lf);
    assert_eq!(decode_all(crlf.as_bytes()), expected);
    assert_eq!(decode_all(cr.as_bytes()), expected);
    // Every byte on its own is the worst split.
    let cuts: Vec<usize> = (0..cr.len()).collect();
    assert_eq!(decode_split(cr.as_bytes(), &cuts), expected);
}

#[test]
fn body_without_final_blank_line_or_done() {
    let body = b"data: {\"a\":1}\n\ndata: {\"b\":2}";
    let events = decode_all(body);
    assert_eq!(events.len(), 2);
    assert_eq!(events[1], OwnedSseEvent::Data(b"{\"b\":2}".to_vec()));
    assert_eq!(
        decode_split(b"data: [DONE]", &[3, 9]),
        vec![OwnedSseEvent::Done]
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5ee_d0c5),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_split_gives_the_same_events(
        which in 0usize..FIXTURES.len(),
        cuts in proptest::collection::vec(any::<usize>(), 0..40),
    ) {
        let body = fixture(FIXTURES[which]);
        let whole = decode_all(&body);
        prop_assert_eq!(decode_split(&body, &cuts), whole);
    }

    #[test]
    fn any_split_of_crlf_and_cr_variants(
        which in 0usize..FIXTURES.len(),
        cuts in proptest::collection::vec(any::<usize>(), 0..40),
        cr_only in any::<bool>(),
    ) {
        let body = fixture(FIXTURES[which]);
        let text = String::from_utf8(body.clone()).unwrap().replace("\r\n", "\n");
        let variant = if cr_only { text.replace('\n', "\r") } else { text.replace('\n', "\r\n") };
        prop_assert_eq!(decode_split(variant.as_bytes(), &cuts), decode_all(text.as_bytes()));
    }
}

#[test]
fn no_line_length_limit() {
    let payload = "x".repeat(300_000);
    let body = format!("data: {payload}\n\ndata: [DONE]\n\n");
    let cuts: Vec<usize> = (0..body.len()).step_by(997).collect();
    let events = decode_split(body.as_bytes(), &cuts);
    assert_eq!(events.len(), 2);
    assert_eq!(events[0], OwnedSseEvent::Data(payload.into_bytes()));
}
