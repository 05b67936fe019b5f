//! Scraping `/metrics` over HTTP (or from a server in this process), and the sampler that records a timeline in
//! the background (every second by default) during a run.

use crate::events::Events;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use codendum_core::clock::Clock;
use codendum_core::error::one_line;
use codendum_core::prom::continuity::{classify_run, Continuity, RunTracker};
use codendum_core::prom::parse::{parse, ParseError};
use codendum_core::prom::replicas::{
    fleet_figures, fleet_window, replica_name, split_replicas, timeline_sample, ReplicaSample,
    Scraped,
};
use codendum_core::prom::snapshot::ServerSnapshot;
use codendum_core::prom::window::{TimelineSample, WindowStats};
use codendum_core::results::JsonlWriter;
use codendum_core::server_figures::FleetFigures;

use super::recording::Recording;

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
    /// `--router-metrics-url` answered a page without any `vllm_router_`
    /// figure.
    #[error(
        "{url} is not the vLLM Router's own metrics page (no vllm_router_ figures): give          --router-metrics-url the router's --prometheus-port"
    )]
    NotRouter {
        /// The URL.
        url: String,
    },
}

/// How long one scrape may take (real seconds) before it counts as failed:
/// vLLM answers in milliseconds even when busy, so a `/metrics` that takes
/// longer is out of reach (a proxy holding the connection, a firewall
/// dropping packets).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

/// Reads one or several `/metrics` URLs (several replicas) and sums them.
#[derive(Debug, Clone)]
pub struct Scraper {
    source: PageSource,
    urls: Vec<String>,
    timeout: Duration,
}

/// Where a scraper's pages come from.
#[derive(Clone)]
enum PageSource {
    /// GET over HTTP.
    Http(reqwest::Client),
    /// A server in this process writes the page when asked (the twin in
    /// virtual time, which has no socket to read).
    InProcess(Arc<dyn Fn() -> String + Send + Sync>),
}

impl std::fmt::Debug for PageSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageSource::Http(_) => f.write_str("Http"),
            PageSource::InProcess(_) => f.write_str("InProcess"),
        }
    }
}

impl Scraper {
    /// A scraper of `urls` (full `/metrics` URLs) with a limit of
    /// [`SCRAPE_TIMEOUT`] per request.
    pub fn new(client: reqwest::Client, urls: Vec<String>) -> Self {
        Self {
            source: PageSource::Http(client),
            urls,
            timeout: SCRAPE_TIMEOUT,
        }
    }

