//! Whether successive reads of one `/metrics` URL come from one server:
//! steady, restarted, or several servers answering in turn (a load balancer
//! that forwards `GET /metrics` to one replica after another). Plain
//! functions of the samples, no I/O.
//!
//! Each read is put on a **track**: the run of reads of one server process.
//! A read continues a track when nothing in it contradicts that track's
//! last read: the same process start time (`process_start_time_seconds`),
//! model, KV block size and KV capacity where both say, and no counter
//! (prompt and generated tokens, finished requests, prefix-cache queries,
//! preemptions) below the track's last value.
//!
//! - A read that continues no track opens a new one: the server
//!   **restarted** there (its counters fell back, or its process start
//!   time changed to a later one).
//! - A read that continues an earlier track rather than the current one
//!   means reads go **back and forth** between servers, as does a process
//!   start time earlier than the current one (no restart goes back in
//!   time) and two "restarts" within [`SEVERAL_WITHIN_READS`] reads.
//!   Increases and peaks of such a timeline mix servers: they mean nothing.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::replicas::{replica_order, replica_timeline, ReplicaSample};
use super::snapshot::ServerSnapshot;
use super::window::TimelineSample;

/// The fix people are told when one URL answers for several servers.
pub const SEVERAL_SERVERS_FIX: &str =
    "give one --metrics-url per replica (comma-separated), or --prometheus-url";

/// Two restarts this few reads apart are not restarts (vLLM takes minutes
/// to start): reads alternate between servers.
pub const SEVERAL_WITHIN_READS: usize = 2;

/// What a series of reads of one URL shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContinuityStatus {
    /// One server process throughout.
    Steady,
    /// One server at a time, restarted at least once.
    Restarted,
    /// More than one server answered, in turn.
    SeveralServers,
}

/// One restart: where the new process's reads begin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Restart {
    /// The first read of the restarted server, simulated seconds on the
    /// run's clock (the timeline's `t`).
    pub at_s: f64,
    /// The same read's UTC time.
    pub utc: DateTime<Utc>,
    /// The restarted process's start (`process_start_time_seconds`), when
    /// the page says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_started_utc: Option<DateTime<Utc>>,
    /// What showed it: `process start time changed` or `counters fell back`.
    pub evidence: String,
}

/// Evidence that several servers answer one URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeveralServers {
    /// The read that showed it, simulated seconds on the run's clock.
    pub seen_at_s: f64,
    /// Distinct servers seen (tracks) by the end.
    pub servers_seen: usize,
    /// What showed it, for people (`process start time went back and
    /// forth between 2 values`).
    pub evidence: String,
}

/// The verdict on one URL's reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Continuity {
    /// Steady, restarted or several servers.
    pub status: ContinuityStatus,
    /// The restarts, in time order (empty unless [`ContinuityStatus::Restarted`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restarts: Vec<Restart>,
    /// Why the reads are of several servers (only then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub several: Option<SeveralServers>,
}

impl Continuity {
    /// Whether the reads are of one server at a time.
    pub fn is_one_server(&self) -> bool {
        self.status != ContinuityStatus::SeveralServers
    }
}

/// Something a new read showed, reported once by [`Tracker::observe`].
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The server restarted.
    Restarted(Restart),
    /// The URL answers for several servers (reported once).
    SeveralServers(SeveralServers),
}

/// The counters a read is compared on, in a fixed order.
const COUNTERS: usize = 5;

fn counters(s: &ServerSnapshot) -> [Option<f64>; COUNTERS] {
    [
        s.prompt_tokens,
        s.generation_tokens,
        s.finished_total(),
        s.prefix_cache_queries,
        s.preemptions,
    ]
}

/// What tells one server process from another besides its counters.
#[derive(Debug, Clone, PartialEq)]
struct Identity {
    started: Option<f64>,
    model: Option<String>,
    block_size: Option<u64>,
    kv_capacity: Option<u64>,
}

impl Identity {
    fn of(s: &ServerSnapshot) -> Self {
        Identity {
            started: s.process_start_time_s,
            model: s.model_name.clone(),
            block_size: s.block_size,
            kv_capacity: s.kv_capacity_tokens,
        }
    }

