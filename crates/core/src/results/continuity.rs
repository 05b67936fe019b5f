//! What a run's `/metrics` reads showed about the server behind each URL
//! ([`crate::prom::continuity`]), as results: `metrics_continuity` in
//! `summary.json` (only URLs that were not one steady server, so a quiet
//! run's summary is unchanged), the note people read, and what it does to
//! the server figures:
//!
//! - **several servers** behind one URL: every peak and counter increase
//!   computed from that URL mixes servers, so it is left empty (the fleet's
//!   sums too, when the URL is one of several);
//! - **restarted**: increases are summed per segment of one process
//!   (never negative, never twice), and the figures of windows that reach
//!   past the restart are marked (`server_restarted`).

use serde::{Deserialize, Serialize};

use crate::prom::continuity::{Continuity, ContinuityStatus, SEVERAL_SERVERS_FIX};
use crate::results::{ClassroomSummary, LevelSummary};

/// One `/metrics` URL that was not one steady server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricsContinuity {
    /// The URL's replica name (`host:port`, with the path when it is not
    /// `/metrics`).
    pub metrics: String,
    /// What its reads showed; times are seconds since the run started.
    #[serde(flatten)]
    pub continuity: Continuity,
    /// The same for people, one line.
    pub note: String,
}

impl MetricsContinuity {
    /// The record of `metrics`'s reads, with times moved from the clock's
    /// axis to seconds since the run started at `run_t0` (clock seconds);
    /// `None` for a steady server.
    pub fn new(metrics: &str, continuity: Continuity, run_t0: f64) -> Option<Self> {
        if continuity.status == ContinuityStatus::Steady {
            return None;
        }
        let mut continuity = continuity;
        for r in &mut continuity.restarts {
            r.at_s = (r.at_s - run_t0).max(0.0);
        }
        if let Some(s) = continuity.several.as_mut() {
            s.seen_at_s = (s.seen_at_s - run_t0).max(0.0);
        }
        let note = note(metrics, &continuity);
        Some(MetricsContinuity {
            metrics: metrics.to_string(),
            continuity,
            note,
        })
    }

    /// The restarts' times, seconds since the run started.
    pub fn restart_times(&self) -> impl Iterator<Item = f64> + '_ {
        self.continuity.restarts.iter().map(|r| r.at_s)
    }
}

/// The share of the client's completed requests a URL's server must have
/// counted finished to be the whole server: below it, the URL shows one
/// replica of several (a router forwarding `GET /metrics` to one worker
/// always, as the vLLM Router's `consistent_hash` does without a session).
pub const COVERAGE_FLOOR: f64 = 0.9;

/// The evidence that a URL's server saw only part of the run's requests:
/// it counted `server_finished` finished (its `vllm:request_success_total`
/// increase over the run) while the client completed `client_ok` through
/// the base URL. `None` when it counted them all (within
/// [`COVERAGE_FLOOR`], one request of slack), too few were sent to tell,
/// or it counted none: a page that never moves is frozen (a cache, a
/// recording), not a replica of several.
pub fn partial_coverage(server_finished: f64, client_ok: u64) -> Option<String> {
    if client_ok < 4
        || server_finished < 1.0
        || server_finished + 1.0 >= COVERAGE_FLOOR * client_ok as f64
    {
        return None;
    }
    Some(format!(
        "it counted {server_finished:.0} finished requests of the {client_ok} the client completed"
    ))
}

/// Adds to `found` that the only URL, `name`, answered for part of the
/// servers, when its count of finished requests falls short of the
/// client's ([`partial_coverage`]); `at_s`: the run's end, seconds since
/// it started. A URL already found of several servers keeps its record.
/// Returns the new record's note (for stderr), if one was added.
pub fn check_coverage(
    found: &mut Vec<MetricsContinuity>,
    name: &str,
    server_finished: Option<f64>,
    client_ok: u64,
    at_s: f64,
) -> Option<String> {
    let evidence = server_finished.and_then(|n| partial_coverage(n, client_ok))?;
    if found
        .iter()
        .any(|m| m.metrics == name && !m.continuity.is_one_server())
    {
        return None;
    }
    found.retain(|m| m.metrics != name);
    let continuity = Continuity {
        status: ContinuityStatus::SeveralServers,
        restarts: Vec::new(),
        several: Some(crate::prom::continuity::SeveralServers {
            seen_at_s: at_s,
            servers_seen: 2,
            evidence,
        }),
    };
    let record = MetricsContinuity::new(name, continuity, 0.0)?;
    let note = record.note.clone();
    found.push(record);
    Some(note)
}

