//! Scraping `/metrics` over HTTP, and the sampler that records a timeline in
//! the background (every second by default) during a run.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::parse::{parse, ParseError};
use super::snapshot::ServerSnapshot;
use super::window::{window_stats, TimelineSample, WindowStats};
use crate::clock::Clock;
use crate::error::one_line;
use crate::results::JsonlWriter;

/// Why a scrape failed. The message names the URL and fits on one line.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    /// No HTTP answer: connection refused, DNS, TLS, timeout, body cut short.
    #[error("{url} is unreachable: {reason}")]
    Unreachable {
        /// The `/metrics` URL.
        url: String,
        /// What went wrong, in one line.
        reason: String,
    },
    /// An HTTP answer with a status other than 2xx.
    #[error("{url} answered HTTP {status}")]
    HttpStatus {
        /// The `/metrics` URL.
        url: String,
        /// The HTTP status code.
        status: u16,
    },
    /// A 2xx answer whose body is not Prometheus text (HTML, JSON, empty).
    #[error("{url} did not answer Prometheus metrics: {source}")]
    NotPrometheus {
        /// The `/metrics` URL.
        url: String,
        /// Why the body was rejected.
        source: ParseError,
    },
    /// No URL to scrape.
    #[error("no /metrics URL to scrape")]
    NoUrls,
}

/// How long one scrape may take (real seconds) before it counts as failed:
/// vLLM answers in milliseconds even when busy, so a `/metrics` that takes
/// longer is out of reach (a proxy holding the connection, a firewall
/// dropping packets).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

/// Reads one or several `/metrics` URLs (several replicas) and sums them.
#[derive(Debug, Clone)]
pub struct Scraper {
    client: reqwest::Client,
    urls: Vec<String>,
    timeout: Duration,
}

impl Scraper {
    /// A scraper of `urls` (full `/metrics` URLs) with a limit of
    /// [`SCRAPE_TIMEOUT`] per request.
    pub fn new(client: reqwest::Client, urls: Vec<String>) -> Self {
        Self {
            client,
            urls,
            timeout: SCRAPE_TIMEOUT,
        }
    }

    /// Changes the per-request time limit (real time, a safety net against a
    /// server that never answers).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The URLs this scraper reads.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// Scrapes every URL concurrently and sums the replicas. Any failing URL
    /// fails the whole scrape (a partial sum would understate the load).
    pub async fn scrape(&self) -> Result<ServerSnapshot, ScrapeError> {
        if self.urls.is_empty() {
            return Err(ScrapeError::NoUrls);
        }
        let results = futures::future::join_all(self.urls.iter().map(|u| self.scrape_one(u))).await;
        let snapshots = results.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(match snapshots.as_slice() {
            [one] => one.clone(),
            many => ServerSnapshot::sum(many),
        })
    }

    async fn scrape_one(&self, url: &str) -> Result<ServerSnapshot, ScrapeError> {
        let unreachable = |e: reqwest::Error| ScrapeError::Unreachable {
            url: url.to_string(),
            reason: one_line(&e.without_url()),
        };
        // No OpenMetrics Accept header: vLLM would switch format.
        let response = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "text/plain")
            .timeout(self.timeout)
            .send()
            .await
            .map_err(unreachable)?;
        let status = response.status();
        if !status.is_success() {
            return Err(ScrapeError::HttpStatus {
                url: url.to_string(),
                status: status.as_u16(),
            });
        }
        let body = response.bytes().await.map_err(unreachable)?;
        let text = String::from_utf8_lossy(&body);
        let page = parse(&text).map_err(|source| ScrapeError::NotPrometheus {
            url: url.to_string(),
            source,
        })?;
        Ok(ServerSnapshot::from_exposition(&page))
    }
}

/// Takes one sample now: a snapshot, or the error as text.
pub async fn sample_once(scraper: &Scraper, clock: &Clock) -> TimelineSample {
    let t = clock.now_secs();
    let utc = clock.utc_now();
    match scraper.scrape().await {
        Ok(snapshot) => TimelineSample {
            utc,
            t,
            snapshot: Some(snapshot),
            error: None,
        },
        Err(e) => TimelineSample {
            utc,
            t,
            snapshot: None,
            error: Some(e.to_string()),
        },
    }
}

/// Starts background sampling.
#[derive(Debug)]
pub struct Sampler;

