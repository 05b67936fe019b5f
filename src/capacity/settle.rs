//! How long a step settles before its window: the time the server's load
//! takes to reach its plateau after the class changes size, read on the
//! twin's timeline when it predicts (plain functions).
//!
//! The load is the requests at the server, running plus waiting. After a
//! change, new students send their first (small) requests, or retired
//! ones stop sending, and the queue of waiting requests grows or drains to
//! its new level. The plateau is the load's mean over the second half of
//! the stretch watched; the load has reached it at the first moment its
//! trailing [`AVERAGE_S`]-second mean comes within [`tolerance`] of it.
//!
//! After a decrease a live step also waits, past its settling, until the
//! calls sent before the change have been taken in (their first token
//! come, or their end for a call that never had one), so a window never
//! judges the previous size's queue: [`time_to_clear`] reads that wait on
//! the twin's records, and the plan counts it ([`clear_for`]).

use codendum_core::prom::TimelineSample;
use codendum_core::results::classroom_records::CallRecord;

/// The trailing mean's span, seconds.
pub const AVERAGE_S: f64 = 30.0;

/// How close to the plateau counts as on it: a tenth of it, at least one
/// request.
pub fn tolerance(plateau: f64) -> f64 {
    (0.1 * plateau).max(1.0)
}

/// Requests at the server in a sample: running plus waiting.
fn load(s: &TimelineSample) -> Option<f64> {
    let snap = s.snapshot.as_ref()?;
    Some(snap.running? + snap.waiting.unwrap_or(0.0))
}

/// Seconds from `from` (the change, on the timeline's clock) until the
/// load's trailing mean first comes within [`tolerance`] of its plateau
/// over `[from, to]`; `None` without enough samples (fewer than
/// [`AVERAGE_S`] seconds of them, or none in the second half).
pub fn time_to_plateau(timeline: &[TimelineSample], from: f64, to: f64) -> Option<f64> {
    let points: Vec<(f64, f64)> = timeline
        .iter()
        .filter(|s| s.t >= from && s.t <= to)
        .filter_map(|s| Some((s.t, load(s)?)))
        .collect();
    let mid = from + (to - from) / 2.0;
    let second: Vec<f64> = points
        .iter()
        .filter(|(t, _)| *t >= mid)
        .map(|(_, l)| *l)
        .collect();
    if second.is_empty() || to - from < 2.0 * AVERAGE_S {
        return None;
    }
    let plateau = second.iter().sum::<f64>() / second.len() as f64;
    let tol = tolerance(plateau);
    for (i, (t, _)) in points.iter().enumerate() {
        if *t < from + AVERAGE_S {
            continue;
        }
        let trailing: Vec<f64> = points[..=i]
            .iter()
            .rev()
            .take_while(|(u, _)| *u > t - AVERAGE_S)
            .map(|(_, l)| *l)
            .collect();
        let mean = trailing.iter().sum::<f64>() / trailing.len() as f64;
        if (mean - plateau).abs() <= tol {
            return Some(t - from);
        }
    }
    Some(to - from)
}

/// The settling of a step to `users` students: the twin's time to plateau
/// at the predicted size nearest `users` (`plateaus`: size and seconds),
/// at least `floor_s` (the join spread), at most `ceiling_s`, rounded up
/// to 10 s. Without a prediction: `ceiling_s`.
pub fn settle_for(users: u32, plateaus: &[(u32, f64)], floor_s: f64, ceiling_s: f64) -> f64 {
    let nearest = plateaus
        .iter()
        .min_by_key(|(u, _)| u.abs_diff(users))
        .map(|(_, s)| *s);
    let s = nearest
        .unwrap_or(ceiling_s)
        .clamp(floor_s, ceiling_s.max(floor_s));
    (s / 10.0).ceil() * 10.0
}

/// Seconds from `changed_s` (a change of the class's size, seconds since
/// the class started) until every call sent before it had been taken in,
/// read on the class's records: its first token (its last attempt was
/// sent `wait_s − e2e_s` after the call, and its TTFT counts from that
/// send), or its end (`wait_s` after it was sent) for a call without one;
/// 0 when none was waiting at the change.
pub fn time_to_clear(calls: &[CallRecord], changed_s: f64) -> f64 {
    calls
        .iter()
        .filter(|c| c.started_at < changed_s)
        .map(|c| {
            let taken_in = match c.ttft_s {
                Some(ttft) => (c.wait_s - c.e2e_s).max(0.0) + ttft,
                None => c.wait_s,
            };
            c.started_at + taken_in - changed_s
        })
        .fold(0.0, f64::max)
}

