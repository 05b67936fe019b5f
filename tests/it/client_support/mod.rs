//! The scripted HTTP/1.1 server lives in `codendum_testkit::scripted`,
//! shared with the `perf` binary.

pub use codendum_testkit::scripted::*;
