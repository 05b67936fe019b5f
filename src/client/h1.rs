//! The streaming call over plain `http://`, on a small HTTP/1.1 client of
//! our own: the call's task writes the request and reads its socket itself,
//! decoding the chunked body straight into the [`StreamMeter`].
//!
//! reqwest (over hyper) reads each connection in a task of its own and
//! hands every body frame to the caller through a channel, which costs two
//! task wake-ups per SSE event; with thousands of paced streams that was a
//! quarter of the client's CPU per token (docs/performance.md). HTTPS keeps
//! using reqwest. Connections are kept alive and reused (a pool of idle
//! ones per client); a reused connection that the server had closed is
//! replaced once, only when writing the request on it failed, so a request
//! that was written is never sent twice.

use std::sync::Mutex;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use codendum_core::access::BaseUrl;

use super::h1_wire::{parse_response_head, BodyDecoder, Piece, ResponseHead};
use codendum_core::clock::Clock;
use codendum_core::openai::http_error::{error_message, retry_after};
use codendum_core::openai::stream::{Flow, StreamMeter};
use codendum_core::openai::{CallError, CallRequest, ErrorKind};

/// Bytes read from the socket at a time, at first; a read that fills its
/// room doubles it, up to [`MAX_READ_SIZE`] (streams of many small events
/// stay small, a firehose gets large reads).
const READ_SIZE: usize = 8 * 1024;
/// The largest read.
const MAX_READ_SIZE: usize = 256 * 1024;

/// Where a plain-HTTP base URL points, and its idle connections.
#[derive(Debug)]
pub struct H1Pool {
    /// `host:port` to connect to.
    connect_to: String,
    /// The `Host` header.
    authority: String,
    /// The base URL's path (`/v1`).
    base_path: String,
    idle: Mutex<Vec<TcpStream>>,
    max_idle: usize,
}

impl H1Pool {
    /// A pool for `base_url` if it is `http://` (`None` for https): host,
    /// port and path as the base URL was parsed.
    pub fn for_base_url(base_url: &BaseUrl, max_idle: usize) -> Option<Self> {
        if !base_url.is_http() {
            return None;
        }
        let (host, port) = (base_url.host(), base_url.port());
        let authority = match base_url.url().port() {
            Some(p) => format!("{host}:{p}"),
            None => host.clone(),
        };
        Some(H1Pool {
            connect_to: format!("{host}:{port}"),
            authority,
            base_path: base_url.path().trim_end_matches('/').to_string(),
            idle: Mutex::new(Vec::new()),
            max_idle: max_idle.max(1),
        })
    }

    fn checkout(&self) -> Option<TcpStream> {
        let mut idle = self.idle.lock().ok()?;
        while let Some(conn) = idle.pop() {
            // An idle connection has nothing to read; end of file or bytes
            // mean the server closed it or broke the protocol.
            let mut probe = [0u8; 1];
            if matches!(conn.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            {
                return Some(conn);
            }
        }
        None
    }

    fn checkin(&self, conn: TcpStream) {
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < self.max_idle {
                idle.push(conn);
            }
        }
    }
}

/// A failure before the answer's status arrived.
struct SendError {
    kind: ErrorKind,
    message: String,
}

/// One connection with its read buffer (`buf[start..]` not consumed yet).
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
    read_size: usize,
}

impl Conn {
    fn new(stream: TcpStream) -> Self {
        Conn {
            stream,
            buf: Vec::with_capacity(READ_SIZE),
            start: 0,
            read_size: READ_SIZE,
        }
    }

    fn pending(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Reads more bytes after the unconsumed ones; 0 at end of file.
    async fn fill(&mut self) -> std::io::Result<usize> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.reserve(self.read_size);
        let room = self.buf.capacity() - self.buf.len();
        let n = self.stream.read_buf(&mut self.buf).await?;
        if n >= room {
            self.read_size = (self.read_size * 2).min(MAX_READ_SIZE);
        }
        Ok(n)
    }
}

