//! A profile checked against everything the server answered (several
//! `/metrics` URLs: each replica is compared), and how that check reads:
//! the differences, the fields not stated, the warning and the verdict.
//! One set of stated values against a profile is
//! [`super::compare`].

use super::{compare, Comparison, StatedSettings};
use crate::client::ModelInfo;
use codendum_core::profile::Profile;
use codendum_core::results::profile_check::{Difference, ProfileCheck};
use codendum_core::results::profile_check::{FIELDS, MODELS_SOURCE};

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
