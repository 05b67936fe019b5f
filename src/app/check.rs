//! `codendum check`: the capacity acceptance suite ([`crate::acceptance`])
//! run from the binary, with the trials, names and settings of
//! `cargo test --test capacity`. Trials run one after another; each
//! workload runs once, when its first trial needs it, and every trial of
//! it judges the same results. What it says goes through events: a line
//! per trial as it ends, the failures again at the end, one line each.
//!
//! Exit codes: 0 when every selected trial passed, 1 when one failed, 2 for
//! bad input (the settings, a profile or its targets), 3 when every failure
//! was the server refusing a workload (busy), 130 when interrupted.

use std::path::{Path, PathBuf};

use crate::acceptance::judge::TrialPass;
use crate::acceptance::runner::interrupted;
use crate::acceptance::{Suite, TrialSpec};
use crate::events::Events;
use codendum_core::error::{ConfigError, Error};

/// Where `codendum check` keeps its run lock and the records of finished
/// workloads (see [`crate::acceptance::reuse`]): `.check-cache/` in the
/// results root, so two checks never load one server together.
pub fn cache_dir(results_dir: &Path) -> PathBuf {
    results_dir.join(".check-cache")
}

/// Which trials run: a name filter (or several) as libtest takes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Names to select: a trial whose name contains one of them (or, with
    /// `exact`, equals one). Empty: every trial.
    pub filters: Vec<String>,
    /// The filters are whole names.
    pub exact: bool,
    /// Also run the trials listed as ignored (live mode: the profiles the
    /// server does not run).
    pub include_ignored: bool,
}

impl Selection {
    /// Whether the filters select `name`.
    pub fn matches(&self, name: &str) -> bool {
        self.filters.is_empty()
            || self.filters.iter().any(|f| {
                if self.exact {
                    name == f
                } else {
                    name.contains(f.as_str())
                }
            })
    }
}

/// The suite's trials the filters select, in the suite's order, ignored
/// ones included (and flagged). Touches no network.
pub fn list(suite: &Suite, selection: &Selection) -> Vec<TrialSpec> {
    suite
        .trials()
        .into_iter()
        .filter(|t| selection.matches(&t.name))
        .collect()
}

/// The suite's problems (bad settings, a profile that does not load or
/// whose targets do not parse) as one bad-input error naming each; the
/// test harness shows them as failing trials instead.
pub fn check_configuration(suite: &Suite) -> Result<(), Error> {
    let problems = suite.problems();
    if problems.is_empty() {
        return Ok(());
    }
    let text: Vec<&str> = problems.iter().map(|(_, why)| why.as_str()).collect();
    Err(ConfigError::Unusable(text.join("; ")).into())
}

/// How the selected trials ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckOutcome {
    /// Trials that passed.
    pub passed: Vec<String>,
    /// Trials that failed, with why.
    pub failed: Vec<(String, String)>,
    /// Trials the data could not decide (a figure's interval straddles its
    /// target, a capacity search's range straddles the class asked for):
    /// neither passed nor failed, with why (`cargo test --test capacity`
    /// lists them as ignored with this reason).
    pub indeterminate: Vec<(String, String)>,
    /// Of the failed, those whose workload the server refused (busy).
    pub refused: usize,
    /// Selected trials not run: ignored (another profile than the live
    /// server's).
    pub ignored: usize,
}

/// Runs the selected trials, one after another, telling each as it ends;
/// blocking (each workload starts its own runtime). `results_dir` is where
/// an interrupted run's folders are.
pub fn run(
    suite: &Suite,
    selection: &Selection,
    results_dir: PathBuf,
    events: &Events,
) -> Result<CheckOutcome, Error> {
    check_configuration(suite)?;
    let trials = list(suite, selection);
    if trials.is_empty() {
        return Err(ConfigError::invalid(
            "FILTER",
            format!(
                "no trial matches {} (codendum check --list shows them)",
                selection.filters.join(", ")
            ),
        )
        .into());
    }
    let mut outcome = CheckOutcome::default();
    for trial in trials {
        if trial.ignored && !selection.include_ignored {
            outcome.ignored += 1;
            continue;
        }
        match suite.run_trial(&trial) {
            Ok(TrialPass::Met) => {
                events.line(format!("{} ... ok", trial.name));
                outcome.passed.push(trial.name);
            }
            Ok(TrialPass::Indeterminate(why)) => {
                events.line(format!("{} ... {why}", trial.name));
                outcome.indeterminate.push((trial.name, why));
            }
            Err(why) => {
                events.line(format!("{} ... FAILED: {why}", trial.name));
                if suite.was_refused(&trial) {
                    outcome.refused += 1;
                }
                outcome.failed.push((trial.name, why));
            }
        }
    }
    if interrupted() {
        return Err(Error::Interrupted(results_dir));
    }
    Ok(outcome)
}

