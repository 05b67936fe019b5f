//! The server variants of a plan's fleets: each profile expanded into one
//! profile per fleet (replicas × router) from `--replicas` and `--router`,
//! or from the profile's own `[fleet]` table. Settings only: nothing here
//! runs or judges a cell.

use serde::{Deserialize, Serialize};

use codendum_core::error::ConfigError;
use codendum_core::profile::fleet::RouterPolicy;
use codendum_core::profile::Profile;

/// One fleet of one profile: the server variant's profile name and what it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetVariant {
    /// The variant's profile name in the cells: the profile's own name for
    /// one replica, else `classroom-64k ×4 session`.
    pub name: String,
    /// The profile it is built from.
    pub base: String,
    /// Replicas (engines, each with its own KV blocks and prefix cache).
    pub replicas: u32,
    /// The router's name; absent for one replica (no routing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<String>,
}

/// The name of a fleet variant of `base`.
pub fn fleet_name(base: &str, replicas: u32, router: RouterPolicy) -> String {
    if replicas == 1 {
        base.to_string()
    } else {
        format!("{base} ×{replicas} {router}")
    }
}

/// Checks `--replicas` (each 1..=64).
pub fn check_replicas(replicas: &[u32]) -> Result<(), ConfigError> {
    for r in replicas {
        codendum_core::flags::replicas("--replicas", *r)?;
    }
    Ok(())
}

/// Parses `--router a,b` with the router module's parser; the error names
/// the flag and lists the valid routers.
pub fn parse_routers(raw: &str) -> Result<Vec<RouterPolicy>, ConfigError> {
    codendum_core::flags::routers("--router", raw)
}

/// The replica counts and routers of a plan for `profile`: the flags when
/// given (`replicas`, `routers` non-empty), else the profile's `[fleet]` table (sorted, duplicates removed).
fn axes(
    replicas: &[u32],
    routers: &[RouterPolicy],
    profile: &Profile,
) -> (Vec<u32>, Vec<RouterPolicy>) {
    let mut replicas = if replicas.is_empty() {
        vec![profile.fleet.replicas]
    } else {
        replicas.to_vec()
    };
    replicas.sort_unstable();
    replicas.dedup();
    let mut chosen = Vec::new();
    let given = if routers.is_empty() {
        vec![profile.fleet.router]
    } else {
        routers.to_vec()
    };
    for r in given {
        if !chosen.contains(&r) {
            chosen.push(r);
        }
    }
    (replicas, chosen)
}

/// Expands loaded profiles into one profile per fleet (its `[fleet]` set,
/// renamed by [`fleet_name`]), in report order: profile, router, replicas;
/// one replica once per profile, first.
pub fn expand(
    replicas: &[u32],
    routers: &[RouterPolicy],
    bases: Vec<Profile>,
) -> (Vec<Profile>, Vec<FleetVariant>) {
    let mut profiles = Vec::new();
    let mut variants: Vec<FleetVariant> = Vec::new();
    for base in bases {
        let (counts, policies) = axes(replicas, routers, &base);
        for router in &policies {
            for r in &counts {
                let name = fleet_name(&base.name, *r, *router);
                if variants.iter().any(|v| v.name == name) {
                    continue;
                }
                let mut p = base.clone();
                p.fleet.replicas = *r;
                p.fleet.router = if *r == 1 { base.fleet.router } else { *router };
                p.name = name.clone();
                variants.push(FleetVariant {
                    name,
                    base: base.name.clone(),
                    replicas: *r,
                    router: (*r > 1).then(|| router.name().to_string()),
                });
                profiles.push(p);
            }
        }
    }
    (profiles, variants)
}
