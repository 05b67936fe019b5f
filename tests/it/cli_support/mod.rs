//! The helpers for tests that run the `codendum` binary live in
//! `codendum_testkit::cli`, shared with the `real` test binary.

pub use codendum_testkit::cli::*;
