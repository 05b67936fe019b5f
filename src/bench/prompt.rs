//! Prompts: a unique tag at the very start of every prompt (so no prefix is
//! ever shared and results are cache-cold), then filler text sized to the
//! shape's target token count, and the streaming request body.
//!
//! Sizing, once per shape: with the server's `/tokenize` the body is
//! measured and rescaled until it lands within 1 % of the target
//! (`tokenize`); otherwise a probe request's `usage.prompt_tokens`
//! calibrates characters per token (`probe`); otherwise 4 characters per
//! token is assumed (`estimate`).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::seams::ServerInfo;
use codendum_core::access::Secret;
use codendum_core::openai::{CallRequest, Endpoint, Transport};
use codendum_core::results::{PromptSizing, ShapeSizing, SizingMethod};
use codendum_core::shape::Shape;

/// Characters per token assumed when nothing better is known.
pub const FALLBACK_CHARS_PER_TOKEN: f64 = 4.0;
/// Characters of the calibration text.
const CALIBRATION_CHARS: usize = 8_000;
/// Rescaling rounds with `/tokenize`.
const TOKENIZE_ROUNDS: usize = 4;

const WORDS: &[&str] = &[
    "server",
    "client",
    "message",
    "socket",
    "thread",
    "queue",
    "buffer",
    "handler",
    "request",
    "response",
    "session",
    "protocol",
    "timeout",
    "student",
    "project",
    "module",
    "compile",
    "test",
    "assert",
    "method",
    "class",
    "field",
    "value",
    "string",
    "number",
    "list",
    "map",
    "error",
    "retry",
    "stream",
    "token",
    "window",
    "cache",
    "model",
    "prompt",
    "answer",
    "build",
    "deploy",
    "config",
    "channel",
    "broadcast",
    "user",
    "room",
    "history",
    "format",
    "parse",
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "with",
    "for",
    "when",
    "then",
    "every",
    "each",
    "new",
];

/// The unique tag that starts a prompt: run id, shape, level and request
/// index. No two requests of a run share one.
pub fn prompt_tag(run_id: &str, shape: Shape, concurrency: u32, index: u64) -> String {
    load_tag(run_id, shape, &LevelLoad::Closed(concurrency), index)
}

/// How a level loads the server: N requests kept in flight, or requests
/// started at a rate (requests per second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LevelLoad {
    /// Closed loop: N in flight.
    Closed(u32),
    /// Open loop: this many requests per second.
    Rate(f64),
}

impl LevelLoad {
    /// The load in a prompt tag: `n=16`, `rate=0.8/s`.
    fn tag(&self) -> String {
        match self {
            LevelLoad::Closed(n) => format!("n={n}"),
            LevelLoad::Rate(r) => {
                format!("rate={}/s", codendum_core::results::records::trim_rate(*r))
            }
        }
    }

    /// The load in a session id: `c16`, `r0.8`.
    fn session(&self) -> String {
        match self {
            LevelLoad::Closed(n) => format!("c{n}"),
            LevelLoad::Rate(r) => format!("r{}", codendum_core::results::records::trim_rate(*r)),
        }
    }
}

/// The tag a prompt starts with: run, shape, load and index, so every
/// prompt of a run is unique (cache-cold).
pub fn load_tag(run_id: &str, shape: Shape, load: &LevelLoad, index: u64) -> String {
    format!(
        "[codendum-bench run={run_id} shape={} {} i={index}]\n",
        shape.name(),
        load.tag()
    )
}

/// The `x-session-id` a bench request carries: each request is a
/// conversation of its own, as a new OpenCode session is, so a router with
/// session affinity spreads a bench's requests as it spreads a class's
/// sessions (and does not pin the whole run to the replica its API key
/// hashes to). Derived from the shape, level and index only, so a run's
/// routing repeats.
pub fn session_id(shape: Shape, concurrency: u32, index: u64) -> String {
    load_session_id(shape, &LevelLoad::Closed(concurrency), index)
}

/// [`session_id`] for a level of any load: `codendum-bench-short-r0.8-3`.
pub fn load_session_id(shape: Shape, load: &LevelLoad, index: u64) -> String {
    format!("codendum-bench-{}-{}-{index}", shape.name(), load.session())
}

