//! The real vLLM Router (PyPI `vllm-router` 0.1.17, [`Component::VllmRouter`])
//! on loopback in front of given workers, for the `real` tests, and a tap
//! in front of a worker that records the `x-session-id` of every request
//! the router forwards to it.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::live::free_port;
use crate::real::Component;

/// A running vLLM Router; stopped when dropped.
pub struct VllmRouter {
    child: Child,
    /// Its OpenAI base URL (`http://127.0.0.1:PORT/v1`).
    pub base_url: String,
    /// Its own Prometheus page (`http://127.0.0.1:PORT2/metrics`).
    pub metrics_url: String,
    /// Its log.
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl VllmRouter {
    /// Starts the router with `policy` in front of `workers` (origins such
    /// as `http://127.0.0.1:18001`) and waits until it answers `/health`.
    /// It cannot take port 0: free ports are picked, and picked again when
    /// another process took one in between.
    pub fn start(policy: &str, workers: &[String]) -> VllmRouter {
        let dir = tempfile::tempdir().expect("tempdir");
        for attempt in 0..5 {
            let (port, metrics_port) = (free_port(), free_port());
            let log = dir.path().join(format!("router-{attempt}.log"));
            let child = Command::new(Component::VllmRouter.program())
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["--policy", policy, "--worker-urls"])
                .args(workers)
                .args(["--prometheus-host", "127.0.0.1"])
                .args(["--prometheus-port", &metrics_port.to_string()])
                .args(["--worker-startup-check-interval", "1"])
                .args(["--log-level", "warning"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).expect("log file"))
                .spawn()
                .expect("vllm-router starts");
            let mut child = child;
            if wait_healthy(&mut child, port, metrics_port, &log) {
                return VllmRouter {
                    child,
                    base_url: format!("http://127.0.0.1:{port}/v1"),
                    metrics_url: format!("http://127.0.0.1:{metrics_port}/metrics"),
                    log,
                    _dir: dir,
                };
            }
            // Lost a port to another process (the router exited): again.
        }
        panic!("vllm-router did not start in 5 attempts");
    }
}

/// Whether the router came up on its ports (`/health` and its metrics page
/// answer) before it exited; a router that neither comes up nor exits in
/// 60 s fails the test.
fn wait_healthy(child: &mut Child, port: u16, metrics_port: u16, log: &std::path::Path) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return false;
        }
        if http_ok(port, "/health") && http_ok(metrics_port, "/metrics") {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!(
        "vllm-router not healthy in 60 s: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// Whether `GET path` on a loopback port answers 200.
fn http_ok(port: u16, path: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.ends_with(b"200")
}

impl Drop for VllmRouter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP tap in front of one worker: forwards every connection to it and
/// records the `x-session-id` header of each request that passes.
pub struct SessionTap {
    /// The origin to give the router (`http://127.0.0.1:PORT`).
    pub origin: String,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl SessionTap {
    /// Starts a tap in front of `worker` on `rt`.
    pub fn start(rt: &tokio::runtime::Runtime, worker: SocketAddr) -> SessionTap {
        let listener = rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("tap binds");
        let origin = format!("http://{}", listener.local_addr().expect("tap address"));
        let seen: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
        let shared = Arc::clone(&seen);
        rt.spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let slot = {
                    let mut all = shared.lock().expect("tap lock");
                    all.push(Vec::new());
                    all.len() - 1
                };
                tokio::spawn(forward(inbound, worker, Arc::clone(&shared), slot));
            }
        });
        SessionTap { origin, seen }
    }

    /// Every `x-session-id` seen so far.
    pub fn sessions(&self) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        self.each_line(|line| {
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("x-session-id") {
                    found.insert(value.trim().to_string());
                }
            }
        });
        found
    }

    /// The path of every request seen so far (`/v1/chat/completions`,
    /// `/tokenize`, …), in the order of the router's connections.
    pub fn paths(&self) -> Vec<String> {
        let mut found = Vec::new();
        self.each_line(|line| {
            // A request line; on a kept connection it follows the previous
            // request's body on the same line (bodies end without CRLF).
            let Some(rest) = line.strip_suffix(" HTTP/1.1") else {
                return;
            };
            let start = ["GET ", "POST ", "PUT ", "DELETE ", "HEAD ", "PATCH "]
                .iter()
                .filter_map(|m| rest.rfind(m).map(|i| i + m.len()))
                .max();
            if let Some(path) = start.and_then(|i| rest[i..].split(' ').next()) {
                found.push(path.to_string());
            }
        });
        found
    }

    fn each_line(&self, mut f: impl FnMut(&str)) {
        let all = self.seen.lock().expect("tap lock");
        for bytes in all.iter() {
            for line in String::from_utf8_lossy(bytes).split("\r\n") {
                f(line);
            }
        }
    }
}

/// Copies `inbound` to the worker (keeping what the router sent in `seen`)
/// and the worker's answers back, until either side closes.
async fn forward(
    mut inbound: TcpStream,
    worker: SocketAddr,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    slot: usize,
) {
    let Ok(outbound) = TcpStream::connect(worker).await else {
        return;
    };
    let (mut from_worker, mut to_worker) = outbound.into_split();
    let (mut from_router, mut to_router) = inbound.split();
    let up = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from_router.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            seen.lock().expect("tap lock")[slot].extend_from_slice(&buf[..n]);
            if to_worker.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = to_worker.shutdown().await;
    };
    let down = async {
        let _ = tokio::io::copy(&mut from_worker, &mut to_router).await;
        let _ = to_router.shutdown().await;
    };
    tokio::join!(up, down);
}
