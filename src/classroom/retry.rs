//! OpenCode's retry rule for a model call that failed: how many times,
//! and after how long (a `retry-after` the server gives wins over the
//! delay here).

use std::time::Duration;

use rand::Rng;

/// Most retries of one model call.
pub const MAX_RETRIES: u32 = 5;
/// First retry delay, seconds; doubles with each retry.
pub const RETRY_BASE_S: f64 = 2.0;
/// Largest retry delay, jitter included, seconds.
pub const RETRY_CAP_S: f64 = 30.0;
/// Jitter added to a retry delay, fraction of the delay (up to).
pub const RETRY_JITTER: f64 = 0.25;
/// The delay before retry number `retry` (0-based) without a `retry-after`:
/// 2 s doubling, plus up to 25 % jitter, capped at 30 s.
pub fn retry_delay(retry: u32, rng: &mut impl Rng) -> Duration {
    let base = RETRY_BASE_S * 2f64.powi(retry.min(16) as i32);
    let jittered = base * (1.0 + rng.gen_range(0.0..=RETRY_JITTER));
    Duration::from_secs_f64(jittered.min(RETRY_CAP_S))
}
