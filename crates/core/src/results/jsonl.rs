//! JSON-lines files: an append writer that flushes every line (so a killed
//! run keeps every line it wrote) and a reader that tolerates a truncated
//! last line (the run died while writing it).

use std::io::{BufRead, Write};
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::ResultsError;

/// Appends one JSON value per line to a [`Write`], flushing after each line.
/// Used for `requests.jsonl` ([`super::RequestRecord`]) and
/// `server-timeline.jsonl` (the sampler's samples, any `T: Serialize`).
#[derive(Debug)]
pub struct JsonlWriter<W: Write, T: Serialize + ?Sized> {
    out: W,
    lines: u64,
    _item: PhantomData<fn(&T)>,
}

impl<W: Write, T: Serialize + ?Sized> JsonlWriter<W, T> {
    /// Wraps a writer (for a file, open it in append mode).
    pub fn new(out: W) -> Self {
        JsonlWriter {
            out,
            lines: 0,
            _item: PhantomData,
        }
    }

    /// Writes one item as a single line and flushes.
    pub fn append(&mut self, item: &T) -> Result<(), ResultsError> {
        let mut line = serde_json::to_vec(item).map_err(ResultsError::json_write)?;
        line.push(b'\n');
        self.out.write_all(&line).map_err(ResultsError::write)?;
        self.out.flush().map_err(ResultsError::write)?;
        self.lines += 1;
        Ok(())
    }

    /// Lines written through this writer.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The inner writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// What [`read_jsonl`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonlContents<T> {
    /// Every complete line, parsed.
    pub items: Vec<T>,
    /// Whether a last line without its newline failed to parse and was
    /// skipped (the writer was killed mid-line).
    pub truncated_last_line: bool,
}

/// Reads a JSON-lines file. Blank lines are skipped. A last line that lacks
/// its newline and does not parse is dropped (`truncated_last_line`); any
/// other bad line is an error naming its number.
pub fn read_jsonl<T: DeserializeOwned, R: BufRead>(
    mut input: R,
    file: &'static str,
) -> Result<JsonlContents<T>, ResultsError> {
    let mut items = Vec::new();
    let mut buf = Vec::new();
    let mut lineno = 0usize;
    loop {
        buf.clear();
        let n = input
            .read_until(b'\n', &mut buf)
            .map_err(|source| ResultsError::Read { file, source })?;
        if n == 0 {
            break;
        }
        lineno += 1;
        let complete = buf.last() == Some(&b'\n');
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        match serde_json::from_str::<T>(text) {
            Ok(item) => items.push(item),
            Err(_) if !complete => {
                return Ok(JsonlContents {
                    items,
                    truncated_last_line: true,
                })
            }
            Err(e) => {
                return Err(ResultsError::BadJson {
                    file,
                    line: lineno,
                    reason: e.to_string(),
                })
            }
        }
    }
    Ok(JsonlContents {
        items,
        truncated_last_line: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_one_line_per_item_and_reads_back() {
        let mut w: JsonlWriter<Vec<u8>, serde_json::Value> = JsonlWriter::new(Vec::new());
        w.append(&serde_json::json!({"a": 1})).unwrap();
        w.append(&serde_json::json!({"a": 2})).unwrap();
        assert_eq!(w.lines(), 2);
        let bytes = w.into_inner();
        assert_eq!(String::from_utf8_lossy(&bytes), "{\"a\":1}\n{\"a\":2}\n");
        let c: JsonlContents<serde_json::Value> = read_jsonl(&bytes[..], "x.jsonl").unwrap();
        assert_eq!(c.items.len(), 2);
        assert!(!c.truncated_last_line);
    }

    #[test]
    fn truncated_last_line_is_tolerated_but_middle_garbage_is_not() {
        let c: JsonlContents<serde_json::Value> =
            read_jsonl(&b"{\"a\":1}\n\n{\"a\":2}\n{\"a\":"[..], "x.jsonl").unwrap();
        assert_eq!(c.items.len(), 2);
        assert!(c.truncated_last_line);
        let e = read_jsonl::<serde_json::Value, _>(&b"{\"a\":1}\nnope\n{\"a\":2}\n"[..], "x.jsonl")
            .unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
