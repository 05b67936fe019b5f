//! HTTP/1.1 on the wire, for the streaming client's own connections
//! (`h1`): the response head (status, framing, keep-alive, retry hints) and
//! the body framing (`Transfer-Encoding: chunked`, `Content-Length`, or a
//! body that ends when the connection closes). Plain functions over bytes:
//! a decoder is fed the unconsumed bytes and says what the next ones are.

use std::ops::Range;

/// Longest chunk-size or trailer line accepted (bytes).
const MAX_LINE: usize = 4096;
/// Most bytes of a response head.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most headers of a response head.
const MAX_HEADERS: usize = 64;

/// The parts of a response head the client acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// The HTTP status code.
    pub status: u16,
    /// How the body ends.
    pub framing: Framing,
    /// Whether the connection may carry another request afterwards
    /// (HTTP/1.1 without `Connection: close`).
    pub keep_alive: bool,
    /// `Retry-After` (seconds or an HTTP date), as sent.
    pub retry_after: Option<String>,
    /// `retry-after-ms`, as sent.
    pub retry_after_ms: Option<String>,
}

/// Parses a response head at the start of `input`: `Ok(None)` until it is
/// complete, else its length in bytes and its parts. `Err` on a malformed or
/// oversized head, or a bad `Content-Length`.
pub fn parse_response_head(input: &[u8]) -> Result<Option<(usize, ResponseHead)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let used = match response.parse(input) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if input.len() > MAX_HEAD => {
            return Err("the response head is too large".into())
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("malformed response head: {e}")),
    };
    let status = response.code.unwrap_or(0);
    let get = |name: &str| {
        response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok())
            .map(|v| v.trim().to_string())
    };
    let chunked =
        get("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let framing = if chunked {
        Framing::Chunked
    } else if let Some(len) = get("content-length") {
        Framing::Length(
            len.parse()
                .map_err(|_| format!("bad Content-Length {len:?}"))?,
        )
    } else if status == 204 || status == 304 {
        Framing::Length(0)
    } else {
        Framing::Close
    };
    let keep_alive = response.version == Some(1)
        && !get("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
    let head = ResponseHead {
        status,
        framing,
        keep_alive,
        retry_after: get("retry-after"),
        retry_after_ms: get("retry-after-ms"),
    };
    Ok(Some((used, head)))
}

/// How a body's end is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Chunks, each with its size, then a zero-size chunk and trailers.
    Chunked,
    /// Exactly this many bytes.
    Length(u64),
    /// Everything until the server closes the connection.
    Close,
}

/// What the next bytes of the input are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Body data at this range of the input.
    Data(Range<usize>),
    /// Framing to step over.
    Skip,
    /// The body is complete.
    End,
    /// More input is needed.
    NeedMore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    Done,
}

/// A body decoder for one response.
#[derive(Debug, Clone)]
pub struct BodyDecoder {
    framing: Framing,
    state: State,
    closed: bool,
}

impl BodyDecoder {
    /// A decoder at the start of a body with this framing.
    pub fn new(framing: Framing) -> Self {
        let state = match framing {
            Framing::Chunked => State::Size,
            Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Data(n),
            Framing::Close => State::Data(u64::MAX),
        };
        BodyDecoder {
            framing,
            state,
            closed: false,
        }
    }

    /// Whether the body ends only when the connection closes.
    pub fn ends_at_close(&self) -> bool {
        self.framing == Framing::Close
    }

    /// The connection closed (the end of a [`Framing::Close`] body).
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Whether the whole body was read and the connection may carry another
    /// request (never for a [`Framing::Close`] body).
    pub fn is_done(&self) -> bool {
        self.state == State::Done && self.framing != Framing::Close
    }

    /// Looks at the unconsumed `input`: how many of its bytes the next piece
    /// uses, and what it is. `Err` on broken framing.
    pub fn next(&mut self, input: &[u8]) -> Result<(usize, Piece), String> {
        match self.state {
            State::Done => Ok((0, Piece::End)),
            State::Data(_) if self.framing == Framing::Close && self.closed && input.is_empty() => {
                self.state = State::Done;
                Ok((0, Piece::End))
            }
            State::Data(_) if input.is_empty() => Ok((0, Piece::NeedMore)),
            State::Data(left) => {
                let take = usize::try_from(left).unwrap_or(usize::MAX).min(input.len());
                let left = left - take as u64;
                self.state = match (left, self.framing) {
                    (0, Framing::Chunked) => State::DataEnd,
                    (0, _) => State::Done,
                    (n, _) => State::Data(n),
                };
                Ok((take, Piece::Data(0..take)))
            }
            State::DataEnd if input.len() < 2 => Ok((0, Piece::NeedMore)),
            State::DataEnd if &input[..2] == b"\r\n" => {
                self.state = State::Size;
                Ok((2, Piece::Skip))
            }
            State::DataEnd => Err("a chunk is longer than its size".into()),
            State::Size => {
                let Some(line) = line(input)? else {
                    return Ok((0, Piece::NeedMore));
                };
                let digits = line.split(|b| *b == b';').next().unwrap_or(&[]);
                let text = std::str::from_utf8(digits).unwrap_or("").trim();
                let size = u64::from_str_radix(text, 16)
                    .map_err(|_| format!("bad chunk size {text:?}"))?;
                self.state = if size == 0 {
                    State::Trailer
                } else {
                    State::Data(size)
                };
                Ok((line.len() + 2, Piece::Skip))
            }
            State::Trailer => match line(input)? {
                None => Ok((0, Piece::NeedMore)),
                Some([]) => {
                    self.state = State::Done;
                    Ok((2, Piece::End))
                }
                Some(l) => Ok((l.len() + 2, Piece::Skip)),
            },
        }
    }
}

