//! A parser of the Prometheus text exposition format 0.0.4, written for vLLM.
//!
//! Metric names may contain colons (`vllm:num_requests_running`), labels are
//! parsed generically (any order, escaped `\"`, `\\` and `\n` in values), values
//! are Go-style floats (`16.0`, `8.8373e+06`, `1.17e+010`, `NaN`, `+Inf`,
//! `-Inf`) with an optional trailing integer timestamp in milliseconds. An
//! OpenMetrics `# EOF` line ends the page.
//!
//! Samples borrow their name and labels from the input text: parsing allocates
//! only the sample vector (and a string for a label value or help text that
//! holds escapes, when it is read).

use std::borrow::Cow;

use super::lex::{
    is_metric_name, is_name_char, is_name_start, parse_value, scan_labels, skip_blanks,
    split_token, unescape_help, unescape_label_value, value_end, LineProblem,
};

/// The type a `# TYPE` line declares for a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// `counter`
    Counter,
    /// `gauge`
    Gauge,
    /// `histogram`
    Histogram,
    /// `summary`
    Summary,
    /// `untyped`
    Untyped,
    /// OpenMetrics `unknown`, `info`, `stateset` or `gaugehistogram`.
    OpenMetricsOther,
}

impl MetricType {
    fn from_token(token: &str) -> Option<Self> {
        Some(match token {
            "counter" => MetricType::Counter,
            "gauge" => MetricType::Gauge,
            "histogram" => MetricType::Histogram,
            "summary" => MetricType::Summary,
            "untyped" => MetricType::Untyped,
            "unknown" | "info" | "stateset" | "gaugehistogram" => MetricType::OpenMetricsOther,
            _ => return None,
        })
    }
}

/// Why a page could not be read as Prometheus text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A line is malformed (1-based line number, and the start of the line).
    #[error("line {line}: {problem} (near `{excerpt}`)")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        problem: LineProblem,
        /// The first characters of the offending line.
        excerpt: String,
    },
    /// The page holds no sample at all (empty, or comments only).
    #[error("no Prometheus samples: the page is empty or holds only comments")]
    NoSamples,
}

/// One sample line: `name{labels} value [timestamp]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    /// The sample name, e.g. `vllm:prefix_cache_hits_total`.
    pub name: &'a str,
    /// The text between the braces, already validated (empty without labels).
    raw_labels: &'a str,
    /// The value (may be NaN or ±infinity).
    pub value: f64,
    /// The optional timestamp, in milliseconds since the Unix epoch.
    pub timestamp_ms: Option<i64>,
}

impl<'a> Sample<'a> {
    /// The labels in the order written, values unescaped.
    pub fn labels(&self) -> Labels<'a> {
        Labels {
            rest: self.raw_labels,
        }
    }

    /// The value of one label, unescaped; `None` if the sample lacks it.
    pub fn label(&self, name: &str) -> Option<Cow<'a, str>> {
        self.labels().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

/// Iterator over the labels of a [`Sample`]: `(name, unescaped value)`.
#[derive(Debug, Clone)]
pub struct Labels<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Labels<'a> {
    type Item = (&'a str, Cow<'a, str>);

    fn next(&mut self) -> Option<Self::Item> {
        // The text was validated by the parser; anything unexpected ends the
        // iteration instead of panicking.
        let rest = self.rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            self.rest = rest;
            return None;
        }
        let eq = rest.find('=')?;
        let name = rest[..eq].trim_end_matches([' ', '\t']);
        let after = rest[eq + 1..].trim_start_matches([' ', '\t']);
        let body = after.strip_prefix('"')?;
        let end = value_end(body.as_bytes()).ok()?;
        let raw = &body[..end];
        self.rest = &body[end + 1..];
        Some((name, unescape_label_value(raw)))
    }
}

/// A parsed page: every sample, and the HELP and TYPE metadata.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition<'a> {
    /// Samples in page order.
    pub samples: Vec<Sample<'a>>,
    /// `(family name, help text unescaped)` in page order.
    pub helps: Vec<(&'a str, Cow<'a, str>)>,
    /// `(family name, declared type)` in page order.
    pub types: Vec<(&'a str, MetricType)>,
}

impl<'a> Exposition<'a> {
    /// The help text of a family, if the page gives one.
    pub fn help(&self, family: &str) -> Option<&str> {
        self.helps
            .iter()
            .find(|(n, _)| *n == family)
            .map(|(_, h)| h.as_ref())
    }

    /// The declared type of a family, if the page gives one.
    pub fn metric_type(&self, family: &str) -> Option<MetricType> {
        self.types
            .iter()
            .find(|(n, _)| *n == family)
            .map(|(_, t)| *t)
    }

    /// Samples with exactly this name.
    pub fn samples_named<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s Sample<'a>> + 's {
        self.samples.iter().filter(move |s| s.name == name)
    }
}