    /// Equal wherever both say.
    fn agrees(&self, other: &Identity) -> bool {
        fn same<T: PartialEq>(a: &Option<T>, b: &Option<T>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
        }
        same(&self.started, &other.started)
            && same(&self.model, &other.model)
            && same(&self.block_size, &other.block_size)
            && same(&self.kv_capacity, &other.kv_capacity)
    }

    /// Another model or cache size, whatever the start times.
    fn config_differs(&self, other: &Identity) -> bool {
        let without_start = |i: &Identity| Identity {
            started: None,
            ..i.clone()
        };
        !without_start(self).agrees(&without_start(other))
    }
}

#[derive(Debug, Clone)]
struct Track {
    identity: Identity,
    last: [Option<f64>; COUNTERS],
    reads: usize,
}

impl Track {
    /// How far `read` is from this track's last read (the sum of the
    /// counters' increases), or `None` when it cannot continue it.
    fn continued_by(&self, identity: &Identity, read: &[Option<f64>; COUNTERS]) -> Option<f64> {
        if !self.identity.agrees(identity) {
            return None;
        }
        let mut distance = 0.0;
        for (before, after) in self.last.iter().zip(read) {
            if let (Some(before), Some(after)) = (before, after) {
                if after < before {
                    return None;
                }
                distance += after - before;
            }
        }
        Some(distance)
    }
}

/// Classifies reads one at a time (the sampler reports events as they
/// come); [`classify`] runs it over a whole timeline.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    tracks: Vec<Track>,
    current: Option<usize>,
    restarts: Vec<Restart>,
    /// Index (in successful reads) of each restart.
    restart_reads: Vec<usize>,
    several: Option<SeveralServers>,
    /// A restart not reported yet: it is reported once
    /// [`SEVERAL_WITHIN_READS`] more reads did not show it to be a turn of
    /// another server.
    pending: Option<Restart>,
    reads: usize,
    start_times: Vec<f64>,
}

impl Tracker {
    /// A tracker that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next read (in time order). Failed scrapes and pages
    /// without vLLM figures or a start time are skipped. Returns the first
    /// evidence of several servers, and a restart once
    /// [`SEVERAL_WITHIN_READS`] reads after it did not turn it into such
    /// evidence.
    pub fn observe(&mut self, sample: &TimelineSample) -> Option<Event> {
        let event = self.take(sample);
        if self.several.is_some() {
            self.pending = None;
        }
        if event.is_some() {
            return event;
        }
        let confirmed = self
            .restart_reads
            .last()
            .is_some_and(|&r| self.reads - r >= SEVERAL_WITHIN_READS);
        if confirmed {
            return self.pending.take().map(Event::Restarted);
        }
        None
    }

    fn take(&mut self, sample: &TimelineSample) -> Option<Event> {
        let snapshot = sample.snapshot.as_ref()?;
        let identity = Identity::of(snapshot);
        let read = counters(snapshot);
        if identity.started.is_none() && read.iter().all(Option::is_none) {
            return None;
        }
        self.reads += 1;
        if let Some(t) = identity.started {
            if !self.start_times.contains(&t) {
                self.start_times.push(t);
            }
        }
        let fits: Vec<(usize, f64)> = self
            .tracks
            .iter()
            .enumerate()
            .filter_map(|(i, track)| Some((i, track.continued_by(&identity, &read)?)))
            .collect();
        let current = self
            .current
            .and_then(|c| fits.iter().find(|(i, _)| *i == c));
        let closest_earlier = fits
            .iter()
            .filter(|(i, _)| Some(*i) != self.current)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        // A track one read old that an earlier track fits better was never
        // a restart: reads went there and came back.
        let chosen = match (current, closest_earlier) {
            (Some(&(c, d)), Some(&(e, de))) if self.tracks[c].reads == 1 && de < d => Some(e),
            (Some(&(c, _)), _) => Some(c),
            (None, Some(&(e, _))) => Some(e),
            (None, None) => None,
        };
        let event = match chosen {
            Some(i) if Some(i) == self.current => None,
            Some(i) => {
                let reason = self.back_and_forth_reason();
                self.current = Some(i);
                self.found_several(sample.t, reason)
            }
            None => self.new_track(sample, &identity),
        };
        let i = match chosen {
            Some(i) => i,
            None => {
                self.tracks.push(Track {
                    identity: identity.clone(),
                    last: read,
                    reads: 0,
                });
                self.tracks.len() - 1
            }
        };
        let track = &mut self.tracks[i];
        for (slot, value) in track.last.iter_mut().zip(read) {
            if value.is_some() {
                *slot = value;
            }
        }
        track.identity = merge(&track.identity, &identity);
        track.reads += 1;
        self.current = Some(i);
        event
    }

