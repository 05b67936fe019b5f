//! The acceptance suite: one trial per target, named
//! `<profile>::<group>::<metric>`; each workload runs once and every trial of
//! it judges the same results.
//!
//! A test harness (tests/capacity.rs) lists [`Suite::trials`] and calls
//! [`Suite::run_trial`] for each selected one, on any thread.
//!
//! Against a live server the judged profile also gets
//! `<profile>::server::matches_profile` ([`TrialKind::ServerMatch`]): the
//! server's `/v1/models` and `/metrics`, read once, against the profile's
//! `[server]` (see [`crate::server_match`]).

use crate::events::Events;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::capacity::{judge_target, search_settings, CapacityFound};
use super::judge::Judgement;
use super::judge::TrialPass;
use super::lifecycle::Lifecycle;
use super::profile::SuiteProfile;
use super::reuse::RunCache;
use super::runner::{judge_all, run_capacity, run_workload, verdict_message, WorkloadResults};
use super::settings::Settings;
use super::workload::WorkloadKind;
use crate::server_match::check_target;
use codendum_core::profile::Profile;
use codendum_core::results::profile_check::ProfileCheck;
use codendum_core::targets::bench::{parse_targets, ModeTargets};

/// One selectable check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrialSpec {
    /// `classroom-64k::bench-short-c16::ttft_p95`.
    pub name: String,
    /// Listed but not run by default (live mode: profiles the server does
    /// not run).
    pub ignored: bool,
    /// What the trial does.
    pub kind: TrialKind,
}

/// What a trial judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrialKind {
    /// A target of a profile's workload.
    Target {
        /// Index into the suite's profiles.
        profile: usize,
        /// The workload that produces the figure.
        workload: WorkloadKind,
        /// `classroom` or `bench-short-c16`.
        group: String,
        /// `ttft_p95`, `errors`, ...
        metric: String,
    },
    /// Live mode only: whether the server runs the profile (its `[server]`
    /// against `/v1/models` and `/metrics`); group `server`, metric
    /// `matches_profile`.
    ServerMatch {
        /// Index into the suite's profiles.
        profile: usize,
    },
    /// A class the server must carry at a tier
    /// (`[targets.capacity]`): group `capacity-<tier>`, metric `students`.
    Capacity {
        /// Index into the suite's profiles.
        profile: usize,
        /// Index into the mode's capacity targets.
        target: usize,
    },
    /// The suite cannot run as configured; the trial fails with this message.
    Broken(String),
}

/// The group and metric of [`TrialKind::ServerMatch`]:
/// `<profile>::server::matches_profile`.
pub const SERVER_MATCH_TRIAL: (&str, &str) = ("server", "matches_profile");

type RunCell = Arc<OnceLock<Result<Arc<WorkloadResults>, String>>>;
type CheckCell = Arc<OnceLock<Result<Arc<ProfileCheck>, String>>>;
type CapacityCell = Arc<OnceLock<Result<Arc<CapacityFound>, String>>>;

/// The suite: profiles, settings, and the shared runs.
pub struct Suite {
    /// The settings read at start.
    pub settings: Option<Settings>,
    /// Profiles whose trials are listed.
    pub profiles: Vec<SuiteProfile>,
    problems: Vec<(String, String)>,
    runs: Mutex<HashMap<(usize, WorkloadKind), RunCell>>,
    checks: Mutex<HashMap<usize, CheckCell>>,
    /// One capacity search per profile, shared by its tiers' trials.
    searches: Mutex<HashMap<usize, CapacityCell>>,
    /// The profiles whose capacity search the server refused (busy).
    refused_searches: Mutex<HashSet<usize>>,
    /// The workloads the server refused (busy).
    refused: Mutex<HashSet<(usize, WorkloadKind)>>,
    cache: RunCache,
    /// Where the suite says what it runs and reuses.
    events: Events,
    /// Where each workload's run says what it does (silent by default).
    workload_events: Events,
    /// The command line's run lifecycle, which runs the workloads.
    lifecycle: Arc<dyn Lifecycle>,
}

impl std::fmt::Debug for Suite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Suite")
            .field("profiles", &self.profiles.len())
            .field("problems", &self.problems)
            .finish_non_exhaustive()
    }
}

