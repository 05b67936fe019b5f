//! What `codendum classroom` prints on stderr: the live status line while
//! it runs and the seed's table at the end.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use crate::classroom::LiveStatus;
use codendum_core::results::ClassroomRunSummary;

/// The live status line on stderr (nothing when stderr is not a terminal).
pub async fn show_status(status: Arc<LiveStatus>) {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return;
    }
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let line = status.snapshot().to_string();
        let mut err = std::io::stderr();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
    }
}

/// The final table on stderr: the seed's classroom figures.
pub fn render_summary(s: &ClassroomRunSummary) -> String {
    let mut out = String::new();
    for (name, value) in summary_rows(s) {
        out.push_str(&format!("{name:<46} {value}\n"));
    }
    out
}

fn secs(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |x| format!("{x:.1} s"))
}

fn mins(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |x| format!("{:.1} min", x / 60.0))
}

fn num(v: Option<f64>, d: usize) -> String {
    v.map_or("-".to_string(), |x| format!("{x:.d$}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |x| format!("{:.1} %", x * 100.0))
}

/// The rows of the summary table: a name and its figures.
fn summary_rows(s: &ClassroomRunSummary) -> [(&'static str, String); 13] {
    let m = &s.summary;
    let server_errors = codendum_core::targets::server_errors(m);
    [
        (
            "Server output, steady state",
            format!("{} tok/s", num(m.server.output_tokens_per_s, 0)),
        ),
        (
            "Time to first token, P50 / P95",
            format!("{} / {}", secs(m.ttft_p50_s), secs(m.ttft_p95_s)),
        ),
        (
            "Output speed per user, P50",
            format!("{} tok/s", num(m.output_speed_p50_tok_s, 1)),
        ),
        (
            "Time to complete a coding request, P50 / P95",
            format!("{} / {}", mins(m.task_time_p50_s), mins(m.task_time_p95_s)),
        ),
        (
            "Model time per coding request, P50 / P95",
            format!(
                "{} / {}",
                mins(m.model_time_p50_s),
                mins(m.model_time_p95_s)
            ),
        ),
        (
            "Coding requests completed",
            format!(
                "{} ({} per hour)",
                m.completed,
                num(m.completed_per_hour, 0)
            ),
        ),
        (
            "Requests / errors / retries after 429 or 503",
            format!(
                "{} / {} / {}",
                m.requests, m.errors, m.retries_after_429_503
            ),
        ),
        (
            "Peak running / waiting requests",
            format!(
                "{} / {}",
                num(m.server.peak_running, 0),
                num(m.server.peak_waiting, 0)
            ),
        ),
        ("Peak KV cache usage", pct(m.server.peak_kv_cache_usage)),
        (
            "Preemptions / server errors",
            format!(
                "{} / {}",
                m.server.preemptions.map_or("-".into(), |p| p.to_string()),
                server_errors
            ),
        ),
        ("Prefix-cache hit rate", pct(m.server.prefix_cache_hit_rate)),
        (
            "Prompt tokens P50 / P95 / max",
            format!(
                "{} / {} / {}",
                num(m.prompt_tokens_p50, 0),
                num(m.prompt_tokens_p95, 0),
                m.prompt_tokens_max.map_or("-".into(), |x| x.to_string())
            ),
        ),
        (
            "Compactions / tool errors",
            format!("{} / {}", m.compactions, m.tool_errors),
        ),
    ]
}
