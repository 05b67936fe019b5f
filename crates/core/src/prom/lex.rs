//! Low-level pieces of the text format: names, blanks, label sets, escapes,
//! Go-style floats, and what is wrong with a malformed line. Byte scanning
//! over ASCII delimiters, so slicing is always on UTF-8 boundaries.

use std::borrow::Cow;

/// What is wrong with a malformed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LineProblem {
    /// The line does not start with a valid metric name.
    #[error("invalid metric name")]
    BadMetricName,
    /// A label name is empty or holds a forbidden character.
    #[error("invalid label name")]
    BadLabelName,
    /// A label name is not followed by `=`.
    #[error("expected '=' after a label name")]
    ExpectedEquals,
    /// A label value does not start with `"`.
    #[error("expected '\"' to open a label value")]
    ExpectedQuote,
    /// A label value or the label set is not closed before the end of the line.
    #[error("unterminated label value or label set")]
    Unterminated,
    /// A backslash in a label value is not followed by `\`, `"` or `n`.
    #[error("invalid escape sequence in a label value")]
    BadEscape,
    /// A label value is followed by something other than `,` or `}`.
    #[error("expected ',' or '}}' after a label value")]
    ExpectedCommaOrBrace,
    /// No value after the name and labels.
    #[error("missing sample value")]
    MissingValue,
    /// The value is not a float.
    #[error("invalid sample value")]
    BadValue,
    /// The token after the value is not an integer timestamp.
    #[error("invalid timestamp")]
    BadTimestamp,
    /// Text after the timestamp.
    #[error("unexpected text after the timestamp")]
    TrailingText,
    /// A `# HELP` or `# TYPE` line without a valid metric name.
    #[error("malformed HELP or TYPE line")]
    BadMetadata,
    /// A `# TYPE` line with a type this format does not know.
    #[error("unknown metric type")]
    UnknownType,
}

/// Splits off the first blank-separated token; the rest starts after the blanks.
pub(super) fn split_token(s: &str) -> (&str, &str) {
    let end = s.find([' ', '\t']).unwrap_or(s.len());
    (&s[..end], s[end..].trim_start_matches([' ', '\t']))
}

pub(super) fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':'
}

pub(super) fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b':'
}

pub(super) fn is_label_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

pub(super) fn is_label_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

pub(super) fn is_metric_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && is_name_start(b[0]) && b[1..].iter().all(|&c| is_name_char(c))
}

pub(super) fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    i
}

/// Validates a label set starting after `{`; returns the index of the `}`.
pub(super) fn scan_labels(b: &[u8], mut i: usize) -> Result<usize, LineProblem> {
    loop {
        i = skip_blanks(b, i);
        if i >= b.len() {
            return Err(LineProblem::Unterminated);
        }
        if b[i] == b'}' {
            return Ok(i);
        }
        if !is_label_start(b[i]) {
            return Err(LineProblem::BadLabelName);
        }
        while i < b.len() && is_label_char(b[i]) {
            i += 1;
        }
        i = skip_blanks(b, i);
        if i >= b.len() || b[i] != b'=' {
            return Err(LineProblem::ExpectedEquals);
        }
        i = skip_blanks(b, i + 1);
        if i >= b.len() || b[i] != b'"' {
            return Err(LineProblem::ExpectedQuote);
        }
        i += 1;
        i += value_end(&b[i..])? + 1;
        i = skip_blanks(b, i);
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => return Ok(i),
            Some(_) => return Err(LineProblem::ExpectedCommaOrBrace),
            None => return Err(LineProblem::Unterminated),
        }
    }
}

/// Index of the closing quote of a label value that starts at `b[0]`.
pub(super) fn value_end(b: &[u8]) -> Result<usize, LineProblem> {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => return Ok(i),
            b'\\' => match b.get(i + 1) {
                Some(b'\\' | b'"' | b'n') => i += 2,
                Some(_) => return Err(LineProblem::BadEscape),
                None => return Err(LineProblem::Unterminated),
            },
            _ => i += 1,
        }
    }
    Err(LineProblem::Unterminated)
}

/// A Go-style float: decimal or exponent forms, `NaN`, `+Inf`, `-Inf`.
pub(super) fn parse_value(token: &str) -> Option<f64> {
    match token {
        "+Inf" | "Inf" | "inf" | "+inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => {
            // Rust also accepts "infinity" spellings; the format does not use them.
            let first = *token.as_bytes().first()?;
            if !(first.is_ascii_digit() || first == b'-' || first == b'+' || first == b'.') {
                return None;
            }
            token.parse::<f64>().ok()
        }
    }
}

pub(super) fn unescape_label_value(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    Cow::Owned(out)
}

/// HELP text knows `\\` and `\n`; any other backslash is kept as written.
pub(super) fn unescape_help(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('n') => {
                out.push('\n');
                chars.next();
            }
            Some('\\') => {
                out.push('\\');
                chars.next();
            }
            _ => out.push('\\'),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_style_floats_are_read() {
        for (text, want) in [
            ("16.0", 16.0),
            ("8.8373e+06", 8_837_300.0),
            ("1.17e+010", 1.17e10),
            ("-Inf", f64::NEG_INFINITY),
            ("+Inf", f64::INFINITY),
        ] {
            assert_eq!(parse_value(text), Some(want), "{text}");
        }
        assert!(parse_value("NaN").is_some_and(f64::is_nan));
        assert_eq!(parse_value("infinity"), None);
        assert_eq!(parse_value("abc"), None);
    }
}