/// A running sampler: read its timeline at any time, stop it at the end.
#[derive(Debug)]
pub struct SamplerHandle {
    scraper: Scraper,
    clock: Clock,
    timeline: Arc<Mutex<Vec<TimelineSample>>>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

fn lock(timeline: &Mutex<Vec<TimelineSample>>) -> MutexGuard<'_, Vec<TimelineSample>> {
    // A panic elsewhere cannot leave a Vec of samples half-written.
    timeline
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Puts a sample in its place by time (an extra sample may land between
/// a periodic scrape's start and its answer).
fn file_by_time(timeline: &mut Vec<TimelineSample>, sample: TimelineSample) {
    let at = timeline.partition_point(|s| s.t <= sample.t);
    timeline.insert(at, sample);
}

impl Sampler {
    /// Samples every `interval` (simulated time on `clock`), the first sample
    /// at once. A failed scrape is recorded as an error sample and sampling
    /// goes on. A scrape slower than the interval skips the ticks it missed.
    /// Call it inside a tokio runtime; dropping the handle stops the task.
    pub fn start(scraper: Scraper, clock: Clock, interval: Duration) -> SamplerHandle {
        Self::spawn(scraper, clock, interval, None)
    }

    /// Like [`Sampler::start`], and also appends each sample to `file` as a
    /// flushed JSON line the moment it is taken (`server-timeline.jsonl`:
    /// `kill -9` keeps every sample). After a failed write the sampler says
    /// so once on stderr and goes on sampling without the file.
    pub fn start_recording(
        scraper: Scraper,
        clock: Clock,
        interval: Duration,
        file: JsonlWriter<std::fs::File, TimelineSample>,
    ) -> SamplerHandle {
        Self::spawn(scraper, clock, interval, Some(file))
    }

    fn spawn(
        scraper: Scraper,
        clock: Clock,
        interval: Duration,
        mut file: Option<JsonlWriter<std::fs::File, TimelineSample>>,
    ) -> SamplerHandle {
        let interval = interval.max(Duration::from_millis(1));
        let timeline = Arc::new(Mutex::new(Vec::new()));
        let (stop, mut stopped) = oneshot::channel();
        let shared = Arc::clone(&timeline);
        let handle_scraper = scraper.clone();
        let handle_clock = clock.clone();
        let task = tokio::spawn(async move {
            let mut next = clock.now();
            loop {
                let step = async {
                    clock.sleep_until(next).await;
                    sample_once(&scraper, &clock).await
                };
                let sample = tokio::select! {
                    biased;
                    _ = &mut stopped => break,
                    sample = step => sample,
                };
                if let Some(writer) = file.as_mut() {
                    if let Err(e) = writer.append(&sample) {
                        eprintln!("codendum: cannot write the server timeline: {e}");
                        file = None;
                    }
                }
                file_by_time(&mut lock(&shared), sample);
                next += interval;
                let now = clock.now();
                while next <= now {
                    next += interval;
                }
            }
        });
        SamplerHandle {
            scraper: handle_scraper,
            clock: handle_clock,
            timeline,
            stop,
            task,
        }
    }
}

impl SamplerHandle {
    /// A copy of the samples taken so far, in order.
    pub fn timeline(&self) -> Vec<TimelineSample> {
        lock(&self.timeline).clone()
    }

    /// The figures of the window [t0, t1] (simulated seconds) so far.
    pub fn window(&self, t0: f64, t1: f64) -> WindowStats {
        window_stats(&lock(&self.timeline), t0, t1)
    }

    /// Takes one extra sample now and files it in the timeline by time, so
    /// that a window shorter than the interval still has a first and a last
    /// reading. Skipped (returns `false`) while the latest scrape failed: an
    /// unreachable `/metrics` would cost a whole scrape timeout each time.
    pub async fn sample_now(&self) -> bool {
        let last_failed = lock(&self.timeline)
            .last()
            .is_some_and(|s| s.snapshot.is_none());
        if last_failed {
            return false;
        }
        let sample = sample_once(&self.scraper, &self.clock).await;
        file_by_time(&mut lock(&self.timeline), sample);
        true
    }

    /// The most recent successful snapshot.
    pub fn latest(&self) -> Option<ServerSnapshot> {
        lock(&self.timeline)
            .iter()
            .rev()
            .find_map(|s| s.snapshot.clone())
    }

    /// How many scrapes failed so far.
    pub fn failed_scrapes(&self) -> usize {
        lock(&self.timeline)
            .iter()
            .filter(|s| s.snapshot.is_none())
            .count()
    }

    /// Stops sampling (a scrape in flight is abandoned) and returns the timeline.
    pub async fn stop(self) -> Vec<TimelineSample> {
        let _ = self.stop.send(());
        let _ = self.task.await;
        let mut guard = lock(&self.timeline);
        std::mem::take(&mut *guard)
    }
}
