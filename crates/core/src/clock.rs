//! The one clock that everything which waits or measures time asks.
//!
//! A [`Clock`] reports *simulated* time: real time multiplied by a scale factor.
//! With scale 1 it is the wall clock; against the embedded twin running N times
//! faster, every wait and every measurement is taken on the same scaled clock, so
//! figures come out in the seconds a real-time run would have measured.
//!
//! The clock reads `tokio::time::Instant`, so a runtime whose time is paused
//! (`tokio::time::pause`) turns it into a virtual clock: sleeps complete at once
//! when nothing else can run, which is what tests and `plan` use.

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};

/// How early (real time) [`Clock::sleep_until_precise`] lets the timer wake
/// it: tokio's timer rounds a deadline up to the next millisecond.
pub const PRECISE_WAKE_MARGIN: Duration = Duration::from_micros(1_500);

/// A scaled, mockable clock. Cheap to clone; all clones share one origin.
#[derive(Debug, Clone)]
pub struct Clock {
    origin: tokio::time::Instant,
    utc_origin: SystemTime,
    scale: f64,
}

impl Clock {
    /// The real-time clock (scale 1).
    pub fn real() -> Self {
        Self::scaled(1.0)
    }

    /// A clock that runs `scale` times faster than real time (`scale` > 0).
    ///
    /// # Panics
    /// Never for a finite positive scale; a non-positive or non-finite scale is
    /// replaced by 1 (callers validate user input before this point).
    pub fn scaled(scale: f64) -> Self {
        let scale = if scale.is_finite() && scale > 0.0 {
            scale
        } else {
            1.0
        };
        Self {
            origin: tokio::time::Instant::now(),
            utc_origin: SystemTime::now(),
            scale,
        }
    }

    /// How many simulated seconds pass per real second.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Simulated time elapsed since the clock was created.
    pub fn now(&self) -> Duration {
        let real = tokio::time::Instant::now().saturating_duration_since(self.origin);
        real.mul_f64(self.scale)
    }

    /// Simulated seconds elapsed since the clock was created.
    pub fn now_secs(&self) -> f64 {
        self.now().as_secs_f64()
    }

    /// The UTC wall-clock time that corresponds to a simulated instant
    /// (the clock's creation time plus the simulated offset).
    pub fn utc_at(&self, t: Duration) -> DateTime<Utc> {
        DateTime::<Utc>::from(self.utc_origin + t)
    }

    /// The UTC time of simulated "now".
    pub fn utc_now(&self) -> DateTime<Utc> {
        self.utc_at(self.now())
    }

    /// Converts a simulated duration to the real duration it takes on this clock.
    pub fn to_real(&self, simulated: Duration) -> Duration {
        simulated.div_f64(self.scale)
    }

    /// Sleeps for a simulated duration.
    pub async fn sleep(&self, simulated: Duration) {
        tokio::time::sleep(self.to_real(simulated)).await;
    }

    /// Sleeps until the simulated instant `t` (returns at once if it has passed).
    pub async fn sleep_until(&self, t: Duration) {
        let now = self.now();
        if t > now {
            self.sleep(t - now).await;
        }
    }

    /// [`Clock::sleep_until`] without the timer's millisecond rounding: the
    /// timer wakes the task up to [`PRECISE_WAKE_MARGIN`] (real time) early
    /// and the thread sleeps the rest itself, blocking. Only for a thread
    /// that runs nothing else and a clock that is not paused (the twin's
    /// engine thread).
    pub async fn sleep_until_precise(&self, t: Duration) {
        let ahead = self.to_real(t.saturating_sub(self.now()));
        if ahead > PRECISE_WAKE_MARGIN {
            tokio::time::sleep(ahead - PRECISE_WAKE_MARGIN).await;
        }
        let rest = self.to_real(t.saturating_sub(self.now()));
        if !rest.is_zero() {
            std::thread::sleep(rest);
        }
    }

    /// Runs `fut` with a time limit measured in simulated time.
    pub async fn timeout<F: std::future::Future>(
        &self,
        simulated: Duration,
        fut: F,
    ) -> Result<F::Output, tokio::time::error::Elapsed> {
        tokio::time::timeout(self.to_real(simulated), fut).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn scaled_clock_reports_simulated_time() {
        let clock = Clock::scaled(10.0);
        tokio::time::advance(Duration::from_millis(100)).await;
        assert!((clock.now_secs() - 1.0).abs() < 1e-6);
        clock.sleep(Duration::from_secs(5)).await;
        assert!((clock.now_secs() - 6.0).abs() < 1e-6);
    }

    #[tokio::test(start_paused = true)]
    async fn sleep_until_past_instant_returns_at_once() {
        let clock = Clock::real();
        tokio::time::advance(Duration::from_secs(3)).await;
        clock.sleep_until(Duration::from_secs(1)).await;
        assert!((clock.now_secs() - 3.0).abs() < 1e-6);
    }

    #[test]
    fn invalid_scale_falls_back_to_real_time() {
        assert_eq!(Clock::scaled(0.0).scale(), 1.0);
        assert_eq!(Clock::scaled(f64::NAN).scale(), 1.0);
    }
}
