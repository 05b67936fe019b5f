//! The typed, validated configuration of `codendum plan` (no clap here) and
//! the cells it expands to.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::variants::{check_replicas, expand, FleetVariant};
use crate::classroom::Scenario;
use codendum_core::error::ConfigError;
use codendum_core::profile::Profile;

/// The lab's ramp-up: students start within two minutes.
pub const RAMP_UP: Duration = Duration::from_secs(120);

/// Upper end of the search for the largest class when `--max-users` is
/// not given, students: five times the lab's class of forty.
pub const DEFAULT_MAX_USERS: u32 = 200;

/// Seeds a search runs by default (`--seeds`): enough for its answer to be
/// a range of what identical classes give, few enough to stay quick.
pub const DEFAULT_SEEDS: u32 = 5;

/// The most seeds `--seeds` takes.
pub const MAX_SEEDS: u32 = 100;

/// Everything `codendum plan` needs.
#[derive(Debug, Clone)]
pub struct PlanConfig {
    /// Class sizes to try (`--users 20,40,80`), students.
    pub users: Vec<u32>,
    /// Server profiles (`--profile`): embedded names or `.toml` paths.
    pub profiles: Vec<String>,
    /// Overrides of the profiles' `max_num_seqs` (`--max-num-seqs
    /// 16,24,32`); empty: each profile's own value.
    pub max_num_seqs: Vec<u32>,
    /// The project the students work on (`--scenario`, default java).
    pub scenario: Scenario,
    /// What the students and the twin's persona draw from (`--class`;
    /// default the `lab` class).
    pub class: std::sync::Arc<codendum_core::class::Class>,
    /// Window for new coding requests (`--duration`, default 900 s);
    /// requests in flight at its end still finish.
    pub duration: Duration,
    /// Seed of the class and of the twin (`--seed`); every cell uses it, so
    /// cells differ only in their settings. A search with several seeds
    /// uses `seed`, `seed + 1`, …
    pub seed: u64,
    /// Seeds a search runs (`--seeds`, default [`DEFAULT_SEEDS`]): its
    /// answer is the range of the largest class over them
    /// ([`super::search_results::SeedsAnswer`]). `--users` plans use `seed` only.
    pub seeds: u32,
    /// Worker threads, one cell at a time each (`--jobs`; default: the
    /// available cores). Results do not depend on it.
    pub jobs: usize,
    /// Folder under which `plan-<UTC timestamp>/` is created.
    pub results_dir: PathBuf,
    /// Search the largest class up to this many students
    /// (`--max-users`; [`crate::plan::search`]) instead of trying
    /// `users`. `None`: try `users`.
    pub max_users: Option<u32>,
    /// Fleet sizes to try (`--replicas 1,2,4`), replicas; empty: each
    /// profile's `[fleet] replicas` (1 when absent).
    pub replicas: Vec<u32>,
    /// Routers to try in front of fleets of more than one replica
    /// (`--router session,round-robin`); empty: each profile's `[fleet] router`.
    pub routers: Vec<codendum_core::profile::fleet::RouterPolicy>,
}

impl PlanConfig {
    /// Defaults: 40 users (no search), `classroom-64k`, java, 900 s, seed
    /// 1, one job per available core, `bench-results`.
    pub fn new() -> Self {
        PlanConfig {
            users: vec![40],
            profiles: vec!["classroom-64k".to_string()],
            max_num_seqs: Vec::new(),
            scenario: Scenario::Java,
            class: codendum_core::class::Class::lab(),
            duration: Duration::from_secs(900),
            seed: 1,
            seeds: DEFAULT_SEEDS,
            jobs: default_jobs(),
            results_dir: PathBuf::from(codendum_core::results::DEFAULT_RESULTS_ROOT),
            max_users: None,
            replicas: Vec::new(),
            routers: Vec::new(),
        }
    }

    /// Checks the values and loads the profiles, one per fleet
    /// ([`super::variants::expand`]); errors name the flag.
    pub fn validate(&self) -> Result<Vec<Profile>, ConfigError> {
        self.validate_fleets().map(|(profiles, _)| profiles)
    }

    /// [`Self::validate`] with the fleet of each profile returned.
    pub fn validate_fleets(&self) -> Result<(Vec<Profile>, Vec<FleetVariant>), ConfigError> {
        check_replicas(&self.replicas)?;
        let bases = self.load_profiles()?;
        Ok(expand(&self.replicas, &self.routers, bases))
    }