/// The line at the start of `input`, without its CRLF (`None` until the
/// CRLF arrived).
fn line(input: &[u8]) -> Result<Option<&[u8]>, String> {
    match input.windows(2).position(|w| w == b"\r\n") {
        Some(at) => Ok(Some(&input[..at])),
        None if input.len() > MAX_LINE => Err("a chunk-size line is too long".into()),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `step` bytes; returns the data and whether
    /// the body ended.
    fn decode(framing: Framing, input: &[u8], step: usize) -> Result<(Vec<u8>, bool), String> {
        let mut d = BodyDecoder::new(framing);
        let mut buf: Vec<u8> = Vec::new();
        let mut fed = 0;
        let mut out = Vec::new();
        loop {
            match d.next(&buf)? {
                (used, Piece::Data(r)) => {
                    out.extend_from_slice(&buf[r]);
                    buf.drain(..used);
                }
                (used, Piece::Skip) => {
                    buf.drain(..used);
                }
                (_, Piece::End) => return Ok((out, true)),
                (_, Piece::NeedMore) if fed >= input.len() => {
                    if d.ends_at_close() {
                        d.close();
                        continue;
                    }
                    return Ok((out, false));
                }
                (_, Piece::NeedMore) => {
                    let end = (fed + step).min(input.len());
                    buf.extend_from_slice(&input[fed..end]);
                    fed = end;
                }
            }
        }
    }

    #[test]
    fn chunked_bodies_decode_whatever_the_read_sizes() {
        let body = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n";
        for step in [1, 2, 3, 7, 100] {
            let (data, ended) = decode(Framing::Chunked, body, step).unwrap();
            assert_eq!(data, b"hello, world", "step {step}");
            assert!(ended);
        }
    }

    #[test]
    fn truncated_and_broken_chunks_are_told_apart() {
        let (data, ended) = decode(Framing::Chunked, b"5\r\nhel", 4).unwrap();
        assert_eq!((data.as_slice(), ended), (&b"hel"[..], false));
        assert!(decode(Framing::Chunked, b"zz\r\n", 4).is_err());
        assert!(decode(Framing::Chunked, b"2\r\nabc\r\n", 8).is_err());
        assert!(decode(Framing::Chunked, &[b'1'; 5000], 5000).is_err());
    }

    #[test]
    fn response_heads_give_status_framing_and_hints() {
        let head =
            b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\ncontent-length: 5\r\n\r\nbody!";
        let (used, h) = parse_response_head(head).unwrap().unwrap();
        assert_eq!(&head[used..], b"body!");
        assert_eq!(
            (h.status, h.framing, h.keep_alive),
            (429, Framing::Length(5), true)
        );
        assert_eq!(h.retry_after.as_deref(), Some("2"));
        let h = parse_response_head(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        )
        .unwrap()
        .unwrap()
        .1;
        assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, false));
        let h = parse_response_head(b"HTTP/1.0 200 OK\r\n\r\n")
            .unwrap()
            .unwrap()
            .1;
        assert_eq!((h.framing, h.keep_alive), (Framing::Close, false));
        assert_eq!(
            parse_response_head(b"HTTP/1.1 200 OK\r\nConte").unwrap(),
            None
        );
        assert!(parse_response_head(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n").is_err());
        assert!(parse_response_head(b"NOPE\r\n\r\n").is_err());
    }

    #[test]
    fn length_and_close_framing() {
        let (data, ended) = decode(Framing::Length(4), b"abcdef", 3).unwrap();
        assert_eq!((data.as_slice(), ended), (&b"abcd"[..], true));
        let (data, ended) = decode(Framing::Length(0), b"", 3).unwrap();
        assert!(data.is_empty() && ended);
        let (data, ended) = decode(Framing::Close, b"all of it", 4).unwrap();
        assert_eq!((data.as_slice(), ended), (&b"all of it"[..], true));
        assert!(!BodyDecoder::new(Framing::Close).is_done());
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: 256,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0xc4_0ced),
            ..proptest::test_runner::Config::default()
        })]

        #[test]
        fn any_chunking_and_any_read_sizes_give_the_data_back(
            data in proptest::collection::vec(proptest::num::u8::ANY, 0..600),
            sizes in proptest::collection::vec(1usize..80, 1..20),
            step in 1usize..50,
        ) {
            let mut body = Vec::new();
            let mut rest = &data[..];
            let mut i = 0;
            while !rest.is_empty() {
                let n = sizes[i % sizes.len()].min(rest.len());
                body.extend_from_slice(format!("{n:X}\r\n").as_bytes());
                body.extend_from_slice(&rest[..n]);
                body.extend_from_slice(b"\r\n");
                rest = &rest[n..];
                i += 1;
            }
            body.extend_from_slice(b"0\r\n\r\n");
            let (out, ended) = decode(Framing::Chunked, &body, step).unwrap();
            proptest::prop_assert_eq!(out, data);
            proptest::prop_assert!(ended);
        }

        #[test]
        fn garbage_never_panics(
            input in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
            step in 1usize..40,
        ) {
            let _ = decode(Framing::Chunked, &input, step);
            let _ = decode(Framing::Length(17), &input, step);
        }
    }
}
