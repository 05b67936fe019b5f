//! The embedded twin: an OpenAI-compatible server that schedules, caches,
//! streams and reports like vLLM 0.30 on a GB10.

pub mod answer;
pub mod persona;
pub mod proxy;
