//! [`PromSource`]: the queries themselves (a check that the fleet is there,
//! the load now for the busy guard, and a window's timelines).

use std::time::Duration;

use super::super::api::{unix_secs, PromClient};
use super::{
    instance_filter, instance_of, rebuild_timelines, PromSource, PromSourceError, CATCH_UP_SLACK,
    PROBE_METRIC, SNAPSHOT_SAMPLE_NAMES,
};
use codendum_core::clock::Clock;
use codendum_core::prom::latency::LATENCY_HISTOGRAMS;
use codendum_core::prom::replicas::ReplicaSample;
use codendum_core::prom::window::TimelineSample;

impl PromSource {
    /// A source reading `client`'s Prometheus every `step`. `selector`: a
    /// PromQL label filter chosen by the operator (`job="vllm"`); without
    /// one, the filter picks the `expected` instances (`host:port` of each
    /// `--metrics-url`), which then must all be there.
    pub fn new(
        client: PromClient,
        selector: Option<String>,
        expected: Vec<String>,
        step: Duration,
    ) -> Self {
        let chosen = selector.is_some();
        let selector = match selector {
            Some(s) => s
                .trim()
                .trim_start_matches('{')
                .trim_end_matches('}')
                .to_string(),
            None if expected.is_empty() => String::new(),
            None => instance_filter(&expected),
        };
        PromSource {
            client,
            selector,
            chosen,
            expected,
            step: step.max(Duration::from_millis(1)),
        }
    }

    /// The label filter of every query (between the braces).
    pub fn selector(&self) -> &str {
        &self.selector
    }

    /// The sampling interval (the range queries' step).
    pub fn step(&self) -> Duration {
        self.step
    }

    /// The Prometheus base URL.
    pub fn url(&self) -> &str {
        self.client.base()
    }

    fn with_filter(&self, metric: &str) -> String {
        format!("{metric}{{{}}}", self.selector)
    }

    fn no_series(&self, filter: String, hint: &str) -> PromSourceError {
        PromSourceError::NoSeries {
            url: self.client.base().to_string(),
            metric: PROBE_METRIC.to_string(),
            filter,
            hint: hint.to_string(),
        }
    }

    /// The instances Prometheus holds now under the filter, in the order of
    /// the expected ones (else sorted). Errors: none at all, or an expected
    /// instance missing (the message names the metric and the filter).
    pub async fn instances(&self) -> Result<Vec<String>, PromSourceError> {
        let now = unix_secs(chrono::Utc::now());
        let series = self
            .client
            .query(&self.with_filter(PROBE_METRIC), now)
            .await?;
        let mut found: Vec<String> = series.iter().map(instance_of).collect();
        found.sort();
        found.dedup();
        if found.is_empty() {
            let hint = if self.chosen {
                "check the labels Prometheus gives the replicas (see its /targets page)"
            } else {
                "name the replicas with --metrics-url (host:port as Prometheus scrapes them) or pass --prometheus-selector"
            };
            return Err(self.no_series(self.selector.clone(), hint));
        }
        if self.expected.is_empty() {
            return Ok(found);
        }
        for e in &self.expected {
            if !found.contains(e) {
                return Err(self.no_series(
                    format!("instance=\"{e}\""),
                    &format!("Prometheus scrapes {} under this filter", found.join(", ")),
                ));
            }
        }
        Ok(self.expected.clone())
    }

    /// Running and waiting requests now, summed over the fleet, from a
    /// scrape taken after this call (waiting for it, as
    /// [`PromSource::wait_until_scraped`]); `None` when Prometheus cannot tell.
    pub async fn load_now(&self) -> Option<(f64, f64)> {
        let asked = unix_secs(chrono::Utc::now());
        self.wait_until_scraped(asked).await;
        let now = unix_secs(chrono::Utc::now());
        let sum = |metric: &'static str| async move {
            let expr = format!("sum({})", self.with_filter(metric));
            let series = self.client.query(&expr, now).await.ok()?;
            series.first()?.points.first().map(|p| p.1)
        };
        let running = sum(PROBE_METRIC).await?;
        let waiting = sum("vllm:num_requests_waiting").await.unwrap_or(0.0);
        Some((running, waiting))
    }

    /// Waits (at most two steps plus [`CATCH_UP_SLACK`], real time) until
    /// Prometheus holds a scrape of every instance at or after `unix_end`,
    /// so a window read now is complete. `false` when it did not catch up.
    pub async fn wait_until_scraped(&self, unix_end: f64) -> bool {
        let deadline = tokio::time::Instant::now() + self.step * 2 + CATCH_UP_SLACK;
        let expr = format!("min(timestamp({}))", self.with_filter(PROBE_METRIC));
        loop {
            let now = unix_secs(chrono::Utc::now());
            if let Ok(series) = self.client.query(&expr, now).await {
                let newest = series.first().and_then(|s| s.points.first()).map(|p| p.1);
                if newest.is_some_and(|t| t >= unix_end) {
                    return true;
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The fleet's and each instance's timeline over `[t_from, t_to]`
    /// (simulated seconds on `clock`, real time for a live server), one
    /// sample per step from `t_from`, after waiting for Prometheus to have
    /// scraped past `t_to`.
    pub async fn fetch(
        &self,
        instances: &[String],
        clock: &Clock,
        t_from: f64,
        t_to: f64,
    ) -> Result<(Vec<TimelineSample>, Vec<ReplicaSample>), PromSourceError> {
        // The grid is in the clock's seconds: Prometheus scrapes in real
        // time, so this needs the real clock of a live server.
        let step = self.step.as_secs_f64();
        let t_from = t_from.max(0.0);
        let steps = ((t_to - t_from) / step + 1e-9).floor().max(-1.0) as i64 + 1;
        let grid: Vec<_> = (0..steps)
            .map(|k| {
                let t = t_from + k as f64 * step;
                (t, clock.utc_at(Duration::from_secs_f64(t)))
            })
            .collect();
        let (Some(first), Some(last)) = (grid.first(), grid.last()) else {
            return Ok((Vec::new(), Vec::new()));
        };
        let (start, end) = (unix_secs(first.1), unix_secs(last.1));
        self.wait_until_scraped(end).await;
        let mut names: Vec<String> = SNAPSHOT_SAMPLE_NAMES
            .iter()
            .map(|n| n.trim_start_matches("vllm:").to_string())
            .collect();
        // The latency histograms too: a window's time split comes from them.
        names.extend(
            LATENCY_HISTOGRAMS
                .iter()
                .map(|(n, _, _)| format!("{}_(bucket|sum|count)", n.trim_start_matches("vllm:"))),
        );
        let names = names.join("|");
        let mut filter = format!("__name__=~\"vllm:({names})\"");
        if !self.selector.is_empty() {
            filter = format!("{filter},{}", self.selector);
        }
        let expr = format!("{{{filter}}}");
        let series = self
            .client
            .query_range(&expr, start, end, self.step.as_secs_f64())
            .await?;
        Ok(rebuild_timelines(&series, instances, &grid))
    }
}