    fn back_and_forth_reason(&self) -> String {
        if self.start_times.len() > 1 {
            format!(
                "its process start time went back and forth between {} values",
                self.start_times.len()
            )
        } else {
            "its counters went back and forth".to_string()
        }
    }

    /// A read that continues no track: a restart, unless it cannot be one.
    fn new_track(&mut self, sample: &TimelineSample, identity: &Identity) -> Option<Event> {
        let previous = self.current.map(|c| self.tracks[c].identity.clone())?;
        let back_in_time = matches!(
            (previous.started, identity.started),
            (Some(before), Some(now)) if now < before
        );
        if back_in_time {
            return self.found_several(
                sample.t,
                "its process start time went back to an earlier one".to_string(),
            );
        }
        if previous.config_differs(identity) && self.tracks.len() > 1 {
            return self.found_several(
                sample.t,
                "its model or KV-cache configuration changes between reads".to_string(),
            );
        }
        let too_soon = self
            .restart_reads
            .last()
            .is_some_and(|&r| self.reads - r <= SEVERAL_WITHIN_READS);
        if too_soon {
            return self.found_several(sample.t, self.back_and_forth_reason());
        }
        let evidence = match (previous.started, identity.started) {
            (Some(a), Some(b)) if a != b => "its process start time changed",
            _ => "its counters fell back",
        };
        let restart = Restart {
            at_s: sample.t,
            utc: sample.utc,
            process_started_utc: identity.started.and_then(unix_to_utc),
            evidence: evidence.to_string(),
        };
        self.restarts.push(restart.clone());
        self.restart_reads.push(self.reads);
        if self.several.is_none() {
            self.pending = Some(restart);
        }
        None
    }

    fn found_several(&mut self, t: f64, evidence: String) -> Option<Event> {
        if self.several.is_some() {
            return None;
        }
        let found = SeveralServers {
            seen_at_s: t,
            servers_seen: 0,
            evidence,
        };
        self.several = Some(found.clone());
        Some(Event::SeveralServers(SeveralServers {
            servers_seen: self.servers_seen(),
            ..found
        }))
    }

    fn servers_seen(&self) -> usize {
        self.tracks.len().max(self.start_times.len()).max(2)
    }

    /// What the reads so far show.
    pub fn continuity(&self) -> Continuity {
        if let Some(several) = &self.several {
            return Continuity {
                status: ContinuityStatus::SeveralServers,
                restarts: Vec::new(),
                several: Some(SeveralServers {
                    servers_seen: self.servers_seen(),
                    ..several.clone()
                }),
            };
        }
        Continuity {
            status: if self.restarts.is_empty() {
                ContinuityStatus::Steady
            } else {
                ContinuityStatus::Restarted
            },
            restarts: self.restarts.clone(),
            several: None,
        }
    }
}

/// What a track knows after a read: the read's identity, with what it
/// does not say kept from before.
fn merge(before: &Identity, read: &Identity) -> Identity {
    Identity {
        started: read.started.or(before.started),
        model: read.model.clone().or_else(|| before.model.clone()),
        block_size: read.block_size.or(before.block_size),
        kv_capacity: read.kv_capacity.or(before.kv_capacity),
    }
}

fn unix_to_utc(seconds: f64) -> Option<DateTime<Utc>> {
    if !seconds.is_finite() {
        return None;
    }
    DateTime::from_timestamp_micros((seconds * 1e6).round() as i64)
}

/// What a timeline of one URL shows (samples in time order).
pub fn classify(timeline: &[TimelineSample]) -> Continuity {
    let mut tracker = Tracker::new();
    let mut ordered: Vec<&TimelineSample> = timeline.iter().collect();
    ordered.sort_by(|a, b| a.t.total_cmp(&b.t));
    for sample in ordered {
        tracker.observe(sample);
    }
    tracker.continuity()
}

