//! The files of a capture folder besides `calls.jsonl`: the `capture.json`
//! header, `prompt.json` and `client-times.json`, each written whole to a
//! temporary file and renamed into place (a reader never sees half a file).

use std::path::Path;

use serde::Serialize;

use codendum_core::capture::CAPTURE_HEADER_FILE;
use codendum_core::capture::{CaptureHeader, CALLS_FILE};
use codendum_core::error::{ConfigError, Error};
use codendum_core::results::RunFolder;

/// Writes `value` as pretty JSON to `path` through a temporary file.
pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), Error> {
    let folder = RunFolder::at(path.parent().unwrap_or(Path::new(".")));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("capture.json");
    folder.write_json(name, value).map(|_| ())
}

/// Makes `dir` ready for a new capture: created if missing; refused (bad
/// input) when it already holds one, so two captures never mix.
pub fn prepare_folder(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| ConfigError::Unreadable {
        what: "capture folder (--out)",
        path: dir.to_path_buf(),
        source,
    })?;
    let header = dir.join(CAPTURE_HEADER_FILE);
    if header.exists() || dir.join(CALLS_FILE).exists() {
        return Err(ConfigError::invalid(
            "--out",
            format!(
                "{} already holds a capture; give a new folder",
                dir.display()
            ),
        )
        .into());
    }
    Ok(())
}

/// Writes the header of a capture starting now.
pub fn write_header(dir: &Path, header: &CaptureHeader) -> Result<(), Error> {
    write_json(&dir.join(CAPTURE_HEADER_FILE), header)
}
