//! A server profile checked against the server (`profile_check` in a
//! run's `summary.json`): the record and its wording. `codendum::server_match`
//! makes it; the capacity suite judges it.

use serde::{Deserialize, Serialize};
use std::fmt;

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

/// The `[server]` keys that are compared, in the order they are reported.
pub const FIELDS: [&str; 5] = [
    "served_model_name",
    "max_model_len",
    "kv_cache_tokens",
    "block_size",
    "enable_prefix_caching",
];

/// Where the `/v1/models` values come from (the `source` of a difference).
pub const MODELS_SOURCE: &str = "/v1/models";

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Setting::Flag(b) => write!(f, "{b}"),
            Setting::Tokens(n) => write!(f, "{n}"),
            Setting::Name(s) if s.is_empty() => f.write_str("(no model)"),
            Setting::Name(s) => f.write_str(s),
        }
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} (profile {})",
            self.field, self.server, self.profile
        )
    }
}

impl ProfileCheck {
    /// The differences on one line: `max_model_len 8192 (profile 65536);
    /// block_size 128 (profile 16)`; with several `/metrics` URLs, each
    /// `/metrics` value says where (`at <URL>`).
    pub fn differences_text(&self) -> String {
        let replicas = self.read.iter().filter(|r| *r != MODELS_SOURCE).count();
        self.differences
            .iter()
            .map(|d| {
                if replicas > 1 && d.source != MODELS_SOURCE {
                    format!("{d} at {}", d.source)
                } else {
                    d.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// `not stated: a, b (why)`, or `None` when every field was stated.
    pub fn not_stated_text(&self) -> Option<String> {
        if self.not_stated.is_empty() {
            return None;
        }
        let mut text = format!("not stated: {}", self.not_stated.join(", "));
        if !self.unreadable.is_empty() {
            text.push_str(&format!(" ({})", self.unreadable.join("; ")));
        }
        Some(text)
    }

    /// The one-line warning of `bench` and `classroom` when the server
    /// differs (without the program's prefix): `the server does not run profile P: …`.
    pub fn warning(&self) -> Option<String> {
        (!self.differences.is_empty()).then(|| {
            format!(
                "the server does not run profile {}: {}",
                self.profile,
                self.differences_text()
            )
        })
    }

    /// The verdict of the capacity trial `<profile>::server::matches_profile`
    /// against `server` (a URL without credentials): `Err` names every
    /// difference in one message, or says that nothing could be compared;
    /// `Ok` carries a note when some fields were not stated.
    pub fn verdict(&self, server: &str) -> Result<Option<String>, String> {
        let unstated = self
            .not_stated_text()
            .map(|t| format!("; {t}"))
            .unwrap_or_default();
        if !self.differences.is_empty() {
            return Err(format!(
                "the server does not run profile {}: {} ({server}{unstated})",
                self.profile,
                self.differences_text()
            ));
        }
        if self.matched.is_empty() {
            let why = if self.unreadable.is_empty() {
                String::new()
            } else {
                format!(" ({})", self.unreadable.join("; "))
            };
            return Err(format!(
                "cannot check that {server} runs profile {}: it states none of {}{why}",
                self.profile,
                FIELDS.join(", ")
            ));
        }
        Ok(self.not_stated_text().map(|t| {
            format!(
                "{server} runs profile {} as far as it states ({}); {t}",
                self.profile,
                self.matched.join(", ")
            )
        }))
    }
}