/// The wait for the calls sent before a decrease from `before` students
/// to `users` to end, seconds, from the twin's clearing times (`clears`:
/// the larger size of each change it made, and the seconds its calls took
/// to clear): the time at the size nearest the larger of the two (the
/// larger class's load is what those calls wait behind). 0 after an
/// increase (a step waits only after a decrease), from an empty class or
/// without a prediction.
pub fn clear_for(before: u32, users: u32, clears: &[(u32, f64)]) -> f64 {
    if before == 0 || users >= before {
        return 0.0;
    }
    let larger = before.max(users);
    clears
        .iter()
        .min_by_key(|(u, _)| u.abs_diff(larger))
        .map_or(0.0, |(_, s)| *s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use codendum_core::prom::ServerSnapshot;

    fn sample(t: f64, running: f64, waiting: f64) -> TimelineSample {
        TimelineSample {
            utc: chrono::DateTime::UNIX_EPOCH,
            t,
            snapshot: Some(ServerSnapshot {
                running: Some(running),
                waiting: Some(waiting),
                ..Default::default()
            }),
            error: None,
        }
    }

    #[test]
    fn a_queue_that_grows_for_a_minute_settles_after_it() {
        // 16 running from the start; the queue grows by one every 3 s for
        // 60 s, then holds at 20.
        let line: Vec<TimelineSample> = (0..400)
            .map(|t| {
                let t = f64::from(t);
                sample(t, 16.0, (t / 3.0).min(20.0))
            })
            .collect();
        let s = time_to_plateau(&line, 0.0, 399.0).expect("settles");
        assert!((60.0..=80.0).contains(&s), "{s}");
        // A steady load is on its plateau as soon as the mean is taken.
        let flat: Vec<TimelineSample> = (0..200).map(|t| sample(f64::from(t), 8.0, 0.0)).collect();
        assert_eq!(time_to_plateau(&flat, 0.0, 199.0), Some(AVERAGE_S));
        assert!(time_to_plateau(&flat, 0.0, 40.0).is_none(), "too short");
    }

    #[test]
    fn settling_takes_the_nearest_prediction_within_bounds() {
        let p = [(10, 45.0), (40, 150.0), (80, 400.0)];
        assert_eq!(settle_for(38, &p, 30.0, 300.0), 150.0);
        assert_eq!(settle_for(12, &p, 60.0, 300.0), 60.0);
        assert_eq!(settle_for(100, &p, 30.0, 300.0), 300.0);
        assert_eq!(settle_for(10, &[(10, 41.0)], 30.0, 300.0), 50.0);
        assert_eq!(settle_for(10, &[], 30.0, 300.0), 300.0);
    }

    #[test]
    fn the_calls_before_a_change_clear_when_the_last_of_them_is_taken_in() {
        let call = |started_at: f64, ttft: f64, wait_s: f64| CallRecord {
            wait_s,
            e2e_s: wait_s,
            ..crate::capacity::window::tests::call(started_at, ttft, true)
        };
        let calls = [
            call(10.0, 5.0, 30.0),
            call(90.0, 20.0, 50.0),
            call(120.0, 1.0, 5.0),
        ];
        // At 100 s the call sent at 90 s waits for its first token until
        // 110 s (and streams on until 140 s).
        assert_eq!(time_to_clear(&calls, 100.0), 10.0);
        // A call sent again after a failure: its last attempt went out 8 s
        // after the call, and its first token came 4 s later.
        let retried = CallRecord {
            wait_s: 20.0,
            e2e_s: 12.0,
            ..crate::capacity::window::tests::call(95.0, 4.0, true)
        };
        assert_eq!(time_to_clear(&[retried], 100.0), 7.0);
        // A call that failed without a first token clears at its end.
        let failed = CallRecord {
            wait_s: 30.0,
            ..crate::capacity::window::tests::call(90.0, 0.0, false)
        };
        assert_eq!(time_to_clear(&[failed], 100.0), 20.0);
        assert_eq!(time_to_clear(&calls, 200.0), 0.0);
        assert_eq!(time_to_clear(&[], 5.0), 0.0);
        let clears = [(10, 20.0), (40, 120.0)];
        assert_eq!(clear_for(0, 40, &clears), 0.0, "from an empty class");
        assert_eq!(clear_for(38, 12, &clears), 120.0, "the larger class");
        assert_eq!(clear_for(14, 8, &clears), 20.0);
        assert_eq!(clear_for(8, 12, &clears), 0.0, "after an increase");
        assert_eq!(clear_for(14, 8, &[]), 0.0);
    }
}
