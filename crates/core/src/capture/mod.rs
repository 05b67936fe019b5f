//! The files of a `codendum capture` folder, as every reader sees them: the
//! `capture.json` header ([`CaptureHeader`]) and one [`CallLine`] per call
//! in `calls.jsonl`. The proxy that writes them lives in the binary's crate;
//! the replay, the trace export and the after-class report read them from
//! here, so the format has one definition.
//!
//! Nothing in these files is message text or a key: sizes, times, kinds,
//! sessions, tool names and argument sizes, statuses, and each student as
//! an ordinal of its key within the capture.

mod read;
mod record;

pub use read::{read_capture, CaptureFolder};
pub use record::{CallLine, CaptureHeader, CaptureKind, RequestInfo, ToolCallLine};

/// The header of a capture folder.
pub const CAPTURE_HEADER_FILE: &str = "capture.json";

/// The per-call records of a capture folder.
pub const CALLS_FILE: &str = "calls.jsonl";

/// The captured system prompt and tools (`classroom --prompt-file`).
pub const PROMPT_FILE: &str = "prompt.json";

/// Whether `dir` holds a capture (`capture.json` and `calls.jsonl`).
pub fn is_capture(dir: &std::path::Path) -> bool {
    dir.join(CAPTURE_HEADER_FILE).is_file() && dir.join(CALLS_FILE).is_file()
}
