//! bench (placeholder; filled by its issue).