impl Suite {
    /// The suite the environment describes; `cache_dir` is where runs are
    /// shared between processes (see [`super::reuse`]). Configuration errors
    /// become failing trials, so listing never fails.
    pub fn from_env(cache_dir: PathBuf, lifecycle: Arc<dyn Lifecycle>) -> Suite {
        match Settings::from_env() {
            Ok(s) => Suite::new(s, cache_dir, lifecycle),
            Err(e) => Suite {
                settings: None,
                profiles: Vec::new(),
                problems: vec![("capacity::settings".into(), e.to_string())],
                runs: Mutex::new(HashMap::new()),
                checks: Mutex::new(HashMap::new()),
                searches: Mutex::default(),
                refused_searches: Mutex::default(),
                refused: Mutex::default(),
                cache: RunCache::new(cache_dir, 0),
                events: Events::silent(),
                workload_events: Events::silent(),
                lifecycle,
            },
        }
    }

    /// The suite telling what it runs, reuses and notes through `events`
    /// (the test binary's reporter).
    pub fn with_events(mut self, events: Events) -> Suite {
        self.events = events;
        self
    }

    /// The suite letting each workload's run tell its plan, progress and
    /// tables through `events` (`codendum check`); under the test harness
    /// the runs are silent and only the suite's own lines are told.
    pub fn with_workload_events(mut self, events: Events) -> Suite {
        self.workload_events = events;
        self
    }

    /// The suite for given settings. Loads every profile; a profile that
    /// does not load, or whose targets do not parse, becomes one failing
    /// trial `<profile>::targets`.
    pub fn new(settings: Settings, cache_dir: PathBuf, lifecycle: Arc<dyn Lifecycle>) -> Suite {
        let mut specs = settings.profiles.clone();
        let mut problems = Vec::new();
        // A stated profile is judged alone, against the live server or, with
        // none named, against its twin; the other profiles are listed.
        if let Some(live) = &settings.live_profile {
            if !specs.contains(live) {
                specs.push(live.clone());
            }
        }
        if settings.is_live() && settings.live_profile.is_none() {
            problems.push((
                "capacity::profile".to_string(),
                format!(
                    "a live server is named ({}, CODENDUM_BASE_URL or --base-url) but not the profile it runs (CODENDUM_PROFILE or --profile: one of {})",
                    settings.server_label(),
                    specs.join(", ")
                ),
            ));
        }
        let mut profiles = Vec::new();
        for spec in specs {
            let loaded = Profile::load(&spec)
                .map_err(|e| e.to_string())
                .and_then(|p| {
                    parse_targets(&p.targets)
                        .map(|t| (p, t))
                        .map_err(|e| format!("profile {spec}: {e}"))
                });
            match loaded {
                Ok((profile, targets)) => {
                    let judged = match (&settings.live_profile, settings.is_live()) {
                        (Some(live), _) => *live == spec || *live == profile.name,
                        (None, false) => true,
                        (None, true) => false,
                    };
                    profiles.push(SuiteProfile {
                        spec,
                        profile,
                        targets,
                        judged,
                    });
                }
                Err(e) => problems.push((format!("{}::targets", display_name(&spec)), e)),
            }
        }
        let cache = RunCache::new(cache_dir, settings.reuse_window_s);
        Suite {
            settings: Some(settings),
            profiles,
            problems,
            runs: Mutex::new(HashMap::new()),
            checks: Mutex::new(HashMap::new()),
            searches: Mutex::default(),
            refused_searches: Mutex::default(),
            refused: Mutex::default(),
            cache,
            events: Events::silent(),
            workload_events: Events::silent(),
            lifecycle,
        }
    }

    /// The targets of a profile in the suite's mode.
    pub fn mode_targets(&self, profile: usize) -> Option<&ModeTargets> {
        let settings = self.settings.as_ref()?;
        let p = self.profiles.get(profile)?;
        Some(match settings.mode {
            super::workload::Mode::Quick => &p.targets.quick,
            super::workload::Mode::Full => &p.targets.full,
        })
    }

