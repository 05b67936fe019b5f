//! Which format a path holds, and reading it into a [`Trace`]: the formats
//! of recorded sessions this crate reads (OpenCode's store, Claude Code
//! conversations, TraceLab rows, Mooncake-style lines); a capture or a
//! results folder is the application's to recognise first.
//!
//! Detection, in order:
//! - a folder holding `opencode.db` (or `opencode-*.db`) or a `storage/`
//!   of session and message folders, or such a `storage/` folder itself,
//!   or a SQLite file (gzipped or not): OpenCode's store;
//! - a folder of `.json` (or `.json.gz`) files: Claude Code conversations,
//!   every file one;
//! - a file (gzipped or not) whose first line is a JSON object: a Claude
//!   Code conversation (`requests`), a TraceLab row (`session_id`,
//!   `round_index`, `input_tokens_total`) or else a Mooncake-style line;
//!   a `.json` file that is not one line is a conversation too.

use std::io::{BufRead, Read};
use std::path::Path;

use super::{
    claude_code, mooncake, open, opencode, tracelab, SourceFormat, Trace, TraceSource, Unread,
};

/// How a source is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportOptions {
    /// Tokens a block of the hash ids the source gives (Mooncake lines) or
    /// that are rebuilt for it (TraceLab, OpenCode); Claude Code
    /// conversations bring their own.
    pub block_size: u32,
    /// At most this many sessions are kept, the first by their first call,
    /// where the format lets a reading stop early (TraceLab).
    pub max_sessions: Option<usize>,
}

fn unread(path: &Path, line: usize, reason: impl Into<String>) -> Unread {
    Unread {
        file: path.display().to_string(),
        line,
        reason: reason.into(),
    }
}

const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";
/// The `.json` (and `.json.gz`) files of a folder, sorted.
fn conversation_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(".json") || n.ends_with(".json.gz"))
        })
        .collect();
    files.sort();
    files
}

/// The format of `path`, or why none fits.
pub fn detect(path: &Path) -> Result<SourceFormat, Unread> {
    if path.is_dir() {
        if !opencode::databases(path).is_empty() || opencode::json_storage(path).is_some() {
            return Ok(SourceFormat::Opencode);
        }
        if !conversation_files(path).is_empty() {
            return Ok(SourceFormat::ClaudeCode);
        }
        return Err(unread(
            path,
            0,
            "holds no sessions codendum reads: a capture (calls.jsonl, capture.json), a results folder (requests.jsonl), an OpenCode store (opencode.db or storage/), or Claude Code conversations (*.json)",
        ));
    }
    // A SQLite file, gzipped or not: OpenCode's database.
    let mut head = [0u8; SQLITE_MAGIC.len()];
    if open(path)?.read_exact(&mut head).is_ok() && head == SQLITE_MAGIC {
        return Ok(SourceFormat::Opencode);
    }
    let mut first = String::new();
    let mut input = open(path)?;
    loop {
        first.clear();
        match input.read_line(&mut first) {
            Ok(0) => return Err(unread(path, 0, "is empty")),
            Ok(_) if first.trim().is_empty() => continue,
            Ok(_) => break,
            Err(e) => return Err(unread(path, 1, format!("cannot read it: {e}"))),
        }
    }
    let json_file = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".json") || n.ends_with(".json.gz"));
    Ok(
        match serde_json::from_str::<serde_json::Value>(first.trim()) {
            Ok(v) if claude_code::looks_like(&v) => SourceFormat::ClaudeCode,
            Ok(v) if tracelab::looks_like(&v) => SourceFormat::Tracelab,
            Ok(_) => SourceFormat::Mooncake,
            Err(_) if json_file => SourceFormat::ClaudeCode,
            Err(_) => SourceFormat::Mooncake,
        },
    )
}

/// The licence or attribution note beside a source: the first line of a
/// `NOTICE`, `LICENSE`, `LICENCE` or `ATTRIBUTION` file in its folder (the
/// folder itself, or a file's folder).
pub fn licence_note(path: &Path) -> Option<String> {
    let dir = if path.is_dir() { path } else { path.parent()? };
    let mut candidates: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                    let n = n.to_ascii_uppercase();
                    ["NOTICE", "LICENSE", "LICENCE", "ATTRIBUTION"]
                        .iter()
                        .any(|k| n.starts_with(k))
                })
        })
        .collect();
    candidates.sort();
    candidates.iter().find_map(|p| {
        let text = std::fs::read_to_string(p).ok()?;
        let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
        Some(line.chars().take(200).collect())
    })
}

fn named(mut trace: Trace, path: &Path) -> Trace {
    for u in &mut trace.unread {
        if u.file.is_empty() {
            u.file = path.display().to_string();
        }
    }
    trace
}

