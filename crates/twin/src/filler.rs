//! The default [`Responder`]: deterministic prose or code-like text of a
//! plausible length (80 to 600 tokens), chosen by the request's seed.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::answer::{AnswerRequest, PlannedAnswer, Responder};
use super::tokenizer;

const SUBJECTS: &[&str] = &[
    "The server",
    "This method",
    "The test suite",
    "Each request",
    "The parser",
    "The handler",
    "A student",
    "The build",
    "The cache",
    "This change",
];
const VERBS: &[&str] = &[
    "reads",
    "returns",
    "validates",
    "writes",
    "checks",
    "parses",
    "retries",
    "logs",
    "closes",
    "updates",
];
const OBJECTS: &[&str] = &[
    "the configuration file",
    "every incoming connection",
    "the response body",
    "a list of pending tasks",
    "the socket after use",
    "the current state",
    "its arguments",
    "the error message",
    "a small buffer",
    "the expected output",
];
const TAILS: &[&str] = &[
    "before it continues",
    "so the next step can run",
    "when the input is empty",
    "without blocking the caller",
    "and reports what went wrong",
    "in the same order",
    "once per request",
    "after the tests pass",
];
const IDENTS: &[&str] = &[
    "request", "buffer", "count", "path", "result", "socket", "items", "config", "reader", "line",
];
const TYPES: &[&str] = &["String", "int", "List<String>", "Path", "boolean", "long"];

/// Words the HTTP layer streams past the end of a planned answer (when
/// `ignore_eos` or `min_tokens` asks for more tokens than the answer has).
pub const PADDING: &[&str] = &[
    " the", " code", " and", " test", " then", " run", " it", ".",
];

/// The padding piece for output position `i` past the answer.
pub fn padding_piece(i: usize) -> &'static str {
    PADDING[i % PADDING.len()]
}

/// Deterministic filler text: the same seed gives the same answer.
#[derive(Debug, Clone, Copy)]
pub struct FillerResponder {
    /// Shortest answer, tokens.
    pub min_tokens: usize,
    /// Longest answer, tokens.
    pub max_tokens: usize,
}

impl Default for FillerResponder {
    fn default() -> Self {
        FillerResponder {
            min_tokens: 80,
            max_tokens: 600,
        }
    }
}

fn pick<'a>(rng: &mut ChaCha8Rng, list: &[&'a str]) -> &'a str {
    list[rng.gen_range(0..list.len())]
}

fn sentence(rng: &mut ChaCha8Rng) -> String {
    format!(
        "{} {} {} {}. ",
        pick(rng, SUBJECTS),
        pick(rng, VERBS),
        pick(rng, OBJECTS),
        pick(rng, TAILS)
    )
}

fn code_line(rng: &mut ChaCha8Rng) -> String {
    match rng.gen_range(0..4) {
        0 => format!(
            "    {} {} = {}.{}();\n",
            pick(rng, TYPES),
            pick(rng, IDENTS),
            pick(rng, IDENTS),
            pick(rng, VERBS)
        ),
        1 => format!(
            "    if ({} == null) {{\n        return;\n    }}\n",
            pick(rng, IDENTS)
        ),
        2 => format!("    // {} {}\n", pick(rng, VERBS), pick(rng, OBJECTS)),
        _ => format!("    {}.add({});\n", pick(rng, IDENTS), pick(rng, IDENTS)),
    }
}

impl FillerResponder {
    /// The text for a seed, about `target` tokens long (never shorter).
    pub fn text_for(&self, seed: u64) -> String {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let lo = self.min_tokens.max(1);
        let hi = self.max_tokens.max(lo);
        let target = rng.gen_range(lo..=hi);
        let code = rng.gen_bool(0.3);
        let mut text = String::new();
        if code {
            text.push_str("Here is the change:\n\n```java\npublic void handle() {\n");
        }
        let mut tokens = tokenizer::count(&text);
        let closing = "}\n```\n";
        while tokens + if code { 4 } else { 0 } < target {
            let line = if code {
                code_line(&mut rng)
            } else {
                sentence(&mut rng)
            };
            tokens += tokenizer::count(&line);
            text.push_str(&line);
        }
        if code {
            text.push_str(closing);
        }
        // Pieces counted line by line can merge across line joins: top up.
        let mut text = text.trim_end_matches(' ').to_string();
        while tokenizer::count(&text) < lo {
            text.push_str(sentence(&mut rng).trim_end_matches(' '));
        }
        text
    }
}

impl Responder for FillerResponder {
    fn plan(&self, request: &AnswerRequest<'_>) -> PlannedAnswer {
        PlannedAnswer::text(self.text_for(request.seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_text_plausible_length() {
        let f = FillerResponder::default();
        for seed in 0..20 {
            let t = f.text_for(seed);
            assert_eq!(t, f.text_for(seed));
            let n = tokenizer::count(&t);
            assert!((80..=620).contains(&n), "seed {seed}: {n} tokens");
        }
        assert_ne!(f.text_for(1), f.text_for(2));
    }
}