/// The line people read about one URL.
pub fn note(metrics: &str, continuity: &Continuity) -> String {
    match continuity.status {
        ContinuityStatus::Steady => format!("{metrics}/metrics is one server throughout"),
        ContinuityStatus::Restarted => {
            let at: Vec<String> = continuity
                .restarts
                .iter()
                .map(|r| format!("{:.1} s", r.at_s))
                .collect();
            let why = continuity
                .restarts
                .first()
                .map(|r| r.evidence.as_str())
                .unwrap_or("its counters fell back");
            format!(
                "the server behind {metrics} restarted at {} ({why}): its counter increases \
                 are summed per run of one process, and the figures after the restart are the \
                 restarted server's",
                at.join(", ")
            )
        }
        ContinuityStatus::SeveralServers => {
            let (why, seen) = continuity
                .several
                .as_ref()
                .map(|s| (s.evidence.as_str(), s.seen_at_s))
                .unwrap_or(("its reads disagree", 0.0));
            format!(
                "{metrics} answers /metrics for more than one server ({why}, seen at {seen:.1} s; \
                 behind a load balancer in front of several replicas): the peaks and counter \
                 increases computed from it are left empty; {SEVERAL_SERVERS_FIX}"
            )
        }
    }
}

/// Whether any URL answered for several servers.
pub fn any_several(found: &[MetricsContinuity]) -> bool {
    found
        .iter()
        .any(|m| m.continuity.status == ContinuityStatus::SeveralServers)
}

/// The first restart, seconds since the run started.
pub fn first_restart(found: &[MetricsContinuity]) -> Option<f64> {
    found
        .iter()
        .flat_map(MetricsContinuity::restart_times)
        .fold(None, |acc: Option<f64>, t| {
            Some(acc.map_or(t, |a| a.min(t)))
        })
}

/// Empties a level's server figures (peaks, increases, hit rate, the
/// server's time split); failed scrapes stay.
fn clear_level(level: &mut LevelSummary) {
    level.preemptions = None;
    level.peak_kv_usage = None;
    level.peak_running = None;
    level.peak_waiting = None;
    level.prefix_hit_rate = None;
    level.time_split = None;
}

/// Applies what the reads showed to a bench's levels: with several
/// servers behind a URL, the server figures computed from it are emptied
/// (every level's when it is the only URL or the fleet's sum depends on
/// it; that replica's row of the per-replica table); levels that end after
/// a restart are marked.
pub fn apply_to_levels(levels: &mut [LevelSummary], found: &[MetricsContinuity]) {
    let several: Vec<&str> = found
        .iter()
        .filter(|m| m.continuity.status == ContinuityStatus::SeveralServers)
        .map(|m| m.metrics.as_str())
        .collect();
    let restart = first_restart(found);
    for level in levels {
        if !several.is_empty() {
            clear_level(level);
            if let Some(fleet) = level.fleet.as_mut() {
                clear_replicas(fleet, &several);
            }
        }
        if restart.is_some_and(|t| t <= level.started_at_s + level.wall_time_s) {
            level.server_restarted = true;
        }
    }
}

/// Empties the figures of the replicas named in `several` (a per-replica
/// row read from a URL of several servers), and the imbalance that used them.
fn clear_replicas(fleet: &mut crate::server_figures::FleetFigures, several: &[&str]) {
    let mut cleared = false;
    for r in fleet
        .replicas
        .iter_mut()
        .filter(|r| several.iter().any(|s| r.replica.starts_with(s)))
    {
        let failed = r.failed_samples;
        *r = crate::server_figures::ReplicaFigures {
            replica: std::mem::take(&mut r.replica),
            failed_samples: failed,
            ..Default::default()
        };
        cleared = true;
    }
    if cleared {
        fleet.imbalance = None;
    }
}

