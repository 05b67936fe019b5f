//! A scripted HTTP/1.1 server for the client tests: it reads one request,
//! then plays a script of writes, pauses and endings, with chunked
//! transfer encoding. Generic over the stream, so it serves TLS too.

use std::time::Duration;

use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_core::openai::body::{chat_body, BodyOptions};
use codendum_core::openai::{CallRequest, Endpoint};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A one-message chat request with an `x-session-id` header.
pub fn chat_request(key: Option<&str>, record_gaps: bool) -> CallRequest {
    CallRequest {
        endpoint: Endpoint::Chat,
        body: chat_body(
            "m",
            vec![json!({"role": "user", "content": "hi"})],
            8,
            &BodyOptions::default(),
        )
        .into(),
        api_key: key.map(Secret::new),
        headers: vec![("x-session-id".into(), "s-1".into())],
        record_gaps,
        first_token: None,
    }
}

/// One step of a response script.
#[derive(Debug, Clone)]
pub enum Step {
    /// Write these bytes as one HTTP chunk.
    Chunk(String),
    /// Pause until this many milliseconds after the request was read.
    At(u64),
    /// End the body properly (terminal chunk) and close.
    End,
    /// Close the connection without ending the body.
    Drop,
    /// Stay silent for this many milliseconds.
    Stall(u64),
}

/// A `data: <json>\n\n` event for a chat delta.
pub fn chat_event(delta: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or("null".to_string(), |f| format!("\"{f}\""));
    format!(
        "data: {{\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
    )
}

/// Reads one request (headers and a content-length body).
async fn read_request<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Ok(buf);
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = stream.read(&mut tmp).await?;
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            return Ok(buf);
        }
    }
}

/// Serves one connection with `script`, pacing on `clock`.
pub async fn serve_script<S>(mut stream: S, script: Vec<Step>, clock: Clock) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    read_request(&mut stream).await?;
    let start = clock.now();
    stream
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n")
        .await?;
    stream.flush().await?;
    for step in script {
        match step {
            Step::Chunk(s) => {
                let framed = format!("{:x}\r\n{s}\r\n", s.len());
                stream.write_all(framed.as_bytes()).await?;
                stream.flush().await?;
            }
            Step::At(ms) => clock.sleep_until(start + Duration::from_millis(ms)).await,
            Step::Stall(ms) => clock.sleep(Duration::from_millis(ms)).await,
            Step::End => {
                stream.write_all(b"0\r\n\r\n").await?;
                stream.flush().await?;
                return stream.shutdown().await;
            }
            Step::Drop => return Ok(()),
        }
    }
    Ok(())
}

/// Binds a loopback port and serves every connection with `script`.
/// Returns the base URL (`http://127.0.0.1:PORT/v1`).
pub async fn spawn_plain(script: Vec<Step>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let _ = socket.set_nodelay(true);
            let script = script.clone();
            tokio::spawn(async move {
                let _ = serve_script(socket, script, Clock::real()).await;
            });
        }
    });
    format!("http://127.0.0.1:{port}/v1")
}

/// Text chunks in [`paced_script`].
pub const TEXT_CHUNKS: u64 = 6;

/// A paced chat stream: the role chunk at once, the first text at 200 ms,
/// then one every 50 ms ([`TEXT_CHUNKS`] in all, `t0 ` … `t5 `), then `end`.
pub fn paced_script(end: Vec<Step>) -> Vec<Step> {
    let mut s = vec![Step::Chunk(chat_event(
        r#"{"role":"assistant","content":""}"#,
        None,
    ))];
    for i in 0..TEXT_CHUNKS {
        s.push(Step::At(200 + 50 * i));
        s.push(Step::Chunk(chat_event(
            &format!(r#"{{"content":"t{i} "}}"#),
            None,
        )));
    }
    s.extend(end);
    s
}