impl CheckOutcome {
    /// The outcome as the command's end: the indeterminate trials and the
    /// failures again, one line each, then `Ok` (no trial failed; an
    /// indeterminate one is not a failure) or the error whose exit code
    /// says how it ended (1 failed, 3 every failure a refusal).
    pub fn conclude(&self, events: &Events) -> Result<(), Error> {
        let run = self.passed.len() + self.failed.len() + self.indeterminate.len();
        let ignored = match self.ignored {
            0 => String::new(),
            n => format!(" ({n} ignored)"),
        };
        let open = match self.indeterminate.len() {
            0 => String::new(),
            n => format!(", {n} indeterminate"),
        };
        if !self.indeterminate.is_empty() {
            events.line(
                "indeterminate (the data cannot decide: more requests or a longer search decide it):",
            );
            for (name, why) in &self.indeterminate {
                events.line(format!("    {name}: {why}"));
            }
        }
        if self.failed.is_empty() {
            events.emit(crate::events::Event::Verdict(format!(
                "{} of {run} trials passed{open}{ignored}",
                self.passed.len()
            )));
            return Ok(());
        }
        events.line("failures:");
        for (name, why) in &self.failed {
            events.line(format!("    {name}: {why}"));
        }
        let line = format!(
            "{} of {run} trials failed{open}{ignored}: {}",
            self.failed.len(),
            self.failed
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        if self.refused == self.failed.len() {
            Err(Error::Refused(line))
        } else {
            Err(Error::Failed(line))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;

    #[test]
    fn filters_select_by_part_of_the_name_or_the_whole_name() {
        let mut s = Selection::default();
        assert!(s.matches("classroom-64k::classroom::ttft_p95"));
        s.filters = vec!["::classroom::".into(), "c16".into()];
        assert!(s.matches("classroom-64k::classroom::ttft_p95"));
        assert!(s.matches("classroom-64k::bench-short-c16::errors"));
        assert!(!s.matches("classroom-64k::bench-short-c1::errors"));
        s.exact = true;
        assert!(!s.matches("classroom-64k::bench-short-c16::errors"));
        s.filters = vec!["classroom-64k::bench-short-c16::errors".into()];
        assert!(s.matches("classroom-64k::bench-short-c16::errors"));
    }

    #[test]
    fn the_end_names_each_failure_and_picks_the_exit_code() {
        let (events, recorder) = Events::recording();
        let passed = CheckOutcome {
            passed: vec!["a".into(), "b".into()],
            ignored: 1,
            ..CheckOutcome::default()
        };
        assert!(passed.conclude(&events).is_ok());
        assert_eq!(
            recorder.events(),
            vec![Event::Verdict("2 of 2 trials passed (1 ignored)".into())]
        );

        let failed = CheckOutcome {
            passed: vec!["a".into()],
            failed: vec![
                ("b".into(), "TTFT P95 41.3 s exceeds 30 s".into()),
                ("c".into(), "the bench workload did not start".into()),
            ],
            refused: 1,
            ignored: 0,
            ..CheckOutcome::default()
        };
        let e = failed.conclude(&events).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert_eq!(e.to_string(), "2 of 3 trials failed: b, c");
        let lines: Vec<String> = recorder
            .events()
            .iter()
            .filter_map(|e| e.line("codendum"))
            .collect();
        assert!(lines.contains(&"    b: TTFT P95 41.3 s exceeds 30 s".to_string()));

        let refused = CheckOutcome {
            failed: vec![("c".into(), "busy".into())],
            refused: 1,
            ..CheckOutcome::default()
        };
        assert_eq!(refused.conclude(&events).unwrap_err().exit_code(), 3);
    }

    #[test]
    fn an_indeterminate_trial_is_said_and_fails_nothing() {
        let (events, recorder) = Events::recording();
        let why = "indeterminate: TTFT P95 0.30 s (0.29–…) against ≤ 1 s";
        let open = CheckOutcome {
            passed: vec!["a".into()],
            indeterminate: vec![("b".into(), why.into())],
            ..CheckOutcome::default()
        };
        assert!(open.conclude(&events).is_ok());
        let events_seen = recorder.events();
        let lines: Vec<String> = events_seen
            .iter()
            .filter_map(|e| e.line("codendum"))
            .collect();
        assert!(lines.contains(&format!("    b: {why}")), "{lines:?}");
        assert_eq!(
            events_seen.last(),
            Some(&Event::Verdict(
                "1 of 2 trials passed, 1 indeterminate".into()
            ))
        );

        let failed = CheckOutcome {
            failed: vec![("c".into(), "TTFT P95 41.3 s exceeds 30 s".into())],
            indeterminate: vec![("b".into(), why.into())],
            ..CheckOutcome::default()
        };
        let e = failed.conclude(&events).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert_eq!(e.to_string(), "1 of 2 trials failed, 1 indeterminate: c");
    }
}
