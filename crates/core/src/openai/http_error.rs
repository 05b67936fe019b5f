//! Reading an HTTP error answer: the server's message and its retry hint.
//! Plain functions, no I/O.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::stream::truncate_message;

/// The message of an error body, cut to about 300 characters. Understands
/// OpenAI's `{"error":{"message":…}}`, vLLM's 401 `{"error":"Unauthorized"}`,
/// `{"message":…}`, FastAPI's `{"detail":…}` and plain text. An empty body
/// gives `HTTP <status> <reason>`.
pub fn error_message(status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        let reason = http_reason(status);
        return format!("HTTP {status} {reason}").trim_end().to_string();
    }
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        if let Some(m) = json_message(&v) {
            return truncate_message(&m);
        }
    }
    truncate_message(text)
}

fn json_message(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let as_text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    };
    match v.get("error") {
        Some(Value::Object(o)) => o.get("message").and_then(as_text),
        Some(e @ Value::String(_)) => as_text(e),
        _ => v
            .get("message")
            .and_then(as_text)
            .or_else(|| v.get("detail").and_then(as_text)),
    }
}

fn http_reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// The retry hint of an error answer: `retry-after-ms` (milliseconds) wins
/// over `retry-after` (seconds, or an HTTP date compared with `now`). A
/// date in the past gives zero; unparsable values give `None`.
pub fn retry_after(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
    now: DateTime<Utc>,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(parse_non_negative) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let raw = retry_after?.trim();
    if let Some(secs) = parse_non_negative(raw) {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let date = DateTime::parse_from_rfc2822(raw).ok()?;
    let delta = date.with_timezone(&Utc) - now;
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

fn parse_non_negative(raw: &str) -> Option<f64> {
    let v: f64 = raw.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_of_every_shape() {
        let openai = br#"{"error":{"message":"too long","type":"BadRequestError","code":400}}"#;
        assert_eq!(error_message(400, openai), "too long");
        assert_eq!(
            error_message(401, br#"{"error":"Unauthorized"}"#),
            "Unauthorized"
        );
        assert_eq!(error_message(422, br#"{"detail":"bad"}"#), "bad");
        assert_eq!(
            error_message(502, b"<html>bad gateway</html>\n"),
            "<html>bad gateway</html>"
        );
        assert_eq!(error_message(503, b""), "HTTP 503 Service Unavailable");
        let long = "x".repeat(1000);
        assert_eq!(error_message(500, long.as_bytes()).chars().count(), 301);
    }

    #[test]
    fn retry_after_forms() {
        let now = DateTime::parse_from_rfc2822("Wed, 21 Oct 2015 07:28:00 GMT")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            retry_after(None, Some("2"), now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(Some("1500"), Some("9"), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(None, Some("Wed, 21 Oct 2015 07:28:30 GMT"), now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after(None, Some("Wed, 21 Oct 2015 07:27:00 GMT"), now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(None, Some("soon"), now), None);
        assert_eq!(retry_after(None, Some("-3"), now), None);
        assert_eq!(retry_after(None, None, now), None);
    }
}
