//! results (placeholder; filled by its issue).
