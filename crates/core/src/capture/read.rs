//! Reading a capture folder back.

use std::io::BufReader;
use std::path::{Path, PathBuf};

use super::{CallLine, CaptureHeader, CALLS_FILE, CAPTURE_HEADER_FILE};
use crate::error::ConfigError;
use crate::results::read_jsonl;

/// A capture folder read back.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureFolder {
    /// The folder.
    pub folder: PathBuf,
    /// `capture.json`.
    pub header: CaptureHeader,
    /// `calls.jsonl`, in file order (the order calls ended).
    pub calls: Vec<CallLine>,
    /// The last line was cut short (the capture was killed mid-write) and
    /// left out.
    pub truncated_last_line: bool,
}

fn bad(path: &Path, what: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::BadFile {
        what,
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Reads `capture.json` and `calls.jsonl` of `dir`. A header without its
/// end (the capture was killed) is read as it is.
pub fn read_capture(dir: &Path) -> Result<CaptureFolder, ConfigError> {
    let header_path = dir.join(CAPTURE_HEADER_FILE);
    let text = std::fs::read_to_string(&header_path).map_err(|source| ConfigError::Unreadable {
        what: "capture header",
        path: header_path.clone(),
        source,
    })?;
    let header: CaptureHeader = serde_json::from_str(&text)
        .map_err(|e| bad(&header_path, "capture header", e.to_string()))?;
    let calls_path = dir.join(CALLS_FILE);
    let file = std::fs::File::open(&calls_path).map_err(|source| ConfigError::Unreadable {
        what: "capture calls",
        path: calls_path.clone(),
        source,
    })?;
    let contents = read_jsonl::<CallLine, _>(BufReader::new(file), CALLS_FILE)
        .map_err(|e| bad(&calls_path, "capture calls", e.to_string()))?;
    Ok(CaptureFolder {
        folder: dir.to_path_buf(),
        header,
        calls: contents.items,
        truncated_last_line: contents.truncated_last_line,
    })
}
