//! What a replay says of itself: the `replay` block of its `summary.json`,
//! the note its verdict carries, and the plan line it shows before it
//! starts.

use std::path::Path;

use super::config::{ReplayConfig, Timing};
use super::driver::ReplayOutcome;
use codendum_core::results::ReplayParameters;
use codendum_core::trace::{SourceFormat, Trace};

/// The `replay` block of a replay's `summary.json`.
pub fn parameters(
    source: &Path,
    trace: &Trace,
    config: &ReplayConfig,
    outcome: &ReplayOutcome,
) -> ReplayParameters {
    let name = source.file_name().map_or_else(
        || source.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let (skipped, shortened) = outcome.too_long;
    let format = trace
        .source
        .as_ref()
        .map_or(SourceFormat::Mooncake, |s| s.format);
    ReplayParameters {
        source: name,
        source_kind: format.as_str().into(),
        licence: trace.source.as_ref().and_then(|s| s.licence.clone()),
        block_size: trace.block_size,
        speed: config.speed,
        sessions: outcome.sessions_started,
        calls: trace.calls.len(),
        users: config.schedule.users,
        timing: timing_name(config.schedule.timing).into(),
        max_think_s: config.schedule.max_think_s,
        max_wait_s: config.schedule.max_wait_s,
        before_part_way: outcome.before_part_way,
        max_model_len: config.max_model_len,
        too_long_skipped: skipped,
        too_long_shortened: shortened,
        theoretical_hit_rate: outcome.theoretical_hit_rate(),
        template_tokens: config.template.message_tokens,
        sizes_counted: outcome.sizes.calls,
        sizes_within_1_pct: outcome.sizes.within_1_pct,
        size_error_max_pct: outcome.sizes.max_error * 100.0,
        unread: trace.unread.iter().map(ToString::to_string).collect(),
    }
}

/// The name of a timing (`--timing`).
pub fn timing_name(t: Timing) -> &'static str {
    match t {
        Timing::AfterAnswer => "after-answer",
        Timing::Original => "original",
    }
}

/// What the verdict line adds for a replay: the calls the server's
/// context could not hold, and a source read only in part.
pub fn verdict_note(
    trace: &Trace,
    config: &ReplayConfig,
    outcome: &ReplayOutcome,
) -> Option<String> {
    let mut notes = too_long_notes(config, outcome.too_long);
    if !trace.unread.is_empty() {
        notes.push(format!(
            "the source was read in part ({} places not read, first: {})",
            trace.unread.len(),
            trace.unread[0]
        ));
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

/// The calls the server's context could not hold, `(skipped, shortened)`,
/// a sentence each; none when all fitted.
pub fn too_long_notes(config: &ReplayConfig, (skipped, shortened): (usize, usize)) -> Vec<String> {
    let Some(m) = config.max_model_len else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    if skipped > 0 {
        notes.push(format!(
            "{skipped} calls beyond the server's max_model_len of {m} tokens skipped"
        ));
    }
    if shortened > 0 {
        notes.push(format!(
            "{shortened} calls beyond the server's max_model_len of {m} tokens shortened from the front"
        ));
    }
    notes
}

/// The prompt sizes the server counted against the recorded ones, one
/// line.
pub fn sizes_line(sizes: &super::SizeCheck) -> String {
    format!(
        "Prompt sizes: {} of {} calls within 1 % of their recorded size as the server counted them (largest difference {:.2} %)",
        sizes.within_1_pct,
        sizes.calls,
        sizes.max_error * 100.0
    )
}

/// The theoretical and measured prefix-cache hit rates, one line.
pub fn hit_rate_line(theoretical: Option<f64>, measured: Option<f64>) -> String {
    let pct = |f: Option<f64>| f.map_or("–".to_string(), |f| format!("{:.1} %", f * 100.0));
    format!(
        "Prefix-cache hit rate: {} measured, {} theoretical (the recorded sharing with a cache that keeps everything)",
        pct(measured),
        pct(theoretical)
    )
}

/// The stretch a replay's server output is averaged over, seconds since
/// it started: as users, the replay's own steady stretch
/// ([`ReplayOutcome::steady_s`]); else the source's (`recorded`, seconds of
/// its clock, divided by `speed`); `None`: the whole replay.
pub fn steady_stretch(
    recorded: Option<(f64, f64)>,
    config: &ReplayConfig,
    outcome: &ReplayOutcome,
) -> Option<(f64, f64)> {
    match config.schedule.users {
        Some(_) => outcome.steady_s.filter(|(a, b)| b - a >= 60.0),
        None => recorded.map(|(a, b)| (a / config.speed, b / config.speed)),
    }
}
