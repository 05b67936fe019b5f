//! The figures of a classroom run. They are a plain function of its records
//! and live in [`codendum_core::results::classroom_summary`]; re-exported here so the
//! classroom's paths keep working.

pub use codendum_core::results::classroom_summary::{ClassroomSummary, ServerFigures};