    /// Every trial, in a stable order. Touches no network.
    pub fn trials(&self) -> Vec<TrialSpec> {
        let mut out: Vec<TrialSpec> = self
            .problems
            .iter()
            .map(|(name, msg)| TrialSpec {
                name: name.clone(),
                ignored: false,
                kind: TrialKind::Broken(msg.clone()),
            })
            .collect();
        for (i, p) in self.profiles.iter().enumerate() {
            let Some(targets) = self.mode_targets(i) else {
                continue;
            };
            // Live only: the twin is started from the profile itself, so
            // it would be compared with itself.
            if p.judged && self.settings.as_ref().is_some_and(Settings::is_live) {
                let (group, metric) = SERVER_MATCH_TRIAL;
                out.push(TrialSpec {
                    name: format!("{}::{group}::{metric}", p.profile.name),
                    ignored: false,
                    kind: TrialKind::ServerMatch { profile: i },
                });
            }
            let mut push = |workload, group: String, metric: &str| {
                out.push(TrialSpec {
                    name: format!("{}::{group}::{metric}", p.profile.name),
                    ignored: !p.judged,
                    kind: TrialKind::Target {
                        profile: i,
                        workload,
                        group,
                        metric: metric.to_string(),
                    },
                });
            };
            for level in &targets.bench {
                for metric in level.metrics() {
                    push(WorkloadKind::Bench, level.group_name(), metric);
                }
            }
            if let Some(c) = &targets.classroom {
                for metric in c.metrics() {
                    push(WorkloadKind::Classroom, "classroom".into(), metric);
                }
            }
            for (target, c) in targets.capacity.iter().enumerate() {
                out.push(TrialSpec {
                    name: format!("{}::{}::students", p.profile.name, c.group_name()),
                    ignored: !p.judged,
                    kind: TrialKind::Capacity { profile: i, target },
                });
            }
        }
        out
    }

    /// Runs (or reuses) the trial's workload and judges its figure: `Ok`
    /// met or, when the data cannot decide (an interval or a search's range
    /// straddles the target), [`TrialPass::Indeterminate`] with why; `Err`
    /// carries the failure message.
    pub fn run_trial(&self, trial: &TrialSpec) -> Result<TrialPass, String> {
        let (profile, workload, group, metric) = match &trial.kind {
            TrialKind::Broken(msg) => return Err(msg.clone()),
            TrialKind::ServerMatch { profile } => {
                return self.run_server_match(*profile).map(|()| TrialPass::Met)
            }
            TrialKind::Capacity { profile, target } => return self.run_capacity(*profile, *target),
            TrialKind::Target {
                profile,
                workload,
                group,
                metric,
            } => (*profile, *workload, group, metric),
        };
        let results = self.results(profile, workload)?;
        let judgements = self.judge(profile, workload, &results);
        let j = judgements
            .iter()
            .find(|j| &j.group == group && &j.metric == metric)
            .ok_or_else(|| format!("{}: no such target in the profile", trial.name))?;
        // A run whose verdict failed it fails every trial of its workload,
        // with the verdict beside the target's own message.
        match (&j.failure, verdict_message(workload, &results)) {
            (None, None) => Ok(match &j.undecided {
                Some(why) => TrialPass::Indeterminate(why.clone()),
                None => TrialPass::Met,
            }),
            (Some(msg), None) => Err(msg.clone()),
            (None, Some(verdict)) => Err(verdict),
            (Some(msg), Some(verdict)) => Err(format!("{msg}; {verdict}")),
        }
    }

    /// `<profile>::capacity-<tier>::students`: the profile's capacity
    /// search (run once for all its tiers), judged for the target's tier.
    fn run_capacity(&self, profile: usize, target: usize) -> Result<TrialPass, String> {
        let t = self
            .mode_targets(profile)
            .and_then(|m| m.capacity.get(target))
            .ok_or("no such capacity target in the profile")?;
        let found = self.capacity_search(profile)?;
        judge_target(t, &found)
    }

    /// The capacity search of a profile: run once per suite.
    pub fn capacity_search(&self, profile: usize) -> Result<Arc<CapacityFound>, String> {
        let cell = {
            let mut searches = self.searches.lock().unwrap_or_else(|e| e.into_inner());
            searches.entry(profile).or_default().clone()
        };
        cell.get_or_init(|| self.search_once(profile)).clone()
    }

    fn search_once(&self, profile: usize) -> Result<Arc<CapacityFound>, String> {
        let settings = self.settings.as_ref().ok_or("no settings")?;
        let p = self.profiles.get(profile).ok_or("no such profile")?;
        let targets = self.mode_targets(profile).ok_or("no targets")?;
        let search = search_settings(settings, p, targets)?;
        for why in &search.left_out {
            self.events.note(format!("{}: {why}", p.profile.name));
        }
        let found = run_capacity(
            (settings, self.lifecycle.as_ref()),
            (p, &search),
            &self.cache,
            (&self.events, &self.workload_events),
        )
        .map_err(|failure| {
            if failure.refused {
                self.refused_searches
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(profile);
            }
            failure.message
        })?;
        // Each tier's answer, whichever way its trial ends.
        for a in &found.answers {
            self.events.note(format!(
                "{}: {} ({})",
                p.profile.name, a.sentence, found.place
            ));
        }
        Ok(Arc::new(found))
    }

