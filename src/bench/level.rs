//! A finished request's record. The per-level summary over records is a
//! plain function of them and lives in [`codendum_core::results::level`]; it is
//! re-exported here.

use codendum_core::openai::CallOutcome;
pub use codendum_core::results::level::{summarize_level, LevelFrame};
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
        input_tokens: outcome.input_tokens(),
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
