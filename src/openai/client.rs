//! HTTP client.
