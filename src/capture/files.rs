//! The files of a capture folder besides `calls.jsonl`: the `capture.json`
//! header, `prompt.json` and `client-times.json`, each written whole to a
//! temporary file and renamed into place (a reader never sees half a file).

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::classroom::client_times::CAPTURE_HEADER_FILE;
use codendum_core::error::{ConfigError, Error};
use codendum_core::results::schema::{CAPTURE_KIND, CAPTURE_SCHEMA_VERSION};
use codendum_core::results::RunFolder;

pub use crate::classroom::client_times::CLIENT_TIMES_FILE;

/// The captured system prompt and tools (`classroom --prompt-file`).
pub const PROMPT_FILE: &str = "prompt.json";

/// `capture.json`: what was captured, from where, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureHeader {
    /// [`CAPTURE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `"capture"`.
    pub kind: String,
    /// The codendum version that captured.
    pub codendum_version: String,
    /// The upstream base URL, without credentials.
    pub upstream: String,
    /// Where the capture listened (`http://ADDR/v1` for OpenCode).
    pub listen: String,
    /// When the capture started, UTC.
    pub started_utc: DateTime<Utc>,
    /// When it ended (written on exit), UTC.
    pub ended_utc: Option<DateTime<Utc>>,
    /// Calls recorded (written on exit).
    pub calls: Option<u64>,
    /// Whether `prompt.json` (message text) is kept; `false` for
    /// `--no-text`; absent in captures from before the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<bool>,
}

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
    if header.exists() || dir.join(super::store::CALLS_FILE).exists() {
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

impl CaptureHeader {
    /// The header of a capture from `upstream`, listening on `listen`.
    pub fn new(upstream: String, listen: String) -> Self {
        CaptureHeader {
            schema_version: CAPTURE_SCHEMA_VERSION,
            kind: CAPTURE_KIND.into(),
            codendum_version: env!("CARGO_PKG_VERSION").into(),
            upstream,
            listen,
            started_utc: Utc::now(),
            ended_utc: None,
            calls: None,
            text: None,
        }
    }
}
