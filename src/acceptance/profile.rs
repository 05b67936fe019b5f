//! A profile the suite lists: where it was given, the profile, its parsed
//! targets, and whether its trials run by default.

use codendum_core::profile::Profile;
use codendum_core::targets::bench::ProfileTargets;

/// A profile with its parsed targets.
#[derive(Debug, Clone)]
pub struct SuiteProfile {
    /// As given (an embedded name or a `.toml` path); the twin loads this.
    pub spec: String,
    /// The loaded profile.
    pub profile: Profile,
    /// Its targets.
    pub targets: ProfileTargets,
    /// Whether its trials run by default.
    pub judged: bool,
}
