//! Decoding and parsing a long recorded-shape chat stream: SSE decoding
//! alone, and decoding + chunk parsing + timing (the client's hot path),
//! fed in network-sized pieces.

use codendum_core::openai::sse::{SseDecoder, SseEvent};
use codendum_core::openai::stream::StreamMeter;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

const TEXT_CHUNKS: usize = 8192;
/// A typical TCP segment payload.
const PIECE: usize = 1448;

/// A chat stream with vLLM's exact chunk shape: role chunk, reasoning,
/// content (some with escapes), a tool call, finish, usage and `[DONE]`.
fn long_stream() -> (Vec<u8>, usize) {
    let head = r#"{"id":"chatcmpl-8c1f2a9d3b7e4056","object":"chat.completion.chunk","created":1790690000,"model":"qwen3-coder","choices":[{"index":0,"delta":"#;
    let tail = r#","logprobs":null,"finish_reason":null,"token_ids":null}]}"#;
    let mut s = String::new();
    let push = |delta: &str, s: &mut String| {
        s.push_str("data: ");
        s.push_str(head);
        s.push_str(delta);
        s.push_str(tail);
        s.push_str("\n\n");
    };
    push(r#"{"role":"assistant","content":""}"#, &mut s);
    let words = [
        "public",
        " class",
        " Server",
        " {\\n",
        "    private",
        " int",
        " port",
        ";\\n",
        " \\\"ok\\\"",
    ];
    for i in 0..TEXT_CHUNKS {
        let delta = if i < 64 {
            format!(r#"{{"reasoning_content":" think{i}"}}"#)
        } else {
            format!(r#"{{"content":"{}"}}"#, words[i % words.len()])
        };
        push(&delta, &mut s);
    }
    push(
        r#"{"tool_calls":[{"id":"chatcmpl-tool-5f0c","type":"function","index":0,"function":{"name":"read"}}]}"#,
        &mut s,
    );
    push(
        r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"filePath\": \"src/Server.java\"}"}}]}"#,
        &mut s,
    );
    s.push_str(r#"data: {"id":"chatcmpl-8c1f2a9d3b7e4056","object":"chat.completion.chunk","created":1790690000,"model":"qwen3-coder","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#);
    s.push_str("\n\n");
    s.push_str(r#"data: {"id":"chatcmpl-8c1f2a9d3b7e4056","object":"chat.completion.chunk","created":1790690000,"model":"qwen3-coder","choices":[],"usage":{"prompt_tokens":7412,"total_tokens":15606,"completion_tokens":8194}}"#);
    s.push_str("\n\ndata: [DONE]\n\n");
    // role + text chunks + 2 tool-call deltas + finish + usage + [DONE]
    let events = 1 + TEXT_CHUNKS + 2 + 1 + 1 + 1;
    (s.into_bytes(), events)
}

fn bench(c: &mut Criterion) {
    let (body, events) = long_stream();
    let mut group = c.benchmark_group("sse_bytes");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("decode_only", |b| {
        b.iter(|| {
            let mut d = SseDecoder::new();
            let mut n = 0usize;
            for piece in body.chunks(PIECE) {
                d.push(piece);
                while let Some(ev) = d.next_event() {
                    if let SseEvent::Data(x) = ev {
                        n += x.len();
                    }
                }
            }
            black_box(n)
        })
    });
    group.bench_function("decode_parse_measure", |b| {
        b.iter(|| {
            let mut m = StreamMeter::new(0.0, true);
            for (i, piece) in body.chunks(PIECE).enumerate() {
                m.on_bytes(piece, i as f64 * 1e-3);
            }
            m.on_end(1.0);
            black_box(m.finish(200, 1.0))
        })
    });
    group.finish();

    let mut group = c.benchmark_group("sse_events");
    group.throughput(Throughput::Elements(events as u64));
    group.bench_function("decode_parse_measure", |b| {
        b.iter(|| {
            let mut m = StreamMeter::new(0.0, false);
            for piece in body.chunks(PIECE) {
                m.on_bytes(piece, 0.5);
            }
            let o = m.finish(200, 1.0);
            assert!(o.is_ok() && o.text_chunks == (TEXT_CHUNKS + 2) as u64);
            black_box(o)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
