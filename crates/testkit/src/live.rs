//! A live fleet on loopback for the fleet and Prometheus tests: N ordinary
//! twins (one per replica, each on its own port 0), a round-robin TCP
//! router in front (one backend per accepted connection), and a real
//! Prometheus (`/usr/bin/prometheus`, Debian's package) scraping the twins
//! every second from a generated config.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use codendum_twin::TwinHandle;
use tokio::net::{TcpListener, TcpStream};

use crate::cli::{runtime, start_twin};
use crate::real::Component;

/// Twins behind a round-robin router, in real time (Prometheus scrapes in
/// real time and a live target runs on the real clock).
pub struct LiveFleet {
    /// Keeps the twins and the router running.
    pub rt: tokio::runtime::Runtime,
    /// The replicas.
    pub twins: Vec<TwinHandle>,
    /// The router's address.
    pub router: SocketAddr,
}

impl LiveFleet {
    /// `n` twins of `classroom-64k` at 1× real time behind a router.
    pub fn start(n: usize) -> LiveFleet {
        let rt = runtime();
        let twins: Vec<TwinHandle> = (0..n)
            .map(|_| start_twin(&rt, "classroom-64k", 1.0))
            .collect();
        let backends: Vec<SocketAddr> = twins.iter().map(|t| t.addr()).collect();
        let listener = rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("router binds");
        let router = listener.local_addr().expect("router address");
        rt.spawn(round_robin(listener, backends));
        LiveFleet { rt, twins, router }
    }

    /// The OpenAI base URL of the router.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.router)
    }

    /// Every twin's `/metrics`, comma-separated (the `--metrics-url` value).
    pub fn metrics_urls(&self) -> String {
        self.twins
            .iter()
            .map(|t| t.metrics_url())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Each twin's `host:port`, as Prometheus names the instance.
    pub fn instances(&self) -> Vec<String> {
        self.twins.iter().map(|t| t.addr().to_string()).collect()
    }
}

/// Hands each accepted connection to the next backend in turn and copies
/// bytes both ways until either side closes.
async fn round_robin(listener: TcpListener, backends: Vec<SocketAddr>) {
    let mut next = 0usize;
    while let Ok((mut inbound, _)) = listener.accept().await {
        let backend = backends[next % backends.len()];
        next += 1;
        tokio::spawn(async move {
            if let Ok(mut outbound) = TcpStream::connect(backend).await {
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            }
        });
    }
}

/// A Prometheus server started for one test; killed on drop.
pub struct Prometheus {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port that was free a moment ago (bound to port 0 and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` (`host:port`) every second, and
    /// waits until it is ready and has scraped every target once. Run from
    /// a [`crate::real::trial`] that needs [`Component::Prometheus`].
    pub fn start(targets: &[String]) -> Prometheus {
        let dir = tempfile::tempdir().expect("tempdir");
        let quoted: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: vllm\n    static_configs:\n      - targets: [{}]\n",
            quoted.join(", ")
        );
        let config_path: PathBuf = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).expect("config written");
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log file");
        let child = Command::new(Component::Prometheus.program())
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        let prom = Prometheus {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        prom.wait_until(Duration::from_secs(20), |p| p.ready());
        prom.wait_until(Duration::from_secs(20), |p| p.scraped(targets.len()));
        prom
    }

    /// A plain HTTP/1.0 GET on loopback: the body of a 200 answer.
    fn get(&self, path: &str) -> Option<String> {
        use std::io::{Read, Write};
        let addr = self.url.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(addr).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        let (head, body) = answer.split_once("\r\n\r\n")?;
        head.starts_with("HTTP/1.1 200")
            .then(|| body.to_string())
            .or_else(|| head.starts_with("HTTP/1.0 200").then(|| body.to_string()))
    }

    /// A PromQL instant query's JSON answer.
    pub fn query(&self, promql: &str) -> serde_json::Value {
        let encoded: String = promql
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let body = self
            .get(&format!("/api/v1/query?query={encoded}"))
            .expect("Prometheus answers");
        serde_json::from_str(&body).expect("JSON")
    }

    fn ready(&self) -> bool {
        self.get("/-/ready").is_some()
    }

    /// Whether `up` is 1 for `n` targets.
    fn scraped(&self, n: usize) -> bool {
        let v = self.query("up");
        let up = v["data"]["result"]
            .as_array()
            .map(|r| r.iter().filter(|s| s["value"][1] == "1").count())
            .unwrap_or(0);
        up >= n
    }

    fn wait_until(&self, limit: Duration, ok: impl Fn(&Prometheus) -> bool) {
        let start = Instant::now();
        while !ok(self) {
            assert!(
                start.elapsed() < limit,
                "Prometheus at {} not ready in {limit:?}",
                self.url
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
