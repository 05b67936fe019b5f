//! The live side of the profile check: reading what the server states
//! (`/v1/models`, every `/metrics` page), warning on stderr for `bench` and
//! `classroom`, and recording the check in `summary.json`. The comparison
//! itself is [`super::server_match`].

use crate::events::Events;
use crate::settings::{LiveServer, Server};
use codendum_core::access::ClientSettings;
use std::path::Path;

use super::{check, ServerAnswers, MODELS_LIMIT};
use crate::client::{HttpClient, ModelInfo};
use crate::connect::{ConnectOptions, Connection};
use codendum_core::access::{Secret, Target};
use codendum_core::profile::Profile;
use codendum_core::results::profile_check::ProfileCheck;

/// `/v1/models` through the run's client, within [`MODELS_LIMIT`];
/// `Err` is why, in one line.
pub async fn read_models(client: &HttpClient) -> Result<Vec<ModelInfo>, String> {
    match tokio::time::timeout(MODELS_LIMIT, client.models()).await {
        Ok(Ok(models)) => Ok(models),
        Ok(Err(e)) => Err(match e.status {
            Some(status) => format!("HTTP {status}: {}", e.message),
            None => e.message,
        }),
        Err(_) => Err(format!("no answer within {} s", MODELS_LIMIT.as_secs_f64())),
    }
}

/// Reads every `/metrics` URL of `target` once, at the same time, each
/// within the scrape limit ([`crate::scrape::sampler::SCRAPE_TIMEOUT`]).
pub async fn read_metrics_pages(target: &Target) -> Vec<(String, Result<String, String>)> {
    let client = match crate::client::build_http_client(target.cacert.as_deref(), 4) {
        Ok(c) => c,
        Err(e) => {
            return target
                .metrics_urls
                .iter()
                .map(|u| (u.clone(), Err(format!("{u} cannot be read: {e}"))))
                .collect()
        }
    };
    let reads = target.metrics_urls.iter().map(|url| {
        let client = client.clone();
        async move {
            let page = read_page(&client, url).await;
            (url.clone(), page)
        }
    });
    futures::future::join_all(reads).await
}

async fn read_page(client: &reqwest::Client, url: &str) -> Result<String, String> {
    let unreachable = |e: reqwest::Error| {
        format!(
            "{url} is unreachable: {}",
            codendum_core::error::one_line(&e.without_url())
        )
    };
    // No OpenMetrics Accept header: vLLM would switch format.
    let response = client
        .get(url)
        .header(reqwest::header::ACCEPT, "text/plain")
        .timeout(crate::scrape::sampler::SCRAPE_TIMEOUT)
        .send()
        .await
        .map_err(unreachable)?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{url} answered HTTP {}", status.as_u16()));
    }
    let body = response.bytes().await.map_err(unreachable)?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// Checks `profile` against the live server `target` (side calls signed
/// with the client's `--api-key`, else the first of `keys`). `Err`: no
/// client could be built.
pub async fn check_target(
    profile: &Profile,
    (target, client): (&Target, &ClientSettings),
    keys: &[Secret],
) -> Result<ProfileCheck, String> {
    let opts = ConnectOptions {
        max_connections: 4,
        student_keys: keys.to_vec(),
        ..ConnectOptions::default()
    };
    let server = Server::Live(LiveServer {
        target: target.clone(),
        prometheus: None,
    });
    let conn = Connection::open(&server, client, &opts)
        .await
        .map_err(|e| format!("cannot reach {}: {e}", target.display_url()))?;
    let (models, metrics) = tokio::join!(
        read_models(conn.client.http().map_err(|e| e.to_string())?),
        read_metrics_pages(target)
    );
    conn.close().await;
    Ok(check(profile, &ServerAnswers { models, metrics }))
}

/// For `bench` and `classroom` against a live server: when a profile was
/// stated (`--profile` or `CODENDUM_PROFILE`; `None`: nothing is checked),
/// compares it with the server and says one thing: the warning when they
/// differ, a note when the profile does not load or the server states
/// nothing. `models`: `/v1/models` when the caller has it already.
pub async fn check_live(
    stated_profile: Option<&str>,
    client: &HttpClient,
    models: Option<&[ModelInfo]>,
    target: &Target,
    events: &Events,
) -> Option<ProfileCheck> {
    let spec = stated_profile.map(str::trim).filter(|s| !s.is_empty())?;
    let profile = match Profile::load(spec) {
        Ok(p) => p,
        Err(e) => {
            events.note(format!(
                "the server was not checked against profile {spec}: {e}"
            ));
            return None;
        }
    };
    let read_models = async {
        match models {
            Some(m) => Ok(m.to_vec()),
            None => read_models(client).await,
        }
    };
    let (models, metrics) = tokio::join!(read_models, read_metrics_pages(target));
    let check = check(&profile, &ServerAnswers { models, metrics });
    if let Some(warning) = check.warning() {
        events.warn(warning);
    } else if check.matched.is_empty() {
        let why = check.not_stated_text().unwrap_or_default();
        events.note(format!(
            "cannot check that the server runs profile {}: {why}",
            check.profile
        ));
    }
    Some(check)
}

/// The `profile_check` of a results folder's `summary.json`, if it has one.
pub fn read_profile_check(folder: &Path) -> Option<ProfileCheck> {
    codendum_core::results::read_summary(folder)
        .ok()?
        .profile_check()
        .cloned()
}
