//! A server profile checked against the server (`profile_check` in a
//! run's `summary.json`): the record only. `capacity::server_match` makes
//! it, words it and judges it.

use serde::{Deserialize, Serialize};

/// A profile checked against a server: what `summary.json` records as
/// `profile_check` and what the capacity trial judges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileCheck {
    /// The profile's name.
    pub profile: String,
    /// Settings the server states differently (empty: the switch took, as
    /// far as the server states).
    pub differences: Vec<Difference>,
    /// Fields the server states as the profile says.
    #[serde(default)]
    pub matched: Vec<String>,
    /// Fields the server does not state.
    #[serde(default)]
    pub not_stated: Vec<String>,
    /// What was read: `/v1/models` and the `/metrics` URLs that answered.
    #[serde(default)]
    pub read: Vec<String>,
    /// What could not be read, and why (one line each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

/// One setting the server states differently from the profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    /// The profile's `[server]` key (`max_model_len`, ...).
    pub field: String,
    /// The profile's value.
    pub profile: Setting,
    /// The server's value.
    pub server: Setting,
    /// Where the server stated it: `/v1/models` or the `/metrics` URL.
    pub source: String,
}

/// A value of a setting: token counts, a switch, or a name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Setting {
    /// On or off (`enable_prefix_caching`).
    Flag(bool),
    /// A count in tokens (`max_model_len`, `kv_cache_tokens`, `block_size`).
    Tokens(u64),
    /// A name (`served_model_name`; several served names joined by ", ").
    Name(String),
}