/// Reads `path` as `format` (one of the formats of this module; a capture
/// or results folder is the application's). A source of which nothing can
/// be read is the error; what could not be read beside what could is in
/// the trace's `unread`.
pub fn read(path: &Path, format: SourceFormat, options: ImportOptions) -> Result<Trace, Unread> {
    let (trace, files) = match format {
        SourceFormat::Mooncake => {
            let t = mooncake::read_trace(open(path)?, options.block_size)
                .map_err(|e| unread(path, e.line, e.reason))?;
            (named(t, path), 1)
        }
        SourceFormat::Tracelab => {
            let t = tracelab::read_rows(open(path)?, options.block_size, options.max_sessions)
                .map_err(|e| unread(path, e.line, e.reason))?;
            (named(t, path), 1)
        }
        SourceFormat::ClaudeCode => {
            let files = if path.is_dir() {
                conversation_files(path)
            } else {
                vec![path.to_path_buf()]
            };
            let mut conversations = Vec::new();
            let mut bad = Vec::new();
            for f in &files {
                let name = f.display().to_string();
                match open(f).and_then(|r| claude_code::read_conversation(r, &name)) {
                    Ok((c, partial)) => {
                        conversations.push(c);
                        bad.extend(partial);
                    }
                    Err(u) => bad.push(u),
                }
            }
            if conversations.is_empty() {
                return Err(bad
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| unread(path, 0, "holds no conversation (*.json)")));
            }
            let n = conversations.len();
            let mut t = claude_code::to_trace(conversations);
            bad.append(&mut t.unread);
            t.unread = bad;
            (t, n)
        }
        SourceFormat::Opencode => {
            let store = opencode::read_store(path)?;
            let files = store.files;
            (opencode::to_trace(store, options.block_size), files)
        }
        SourceFormat::Capture | SourceFormat::Classroom | SourceFormat::Replay => {
            return Err(unread(
                path,
                0,
                format!("a {} folder is read by the application", format.as_str()),
            ))
        }
    };
    if trace.calls.is_empty() {
        let why = trace
            .unread
            .first()
            .map_or_else(|| "no model call".to_string(), ToString::to_string);
        return Err(unread(path, 0, format!("holds no model call ({why})")));
    }
    let mut trace = trace;
    trace.source = Some(TraceSource {
        format,
        files,
        licence: licence_note(path),
    });
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn formats_are_told_apart_and_gzip_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let moon = dir.path().join("m.jsonl");
        std::fs::write(
            &moon,
            "\n{\"timestamp\": 0, \"input_length\": 40, \"hash_ids\": [1]}\n",
        )
        .unwrap();
        assert_eq!(detect(&moon).unwrap(), SourceFormat::Mooncake);
        let lab = dir.path().join("rows.jsonl.gz");
        let row = r#"{"session_id":"s","round_index":0,"input_tokens_total":100,"output_tokens":5,"timing_events":[{"event_type":"user_message","timestamp":"2026-01-01T00:00:00.000Z"}]}"#;
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&lab).unwrap(),
            flate2::Compression::fast(),
        );
        writeln!(gz, "{row}").unwrap();
        gz.finish().unwrap();
        assert_eq!(detect(&lab).unwrap(), SourceFormat::Tracelab);
        let options = ImportOptions {
            block_size: 16,
            max_sessions: None,
        };
        let t = read(&lab, SourceFormat::Tracelab, options).expect("reads gzip");
        assert_eq!(t.calls.len(), 1);
        assert_eq!(
            t.source.as_ref().map(|s| s.format),
            Some(SourceFormat::Tracelab)
        );
        let conv = dir.path().join("c.json");
        std::fs::write(&conv, r#"{"id":"c","requests":[{"t":0,"in":10,"out":1}]}"#).unwrap();
        assert_eq!(detect(&conv).unwrap(), SourceFormat::ClaudeCode);
        std::fs::write(
            dir.path().join("NOTICE"),
            "\ntraces from somewhere (CC0)\nmore\n",
        )
        .unwrap();
        let t = read(&conv, SourceFormat::ClaudeCode, options).expect("reads");
        assert_eq!(
            t.source.and_then(|s| s.licence).as_deref(),
            Some("traces from somewhere (CC0)")
        );
        let empty = tempfile::tempdir().unwrap();
        let e = detect(empty.path()).unwrap_err();
        assert!(e.reason.contains("holds no sessions"), "{e}");
    }

    #[test]
    fn a_folder_of_conversations_keeps_the_good_ones_and_names_the_bad() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.json"),
            r#"{"id":"a","requests":[{"t":0,"in":10,"out":1}]}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("b.json"),
            "{\"id\":\"b\",\"requests\":[{\"t\":0,",
        )
        .unwrap();
        let options = ImportOptions {
            block_size: 16,
            max_sessions: None,
        };
        assert_eq!(detect(dir.path()).unwrap(), SourceFormat::ClaudeCode);
        let t = read(dir.path(), SourceFormat::ClaudeCode, options).expect("reads a");
        assert_eq!(t.sessions(), vec!["a"]);
        assert_eq!(t.unread.len(), 1);
        assert!(t.unread[0].file.ends_with("b.json"), "{:?}", t.unread);
        assert_eq!(t.source.map(|s| s.files), Some(1));
    }
}
