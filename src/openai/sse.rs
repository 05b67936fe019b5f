//! SSE decoder.
