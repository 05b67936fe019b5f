//! The whole search in virtual time: the twin's prediction with the
//! settings' profile, then the search itself against the twin of the server
//! it measures; what `codendum capacity` does against a live server,
//! answered in seconds.

use std::time::Duration;

use super::engine::Timing;
use super::predict::{predict, search_on_twin, Predicted, TwinClass, TwinRun};
use super::search::SearchBounds;
use super::settings::CapacitySettings;
use codendum_core::error::Error;
use codendum_core::profile::Profile;

/// The whole search of `settings` in virtual time against the twin of
/// `server` (the server the search measures; the prediction is made with
/// `settings.profile`, which may differ): what `codendum capacity` does
/// against a live server, answered in seconds. The capacity suite's trial
/// and the tests run it.
#[derive(Debug, Clone)]
pub struct TwinCapacity {
    /// The twin's prediction with `settings.profile`.
    pub predicted: Predicted,
    /// The search's bounds.
    pub bounds: SearchBounds,
    /// Its timing.
    pub timing: Timing,
    /// The search against the twin of `server`.
    pub twin: TwinRun,
}

/// Runs [`TwinCapacity`]; `request_timeout` bounds each call.
pub fn capacity_on_twin(
    settings: &CapacitySettings,
    server: &Profile,
    request_timeout: Duration,
) -> Result<TwinCapacity, Error> {
    let input = TwinClass {
        profile: &settings.profile,
        class: &settings.class,
        replay: settings.replay.as_ref(),
        tiers: &settings.tiers,
    };
    let predicted = predict(
        &input,
        settings.max_users,
        &settings.timing(&[], request_timeout),
    )?;
    let bounds = settings.bounds(&predicted);
    let timing = settings.timing(&predicted.plateaus, request_timeout);
    let on_server = TwinClass {
        profile: server,
        ..input
    };
    let twin = search_on_twin(&on_server, settings.search(&predicted, bounds), &timing)?;
    Ok(TwinCapacity {
        predicted,
        bounds,
        timing,
        twin,
    })
}