    /// `<profile>::server::matches_profile`: fails naming every difference
    /// (or when the server states nothing to compare); passes when every
    /// stated field matches, saying on stderr which were not stated.
    fn run_server_match(&self, profile: usize) -> Result<(), String> {
        let check = self.server_check(profile)?;
        let server = self
            .settings
            .as_ref()
            .map(Settings::server_label)
            .unwrap_or_default();
        if let Some(note) = check.verdict(&server)? {
            self.events.note(note);
        }
        Ok(())
    }

    /// What the live server states, against a profile: read once per suite
    /// (`/v1/models` and every `/metrics` URL, a few seconds at most).
    pub fn server_check(&self, profile: usize) -> Result<Arc<ProfileCheck>, String> {
        let cell = {
            let mut checks = self.checks.lock().unwrap_or_else(|e| e.into_inner());
            checks.entry(profile).or_default().clone()
        };
        cell.get_or_init(|| self.read_server_check(profile)).clone()
    }

    fn read_server_check(&self, profile: usize) -> Result<Arc<ProfileCheck>, String> {
        let settings = self.settings.as_ref().ok_or("no settings")?;
        let p = self.profiles.get(profile).ok_or("no such profile")?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
        let target = settings
            .target
            .as_ref()
            .ok_or("no live server to check (CODENDUM_BASE_URL is not set)")?;
        rt.block_on(check_target(
            &p.profile,
            (target, &settings.client),
            &settings.api_keys,
        ))
        .map(Arc::new)
    }

    /// Every judgement of a workload's results against the profile's targets.
    pub fn judge(&self, profile: usize, kind: WorkloadKind, r: &WorkloadResults) -> Vec<Judgement> {
        let Some(targets) = self.mode_targets(profile) else {
            return Vec::new();
        };
        judge_all(targets, kind, r)
    }

    /// The results of a workload: run once per suite (and shared with other
    /// processes through the run cache).
    pub fn results(
        &self,
        profile: usize,
        kind: WorkloadKind,
    ) -> Result<Arc<WorkloadResults>, String> {
        let cell = {
            let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
            runs.entry((profile, kind)).or_default().clone()
        };
        cell.get_or_init(|| self.run_once(profile, kind)).clone()
    }

    fn run_once(&self, profile: usize, kind: WorkloadKind) -> Result<Arc<WorkloadResults>, String> {
        let settings = self.settings.as_ref().ok_or("no settings")?;
        let p = self.profiles.get(profile).ok_or("no such profile")?;
        let targets = self.mode_targets(profile).ok_or("no targets")?;
        match run_workload(
            (settings, self.lifecycle.as_ref()),
            (p, targets, kind),
            &self.cache,
            &self.events,
            &self.workload_events,
        ) {
            Ok(results) => Ok(Arc::new(results)),
            Err(failure) => {
                if failure.refused {
                    self.refused
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert((profile, kind));
                }
                Err(failure.message)
            }
        }
    }

    /// Whether the trial failed because the server refused its workload
    /// (busy): `codendum check` exits 3 when that is every failure.
    pub fn was_refused(&self, trial: &TrialSpec) -> bool {
        match &trial.kind {
            TrialKind::Target {
                profile, workload, ..
            } => self
                .refused
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&(*profile, *workload)),
            TrialKind::Capacity { profile, .. } => self
                .refused_searches
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(profile),
            TrialKind::ServerMatch { .. } | TrialKind::Broken(_) => false,
        }
    }

    /// The problems that keep the suite from running as configured
    /// (settings, a profile that does not load, targets that do not
    /// parse): each is also a failing trial, named so.
    pub fn problems(&self) -> &[(String, String)] {
        &self.problems
    }
}

fn display_name(spec: &str) -> String {
    Path::new(spec)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(spec)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stated_profile_is_judged_alone_against_its_twin_too() {
        let settings = Settings::from_lookup(|k| {
            (k == crate::settings::env::PROFILE).then(|| "classroom-64k".to_string())
        })
        .expect("settings");
        let dir = tempfile::tempdir().expect("tempdir");
        let lifecycle = Arc::new(crate::app::AppLifecycle);
        let suite = Suite::new(settings, dir.path().to_path_buf(), lifecycle);
        let trials = suite.trials();
        let judged: Vec<&str> = trials
            .iter()
            .filter(|t| !t.ignored)
            .map(|t| t.name.as_str())
            .collect();
        assert!(!judged.is_empty());
        assert!(
            judged.iter().all(|n| n.starts_with("classroom-64k::")),
            "{judged:?}"
        );
        assert!(
            trials
                .iter()
                .any(|t| t.ignored && t.name.starts_with("classroom-64k-high-concurrency::")),
            "the other profile is listed, ignored"
        );
    }
}
