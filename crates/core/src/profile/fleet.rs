//! A fleet of replicas behind a router, as a profile's `[fleet]` table and
//! `--replicas` / `--router` give it: the one replica range and the one list
//! of router names (their behaviour is the twin's router).

use std::fmt;
use std::str::FromStr;

use serde::Deserialize;

/// A routing policy (`--router`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RouterPolicy {
    /// Replica 0, 1, …, N-1, 0, …
    #[default]
    RoundRobin,
    /// Fewest requests in flight, ties by the lower index.
    LeastLoaded,
    /// The less loaded of two random replicas (seeded).
    PowerOfTwo,
    /// Consistent hash of `x-session-id`, else the API key, else round-robin.
    Session,
    /// Longest cached prompt prefix unless overloaded, else least-loaded.
    PrefixAware,
}

impl RouterPolicy {
    /// Every policy, in the order the help lists them.
    pub const ALL: [RouterPolicy; 5] = [
        RouterPolicy::RoundRobin,
        RouterPolicy::LeastLoaded,
        RouterPolicy::PowerOfTwo,
        RouterPolicy::Session,
        RouterPolicy::PrefixAware,
    ];

    /// The policy's name on the command line and in profiles.
    pub fn name(self) -> &'static str {
        match self {
            RouterPolicy::RoundRobin => "round-robin",
            RouterPolicy::LeastLoaded => "least-loaded",
            RouterPolicy::PowerOfTwo => "power-of-two",
            RouterPolicy::Session => "session",
            RouterPolicy::PrefixAware => "prefix-aware",
        }
    }

    /// The valid names, comma-separated (for error messages).
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }
}

impl fmt::Display for RouterPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RouterPolicy {
    type Err = String;

    /// Parses a policy name; the error lists the valid ones.
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        Self::ALL
            .into_iter()
            .find(|p| p.name() == t)
            .ok_or_else(|| format!("unknown router {t:?}; valid: {}", Self::names()))
    }
}

impl<'de> serde::Deserialize<'de> for RouterPolicy {
    /// A policy name (`router = "session"` in a profile's `[fleet]` table).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// Most replicas a fleet may have.
pub const MAX_REPLICAS: u32 = 64;

/// How many replicas and which router (`--replicas`, `--router`, or the
/// profile's `[fleet]` table; absent: one replica, `round-robin`, the
/// single server).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetSpec {
    /// Replicas, 1..=[`MAX_REPLICAS`].
    #[serde(default = "one")]
    pub replicas: u32,
    /// The routing policy (one of [`RouterPolicy::names`]).
    #[serde(default)]
    pub router: RouterPolicy,
}

impl Default for FleetSpec {
    /// One replica, round-robin: the single twin.
    fn default() -> Self {
        FleetSpec {
            replicas: 1,
            router: RouterPolicy::RoundRobin,
        }
    }
}

impl FleetSpec {
    /// The spec from a replica count and a router name, checked: the error
    /// names the culprit (`--replicas 0`, an unknown router with the valid ones).
    pub fn parse(replicas: u32, router: &str) -> Result<FleetSpec, String> {
        let spec = FleetSpec {
            replicas,
            router: router.parse()?,
        };
        spec.check()?;
        Ok(spec)
    }

    /// Checks the replica count.
    pub fn check(&self) -> Result<(), String> {
        check_replicas(self.replicas)
    }
}

fn one() -> u32 {
    1
}

/// Checks a replica count: 1..=[`MAX_REPLICAS`]; the error says what to give.
pub fn check_replicas(replicas: u32) -> Result<(), String> {
    if replicas == 0 || replicas > MAX_REPLICAS {
        return Err(format!("{replicas} replicas: give 1 to {MAX_REPLICAS}"));
    }
    Ok(())
}
