//! The busy guard of a live run: refuse to load a server that is serving
//! someone (exit 3, unless `--allow-busy`), and say how to get the server's
//! figures when its load cannot be read at all.

use crate::bench::ServerLoad;
use codendum_core::error::Error;

/// What the busy guard decided when the run may go ahead.
#[derive(Debug, Clone, PartialEq)]
pub enum GuardVerdict {
    /// Nothing running or waiting.
    Idle,
    /// Busy, but `--allow-busy` was given; the warning says why the figures
    /// may be disturbed.
    Allowed(String),
    /// `/metrics` could not be read, so the load is unknown: the run goes
    /// on (its plan says the server was not checked) and the warning says
    /// how to reach the server's figures.
    Unchecked(String),
}

impl GuardVerdict {
    /// The warning to show, if any.
    pub fn warning(&self) -> Option<&str> {
        match self {
            GuardVerdict::Idle => None,
            GuardVerdict::Allowed(w) | GuardVerdict::Unchecked(w) => Some(w),
        }
    }

    /// Whether the server's load was read.
    pub fn checked(&self) -> bool {
        !matches!(self, GuardVerdict::Unchecked(_))
    }
}

/// How a command takes in a server timeline recorded on the host, for the
/// guard's advice when `/metrics` is out of reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineFlag {
    /// The command reads it itself (`classroom --server-timeline`).
    Run,
    /// The report folds it in afterwards (`report --server-timeline`).
    Report,
}

/// The busy guard. `load` is a fresh `/metrics` reading (`None`: it could
/// not be read). Running or waiting requests: refused (exit 3) unless
/// `allow_busy`. No reading: the run goes on unchecked, since a
/// workstation behind the lab's proxy rarely reaches `/metrics`; the
/// warning names the three ways to get the server's side (`timeline` says
/// how this command takes a host recording).
pub fn busy_guard(
    load: Option<ServerLoad>,
    allow_busy: bool,
    timeline: TimelineFlag,
) -> Result<GuardVerdict, Error> {
    let Some(l) = load else {
        return Ok(GuardVerdict::Unchecked(unreadable_metrics_warning(
            allow_busy, timeline,
        )));
    };
    if l.running == 0.0 && l.waiting == 0.0 {
        return Ok(GuardVerdict::Idle);
    }
    let problem = format!(
        "the server is busy ({} running, {} waiting requests)",
        l.running, l.waiting
    );
    if allow_busy {
        Ok(GuardVerdict::Allowed(format!(
            "{problem}; going ahead because of --allow-busy (other load will disturb the figures)"
        )))
    } else {
        Err(Error::Refused(format!(
            "{problem}; run benchmarks in a maintenance window, or pass --allow-busy"
        )))
    }
}

/// The plan's line for a server whose load could not be read.
pub const UNCHECKED_PLAN_LINE: &str =
    "server load:        not checked (/metrics could not be read; its figures will be empty)";

/// The one line said when `/metrics` cannot be read: the load was not
/// checked, the server figures stay empty, and what to do about it.
fn unreadable_metrics_warning(allow_busy: bool, timeline: TimelineFlag) -> String {
    let head = "/metrics could not be read, so the server's load was not checked and its figures stay empty";
    if allow_busy {
        return format!("{head}; going ahead because of --allow-busy");
    }
    let pass = match timeline {
        TimelineFlag::Run => "pass the file with --server-timeline",
        TimelineFlag::Report => "fold the file in with `codendum report --server-timeline`",
    };
    format!(
        "{head}: point it at the GPU host with --metrics-url http://<gpu-host>:8000/metrics, \
or record there with `codendum metrics --watch 5 --json > tl.jsonl` and {pass}, \
or pass --allow-busy to acknowledge it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_server_passes_and_busy_is_refused_with_exit_3() {
        let idle = ServerLoad {
            running: 0.0,
            waiting: 0.0,
        };
        assert_eq!(
            busy_guard(Some(idle), false, TimelineFlag::Run).unwrap(),
            GuardVerdict::Idle
        );
        for load in [
            ServerLoad {
                running: 2.0,
                waiting: 0.0,
            },
            ServerLoad {
                running: 0.0,
                waiting: 1.0,
            },
        ] {
            let e = busy_guard(Some(load), false, TimelineFlag::Run).unwrap_err();
            assert_eq!(e.exit_code(), 3);
            assert!(e.to_string().contains("--allow-busy"));
            assert!(matches!(
                busy_guard(Some(load), true, TimelineFlag::Run),
                Ok(GuardVerdict::Allowed(_))
            ));
        }
    }

    #[test]
    fn unreadable_metrics_goes_on_unchecked_and_says_what_to_do() {
        for timeline in [TimelineFlag::Run, TimelineFlag::Report] {
            let verdict = busy_guard(None, false, timeline).expect("not refused");
            assert!(!verdict.checked());
            let w = verdict.warning().unwrap_or_default().to_string();
            assert!(!w.contains('\n'), "one line: {w}");
            for advice in [
                "--metrics-url",
                "codendum metrics --watch 5 --json",
                "--server-timeline",
                "--allow-busy",
            ] {
                assert!(w.contains(advice), "{advice}: {w}");
            }
        }
        let w = busy_guard(None, true, TimelineFlag::Run).expect("not refused");
        assert!(
            matches!(&w, GuardVerdict::Unchecked(m) if m.contains("/metrics") && m.contains("--allow-busy")),
            "{w:?}"
        );
    }
}
