//! `codendum metrics` end to end: read the server's `/metrics` once, or every
//! `--watch` seconds, as a human table / line or as JSON lines that
//! [`codendum_core::prom::read_timeline`] reads back. The tables and lines themselves
//! are drawn by [`crate::scrape::render`].

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use crate::events::Events;
use crate::scrape::render::{render_table, render_watch_line};
use crate::scrape::replicas_render::{render_replica_readings, render_replica_watch};
use crate::scrape::{sample_fleet, Scraper};
use codendum_core::clock::Clock;
use codendum_core::error::{ConfigError, Error};
use codendum_core::prom::{IntervalRates, ReplicaSample, TimelineSample};

/// What `codendum metrics` was asked to do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricsOptions {
    /// The `/metrics` URLs (several replicas are summed); shown in the table.
    pub urls: Vec<String>,
    /// `--watch S`: sample every S (simulated) seconds until stopped.
    pub watch: Option<Duration>,
    /// `--json`: one JSON object per sample on stdout.
    pub json: bool,
    /// Stop after this many samples, failed ones included (at least one is
    /// taken); only meaningful with `watch`. `None`: until the future is dropped.
    pub count: Option<u64>,
}

impl MetricsOptions {
    /// Checks that every URL is an http(s) URL.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for u in &self.urls {
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                return Err(ConfigError::invalid(
                    "--metrics-url",
                    format!("{u} is not an http(s) URL"),
                ));
            }
        }
        Ok(())
    }
}

/// Everything the `codendum metrics` command needs.
pub struct MetricsRun {
    /// What to read and how to show it.
    pub options: MetricsOptions,
    /// A CA certificate for an HTTPS server with a private CA.
    pub cacert: Option<PathBuf>,
    /// Becomes `true` on Ctrl-C / SIGTERM: the normal end of a watch.
    pub stop: watch::Receiver<bool>,
}

/// Runs `codendum metrics` against the real clock, writing its table,
/// lines or JSON to `out` (the binary's stdout) and telling failed scrapes
/// through `events`, until done or stopped (a stop is a normal end: `Ok`).
pub async fn run(
    run: MetricsRun,
    out: &mut (dyn Write + Send),
    events: &Events,
) -> Result<(), Error> {
    run.options.validate()?;
    let client = crate::client::build_http_client(run.cacert.as_deref(), 4)?;
    let scraper = Scraper::new(client, run.options.urls.clone());
    let clock = Clock::real();
    let mut stop = run.stop;
    tokio::select! {
        r = run_metrics(&run.options, &scraper, &clock, out, events) => r,
        // Ctrl-C (or SIGTERM) is how a watch ends: a normal stop.
        _ = stop.wait_for(|s| *s) => Ok(()),
    }
}

/// One `--json` line: a [`TimelineSample`] plus the rates since the previous
/// successful sample (absent for the first one).
#[derive(Debug, Serialize)]
struct JsonLine<'a> {
    #[serde(flatten)]
    sample: &'a TimelineSample,
    #[serde(skip_serializing_if = "Option::is_none")]
    rates: Option<&'a IntervalRates>,
    /// Each replica's reading, for a fleet (several URLs, or one page of
    /// several engines); absent for a single server.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    replicas: &'a [ReplicaSample],
}

fn write_error(e: std::io::Error) -> Error {
    Error::io("cannot write the metrics output", e)
}

fn write_json(
    out: &mut (dyn Write + Send),
    sample: &TimelineSample,
    rates: Option<&IntervalRates>,
    replicas: &[ReplicaSample],
) -> Result<(), Error> {
    let line = serde_json::to_string(&JsonLine {
        sample,
        rates,
        replicas,
    })
    .map_err(|e| Error::Failed(format!("cannot encode a metrics sample as JSON: {e}")))?;
    writeln!(out, "{line}").map_err(write_error)?;
    out.flush().map_err(write_error)
}

/// Runs `codendum metrics`. Once: a table (or one JSON line); an unreachable
/// server or a non-Prometheus answer is an [`Error::Failed`] with a one-line
/// message. With `watch`: a line per interval with gauges and rates; a failed
/// scrape is a warning event (and, with `json`, an error sample on `out`)
/// and sampling goes on.
pub async fn run_metrics(
    opts: &MetricsOptions,
    scraper: &Scraper,
    clock: &Clock,
    out: &mut (dyn Write + Send),
    events: &Events,
) -> Result<(), Error> {
    match opts.watch {
        Some(interval) => watch_loop(opts, interval, scraper, clock, out, events).await,
        None => once(opts, scraper, clock, out).await,
    }
}

async fn once(
    opts: &MetricsOptions,
    scraper: &Scraper,
    clock: &Clock,
    out: &mut (dyn Write + Send),
) -> Result<(), Error> {
    let (sample, replicas) = sample_fleet(scraper, clock).await;
    let Some(snapshot) = &sample.snapshot else {
        let reason = sample.error.as_deref().unwrap_or("scrape failed");
        return Err(Error::Failed(format!("metrics: {reason}")));
    };
    if opts.json {
        return write_json(out, &sample, None, &replicas);
    }
    let urls = if opts.urls.is_empty() {
        scraper.urls()
    } else {
        &opts.urls
    };
    let text = render_table(snapshot, urls) + &render_replica_readings(&replicas);
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(write_error)
}

async fn watch_loop(
    opts: &MetricsOptions,
    interval: Duration,
    scraper: &Scraper,
    clock: &Clock,
    out: &mut (dyn Write + Send),
    events: &Events,
) -> Result<(), Error> {
    let interval = interval.max(Duration::from_millis(1));
    let mut previous: Option<TimelineSample> = None;
    let mut taken: u64 = 0;
    let mut next = clock.now();
    loop {
        clock.sleep_until(next).await;
        let (sample, replicas) = sample_fleet(scraper, clock).await;
        taken += 1;
        if let Some(reason) = &sample.error {
            events.warn(format!(
                "metrics: scrape failed, trying again in {}s: {reason}",
                interval.as_secs_f64()
            ));
            if opts.json {
                write_json(out, &sample, None, &replicas)?;
            }
        } else {
            let rates = previous
                .as_ref()
                .and_then(|p| IntervalRates::between(p, &sample));
            if opts.json {
                write_json(out, &sample, rates.as_ref(), &replicas)?;
            } else {
                let mut text = render_watch_line(&sample, rates.as_ref());
                for r in &replicas {
                    text.push_str(&format!("\n  {}", render_replica_watch(r)));
                }
                writeln!(out, "{text}")
                    .and_then(|()| out.flush())
                    .map_err(write_error)?;
            }
            previous = Some(sample);
        }
        if opts.count.is_some_and(|n| taken >= n) {
            return Ok(());
        }
        next += interval;
        let now = clock.now();
        while next <= now {
            next += interval;
        }
    }
}
