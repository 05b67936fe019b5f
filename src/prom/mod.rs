//! prom (placeholder; filled by its issue).