/// Applies what the reads showed to a class: several servers empty the
/// server figures (and that replica's row); a restart marks them.
pub fn apply_to_class(summary: &mut ClassroomSummary, found: &[MetricsContinuity]) {
    if any_several(found) {
        summary.server = crate::results::ServerFigures::default();
        let several: Vec<&str> = found
            .iter()
            .filter(|m| m.continuity.status == ContinuityStatus::SeveralServers)
            .map(|m| m.metrics.as_str())
            .collect();
        if let Some(fleet) = summary.server_fleet.as_mut() {
            clear_replicas(fleet, &several);
        }
    }
    if first_restart(found).is_some() {
        summary.server.server_restarted = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prom::continuity::{Restart, SeveralServers};

    fn restarted(at_s: f64) -> Continuity {
        Continuity {
            status: ContinuityStatus::Restarted,
            restarts: vec![Restart {
                at_s,
                utc: chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
                process_started_utc: None,
                evidence: "its process start time changed".into(),
            }],
            several: None,
        }
    }

    fn several() -> Continuity {
        Continuity {
            status: ContinuityStatus::SeveralServers,
            restarts: Vec::new(),
            several: Some(SeveralServers {
                seen_at_s: 103.0,
                servers_seen: 2,
                evidence: "its process start time went back and forth between 2 values".into(),
            }),
        }
    }

    fn level(started_at_s: f64, wall_time_s: f64) -> LevelSummary {
        LevelSummary {
            started_at_s,
            wall_time_s,
            peak_running: Some(4.0),
            preemptions: Some(0.0),
            prefix_hit_rate: Some(0.5),
            ..LevelSummary::default()
        }
    }

    #[test]
    fn a_steady_server_leaves_no_record() {
        let steady = Continuity {
            status: ContinuityStatus::Steady,
            restarts: Vec::new(),
            several: None,
        };
        assert!(MetricsContinuity::new("h:1", steady, 0.0).is_none());
    }

    #[test]
    fn times_are_seconds_since_the_run_started() {
        let m = MetricsContinuity::new("h:1", restarted(112.5), 100.0).unwrap();
        assert_eq!(m.continuity.restarts[0].at_s, 12.5);
        assert!(m.note.contains("restarted at 12.5 s"), "{}", m.note);
        let m = MetricsContinuity::new("router:8000", several(), 100.0).unwrap();
        assert!(m.note.contains("seen at 3.0 s"), "{}", m.note);
        assert!(m.note.contains("--metrics-url per replica"), "{}", m.note);
    }

    #[test]
    fn a_url_that_counted_part_of_the_requests_is_several_servers() {
        assert!(partial_coverage(20.0, 20).is_none());
        assert!(partial_coverage(17.0, 20).is_none(), "one of slack");
        assert!(partial_coverage(0.0, 3).is_none(), "too few to tell");
        assert!(partial_coverage(0.0, 40).is_none(), "a frozen page");
        let mut found = Vec::new();
        check_coverage(&mut found, "router:8000", Some(9.0), 58, 30.0);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].continuity.status, ContinuityStatus::SeveralServers);
        assert!(
            found[0]
                .note
                .contains("counted 9 finished requests of the 58"),
            "{}",
            found[0].note
        );
        check_coverage(&mut found, "h:1", Some(58.0), 58, 30.0);
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn several_servers_empty_the_figures_and_a_restart_marks_later_levels() {
        let mut levels = vec![level(0.0, 10.0), level(10.0, 10.0)];
        let found = [MetricsContinuity::new("h:1", restarted(12.0), 0.0).unwrap()];
        apply_to_levels(&mut levels, &found);
        assert!(!levels[0].server_restarted);
        assert!(levels[1].server_restarted);
        assert_eq!(levels[1].peak_running, Some(4.0));
        let found = [MetricsContinuity::new("h:1", several(), 0.0).unwrap()];
        apply_to_levels(&mut levels, &found);
        for l in &levels {
            assert_eq!(
                (l.peak_running, l.preemptions, l.prefix_hit_rate),
                (None, None, None)
            );
        }
    }
}