/// Each URL's continuity over a run: per replica when the reads were
/// split per replica (several URLs), else the whole timeline as `name`.
pub fn classify_run(
    fleet: &[TimelineSample],
    replicas: &[ReplicaSample],
    name: &str,
) -> Vec<(String, Continuity)> {
    if replicas.is_empty() {
        return vec![(name.to_string(), classify(fleet))];
    }
    replica_order(replicas)
        .into_iter()
        .map(|r| {
            let c = classify(&replica_timeline(replicas, &r));
            (r, c)
        })
        .collect()
}

/// [`Tracker`]s of every URL of a run, fed as the sampler reads, for the
/// lines people see the moment something shows.
#[derive(Debug, Default)]
pub struct RunTracker {
    trackers: Vec<(String, Tracker)>,
}

impl RunTracker {
    /// Takes one reading (the fleet's sample and, for several URLs, each
    /// replica's; see [`classify_run`]) and returns a line for each restart
    /// or several servers it shows, once each.
    pub fn observe(
        &mut self,
        fleet: &TimelineSample,
        replicas: &[ReplicaSample],
        name: &str,
    ) -> Vec<String> {
        let reads: Vec<(&str, &TimelineSample)> = if replicas.is_empty() {
            vec![(name, fleet)]
        } else {
            replicas
                .iter()
                .map(|r| (r.replica.as_str(), &r.sample))
                .collect()
        };
        let mut lines = Vec::new();
        for (replica, sample) in reads {
            let at = match self.trackers.iter().position(|(n, _)| n == replica) {
                Some(i) => i,
                None => {
                    self.trackers.push((replica.to_string(), Tracker::new()));
                    self.trackers.len() - 1
                }
            };
            if let Some(event) = self.trackers[at].1.observe(sample) {
                lines.push(event_line(replica, &event));
            }
        }
        lines
    }
}

