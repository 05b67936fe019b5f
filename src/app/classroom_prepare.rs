//! Before the class starts: the server's models, the class's configuration,
//! and against a live server the busy guard, the profile check and the
//! confirmation.

use super::classroom::ClassroomRun;
use crate::bench::{busy_guard, TimelineFlag};
use crate::classroom::ClassroomConfig;
use crate::client::ModelInfo;
use crate::connect::Connection;
use crate::events::Event;
use crate::server_match::ProfileCheck;
use codendum_core::error::Error;
use codendum_core::target::Provenance;

/// What the run starts from.
pub(super) struct Prepared {
    /// The class, its model and context limit resolved.
    pub config: ClassroomConfig,
    /// What the results record of the server (the twin's profile).
    pub provenance: Provenance,
    /// Whether the busy guard could read `/metrics` (`None`: not asked).
    pub metrics_reachable: Option<bool>,
    /// The stated profile against the live server (`None`: not checked).
    pub profile_check: Option<ProfileCheck>,
}

/// Reads the server's models, resolves the configuration and, against a
/// live server, guards, checks the profile and asks (errors: refused, or
/// the server could not be asked).
pub(super) async fn prepare(run: &ClassroomRun<'_>, conn: &Connection) -> Result<Prepared, Error> {
    let models = conn.client.models().await.map_err(|e| {
        Error::Failed(format!(
            "cannot list the server's models at /v1/models: {}",
            e.message
        ))
    })?;
    let config = resolve_config(run, &models)?;
    let mut provenance = run.provenance.clone();
    // Whether the busy guard could read /metrics (None: not asked).
    let mut metrics_reachable = None;
    // The stated profile against the live server (`None`: not checked).
    let mut profile_check = None;
    if conn.is_embedded() {
        run.events.emit(Event::Target(conn.label.clone()));
        if let Some(p) = &conn.profile {
            provenance.profile = Some(p.name.clone());
        }
    } else {
        // A stated profile is checked (a warning when the server differs)
        // while the busy guard reads /metrics.
        let guard_load = async {
            match (&run.connect.prometheus, &conn.scraper) {
                (Some(p), _) => super::fleet::prometheus_load(p, &run.target, &run.events).await,
                (None, Some(s)) => super::seams::load_now(s).await,
                (None, None) => None,
            }
        };
        let (load, check) = tokio::join!(
            guard_load,
            crate::server_match::check_live(
                provenance.profile.as_deref(),
                &conn.client,
                Some(&models),
                &run.target,
                &run.events,
            ),
        );
        profile_check = check;
        metrics_reachable = Some(load.is_some());
        let guard = busy_guard(load, run.allow_busy, TimelineFlag::Run)?;
        if let Some(w) = guard.warning() {
            run.events.warn(w);
        }
        let mut plan = format!(
            "Classroom: {} students ({} scenario) against {}, model {}, new requests for {:.0} s after a {:.0} s ramp-up; results in {}",
            config.users,
            config.scenario.name(),
            conn.label,
            config.model,
            config.duration.as_secs_f64(),
            config.ramp_up.as_secs_f64(),
            run.results_dir.display()
        );
        if !guard.checked() {
            plan.push_str("; the server's load was not checked (/metrics could not be read)");
        }
        run.events.emit(Event::Plan(plan.clone()));
        if !run.yes && !(run.confirm)(&plan) {
            return Err(Error::Refused(
                "not confirmed: pass --yes to run without asking".into(),
            ));
        }
    }
    if let Some(note) = config.key_sharing_note() {
        run.events.note(note);
    }

    Ok(Prepared {
        config,
        provenance,
        metrics_reachable,
        profile_check,
    })
}

/// The class's configuration against this server: the model (`--model`,
/// else the server's first) and the context limit (`--context-limit`, else
/// the server's `max_model_len`).
fn resolve_config(run: &ClassroomRun<'_>, models: &[ModelInfo]) -> Result<ClassroomConfig, Error> {
    let mut config = run.config.clone();
    if config.model.trim().is_empty() {
        config.model = match &run.target.model {
            Some(m) => m.clone(),
            None => models
                .first()
                .map(|m| m.id.clone())
                .ok_or_else(|| Error::Failed("the server lists no model; pass --model".into()))?,
        };
    }
    if !run.context_limit_given {
        config.context_limit = models
            .iter()
            .find(|m| m.id == config.model)
            .and_then(|m| m.max_model_len)
            .or(config.context_limit);
    }
    codendum_core::error::Check::check(&config)?;
    Ok(config)
}