    fn load_profiles(&self) -> Result<Vec<Profile>, ConfigError> {
        if self.max_users.is_none() && self.users.is_empty() {
            return Err(ConfigError::invalid(
                "--users",
                "give at least one class size",
            ));
        }
        if let Some(u) = self.users.iter().find(|u| **u == 0 || **u > 10_000) {
            return Err(ConfigError::invalid(
                "--users",
                format!("{u} is not between 1 and 10000"),
            ));
        }
        if let Some(m) = self.max_users.filter(|m| *m == 0 || *m > 10_000) {
            return Err(ConfigError::invalid(
                "--max-users",
                format!("{m} is not between 1 and 10000"),
            ));
        }
        if self.profiles.is_empty() {
            return Err(ConfigError::invalid(
                "--profile",
                "give at least one profile",
            ));
        }
        if let Some(m) = self.max_num_seqs.iter().find(|m| **m == 0 || **m > 4096) {
            return Err(ConfigError::invalid(
                "--max-num-seqs",
                format!("{m} is not between 1 and 4096"),
            ));
        }
        let secs = self.duration.as_secs_f64();
        if !(1.0..=86_400.0).contains(&secs) {
            return Err(ConfigError::invalid(
                "--duration",
                "must be between 1 and 86400 seconds",
            ));
        }
        if self.seeds == 0 || self.seeds > MAX_SEEDS {
            return Err(ConfigError::invalid(
                "--seeds",
                format!("{} is not between 1 and {MAX_SEEDS}", self.seeds),
            ));
        }
        if self.jobs == 0 || self.jobs > 1024 {
            return Err(ConfigError::invalid("--jobs", "must be between 1 and 1024"));
        }
        self.profiles
            .iter()
            .map(|p| match Profile::load(p) {
                Err(ConfigError::Invalid { reason, .. }) => {
                    Err(ConfigError::invalid("--profile", reason))
                }
                other => other,
            })
            .collect()
    }

    /// The ramp-up of every cell: two minutes, or the whole window when it
    /// is shorter.
    pub fn ramp_up(&self) -> Duration {
        RAMP_UP.min(self.duration)
    }
}

impl Default for PlanConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// The number of cores this process may use (1 when unknown).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// One combination to simulate: a profile (with its `max_num_seqs`) and a
/// class size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellSpec {
    /// Profile name.
    pub profile: String,
    /// `max_num_seqs` the twin runs with.
    pub max_num_seqs: u32,
    /// Whether `max_num_seqs` overrides the profile's own value.
    pub overridden: bool,
    /// Students.
    pub users: u32,
    /// The random seed of this cell when it is not the plan's own (`--seed`): a
    /// search's further seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl CellSpec {
    /// The server variant: `classroom-64k`, or `classroom-64k @ 32 seqs`
    /// when `max_num_seqs` is overridden.
    pub fn variant(&self) -> String {
        variant_name(&self.profile, self.max_num_seqs, self.overridden)
    }
}

/// The name of a server variant (see [`CellSpec::variant`]).
pub fn variant_name(profile: &str, max_num_seqs: u32, overridden: bool) -> String {
    if overridden {
        format!("{profile} @ {max_num_seqs} seqs")
    } else {
        profile.to_string()
    }
}

/// The cells of a plan, in report order: profile, then `max_num_seqs`, then
/// users ascending (duplicates removed).
pub fn cells(config: &PlanConfig, profiles: &[Profile]) -> Vec<CellSpec> {
    let mut users = config.users.clone();
    users.sort_unstable();
    users.dedup();
    let mut seqs = config.max_num_seqs.clone();
    seqs.sort_unstable();
    seqs.dedup();
    let mut out = Vec::new();
    for p in profiles {
        let variants: Vec<(u32, bool)> = if seqs.is_empty() {
            vec![(p.server.max_num_seqs, false)]
        } else {
            seqs.iter().map(|m| (*m, true)).collect()
        };
        for (m, overridden) in variants {
            for u in &users {
                out.push(CellSpec {
                    profile: p.name.clone(),
                    max_num_seqs: m,
                    overridden,
                    users: *u,
                    seed: None,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_flag_and_cells_are_ordered() {
        let mut c = PlanConfig::new();
        c.users = vec![80, 20, 40, 20];
        c.max_num_seqs = vec![32, 16];
        let profiles = c.validate().expect("valid");
        let cells = cells(&c, &profiles);
        assert_eq!(cells.len(), 6);
        assert_eq!(cells[0].users, 20);
        assert_eq!(cells[0].variant(), "classroom-64k @ 16 seqs");
        assert_eq!(cells[5].max_num_seqs, 32);
        for (field, bad) in [
            (
                "--users",
                PlanConfig {
                    users: vec![0],
                    ..PlanConfig::new()
                },
            ),
            (
                "--profile",
                PlanConfig {
                    profiles: vec!["nope".into()],
                    ..PlanConfig::new()
                },
            ),
            (
                "--max-num-seqs",
                PlanConfig {
                    max_num_seqs: vec![0],
                    ..PlanConfig::new()
                },
            ),
            (
                "--duration",
                PlanConfig {
                    duration: Duration::ZERO,
                    ..PlanConfig::new()
                },
            ),
            (
                "--jobs",
                PlanConfig {
                    jobs: 0,
                    ..PlanConfig::new()
                },
            ),
        ] {
            let e = bad.validate().expect_err(field).to_string();
            assert!(e.contains(field), "{e}");
        }
    }
}
