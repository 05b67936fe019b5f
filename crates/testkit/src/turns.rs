//! A `/metrics` endpoint that answers with recorded pages in turn, one
//! page per request, as a load balancer that forwards each read to the
//! next replica does (the vLLM Router proxies `GET /metrics` so). Plain
//! threads and HTTP/1.1 with `Connection: close`, on 127.0.0.1 port 0.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Serves `pages[0]`, `pages[1]`, … in turn until dropped.
pub struct TurnTakingMetrics {
    /// The `/metrics` URL.
    pub url: String,
    served: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl TurnTakingMetrics {
    /// Starts serving `pages` in turn.
    pub fn start(pages: Vec<String>) -> TurnTakingMetrics {
        assert!(!pages.is_empty(), "at least one page");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}/metrics", listener.local_addr().expect("addr"));
        let served = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, flag) = (Arc::clone(&served), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((socket, _)) => {
                        let n = count.fetch_add(1, Ordering::Relaxed);
                        let page = pages[n % pages.len()].clone();
                        std::thread::spawn(move || answer(socket, &page));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        TurnTakingMetrics { url, served, stop }
    }

    /// Requests answered so far.
    pub fn served(&self) -> usize {
        self.served.load(Ordering::Relaxed)
    }
}

fn answer(socket: std::net::TcpStream, page: &str) {
    let _ = socket.set_nonblocking(false);
    let _ = socket.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(&socket);
    let mut line = String::new();
    // The request line and headers, up to the blank line.
    while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
        if line == "\r\n" || line == "\n" {
            break;
        }
        line.clear();
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4; charset=utf-8\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        page.len()
    );
    let mut out = &socket;
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(page.as_bytes());
    let _ = out.flush();
}

impl Drop for TurnTakingMetrics {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
