//! stats (placeholder; filled by its issue).