/// The line people see when `event` shows on `replica`'s reads.
pub fn event_line(replica: &str, event: &Event) -> String {
    match event {
        Event::Restarted(r) => {
            let started = r
                .process_started_utc
                .map(|u| format!(", its process started at {}", u.format("%H:%M:%S UTC")))
                .unwrap_or_default();
            format!(
                "the server behind {replica} restarted ({}{started}; first read at {}): \
                 its counters are summed per process from here",
                r.evidence,
                r.utc.format("%H:%M:%S UTC")
            )
        }
        Event::SeveralServers(s) => format!(
            "{replica} answers /metrics for more than one server ({}): it is behind a load balancer in front of \
             several replicas, so the peaks and counter increases read from it will be left \
             empty; {}",
            s.evidence,
            SEVERAL_SERVERS_FIX
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn read(t: f64, started: Option<f64>, tokens: f64, finished: f64) -> TimelineSample {
        TimelineSample {
            utc: DateTime::from_timestamp(1_800_000_000 + t as i64, 0).unwrap(),
            t,
            snapshot: Some(ServerSnapshot {
                generation_tokens: Some(tokens),
                prompt_tokens: Some(tokens * 2.0),
                finished_requests: Some(BTreeMap::from([("length".to_string(), finished)])),
                process_start_time_s: started,
                ..ServerSnapshot::default()
            }),
            error: None,
        }
    }

    #[test]
    fn a_growing_server_is_steady() {
        let reads: Vec<_> = (0..10)
            .map(|i| read(i as f64, Some(100.0), i as f64 * 10.0, i as f64))
            .collect();
        let c = classify(&reads);
        assert_eq!(c.status, ContinuityStatus::Steady);
        assert!(c.restarts.is_empty() && c.several.is_none());
    }

    #[test]
    fn a_new_start_time_is_one_restart_where_its_reads_begin() {
        let mut reads = vec![
            read(0.0, Some(100.0), 500.0, 5.0),
            read(1.0, Some(100.0), 600.0, 6.0),
        ];
        reads.push(TimelineSample {
            snapshot: None,
            error: Some("connection refused".into()),
            ..read(2.0, None, 0.0, 0.0)
        });
        reads.extend((3..8).map(|i| read(i as f64, Some(200.0), i as f64 * 3.0, 0.0)));
        let c = classify(&reads);
        assert_eq!(c.status, ContinuityStatus::Restarted);
        assert_eq!(c.restarts.len(), 1);
        assert_eq!(c.restarts[0].at_s, 3.0);
        assert_eq!(c.restarts[0].evidence, "its process start time changed");
        assert_eq!(
            c.restarts[0].process_started_utc,
            DateTime::from_timestamp(200, 0)
        );
    }

    #[test]
    fn counters_that_fall_back_once_are_a_restart_without_a_start_time() {
        let reads = [
            read(0.0, None, 500.0, 5.0),
            read(1.0, None, 600.0, 6.0),
            read(2.0, None, 4.0, 0.0),
            read(3.0, None, 90.0, 1.0),
            // Past the old server's last values: still the new one.
            read(4.0, None, 700.0, 7.0),
        ];
        let c = classify(&reads);
        assert_eq!(c.status, ContinuityStatus::Restarted);
        assert_eq!(c.restarts[0].at_s, 2.0);
        assert_eq!(c.restarts[0].evidence, "its counters fell back");
    }

    #[test]
    fn start_times_that_alternate_are_several_servers() {
        let reads: Vec<_> = (0..6)
            .map(|i| {
                let server = i % 2;
                read(
                    i as f64,
                    Some(100.0 + server as f64),
                    i as f64 * 10.0,
                    i as f64,
                )
            })
            .collect();
        let c = classify(&reads);
        assert_eq!(c.status, ContinuityStatus::SeveralServers);
        let several = c.several.expect("evidence");
        assert_eq!(several.seen_at_s, 2.0, "at the first read back");
        assert_eq!(several.servers_seen, 2);
        assert!(several.evidence.contains("start time"), "{several:?}");
    }

    #[test]
    fn counters_that_go_back_and_forth_are_several_servers() {
        // A big server and a small one in turn, no start time: every other
        // read falls back, and the next one is past the big one again.
        let reads: Vec<_> = (0..6)
            .map(|i| {
                let (tokens, done) = if i % 2 == 0 {
                    (10_000.0 + i as f64, 100.0 + i as f64)
                } else {
                    (50.0 + i as f64, 1.0 + i as f64)
                };
                read(i as f64, None, tokens, done)
            })
            .collect();
        let c = classify(&reads);
        assert_eq!(c.status, ContinuityStatus::SeveralServers, "{c:?}");
        assert!(c.restarts.is_empty());
        assert_eq!(c.several.unwrap().seen_at_s, 2.0);
    }

    #[test]
    fn an_earlier_start_time_is_no_restart() {
        let reads = [
            read(0.0, Some(200.0), 5.0, 1.0),
            read(1.0, Some(100.0), 1.0, 0.0),
        ];
        assert_eq!(classify(&reads).status, ContinuityStatus::SeveralServers);
    }

    #[test]
    fn the_tracker_reports_each_restart_and_several_servers_once() {
        let mut tracker = Tracker::new();
        let events: Vec<Event> = (0..8)
            .filter_map(|i| tracker.observe(&read(i as f64, Some((i % 2) as f64), 1.0, 1.0)))
            .collect();
        // Read 1 looks like a restart; read 2 shows the reads alternate:
        // one event, no restart.
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(matches!(events[0], Event::SeveralServers(_)));
        assert_eq!(
            tracker.continuity().status,
            ContinuityStatus::SeveralServers
        );
    }

    #[test]
    fn a_restart_is_reported_once_two_reads_confirm_it() {
        let mut tracker = Tracker::new();
        let mut events = Vec::new();
        for i in 0..6 {
            let started = if i < 3 { 1.0 } else { 2.0 };
            if let Some(e) = tracker.observe(&read(i as f64, Some(started), i as f64, 0.0)) {
                events.push((i, e));
            }
        }
        assert_eq!(events.len(), 1, "{events:?}");
        let (at, Event::Restarted(r)) = &events[0] else {
            panic!("{events:?}")
        };
        assert_eq!((*at, r.at_s), (5, 3.0));
    }

    #[test]
    fn failed_reads_and_pages_without_figures_are_skipped() {
        let empty = TimelineSample {
            snapshot: Some(ServerSnapshot::default()),
            ..read(1.0, None, 0.0, 0.0)
        };
        let reads = [
            read(0.0, Some(1.0), 5.0, 1.0),
            empty,
            read(2.0, Some(1.0), 6.0, 1.0),
        ];
        assert_eq!(classify(&reads).status, ContinuityStatus::Steady);
    }
}
