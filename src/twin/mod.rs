//! The embedded twin: an OpenAI-compatible server that schedules, caches,
//! streams and reports like vLLM 0.30 on a GB10.

pub mod answer;
pub mod engine;
pub mod engine_stats;
pub mod kv;
pub mod model;
pub mod profile;

#[cfg(test)]
mod engine_tests;
