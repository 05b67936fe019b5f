//! A finished request's record. The per-level summary over records is a
//! plain function of them and lives in [`codendum_core::results::level`].

use codendum_core::openai::CallOutcome;
use codendum_core::results::RequestRecord;

/// Builds the record of a finished request. `started_at` is seconds since
/// the run started.
pub fn record_from_outcome(
    shape: &str,
    concurrency: u32,
    index: u64,
    started_at: f64,
    outcome: &CallOutcome,
) -> RequestRecord {
    let (output_tokens, counted_by) = outcome.output_tokens();
    RequestRecord {
        shape: shape.to_string(),
        concurrency,
        index,
        started_at,
        ttft_s: outcome.ttft,
        e2e_s: outcome.e2e,
        tpot_s: outcome.tpot(),
        prompt_tokens: outcome.input_tokens(),
        output_tokens,
        tokens_counted_by: counted_by,
        finish_reason: outcome.finish_reason.clone(),
        ok: outcome.is_ok(),
        error_kind: outcome.error.as_ref().map(|e| e.kind.as_str().to_string()),
        error_message: outcome.error.as_ref().map(|e| e.message.clone()),
        status: outcome.status,
        scheduled_at: None,
        send_lag_s: None,
    }
}

/// The CPU time this process has used so far, user and system, seconds;
/// `None` where the platform does not tell.
pub fn process_cpu_s() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes a whole `rusage` into the buffer we own
        // and returns 0 on success; the buffer is read only then.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
        if rc != 0 {
            return None;
        }
        // SAFETY: getrusage succeeded, so the struct is initialised.
        let usage = unsafe { usage.assume_init() };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        Some(secs(usage.ru_utime) + secs(usage.ru_stime))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The client's CPU over a level as a fraction of one core: the process's
/// CPU time between `cpu_start_s` and now over the level's `wall_s` (real
/// seconds); `None` when either is unknown or the level took no time.
pub fn client_cpu_share(cpu_start_s: Option<f64>, wall_s: f64) -> Option<f64> {
    let used = process_cpu_s()? - cpu_start_s?;
    (wall_s > 0.0).then(|| (used / wall_s).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_cpu_grows_with_work() {
        let Some(before) = process_cpu_s() else {
            return;
        };
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let after = process_cpu_s().expect("measured once");
        assert!(after > before, "{before} {after}");
        assert_eq!(client_cpu_share(Some(after), 0.0), None);
        assert!(client_cpu_share(None, 1.0).is_none());
    }
}