/// Deterministic filler text of exactly `chars` ASCII characters (words
/// drawn with a seeded generator, sentences of about twelve words).
pub fn filler_text(seed: u64, chars: usize) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut text = String::with_capacity(chars + 16);
    let mut in_sentence = 0usize;
    while text.len() < chars {
        let word = WORDS.choose(&mut rng).copied().unwrap_or("word");
        text.push_str(word);
        in_sentence += 1;
        if in_sentence == 12 {
            text.push_str(". ");
            in_sentence = 0;
        } else {
            text.push(' ');
        }
    }
    text.truncate(chars);
    text
}

/// The streaming body of one bench request: exactly `output_tokens`
/// generated (`max_tokens` = `min_tokens`, `ignore_eos`), usage in the last
/// chunk.
pub fn request_body(endpoint: Endpoint, model: &str, prompt: &str, output_tokens: u32) -> Value {
    let mut body = json!({
        "model": model,
        "max_tokens": output_tokens,
        "min_tokens": output_tokens,
        "ignore_eos": true,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let slot = match endpoint {
        Endpoint::Chat => ("messages", json!([{"role": "user", "content": prompt}])),
        Endpoint::Completions => ("prompt", json!(prompt)),
    };
    if let Some(obj) = body.as_object_mut() {
        obj.insert(slot.0.to_string(), slot.1);
    }
    body
}

/// The sized body text of one shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapePrompt {
    /// The shape.
    pub shape: Shape,
    /// The filler that follows each request's tag.
    pub body: String,
    /// How it was sized.
    pub sizing: ShapeSizing,
}

impl ShapePrompt {
    /// The full prompt of one request: its tag, then the body.
    pub fn prompt(&self, run_id: &str, concurrency: u32, index: u64) -> String {
        self.prompt_for(run_id, &LevelLoad::Closed(concurrency), index)
    }

    /// The full prompt of request `index` of a level of any load.
    pub fn prompt_for(&self, run_id: &str, load: &LevelLoad, index: u64) -> String {
        let mut p = load_tag(run_id, self.shape, load, index);
        p.push_str(&self.body);
        p
    }
}

/// What the sizer needs to reach the server.
pub struct SizingContext<'a> {
    /// `/tokenize` and friends.
    pub info: &'a dyn ServerInfo,
    /// For the probe request.
    pub transport: &'a dyn Transport,
    /// Endpoint of the probe.
    pub endpoint: Endpoint,
    /// Model id.
    pub model: &'a str,
    /// Seed of the filler.
    pub seed: u64,
    /// Run id (for the probe's tag).
    pub run_id: &'a str,
    /// Key to present.
    pub api_key: Option<Secret>,
}

/// Sizes every shape's body; never fails (falls back to `estimate`).
pub async fn size_prompts(
    ctx: &SizingContext<'_>,
    shapes: &[Shape],
) -> (PromptSizing, Vec<ShapePrompt>) {
    let calibration = filler_text(ctx.seed, CALIBRATION_CHARS);
    let tag_example = prompt_tag(ctx.run_id, Shape::Long, 4096, 99_999);
    if let Ok(Some(tokens)) = ctx
        .info
        .tokenize_as_sent(ctx.endpoint, ctx.model, &calibration)
        .await
    {
        if tokens > 0 {
            let cpt = CALIBRATION_CHARS as f64 / tokens as f64;
            let mut prompts = Vec::new();
            for &shape in shapes {
                prompts.push(size_with_tokenize(ctx, shape, cpt, &tag_example).await);
            }
            return (
                PromptSizing {
                    method: SizingMethod::Tokenize,
                    shapes: sizings(&prompts),
                },
                prompts,
            );
        }
    }
    let (method, cpt) = match probe(ctx, &calibration).await {
        Some(cpt) => (SizingMethod::Probe, cpt),
        None => (SizingMethod::Estimate, FALLBACK_CHARS_PER_TOKEN),
    };
    let tag_tokens = tag_example.len() as f64 / cpt;
    let prompts: Vec<ShapePrompt> = shapes
        .iter()
        .map(|&shape| {
            let body_tokens = (shape.input_tokens() as f64 - tag_tokens).max(1.0);
            let chars = (body_tokens * cpt).round().max(1.0) as usize;
            make(ctx.seed, shape, chars, cpt, None)
        })
        .collect();
    (
        PromptSizing {
            method,
            shapes: sizings(&prompts),
        },
        prompts,
    )
}

