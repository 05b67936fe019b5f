//! Tests of [`super`] (kept beside it to keep that file short).

use super::*;

fn data(s: &str) -> OwnedSseEvent {
    OwnedSseEvent::Data(s.as_bytes().to_vec())
}

#[test]
fn an_event_past_the_limit_ends_the_stream_once() {
    let mut d = SseDecoder::with_limit(64);
    d.push(b"data: small\n\n");
    assert_eq!(d.next_event(), Some(SseEvent::Data(b"small")));
    // Many data lines of one event: their sum passes the limit.
    for _ in 0..10 {
        d.push(b"data: 0123456789\n");
    }
    assert_eq!(d.next_event(), Some(SseEvent::Oversized { limit: 64 }));
    d.push(b"\ndata: after\n\n");
    assert_eq!(d.next_event(), None);
    assert_eq!(d.finish(), None);
}

#[test]
fn a_line_that_never_ends_is_cut_at_the_limit() {
    let mut d = SseDecoder::with_limit(1000);
    let mut given = None;
    for _ in 0..100 {
        d.push(&[b'x'; 64]);
        if let Some(ev) = d.next_event() {
            given = Some(ev.to_owned_event());
            break;
        }
    }
    assert_eq!(given, Some(OwnedSseEvent::Oversized { limit: 1000 }));
    assert!(d.buf.capacity() == 0, "the buffer is freed");
}

#[test]
fn events_up_to_the_limit_pass() {
    let payload = "y".repeat(MAX_EVENT_BYTES - 10);
    let body = format!("data: {payload}\n\ndata: [DONE]\n\n");
    let ev = decode_all(body.as_bytes());
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[1], OwnedSseEvent::Done);
}

#[test]
fn basic_events_and_done() {
    let ev = decode_all(b"data: {\"a\":1}\n\ndata:{\"b\":2}\n\ndata: [DONE]\n\n");
    assert_eq!(
        ev,
        vec![data("{\"a\":1}"), data("{\"b\":2}"), OwnedSseEvent::Done]
    );
}

#[test]
fn line_ends_comments_and_multiline() {
    let body = b": ping\r\nevent: x\r\nid: 3\r\nretry: 10\r\ndata: a\r\ndata: b\r\r\ndata:c\r\n";
    assert_eq!(decode_all(body), vec![data("a\nb"), data("c")]);
}

#[test]
fn cr_split_from_lf_across_pushes() {
    let mut d = SseDecoder::new();
    d.push(b"data: x\r");
    assert_eq!(d.next_event(), None);
    d.push(b"\n\r");
    assert_eq!(d.next_event(), Some(SseEvent::Data(b"x")));
    assert_eq!(d.next_event(), None);
    d.push(b"\n");
    assert_eq!(d.next_event(), None);
    assert_eq!(d.finish(), None);
}

#[test]
fn bom_and_empty_data_and_field_without_colon() {
    assert_eq!(decode_all(b"\xEF\xBB\xBFdata: a\n\n"), vec![data("a")]);
    assert_eq!(decode_all(b"data:\n\ndata\n\n"), vec![]);
    assert_eq!(
        decode_all(b"data:  two spaces\n\n"),
        vec![data(" two spaces")]
    );
}
