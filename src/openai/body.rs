//! Request bodies.