fn sizings(prompts: &[ShapePrompt]) -> Vec<ShapeSizing> {
    prompts.iter().map(|p| p.sizing.clone()).collect()
}

fn make(seed: u64, shape: Shape, chars: usize, cpt: f64, measured: Option<u64>) -> ShapePrompt {
    ShapePrompt {
        shape,
        body: filler_text(seed, chars),
        sizing: ShapeSizing {
            shape: shape.name().to_string(),
            target_input_tokens: shape.input_tokens(),
            body_chars: chars as u64,
            chars_per_token: cpt,
            measured_tokens: measured,
        },
    }
}

/// Rescales the body until tag + body measure within 1 % of the target.
async fn size_with_tokenize(
    ctx: &SizingContext<'_>,
    shape: Shape,
    cpt: f64,
    tag: &str,
) -> ShapePrompt {
    let target = shape.input_tokens() as f64;
    let mut chars = (target * cpt).round().max(1.0) as usize;
    let mut best = make(ctx.seed, shape, chars, cpt, None);
    for _ in 0..TOKENIZE_ROUNDS {
        let text = format!("{tag}{}", filler_text(ctx.seed, chars));
        let Ok(Some(count)) = ctx
            .info
            .tokenize_as_sent(ctx.endpoint, ctx.model, &text)
            .await
        else {
            break;
        };
        best = make(
            ctx.seed,
            shape,
            chars,
            chars as f64 / count.max(1) as f64,
            Some(count),
        );
        if count == 0 || (count as f64 - target).abs() <= target * 0.01 {
            break;
        }
        chars = ((chars as f64) * target / count as f64).round().max(1.0) as usize;
    }
    best
}

/// Sends one short request and derives characters per token from the
/// server's `usage.prompt_tokens` (streamed, else non-streamed).
async fn probe(ctx: &SizingContext<'_>, calibration: &str) -> Option<f64> {
    let prompt = format!("[codendum-bench run={} probe]\n{calibration}", ctx.run_id);
    let request = CallRequest {
        endpoint: ctx.endpoint,
        body: request_body(ctx.endpoint, ctx.model, &prompt, 1).into(),
        api_key: ctx.api_key.clone(),
        headers: Vec::new(),
        record_gaps: false,
        first_token: None,
    };
    let outcome = ctx.transport.call(request).await;
    let streamed = outcome
        .usage
        .filter(|u| outcome.is_ok() && u.prompt_tokens > 0)
        .map(|u| u.prompt_tokens);
    let tokens = match streamed {
        Some(t) => t,
        // No usage in the stream (llama.cpp): ask once without streaming.
        None => ctx
            .info
            .prompt_tokens_unstreamed(ctx.endpoint, ctx.model, &prompt)
            .await
            .ok()
            .flatten()?,
    };
    Some(prompt.len() as f64 / tokens as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filler_is_deterministic_and_exact() {
        assert_eq!(filler_text(7, 1000), filler_text(7, 1000));
        assert_ne!(filler_text(7, 1000), filler_text(8, 1000));
        assert_eq!(filler_text(1, 12_345).len(), 12_345);
        assert_eq!(filler_text(1, 0), "");
    }

    #[test]
    fn body_asks_for_exact_output_and_usage() {
        let b = request_body(Endpoint::Chat, "m", "hi", 256);
        assert_eq!(b["messages"][0]["content"], "hi");
        assert_eq!(b["max_tokens"], 256);
        assert_eq!(b["min_tokens"], 256);
        assert_eq!(b["ignore_eos"], true);
        assert_eq!(b["stream_options"]["include_usage"], true);
        let b = request_body(Endpoint::Completions, "m", "hi", 3);
        assert_eq!(b["prompt"], "hi");
        assert!(b.get("messages").is_none());
    }

    #[test]
    fn tags_lead_the_prompt() {
        let p = make(1, Shape::Short, 100, 4.0, None);
        let full = p.prompt("r1", 8, 3);
        assert!(full.starts_with("[codendum-bench run=r1 shape=short n=8 i=3]\n"));
        assert!(full.ends_with(&p.body));
    }
}
