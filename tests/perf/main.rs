//! Timing checks of the client and the twin (paced streams, step lateness),
//! in a binary of their own so that no other test shares the cores while they
//! measure: cargo runs test binaries one after another, and within this one
//! every test takes [`alone`] first, so they run one at a time whatever
//! `--test-threads` says.

// Each test holds `alone()` for its whole body, across its awaits, on
// purpose: every `#[tokio::test]` has its own runtime on its own thread, so
// the guard only makes the other tests' threads wait.
#![allow(clippy::await_holding_lock)]

mod capture_load;
#[path = "../it/capture_support.rs"]
mod capture_support;
mod client_pacing;
mod firehose;
mod fleet_streams;
mod interrupt;
mod replay_class;
mod twin_lateness;
mod twin_throughput;

/// Held for the whole of each test: one timing check at a time.
pub fn alone() -> std::sync::MutexGuard<'static, ()> {
    static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A failed test poisons the lock; the next one still runs alone.
    ALONE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