/// Parses a whole page. A malformed line is an error naming its line number;
/// a page without any sample (empty, comments only) is [`ParseError::NoSamples`].
pub fn parse(text: &str) -> Result<Exposition<'_>, ParseError> {
    let mut page = Exposition {
        samples: Vec::with_capacity(text.len() / 96 + 1),
        helps: Vec::new(),
        types: Vec::new(),
    };
    for (index, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let line = line.trim_start_matches([' ', '\t']);
        if line.trim_end_matches([' ', '\t']).is_empty() {
            continue;
        }
        let malformed = |problem| ParseError::Malformed {
            line: index + 1,
            problem,
            excerpt: line.chars().take(40).collect(),
        };
        if let Some(comment) = line.strip_prefix('#') {
            match parse_comment(comment).map_err(malformed)? {
                Comment::Help(name, help) => page.helps.push((name, help)),
                Comment::Type(name, kind) => page.types.push((name, kind)),
                Comment::Eof => break,
                Comment::Other => {}
            }
            continue;
        }
        page.samples.push(parse_sample(line).map_err(malformed)?);
    }
    if page.samples.is_empty() {
        return Err(ParseError::NoSamples);
    }
    Ok(page)
}

enum Comment<'a> {
    Help(&'a str, Cow<'a, str>),
    Type(&'a str, MetricType),
    Eof,
    Other,
}

fn parse_comment(comment: &str) -> Result<Comment<'_>, LineProblem> {
    let body = comment.trim_start_matches([' ', '\t']);
    let (keyword, rest) = split_token(body);
    match keyword {
        "HELP" => {
            let (name, help) = split_token(rest);
            if !is_metric_name(name) {
                return Err(LineProblem::BadMetadata);
            }
            Ok(Comment::Help(name, unescape_help(help)))
        }
        "TYPE" => {
            let (name, rest) = split_token(rest);
            if !is_metric_name(name) {
                return Err(LineProblem::BadMetadata);
            }
            let (kind, rest) = split_token(rest);
            if !rest.trim_end_matches([' ', '\t']).is_empty() {
                return Err(LineProblem::BadMetadata);
            }
            let kind = MetricType::from_token(kind).ok_or(LineProblem::UnknownType)?;
            Ok(Comment::Type(name, kind))
        }
        "EOF" if rest.trim_end_matches([' ', '\t']).is_empty() => Ok(Comment::Eof),
        _ => Ok(Comment::Other),
    }
}

fn parse_sample(line: &str) -> Result<Sample<'_>, LineProblem> {
    let b = line.as_bytes();
    if b.is_empty() || !is_name_start(b[0]) {
        return Err(LineProblem::BadMetricName);
    }
    let mut i = 1;
    while i < b.len() && is_name_char(b[i]) {
        i += 1;
    }
    let name = &line[..i];
    i = skip_blanks(b, i);
    let mut raw_labels = "";
    if i < b.len() && b[i] == b'{' {
        let close = scan_labels(b, i + 1)?;
        raw_labels = &line[i + 1..close];
        i = skip_blanks(b, close + 1);
    } else if i == name.len() && i < b.len() {
        // A name must be followed by '{', a blank or the end of the line.
        return Err(LineProblem::BadMetricName);
    }
    let (value_token, rest) = split_token(&line[i..]);
    if value_token.is_empty() {
        return Err(LineProblem::MissingValue);
    }
    let value = parse_value(value_token).ok_or(LineProblem::BadValue)?;
    let rest = rest.trim_end_matches([' ', '\t']);
    // An OpenMetrics exemplar (`# {...} v`) after the value is ignored.
    if rest.is_empty() || rest.starts_with('#') {
        return Ok(Sample {
            name,
            raw_labels,
            value,
            timestamp_ms: None,
        });
    }
    let (ts_token, tail) = split_token(rest);
    let timestamp = ts_token
        .parse::<i64>()
        .map_err(|_| LineProblem::BadTimestamp)?;
    if !tail.is_empty() && !tail.starts_with('#') {
        return Err(LineProblem::TrailingText);
    }
    Ok(Sample {
        name,
        raw_labels,
        value,
        timestamp_ms: Some(timestamp),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_parsed_in_any_order_with_escapes() {
        let page = parse("m:x{b=\"q\\\"uote\",a=\"back\\\\slash\\nnl\",} 2 1700000000000\n")
            .expect("valid line");
        let s = &page.samples[0];
        assert_eq!(s.name, "m:x");
        assert_eq!(s.label("b").as_deref(), Some("q\"uote"));
        assert_eq!(s.label("a").as_deref(), Some("back\\slash\nnl"));
        assert_eq!(s.label("c"), None);
        assert_eq!(s.timestamp_ms, Some(1_700_000_000_000));
        assert_eq!(s.labels().count(), 2);
    }

    #[test]
    fn name_glued_to_garbage_is_rejected() {
        let err = parse("ok 1\nbad\"name 1\n").expect_err("malformed");
        assert!(matches!(
            err,
            ParseError::Malformed {
                line: 2,
                problem: LineProblem::BadMetricName,
                ..
            }
        ));
    }
}
