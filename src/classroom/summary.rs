//! The figures of a classroom run. They are a plain function of its records
//! and live in [`crate::results::classroom_summary`]; re-exported here so the
//! classroom's paths keep working.

pub use crate::results::classroom_summary::{ClassroomSummary, ServerFigures};
