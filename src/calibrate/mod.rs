//! `codendum calibrate`: fit the twin's step-time model (`twin::model`) to
//! bench runs of the lab's own server, and write a profile every command
//! loads with `--profile FILE`.
//!
//! Order of work: [`input`] reads the folders (one server and model, or a
//! refusal), [`observe`] turns each timed request into an equation of the
//! model ([`model`]), [`fit`] solves them ([`lsq`]), [`quality`] checks the
//! fit level by level and on held-out levels, [`facts`] reads the server's
//! settings, [`mod@write`] renders the profile, its hardware TOML and the fit
//! report; with `--targets-from`, [`targets`] runs the capacity suite's
//! workloads on the fitted twin and writes the profile's `[targets]`.

pub mod check;
mod design;
pub mod facts;
pub mod fit;
pub mod input;
pub mod lsq;
pub mod model;
pub mod observe;
pub mod quality;
pub mod targets;
pub mod write;

use std::path::PathBuf;

use serde::Serialize;

use codendum_core::error::ConfigError;
use codendum_core::profile::region::CalibrationRegion;
use codendum_core::profile::Profile;

pub use self::facts::{FactOverrides, ServerFacts};
pub use self::fit::{Fit, FitOptions};
pub use self::quality::LevelCheck;

/// Everything `codendum calibrate` is asked.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    /// Bench folders to fit from.
    pub runs: Vec<PathBuf>,
    /// Name of the profile and its hardware TOML.
    pub name: String,
    /// Values the runs cannot tell (`--max-num-seqs`, …).
    pub overrides: FactOverrides,
    /// Bootstrap and seed.
    pub fit: FitOptions,
    /// Bytes per second that turns the fitted seconds into the hardware
    /// TOML's bytes, GB/s (a normalisation: only the ratio is measured).
    pub memory_bandwidth_gb_s: f64,
    /// A profile whose `[targets]` the new one takes (`--targets-from`).
    pub targets_from: Option<Profile>,
}

/// Default normalising bandwidth of a fitted hardware TOML, GB/s.
pub const DEFAULT_BANDWIDTH_GB_S: f64 = 1_000.0;

/// A finished calibration: the fit, its checks, and the server's settings.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// Profile name.
    pub name: String,
    /// The folders fitted from, with their run ids.
    pub sources: Vec<Source>,
    /// Whether the runs were of the embedded twin.
    pub from_twin: bool,
    /// The server's settings.
    pub server: ServerFacts,
    /// The fitted model.
    pub fit: Fit,
    /// Level by level: measured against fitted and held out.
    pub levels: Vec<LevelCheck>,
    /// Normalising bandwidth used in the hardware TOML, GB/s.
    pub memory_bandwidth_gb_s: f64,
    /// Notes for the reader: what could not be told, what was assumed.
    pub notes: Vec<String>,
    /// What the runs measured: contexts, batch sizes, prompt lengths.
    pub region: CalibrationRegion,
}

/// The region the timed requests cover: their longest context (prompt +
/// output), the most requests in flight of their levels, their prompt
/// lengths.
pub fn measured_region(
    timed: &[observe::TimedRequest],
    levels: &[input::LevelKey],
) -> CalibrationRegion {
    let prompts = timed.iter().map(|r| r.input_tokens);
    CalibrationRegion {
        max_context_tokens: timed
            .iter()
            .map(|r| r.input_tokens + r.output_tokens)
            .max()
            .unwrap_or(0),
        max_batch: levels.iter().map(|k| k.concurrency).max().unwrap_or(0),
        min_prompt_tokens: prompts.clone().min().unwrap_or(0),
        max_prompt_tokens: prompts.max().unwrap_or(0),
    }
}

/// One input run.
#[derive(Debug, Clone, Serialize)]
pub struct Source {
    /// The folder.
    pub folder: PathBuf,
    /// Its run id.
    pub run_id: String,
    /// Successful requests in it.
    pub requests: usize,
    /// The server it measured.
    pub server: String,
}

/// Reads, fits and checks. Errors (exit 2) name the culprit.
pub fn calibrate(options: &CalibrateOptions) -> Result<Calibration, ConfigError> {
    let runs = options
        .runs
        .iter()
        .map(|f| input::read_run(f))
        .collect::<Result<Vec<_>, _>>()?;
    input::check_same_server(&runs)?;
    let (timed, levels) = input::timed_requests(&runs);
    if timed.is_empty() {
        return Err(ConfigError::invalid(
            "RUN_DIR",
            "the runs have no successful request: nothing to fit",
        ));
    }
    let region = measured_region(&timed, &levels);
    let server = facts::server_facts(&runs, options.overrides);
    let budget = u64::from(server.max_num_batched_tokens.value);
    let obs = observe::observations(&timed, budget);
    let fit = fit::fit(&obs, options.fit).map_err(|e| ConfigError::invalid("RUN_DIR", e))?;
    let labels: Vec<String> = levels.iter().map(|k| k.label(runs.len())).collect();
    let checks = quality::level_checks(&obs, &fit, &labels);
    let from_twin = runs.iter().all(|r| r.summary.server.url == "embedded twin");
    let mut notes = fit.notes.clone();
    if from_twin {
        notes.push("fitted from runs of the embedded twin, not of a real server".into());
    }
    if levels.len() == 1 {
        notes.push("one level: the held-out check needs two or more".into());
    }
    Ok(Calibration {
        name: options.name.clone(),
        sources: runs
            .iter()
            .map(|r| Source {
                folder: r.folder.clone(),
                run_id: r.summary.header.run_id.clone(),
                requests: r.requests.iter().filter(|q| q.ok).count(),
                server: r.summary.server.url.clone(),
            })
            .collect(),
        from_twin,
        server,
        fit,
        levels: checks,
        memory_bandwidth_gb_s: options.memory_bandwidth_gb_s,
        notes,
        region,
    })
}

#[cfg(test)]
mod fit_tests;
