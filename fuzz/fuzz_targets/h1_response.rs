//! The streaming client's HTTP/1.1 response parsing on arbitrary bytes: the
//! head, then the body with the framing the head announced, read in pieces
//! of a size the input chooses. Whatever the bytes, no panic, and the data
//! handed out never exceeds what came in.
#![no_main]

use codendum::client::h1_wire::{parse_response_head, BodyDecoder, Piece};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (step, input) = match data.split_first() {
        Some((s, rest)) => (usize::from(*s % 64) + 1, rest),
        None => (1, data),
    };
    let Ok(Some((used, head))) = parse_response_head(input) else {
        return;
    };
    let body = &input[used..];
    let mut decoder = BodyDecoder::new(head.framing);
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut out = 0usize;
    loop {
        match decoder.next(&buf) {
            Err(_) => return,
            Ok((n, Piece::Data(r))) => {
                assert!(r.end <= buf.len() && n <= buf.len());
                out += r.len();
                buf.drain(..n);
            }
            Ok((n, Piece::Skip)) => {
                assert!(n > 0 && n <= buf.len());
                buf.drain(..n);
            }
            Ok((_, Piece::End)) => break,
            Ok((_, Piece::NeedMore)) if fed >= body.len() => {
                if !decoder.ends_at_close() {
                    break;
                }
                decoder.close();
            }
            Ok((_, Piece::NeedMore)) => {
                let end = (fed + step).min(body.len());
                buf.extend_from_slice(&body[fed..end]);
                fed = end;
            }
        }
    }
    assert!(out <= body.len());
});
