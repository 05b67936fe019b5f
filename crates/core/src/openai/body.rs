//! Request bodies for the two streaming endpoints, as JSON values.
//!
//! Both ask for a stream with a final usage chunk
//! (`stream_options.include_usage`); vLLM's extras (`ignore_eos`,
//! `min_tokens`) are top-level fields that other servers ignore.

use serde_json::{json, Map, Value};

/// Optional parts of a request body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BodyOptions {
    /// vLLM: keep generating past end-of-sequence, so exactly `max_tokens`
    /// tokens come back (`finish_reason: "length"`).
    pub ignore_eos: bool,
    /// vLLM: generate at least this many tokens.
    pub min_tokens: Option<u64>,
    /// Tools (OpenAI function definitions); when not empty, `tool_choice`
    /// is `"auto"`. Chat only.
    pub tools: Vec<Value>,
    /// vLLM: usage in every chunk (`stream_options.continuous_usage_stats`).
    pub continuous_usage_stats: bool,
    /// Sampling temperature; `None` leaves the server's default.
    pub temperature: Option<f64>,
}

fn common(model: &str, max_tokens: u64, opts: &BodyOptions) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("model".into(), json!(model));
    m.insert("max_tokens".into(), json!(max_tokens));
    m.insert("stream".into(), json!(true));
    let mut stream_options = Map::new();
    stream_options.insert("include_usage".into(), json!(true));
    if opts.continuous_usage_stats {
        stream_options.insert("continuous_usage_stats".into(), json!(true));
    }
    m.insert("stream_options".into(), Value::Object(stream_options));
    if opts.ignore_eos {
        m.insert("ignore_eos".into(), json!(true));
    }
    if let Some(n) = opts.min_tokens {
        m.insert("min_tokens".into(), json!(n));
    }
    if let Some(t) = opts.temperature {
        m.insert("temperature".into(), json!(t));
    }
    m
}

/// A streaming `POST /v1/chat/completions` body. `max_tokens` is in tokens;
/// `messages` are OpenAI chat messages (`{"role":…,"content":…}`, …).
pub fn chat_body(model: &str, messages: Vec<Value>, max_tokens: u64, opts: &BodyOptions) -> Value {
    let mut m = common(model, max_tokens, opts);
    m.insert("messages".into(), Value::Array(messages));
    if !opts.tools.is_empty() {
        m.insert("tools".into(), Value::Array(opts.tools.clone()));
        m.insert("tool_choice".into(), json!("auto"));
    }
    Value::Object(m)
}

/// A streaming `POST /v1/completions` body. `max_tokens` is in tokens; tools
/// do not apply to this endpoint and are left out.
pub fn completions_body(model: &str, prompt: &str, max_tokens: u64, opts: &BodyOptions) -> Value {
    let mut m = common(model, max_tokens, opts);
    m.insert("prompt".into(), json!(prompt));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_body_with_every_option() {
        let opts = BodyOptions {
            ignore_eos: true,
            min_tokens: Some(256),
            tools: vec![json!({"type":"function","function":{"name":"read"}})],
            continuous_usage_stats: true,
            temperature: Some(0.0),
        };
        let b = chat_body("m", vec![json!({"role":"user","content":"hi"})], 256, &opts);
        assert_eq!(b["model"], "m");
        assert_eq!(b["max_tokens"], 256);
        assert_eq!(b["stream"], true);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(b["stream_options"]["continuous_usage_stats"], true);
        assert_eq!(b["ignore_eos"], true);
        assert_eq!(b["min_tokens"], 256);
        assert_eq!(b["tool_choice"], "auto");
        assert_eq!(b["tools"][0]["function"]["name"], "read");
        assert_eq!(b["messages"][0]["content"], "hi");
        assert_eq!(b["temperature"], 0.0);
    }

    #[test]
    fn defaults_leave_extras_out() {
        let b = completions_body("m", "def f(", 16, &BodyOptions::default());
        assert_eq!(b["prompt"], "def f(");
        assert_eq!(b["stream_options"], json!({"include_usage": true}));
        for absent in [
            "ignore_eos",
            "min_tokens",
            "tools",
            "tool_choice",
            "temperature",
        ] {
            assert!(b.get(absent).is_none(), "{absent}");
        }
    }
}
