//! The SSE decoder, chunk parsing and the stream meter on arbitrary bytes,
//! split into pieces at places the input chooses.
#![no_main]

use codendum_core::openai::chunk::{parse_chunk, Assembler};
use codendum_core::openai::sse::{decode_all, OwnedSseEvent, SseDecoder, SseEvent};
use codendum_core::openai::stream::StreamMeter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // First byte: piece length for the incremental decode (1..=32).
    let (step, body) = match data.split_first() {
        Some((s, rest)) => (usize::from(*s % 32) + 1, rest),
        None => (1, data),
    };
    let whole = decode_all(body);
    let mut decoder = SseDecoder::new();
    let mut pieces = Vec::new();
    let mut assembler = Assembler::new();
    for piece in body.chunks(step) {
        decoder.push(piece);
        while let Some(ev) = decoder.next_event() {
            if let SseEvent::Data(d) = ev {
                if let Ok(chunk) = parse_chunk(d) {
                    assembler.apply(&chunk);
                }
            }
            pieces.push(ev.to_owned_event());
        }
    }
    if let Some(ev) = decoder.finish() {
        pieces.push(ev.to_owned_event());
    }
    assert_eq!(whole, pieces, "events depend on how the body is split");
    assert!(pieces
        .iter()
        .all(|e| !matches!(e, OwnedSseEvent::Data(d) if d.is_empty())));
    let mut meter = StreamMeter::new(0.0, true);
    for (i, piece) in body.chunks(step).enumerate() {
        meter.on_bytes(piece, i as f64);
    }
    meter.on_end(1.0e6);
    let outcome = meter.finish(200, 1.0e6);
    assert!(outcome.e2e >= 0.0);
});
