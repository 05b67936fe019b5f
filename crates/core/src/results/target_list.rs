//! Targets as results files list them (`plan.json`, `capacity.json`): each
//! key with its bound and limit, written as the run judged them and read
//! back without the profile that gave them. The targets themselves, their
//! keys and how they judge a run: [`crate::targets`].

use serde::{Deserialize, Serialize};

use crate::bound::Bound;

/// One target as results files list it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// The key (`ttft_p95_s`, ...).
    pub key: String,
    /// Ceiling or floor.
    pub bound: Bound,
    /// The limit, in the key's unit (seconds, tokens per second, a count).
    pub value: f64,
}

/// A set of classroom targets as results files list them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetList {
    /// The targets, in [`crate::targets::ClassroomKey::ALL`] order.
    pub targets: Vec<Threshold>,
}
