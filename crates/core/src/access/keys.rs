//! The API-keys file: one key per student, as plain lines or CSV.

use std::path::Path;

use super::Secret;
use crate::error::ConfigError;

/// Reads an API-keys file: one key per student (see [`parse_api_keys`] for
/// the formats). Errors are one line naming the file and, where there is
/// one, the line; they never show a key.
pub fn read_api_keys(path: &Path) -> Result<Vec<Secret>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Unreadable {
        what: "API-keys file",
        path: path.to_path_buf(),
        source,
    })?;
    parse_api_keys(&text).map_err(|reason| ConfigError::BadFile {
        what: "API-keys file",
        path: path.to_path_buf(),
        reason,
    })
}

/// Parses the text of an API-keys file, read as CSV (RFC 4180: quoted
/// fields may hold commas, doubled quotes and line breaks; a UTF-8 BOM and
/// CRLF line ends are fine). The formats:
///
/// - one key a line, no header;
/// - CSV whose first row is a header naming a key column `key`, `api_key`,
///   `apikey`, `api-key` or `api key` (any case), in any position, with any
///   other columns beside it;
/// - CSV without a header: the last field of each row is the key.
///
/// Blank lines and lines starting with `#` are skipped; fields are trimmed.
/// Refused, with the line number but never the key: a first row of two or
/// more fields that are all names (letters, `_`, `-`, `.`, spaces; at most
/// 32 characters) but none a key column, a row without a key, a key with
/// white space in it, a repeated key, and a file without keys.
pub fn parse_api_keys(text: &str) -> Result<Vec<Secret>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let mut keys: Vec<(Secret, u64)> = Vec::new();
    let mut column: Option<usize> = None;
    let mut first = true;
    let mut record = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            // Not expected from text in memory; the message of a csv error
            // names positions only, but say it in our words anyway.
            Err(e) => {
                let line = e.position().map_or(0, |p| line_of_byte(text, p.byte()));
                return Err(format!("line {line} is not CSV"));
            }
        }
        // The reader's own line count skips blank lines: count from the
        // record's byte offset instead.
        let lineno = record
            .position()
            .map_or(0, |p| line_of_byte(text, p.byte()));
        let first_field = record.get(0).unwrap_or("");
        if (record.len() == 1 && first_field.is_empty()) || first_field.starts_with('#') {
            continue;
        }
        if first {
            first = false;
            if let Some(c) = record.iter().position(is_key_column_name) {
                column = Some(c);
                continue;
            }
            if record.len() > 1 && record.iter().all(looks_like_column_name) {
                return Err(format!(
                    "line {lineno} is a header without a key column \
                     (name it key, api_key or apikey)"
                ));
            }
        }
        let key = match column {
            Some(c) => record.get(c).unwrap_or(""),
            None => record.iter().next_back().unwrap_or(""),
        };
        if key.is_empty() {
            return Err(format!("line {lineno} has no key"));
        }
        if key.contains(['\n', '\r']) {
            return Err(format!(
                "line {lineno}: the key runs over several lines (a quote left open?)"
            ));
        }
        if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("line {lineno}: the key contains white space"));
        }
        if let Some((_, earlier)) = keys.iter().find(|(k, _)| k.expose() == key) {
            return Err(format!("line {lineno} repeats the key of line {earlier}"));
        }
        keys.push((Secret::new(key), lineno));
    }
    if keys.is_empty() {
        return Err("no keys in it".into());
    }
    Ok(keys.into_iter().map(|(k, _)| k).collect())
}

/// The 1-based line of `text` on which the record the reader placed at byte
/// `offset` begins. The reader places a record where it began to read, which
/// is before the blank lines and `#` comments it skipped on the way (and its
/// own line count misses the blank ones), so skip those here too.
fn line_of_byte(text: &str, offset: u64) -> u64 {
    let bytes = text.as_bytes();
    let mut at = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    loop {
        match bytes.get(at) {
            Some(b'\r' | b'\n') => at += 1,
            Some(b'#') => {
                at = bytes[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |i| at + i + 1);
            }
            _ => break,
        }
    }
    1 + bytes[..at].iter().filter(|&&b| b == b'\n').count() as u64
}

/// Whether a header field names the key column: `key`, `api_key`, `apikey`,
/// with `-` or a space for `_`, in any case.
fn is_key_column_name(field: &str) -> bool {
    let name: String = field
        .chars()
        .map(|c| match c {
            '-' | ' ' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    matches!(name.as_str(), "key" | "api_key" | "apikey")
}

/// Whether a field looks like a column name rather than a key: short, only
/// letters, `_`, `-`, `.` and spaces (keys have digits, or are long).
fn looks_like_column_name(field: &str) -> bool {
    (1..=32).contains(&field.chars().count())
        && field
            .chars()
            .all(|c| c.is_alphabetic() || matches!(c, '_' | '-' | '.' | ' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_keys_csv_and_plain() {
        let keys = parse_api_keys("user,key\nalice,sk-a\nbob,sk-b\n").unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[1].expose(), "sk-b");
        let keys = parse_api_keys("# keys\nsk-1\n\nsk-2\n").unwrap();
        assert_eq!(keys.len(), 2);
        let err = parse_api_keys("sk-1\nsk-1\n").unwrap_err();
        assert!(err.contains("line 2"), "{err}");
        assert!(!err.contains("sk-1"));
        assert!(parse_api_keys("\n# only\n").is_err());
    }

    #[test]
    fn api_keys_csv_quoting_bom_crlf_and_column_order() {
        let keys = parse_api_keys(
            "\u{feff}Note,API-Key,User\r\n\"a, \"\"b\"\"\",sk-test-0001,alice\r\n  # aside\r\n,\"sk-test-0002\",bob\r\n",
        )
        .unwrap();
        let keys: Vec<&str> = keys.iter().map(Secret::expose).collect();
        assert_eq!(keys, ["sk-test-0001", "sk-test-0002"]);
        let keys = parse_api_keys("alice,\"sk-test,0001\"\nbob,sk-test-0002\n").unwrap();
        assert_eq!(
            keys[0].expose(),
            "sk-test,0001",
            "headerless: the last field"
        );
    }

    #[test]
    fn api_keys_errors_name_the_line_never_the_key() {
        for (text, detail) in [
            (
                "user,email\nalice,sk-test-0001\n",
                "line 1 is a header without a key column",
            ),
            ("user,key\nalice,sk-test-0001\nbob\n", "line 3 has no key"),
            ("user,key\n\nalice,\"\"\n", "line 3 has no key"),
            (
                "key\nsk-test-0001\n\"sk-test-0002\nsk-test-0003\n",
                "line 3: the key runs over",
            ),
            (
                "user,key\na,sk-test-0001\nb,sk-test 0002\n",
                "line 3: the key contains white",
            ),
            (
                "sk-test-0001\n# x\nsk-test-0001\n",
                "line 3 repeats the key of line 1",
            ),
            ("", "no keys"),
            ("\u{feff}", "no keys"),
            ("\r\n  \r\n", "no keys"),
        ] {
            let err = parse_api_keys(text).unwrap_err();
            assert!(err.contains(detail), "{text:?}: {err}");
            assert!(!err.contains("sk-test") && !err.contains('\n'), "{err}");
        }
    }
}
