//! `codendum calibrate` end to end: fit, then write the profile, its
//! hardware TOML next to it (`hardware/<name>.toml`) and the fit report
//! (`<name>-fit.json`), and print the summary on stderr.

use codendum_core::results::RunFolder;
use std::path::{Path, PathBuf};

use crate::calibrate::{calibrate, write, CalibrateOptions, Calibration};
use codendum_core::error::Error;

/// The files a calibration wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The profile TOML (`--out`).
    pub profile: PathBuf,
    /// Its hardware TOML.
    pub hardware: PathBuf,
    /// The fit report.
    pub report: PathBuf,
}

/// A scratch folder for the twin's throw-away benchmark folders.
fn scratch_folder() -> Result<PathBuf, Error> {
    let scratch = std::env::temp_dir().join(format!("codendum-targets-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| Error::io(format!("cannot create {}", scratch.display()), e))?;
    Ok(scratch)
}

/// A profile name from a served model name: `calibrated-` and the name's
/// letters, digits, `-`, `_` and `.`.
pub fn default_name(served_model_name: &str) -> String {
    let clean: String = served_model_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("calibrated-{}", clean.trim_matches('-'))
}

/// Runs the calibration and writes its files; `out` `None`: `<name>.toml`
/// in the current folder. The name defaults to `out`'s file stem, else to
/// [`default_name`] of the served model.
pub fn run(
    options: &CalibrateOptions,
    out: Option<&Path>,
) -> Result<(Calibration, Written), Error> {
    let mut options = options.clone();
    if options.name.is_empty() {
        if let Some(stem) = out.and_then(|o| o.file_stem()).and_then(|s| s.to_str()) {
            options.name = stem.to_string();
        }
    }
    let mut calibration = calibrate(&options)?;
    if options.name.is_empty() {
        options.name = default_name(&calibration.server.served_model_name.value);
        calibration.name = options.name.clone();
    }
    let profile = out.map_or_else(
        || PathBuf::from(format!("{}.toml", options.name)),
        Path::to_path_buf,
    );
    let dir = profile
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let hardware = dir.join("hardware").join(format!("{}.toml", options.name));
    let report = dir.join(format!("{}-fit.json", options.name));
    let io = |what: &Path| {
        let what = what.display().to_string();
        move |e| Error::io(format!("cannot write {what}"), e)
    };
    std::fs::create_dir_all(dir.join("hardware")).map_err(io(&dir.join("hardware")))?;
    let file_name = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string()
    };
    let folder = RunFolder::at(dir);
    RunFolder::at(dir.join("hardware"))
        .write_text(&file_name(&hardware), &write::hardware_toml(&calibration))?;
    folder.write_text(&file_name(&profile), &write::profile_toml(&calibration))?;
    if let Some(required) = &options.targets_from {
        // The suite's workloads on the fitted twin, as written.
        let fitted = codendum_core::profile::Profile::load(&profile.display().to_string())?;
        let scratch = scratch_folder()?;
        let derived = crate::calibrate::targets::derive(&fitted, Some(required), &scratch);
        let _ = std::fs::remove_dir_all(&scratch);
        let derived = derived?;
        calibration.notes.extend(derived.notes);
        folder.write_text(
            &file_name(&profile),
            &(write::profile_toml(&calibration) + &derived.toml),
        )?;
    }
    folder.write_json(&file_name(&report), &calibration)?;
    Ok((
        calibration,
        Written {
            profile,
            hardware,
            report,
        },
    ))
}
