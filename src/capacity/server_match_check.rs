//! A profile checked against everything the server answered (several
//! `/metrics` URLs: each replica is compared), and how that check reads:
//! the differences, the fields not stated, the warning and the verdict.
//! One set of stated values against a profile is
//! [`super::server_match::compare`].

use super::server_match::{
    compare, Comparison, Difference, ProfileCheck, StatedSettings, FIELDS, MODELS_SOURCE,
};
use crate::openai::client::ModelInfo;
use crate::profile::Profile;

/// Everything the server answered: `/v1/models`, and each `/metrics` URL's
/// page text (`Err`: why it could not be read, naming the URL).
#[derive(Debug, Clone)]
pub struct ServerAnswers {
    /// The served models, or why they could not be listed.
    pub models: Result<Vec<ModelInfo>, String>,
    /// `(URL, page text or why not)` per `/metrics` URL.
    pub metrics: Vec<(String, Result<String, String>)>,
}

/// Compares `profile` with everything the server answered. With several
/// `/metrics` URLs each replica is compared (its differences name its URL).
pub fn check(profile: &Profile, answers: &ServerAnswers) -> ProfileCheck {
    let server = &profile.server;
    let mut read = Vec::new();
    let mut unreadable = Vec::new();
    let models = match &answers.models {
        Ok(list) => {
            read.push(MODELS_SOURCE.to_string());
            Some(StatedSettings::from_models(list, &server.served_model_name))
        }
        Err(why) => {
            unreadable.push(format!("{MODELS_SOURCE}: {why}"));
            None
        }
    };
    if answers.metrics.is_empty() {
        unreadable.push("no /metrics URL".to_string());
    }
    let mut pages = Vec::new();
    for (url, page) in &answers.metrics {
        match page
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|text| StatedSettings::from_metrics_page(text, url))
        {
            Ok(stated) => {
                read.push(url.clone());
                pages.push(stated);
            }
            Err(why) => unreadable.push(why),
        }
    }
    // The /v1/models part goes with the first replica.
    let mut parts: Vec<StatedSettings> = Vec::new();
    let mut pages = pages.into_iter();
    let mut first = pages.next().unwrap_or_default();
    if let Some(m) = models {
        first.model_ids = m.model_ids;
        first.max_model_len = m.max_model_len;
    }
    parts.push(first);
    parts.extend(pages);
    let comparisons: Vec<Comparison> = parts.iter().map(|s| compare(server, s)).collect();
    let mut differences: Vec<Difference> = Vec::new();
    for field in FIELDS {
        for c in &comparisons {
            differences.extend(c.differences.iter().filter(|d| d.field == field).cloned());
        }
    }
    let in_any = |field: &str, pick: fn(&Comparison) -> &Vec<String>| {
        comparisons
            .iter()
            .any(|c| pick(c).iter().any(|f| f == field))
    };
    let differs = |field: &str| differences.iter().any(|d| d.field == field);
    let matched = FIELDS
        .iter()
        .filter(|f| !differs(f) && in_any(f, |c| &c.matched))
        .map(|f| f.to_string())
        .collect();
    let not_stated = FIELDS
        .iter()
        .filter(|f| !differs(f) && !in_any(f, |c| &c.matched))
        .map(|f| f.to_string())
        .collect();
    ProfileCheck {
        profile: profile.name.clone(),
        differences,
        matched,
        not_stated,
        read,
        unreadable,
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
    /// differs: `codendum: warning: the server does not run profile P: …`.
    pub fn warning(&self) -> Option<String> {
        (!self.differences.is_empty()).then(|| {
            format!(
                "codendum: warning: the server does not run profile {}: {}",
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
