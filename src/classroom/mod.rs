//! classroom (placeholder; filled by its issue).