/// The request head for `request` with a body of `body_len` bytes.
fn request_head(pool: &H1Pool, request: &CallRequest, body_len: usize) -> Result<Vec<u8>, String> {
    let mut head = format!(
        "POST {}{} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: {body_len}\r\n",
        pool.base_path,
        request.endpoint.path(),
        pool.authority
    );
    let clean = |s: &str| !s.contains(['\r', '\n']);
    if let Some(key) = &request.api_key {
        if !clean(key.expose()) {
            return Err("the API key contains a line break".into());
        }
        head.push_str("Authorization: Bearer ");
        head.push_str(key.expose());
        head.push_str("\r\n");
    }
    for (name, value) in &request.headers {
        if !clean(name) || !clean(value) || name.contains(':') || name.is_empty() {
            return Err(format!("invalid header {name:?}"));
        }
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    Ok(head.into_bytes())
}

fn parse_head(conn: &mut Conn) -> Result<Option<ResponseHead>, String> {
    let parsed = parse_response_head(conn.pending())?;
    Ok(parsed.map(|(used, head)| {
        conn.start += used;
        head
    }))
}

/// Why [`try_send`] got no answer.
enum NoAnswer {
    /// Writing the request failed because the server had closed the
    /// connection: the request did not reach it whole, so it was not served
    /// and may be sent again on a new connection.
    Unsent,
    /// The request was written (or the failure was something else): it may
    /// have reached the server and been served, so it is never sent again.
    Failed(String),
}

/// Writes the request on `stream` and reads the answer's head.
async fn try_send(stream: TcpStream, bytes: &[u8]) -> Result<(Conn, ResponseHead), NoAnswer> {
    let mut conn = Conn::new(stream);
    if let Err(e) = conn.stream.write_all(bytes).await {
        let closed = matches!(
            e.kind(),
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
        );
        return Err(if closed {
            NoAnswer::Unsent
        } else {
            NoAnswer::Failed(format!("sending the request: {e}"))
        });
    }
    loop {
        match parse_head(&mut conn) {
            Ok(Some(head)) if (100..200).contains(&head.status) => continue,
            Ok(Some(head)) => return Ok((conn, head)),
            Ok(None) => {}
            Err(e) => return Err(NoAnswer::Failed(e)),
        }
        match conn.fill().await {
            Ok(0) if conn.pending().is_empty() => {
                return Err(NoAnswer::Failed(
                    "the server closed the connection without answering (the request was \
                     sent and is not sent again)"
                        .into(),
                ))
            }
            Ok(0) => {
                return Err(NoAnswer::Failed(
                    "the connection closed inside the response head".into(),
                ))
            }
            Ok(_) => {}
            Err(e) => return Err(NoAnswer::Failed(format!("reading the response: {e}"))),
        }
    }
}

/// Sends the request on an idle connection, or a new one. It is sent a
/// second time only when writing it on a reused connection failed because
/// the server had closed that connection (nothing of it was served); once
/// written, a request is never sent again, whatever follows.
async fn send(pool: &H1Pool, bytes: &[u8]) -> Result<(Conn, ResponseHead), SendError> {
    let failed = |message: String| SendError {
        kind: ErrorKind::StreamError,
        message,
    };
    if let Some(stream) = pool.checkout() {
        match try_send(stream, bytes).await {
            Ok(answer) => return Ok(answer),
            Err(NoAnswer::Failed(message)) => return Err(failed(message)),
            Err(NoAnswer::Unsent) => {} // once more on a new connection
        }
    }
    let stream = TcpStream::connect(&pool.connect_to)
        .await
        .map_err(|e| SendError {
            kind: ErrorKind::Connect,
            message: format!("cannot connect to {}: {e}", pool.connect_to),
        })?;
    let _ = stream.set_nodelay(true);
    try_send(stream, bytes).await.map_err(|e| match e {
        NoAnswer::Unsent => {
            failed("the server closed the connection while the request was being sent".into())
        }
        NoAnswer::Failed(message) => failed(message),
    })
}

/// What [`exchange`] ended with.
pub enum Ended {
    /// No answer (connection or protocol failure before the status).
    Failed(ErrorKind, String),
    /// An error status, its body read.
    Status(CallError),
    /// A 2xx stream, measured by the meter in the slot.
    Streamed,
}

/// Sends `body` and reads the answer: an error status with its body, or the
/// stream into a [`StreamMeter`] placed in `slot` (so that a time-out
/// around this keeps what was measured). Times are read on `clock`.
pub async fn exchange(
    pool: &H1Pool,
    clock: &Clock,
    request: &CallRequest,
    body: &[u8],
    sent_at: f64,
    slot: &mut Option<(u16, StreamMeter)>,
) -> Ended {
    let mut bytes = match request_head(pool, request, body.len()) {
        Ok(h) => h,
        Err(e) => return Ended::Failed(ErrorKind::Connect, e),
    };
    bytes.extend_from_slice(body);
    let (mut conn, head) = match send(pool, &bytes).await {
        Ok(x) => x,
        Err(e) => return Ended::Failed(e.kind, e.message),
    };
    let mut decoder = BodyDecoder::new(head.framing);
    if !(200..300).contains(&head.status) {
        let mut text = Vec::new();
        let complete = read_body(&mut conn, &mut decoder, clock, |d, _| {
            let room = super::MAX_ERROR_BODY.saturating_sub(text.len());
            text.extend_from_slice(&d[..d.len().min(room)]);
            if text.len() >= super::MAX_ERROR_BODY {
                Flow::Stop
            } else {
                Flow::Continue
            }
        })
        .await
        .is_ok();
        if complete && head.keep_alive && decoder.is_done() {
            pool.checkin(conn.stream);
        }
        return Ended::Status(CallError {
            kind: ErrorKind::from_status(head.status),
            status: Some(head.status),
            message: error_message(head.status, &text),
            retry_after: retry_after(
                head.retry_after_ms.as_deref(),
                head.retry_after.as_deref(),
                chrono::Utc::now(),
            ),
        });
    }
    let (_, meter) = slot.insert((
        head.status,
        StreamMeter::new(sent_at, request.record_gaps).telling(request.first_token.clone()),
    ));
    match read_body(&mut conn, &mut decoder, clock, |d, now| {
        meter.on_bytes(d, now)
    })
    .await
    {
        Ok(BodyEnd::Ended(now)) => meter.on_end(now),
        Ok(BodyEnd::Stopped) => {}
        Err(e) => {
            let message = format!("reading the stream: {e}");
            meter.fail(ErrorKind::StreamError, &message, clock.now_secs());
            return Ended::Streamed;
        }
    }
    if meter.saw_done() && !decoder.is_done() {
        let drain = read_body(&mut conn, &mut decoder, clock, |_, _| Flow::Continue);
        let _ = clock.timeout(super::DRAIN_AFTER_DONE, drain).await;
    }
    if head.keep_alive && decoder.is_done() {
        pool.checkin(conn.stream);
    }
    Ended::Streamed
}

/// How [`read_body`] ended.
enum BodyEnd {
    /// The body is complete; its last bytes arrived at this time.
    Ended(f64),
    /// `on_data` said stop.
    Stopped,
}

/// Reads the rest of a body, handing each piece of data to `on_data` with
/// the time (on `clock`) its read returned, until it says stop or the body
/// ends. `Err` on a broken connection or framing.
async fn read_body(
    conn: &mut Conn,
    decoder: &mut BodyDecoder,
    clock: &Clock,
    mut on_data: impl FnMut(&[u8], f64) -> Flow,
) -> Result<BodyEnd, String> {
    let mut now = clock.now_secs();
    loop {
        match decoder.next(conn.pending())? {
            (used, Piece::Data(range)) => {
                let data = &conn.buf[conn.start + range.start..conn.start + range.end];
                let flow = on_data(data, now);
                conn.start += used;
                if flow == Flow::Stop {
                    return Ok(BodyEnd::Stopped);
                }
            }
            (used, Piece::Skip) => conn.start += used,
            (_, Piece::End) => return Ok(BodyEnd::Ended(now)),
            (_, Piece::NeedMore) => {
                let read = conn.fill().await;
                now = clock.now_secs();
                match read {
                    Ok(0) if decoder.ends_at_close() => decoder.close(),
                    Ok(0) => return Err("the connection closed before the body ended".into()),
                    Ok(_) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
    }
}