    /// A scraper of one server in this process: `page` writes its
    /// `/metrics` text, `url` names it in messages and results. The page is
    /// parsed and summed as an HTTP one is.
    pub fn in_process(url: String, page: Arc<dyn Fn() -> String + Send + Sync>) -> Self {
        Self {
            source: PageSource::InProcess(page),
            urls: vec![url],
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
        let snapshots = self
            .scrape_each()
            .await
            .into_iter()
            .map(|r| r.map(|s| s.total));
        sum_replicas(snapshots.collect::<Result<Vec<_>, _>>()?)
    }

    /// Scrapes every URL concurrently: one result per URL, in order.
    pub async fn scrape_each(&self) -> Vec<Result<Scraped, ScrapeError>> {
        futures::future::join_all(self.urls.iter().map(|u| self.scrape_one(u))).await
    }

    async fn scrape_one(&self, url: &str) -> Result<Scraped, ScrapeError> {
        let text = self.fetch_text(url).await?;
        let page = parse(&text).map_err(|source| ScrapeError::NotPrometheus {
            url: url.to_string(),
            source,
        })?;
        Ok(Scraped {
            total: ServerSnapshot::from_exposition(&page),
            engines: ServerSnapshot::per_engine(&page),
        })
    }

    /// One page's text from `url` (any Prometheus page: a server's, a
    /// router's), with this scraper's client and time limit.
    pub async fn fetch_text(&self, url: &str) -> Result<String, ScrapeError> {
        let unreachable = |e: reqwest::Error| ScrapeError::Unreachable {
            url: url.to_string(),
            reason: one_line(&e.without_url()),
        };
        let client = match &self.source {
            PageSource::Http(client) => client,
            PageSource::InProcess(page) => return Ok(page()),
        };
        // No OpenMetrics Accept header: vLLM would switch format.
        let response = client
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
        Ok(String::from_utf8_lossy(&body).into_owned())
    }
}

fn sum_replicas(snapshots: Vec<ServerSnapshot>) -> Result<ServerSnapshot, ScrapeError> {
    Ok(match snapshots.as_slice() {
        [] => return Err(ScrapeError::NoUrls),
        [one] => one.clone(),
        many => ServerSnapshot::sum(many),
    })
}

/// Takes one sample now: a snapshot, or the error as text.
pub async fn sample_once(scraper: &Scraper, clock: &Clock) -> TimelineSample {
    sample_fleet(scraper, clock).await.0
}

/// Takes one sample now of the fleet (the sum; any failing replica fails
/// it) and, for a fleet (several URLs, or one page of several engines),
/// one of each replica (see [`split_replicas`]).
pub async fn sample_fleet(
    scraper: &Scraper,
    clock: &Clock,
) -> (TimelineSample, Vec<ReplicaSample>) {
    let t = clock.now_secs();
    let utc = clock.utc_now();
    let each = scraper.scrape_each().await;
    let names: Vec<String> = scraper.urls().iter().map(|u| replica_name(u)).collect();
    let replicas = split_replicas(&names, &each, utc, t);
    let fleet = each
        .into_iter()
        .map(|r| r.map(|s| s.total))
        .collect::<Result<Vec<_>, _>>()
        .and_then(sum_replicas)
        .map_err(|e| e.to_string());
    (timeline_sample(utc, t, fleet), replicas)
}

/// The name of a scraper's server in messages and results: its URL's
/// replica name (the first URL's, for several).
pub fn fleet_name(scraper: &Scraper) -> String {
    scraper
        .urls()
        .first()
        .map(|u| replica_name(u))
        .unwrap_or_default()
}

/// Starts background sampling.
#[derive(Debug)]
pub struct Sampler;

/// What a running sampler has recorded: the fleet's samples and, with
/// several URLs, each replica's.
#[derive(Debug, Default)]
struct Recorded {
    fleet: Vec<TimelineSample>,
    replicas: Vec<ReplicaSample>,
    /// What the reads show about the server, said once as it shows.
    tracker: RunTracker,
    /// The name of the server in those lines.
    name: String,
    /// Where they are told.
    events: Events,
}

/// A running sampler: read its timeline at any time, stop it at the end.
#[derive(Debug)]
pub struct SamplerHandle {
    scraper: Scraper,
    clock: Clock,
    recorded: Arc<Mutex<Recorded>>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

fn lock(recorded: &Mutex<Recorded>) -> MutexGuard<'_, Recorded> {
    // A panic elsewhere cannot leave a Vec of samples half-written.
    recorded
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Puts samples in their place by time (an extra sample may land between
/// a periodic scrape's start and its answer).
fn file_by_time(recorded: &mut Recorded, sample: TimelineSample, replicas: Vec<ReplicaSample>) {
    let name = std::mem::take(&mut recorded.name);
    for line in recorded.tracker.observe(&sample, &replicas, &name) {
        recorded.events.note(line);
    }
    recorded.name = name;
    let at = recorded.fleet.partition_point(|s| s.t <= sample.t);
    recorded.fleet.insert(at, sample);
    for r in replicas {
        let at = recorded
            .replicas
            .partition_point(|s| s.sample.t <= r.sample.t);
        recorded.replicas.insert(at, r);
    }
}

impl Sampler {
    /// Samples every `interval` (simulated time on `clock`), the first sample
    /// at once. A failed scrape is recorded as an error sample and sampling
    /// goes on. A scrape slower than the interval skips the ticks it missed.
    /// Call it inside a tokio runtime; dropping the handle stops the task.
    pub fn start(scraper: Scraper, clock: Clock, interval: Duration) -> SamplerHandle {
        Self::start_recording_fleet(scraper, clock, interval, Recording::default())
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
        let recording = Recording {
            fleet: Some(file),
            replicas: None,
        };
        Self::start_recording_fleet(scraper, clock, interval, recording)
    }

    /// Like [`Sampler::start_recording`], with each replica's samples also
    /// appended to `recording.replicas` (several URLs only).
    pub fn start_recording_fleet(
        scraper: Scraper,
        clock: Clock,
        interval: Duration,
        recording: Recording,
    ) -> SamplerHandle {
        Self::start_with(scraper, clock, interval, recording, Events::silent())
    }

    /// Like [`Sampler::start_recording_fleet`], telling through `events`
    /// what the reads show of the server (a restart, several servers
    /// behind one URL) and a timeline file that could not be written.
    pub fn start_with(
        scraper: Scraper,
        clock: Clock,
        interval: Duration,
        mut recording: Recording,
        events: Events,
    ) -> SamplerHandle {
        let interval = interval.max(Duration::from_millis(1));
        let recorded = Arc::new(Mutex::new(Recorded {
            name: fleet_name(&scraper),
            events: events.clone(),
            ..Recorded::default()
        }));
        let (stop, mut stopped) = oneshot::channel();
        let shared = Arc::clone(&recorded);
        let handle_scraper = scraper.clone();
        let handle_clock = clock.clone();
        let task = tokio::spawn(async move {
            let mut next = clock.now();
            loop {
                let step = async {
                    clock.sleep_until(next).await;
                    sample_fleet(&scraper, &clock).await
                };
                let (sample, replicas) = tokio::select! {
                    biased;
                    _ = &mut stopped => break,
                    sample = step => sample,
                };
                for lost in recording.append(&sample, &replicas) {
                    events.warn(lost);
                }
                file_by_time(&mut lock(&shared), sample, replicas);
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
            recorded,
            stop,
            task,
        }
    }
}

impl SamplerHandle {
    /// A copy of the samples taken so far, in order.
    pub fn timeline(&self) -> Vec<TimelineSample> {
        lock(&self.recorded).fleet.clone()
    }

    /// A copy of each replica's samples so far (empty for one URL).
    pub fn replica_timeline(&self) -> Vec<ReplicaSample> {
        lock(&self.recorded).replicas.clone()
    }

    /// The figures of the window [t0, t1] (simulated seconds) so far.
    pub fn window(&self, t0: f64, t1: f64) -> WindowStats {
        let recorded = lock(&self.recorded);
        fleet_window(&recorded.fleet, &recorded.replicas, t0, t1)
    }

    /// Each replica's figures over [t0, t1]; `None` for one URL.
    pub fn fleet(&self, t0: f64, t1: f64) -> Option<FleetFigures> {
        let recorded = lock(&self.recorded);
        fleet_figures(
            &recorded.replicas,
            codendum_core::server_figures::SOURCE_SCRAPE,
            t0,
            t1,
        )
    }

    /// Takes one extra sample now and files it in the timeline by time, so
    /// that a window shorter than the interval still has a first and a last
    /// reading. Skipped (returns `false`) while the latest scrape failed: an
    /// unreachable `/metrics` would cost a whole scrape timeout each time.
    pub async fn sample_now(&self) -> bool {
        let last_failed = lock(&self.recorded)
            .fleet
            .last()
            .is_some_and(|s| s.snapshot.is_none());
        if last_failed {
            return false;
        }
        let (sample, replicas) = sample_fleet(&self.scraper, &self.clock).await;
        file_by_time(&mut lock(&self.recorded), sample, replicas);
        true
    }

    /// What each URL's reads so far show: one server, a restarted one, or
    /// several behind one URL (see [`classify_run`]).
    pub fn continuity(&self) -> Vec<(String, Continuity)> {
        let recorded = lock(&self.recorded);
        classify_run(
            &recorded.fleet,
            &recorded.replicas,
            &fleet_name(&self.scraper),
        )
    }

    /// The most recent successful snapshot.
    pub fn latest(&self) -> Option<ServerSnapshot> {
        lock(&self.recorded)
            .fleet
            .iter()
            .rev()
            .find_map(|s| s.snapshot.clone())
    }

    /// How many scrapes failed so far.
    pub fn failed_scrapes(&self) -> usize {
        lock(&self.recorded)
            .fleet
            .iter()
            .filter(|s| s.snapshot.is_none())
            .count()
    }

    /// Stops sampling (a scrape in flight is abandoned) and returns the timeline.
    pub async fn stop(self) -> Vec<TimelineSample> {
        self.stop_fleet().await.0
    }

    /// Stops sampling and returns the fleet's timeline and each replica's.
    pub async fn stop_fleet(self) -> (Vec<TimelineSample>, Vec<ReplicaSample>) {
        let _ = self.stop.send(());
        let _ = self.task.await;
        let mut guard = lock(&self.recorded);
        let recorded = std::mem::take(&mut *guard);
        (recorded.fleet, recorded.replicas)
    }
}
