//! capacity (placeholder; filled by its issue).
