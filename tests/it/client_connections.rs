//! The streaming client's own HTTP/1.1 connections against a raw socket
//! server: keep-alive reuse, a kept connection the server closed meanwhile,
//! a body that ends with the connection, and a chunked body cut short.

use std::time::Duration;

use crate::client_support;

use client_support::chat_request;

use codendum::client::{ClientOptions, HttpClient};
use codendum_core::openai::{CallRequest, ErrorKind, Transport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const EVENTS: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

fn request() -> CallRequest {
    chat_request(None, true)
}

fn client(addr: std::net::SocketAddr) -> HttpClient {
    let opts = ClientOptions {
        timeout: Duration::from_secs(5),
        max_connections: 2,
        ..ClientOptions::default()
    };
    HttpClient::new(
        &codendum_core::access::BaseUrl::parse(format!("http://{addr}/v1")).expect("base URL"),
        opts,
    )
    .expect("client")
}

/// Reads one request (head and `Content-Length` body) off `conn`; `None` at
/// end of file.
async fn read_request(conn: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = conn.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Some(head);
        }
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn chunked(body: &str) -> String {
    format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len())
}

const OK_CHUNKED: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

#[tokio::test]
async fn keep_alive_connections_are_reused_and_a_closed_one_is_replaced() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move {
        let mut accepted = 0;
        let mut answered = 0;
        // First connection: two requests, then the server closes it.
        let (mut conn, _) = listener.accept().await.expect("accept");
        accepted += 1;
        for _ in 0..2 {
            let head = read_request(&mut conn).await.expect("request");
            assert!(
                head.starts_with("POST /v1/chat/completions HTTP/1.1"),
                "{head}"
            );
            assert!(head.contains(&format!("Host: {addr}")), "{head}");
            assert!(head.contains("x-session-id: s-1"), "{head}");
            let answer = format!("{OK_CHUNKED}{}", chunked(EVENTS));
            conn.write_all(answer.as_bytes()).await.expect("write");
            answered += 1;
        }
        drop(conn);
        // The client finds the kept connection closed and opens another.
        let (mut conn, _) = listener.accept().await.expect("accept");
        accepted += 1;
        read_request(&mut conn).await.expect("request");
        let answer = format!("{OK_CHUNKED}{}", chunked(EVENTS));
        conn.write_all(answer.as_bytes()).await.expect("write");
        answered += 1;
        (accepted, answered)
    });
    let c = client(addr);
    for _ in 0..2 {
        let o = c.call(request()).await;
        assert!(o.is_ok(), "{:?}", o.error);
        assert_eq!(o.message.content, "Hi");
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let o = c.call(request()).await;
    assert!(o.is_ok(), "{:?}", o.error);
    assert_eq!(server.await.expect("server"), (2, 3));
}

/// A server that reads the second request on a kept connection and closes
/// it without a byte of answer: that request reached it, so the client must
/// record it as an error and never send it again (a benchmark must not load
/// the server with requests it does not record).
#[tokio::test]
async fn a_request_read_and_left_unanswered_is_an_error_never_a_resend() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.expect("accept");
        read_request(&mut conn).await.expect("first request");
        let answer = format!("{OK_CHUNKED}{}", chunked(EVENTS));
        conn.write_all(answer.as_bytes()).await.expect("write");
        read_request(&mut conn).await.expect("second request");
        drop(conn);
        // Count what else arrives: a resent request would come on a new
        // connection.
        let mut received = 2;
        while let Ok(Ok((mut conn, _))) =
            tokio::time::timeout(Duration::from_millis(500), listener.accept()).await
        {
            while read_request(&mut conn).await.is_some() {
                received += 1;
            }
        }
        received
    });
    let c = client(addr);
    let first = c.call(request()).await;
    assert!(first.is_ok(), "{:?}", first.error);
    let second = c.call(request()).await;
    let error = second.error.expect("the unanswered request is an error");
    assert_eq!(error.kind, ErrorKind::StreamError, "{}", error.message);
    assert!(
        error.message.contains("without answering"),
        "{}",
        error.message
    );
    assert_eq!(server.await.expect("server"), 2, "no request sent twice");
}

#[tokio::test]
async fn a_body_that_ends_with_the_connection_and_one_cut_short() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        // No length, no chunks: the body ends when the server closes.
        let (mut conn, _) = listener.accept().await.expect("accept");
        read_request(&mut conn).await.expect("request");
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{EVENTS}"
        );
        conn.write_all(answer.as_bytes()).await.expect("write");
        drop(conn);
        // A chunked body whose connection drops inside a chunk.
        let (mut conn, _) = listener.accept().await.expect("accept");
        read_request(&mut conn).await.expect("request");
        let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";
        let answer = format!(
            "{OK_CHUNKED}{:x}\r\n{first}\r\n400\r\ndata: {{\"cho",
            first.len()
        );
        conn.write_all(answer.as_bytes()).await.expect("write");
        drop(conn);
        // A 503 with a Retry-After and a JSON body, then keep-alive.
        let (mut conn, _) = listener.accept().await.expect("accept");
        read_request(&mut conn).await.expect("request");
        let body = r#"{"error":{"message":"busy","type":"ServiceUnavailableError","code":503}}"#;
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 3\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        conn.write_all(answer.as_bytes()).await.expect("write");
        let _ = read_request(&mut conn).await;
    });
    let c = client(addr);
    let o = c.call(request()).await;
    assert!(o.is_ok(), "{:?}", o.error);
    assert_eq!(o.message.content, "Hi");
    let o = c.call(request()).await;
    let e = o.error.expect("cut short");
    assert_eq!(e.kind, ErrorKind::StreamError, "{}", e.message);
    assert!(
        e.message.contains("closed before the body ended"),
        "{}",
        e.message
    );
    assert_eq!(o.message.content, "Hi", "what arrived is kept");
    let o = c.call(request()).await;
    let e = o.error.expect("503");
    assert_eq!(e.status, Some(503));
    assert_eq!(e.retry_after, Some(Duration::from_secs(3)));
    assert!(e.message.contains("busy"), "{}", e.message);
}

#[tokio::test]
async fn nothing_listening_is_a_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let o = client(addr).call(request()).await;
    let e = o.error.expect("refused");
    assert_eq!(e.kind, ErrorKind::Connect, "{}", e.message);
    assert!(e.message.contains("cannot connect"), "{}", e.message);
}
