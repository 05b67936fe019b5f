//! Errors that end a command, each with a stable exit code.
//!
//! Exit codes: 0 success, 1 the run failed (targets not met, I/O during a
//! run), 2 bad input (flags, files, configuration), 3 refused to start (busy
//! server, no confirmation), 130 interrupted after writing partial results.

use std::path::PathBuf;

/// Bad input: a flag, an environment variable or a file the user gave.
/// Every message names the culprit and fits on one line.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A flag or variable has a value that cannot be used.
    #[error("invalid {name}: {reason}")]
    Invalid {
        /// The flag or variable, e.g. `--concurrency`.
        name: String,
        /// Why, in a few words.
        reason: String,
    },
    /// A file could not be read.
    #[error("cannot read {what} {path}: {source}")]
    Unreadable {
        /// What the file is for, e.g. `CA file`.
        what: &'static str,
        /// The path given.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file was read but its content is wrong.
    #[error("{what} {path}: {reason}")]
    BadFile {
        /// What the file is for, e.g. `API-keys file`.
        what: &'static str,
        /// The path given.
        path: PathBuf,
        /// What is wrong, with a line number where there is one.
        reason: String,
    },
    /// A configuration that cannot be used as a whole (a profile whose
    /// targets do not parse, a live server without its profile); the
    /// message names the culprit.
    #[error("{0}")]
    Unusable(String),
}

impl ConfigError {
    /// Shorthand for [`ConfigError::Invalid`].
    pub fn invalid(name: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError::Invalid {
            name: name.into(),
            reason: reason.into(),
        }
    }
}

/// Why a command stopped, mapped to an exit code by `main`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input (exit 2).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The tool refused to start: busy server, no confirmation (exit 3).
    #[error("{0}")]
    Refused(String),
    /// The run could not be carried out or its results not written (exit 1).
    #[error("{0}")]
    Failed(String),
    /// The run was interrupted; partial results were written (exit 130).
    #[error("interrupted: partial results in {0}")]
    Interrupted(PathBuf),

    /// An I/O error outside a run (exit 1).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Config(_) => 2,
            Error::Refused(_) => 3,
            Error::Failed(_) | Error::Io { .. } => 1,
            Error::Interrupted(_) => 130,
        }
    }

    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// An error and its causes on one line, for messages: the texts joined by
/// `": "` (a cause whose text the line already holds is left out), line
/// breaks turned into spaces.
pub fn one_line(error: &dyn std::error::Error) -> String {
    one_line_from(error.to_string(), error.source())
}

/// [`one_line`] with the error's own text given, for an error whose text
/// needs trimming first (e.g. reqwest's ` for url (…)`): `head`, then the
/// causes from `source` on.
pub fn one_line_from(head: String, mut source: Option<&dyn std::error::Error>) -> String {
    let mut text = head;
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text.replace('\n', " ")
}

/// A configuration that can check itself; errors name the flag.
pub trait Check {
    /// Checks every value; the error names the culprit flag.
    fn check(&self) -> Result<(), ConfigError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot scrape\nthe page")]
    struct Outer(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("read failed: {0}")]
    struct Repeats(#[source] std::io::Error);

    #[test]
    fn one_line_joins_new_causes_and_drops_line_breaks() {
        let e = Outer(std::io::Error::other("reset by peer"));
        assert_eq!(one_line(&e), "cannot scrape the page: reset by peer");
        let e = Repeats(std::io::Error::other("reset by peer"));
        assert_eq!(one_line(&e), "read failed: reset by peer");
        assert_eq!(
            one_line_from("trimmed".into(), Some(&std::io::Error::other("cause"))),
            "trimmed: cause"
        );
    }
}
