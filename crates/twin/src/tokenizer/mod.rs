//! A deterministic tokenizer that needs no model files: about 4 characters
//! per token on English and code. Equal text gives equal ids, a shared text
//! prefix gives a shared id prefix (up to the last piece boundary), and the
//! pieces concatenate back to the exact text.
//!
//! Pieces: a special marker `<|name|>`; a word (letters/digits/`_`) with at
//! most one leading space, cut into pieces of up to 8 word characters; a run
//! of spaces or tabs (up to 16); a newline with the indentation after it (up
//! to 16 spaces, as BPE vocabularies merge them); a run of up to 3 other
//! characters (punctuation such as `();` or `"}`). On this project's Java
//! and Python sources and English prose that is 3.3 to 4.5 characters per
//! token, close to Qwen3's tokenizer.
//! A piece's id is a stable hash of its text, below [`VOCAB_SIZE`].

use super::answer::PlannedAnswer;

pub mod prefix;
pub use prefix::{Encoded, PrefixEncoder, PromptCache};

/// Ids are below this (Qwen3's vocabulary size).
pub const VOCAB_SIZE: u32 = 151_936;

const WORD_PIECE: usize = 8;
const SPACE_RUN: usize = 16;
const PUNCT_RUN: usize = 3;

fn is_punct(c: char) -> bool {
    !is_word(c) && !c.is_whitespace()
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Byte length of a `<|name|>` marker at the start of `s`, if there is one.
fn special_len(s: &str) -> Option<usize> {
    let rest = s.strip_prefix("<|")?;
    let end = rest.find("|>")?;
    let name = &rest[..end];
    (end <= 24 && !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .then_some(end + 4)
}

/// Splits text into pieces (sub-slices that concatenate to `text`).
pub fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::with_capacity(text.len() / 4 + 1);
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let len = piece_len(rest);
        out.push(&rest[..len]);
        i += len;
    }
    out
}

fn piece_len(rest: &str) -> usize {
    if let Some(n) = special_len(rest) {
        return n;
    }
    let mut chars = rest.char_indices().peekable();
    let Some((_, first)) = chars.next() else {
        return rest.len();
    };
    let after_first = first.len_utf8();
    let word_start = first == ' ' && chars.peek().is_some_and(|&(_, c)| is_word(c));
    if is_word(first) || word_start {
        let already = usize::from(!word_start);
        let mut end = after_first;
        for (taken, (idx, c)) in (already..).zip(rest[after_first..].char_indices()) {
            if !is_word(c) || taken == WORD_PIECE {
                break;
            }
            end = after_first + idx + c.len_utf8();
        }
        return end;
    }
    if first == ' ' || first == '\t' {
        let mut end = after_first;
        for (n, (idx, c)) in (1..).zip(rest[after_first..].char_indices()) {
            if (c != ' ' && c != '\t') || n == SPACE_RUN {
                break;
            }
            // leave a single space to lead the next word
            let next_is_word = rest[after_first + idx + 1..]
                .chars()
                .next()
                .is_some_and(is_word);
            if c == ' ' && next_is_word {
                break;
            }
            end = after_first + idx + c.len_utf8();
        }
        return end;
    }
    if first == '\n' {
        let indent = rest[1..]
            .bytes()
            .take(SPACE_RUN)
            .take_while(|&b| b == b' ' || b == b'\t')
            .count();
        // leave a single space to lead the next word
        let indent = if indent > 0
            && rest
                .as_bytes()
                .get(1 + indent)
                .is_some_and(|&b| is_word(char::from(b)))
            && rest.as_bytes()[indent] == b' '
        {
            indent - 1
        } else {
            indent
        };
        return 1 + indent;
    }
    if is_punct(first) && !rest.starts_with("<|") {
        let mut end = after_first;
        for (n, (idx, c)) in (1..).zip(rest[after_first..].char_indices()) {
            if !is_punct(c) || n == PUNCT_RUN || rest[after_first + idx..].starts_with("<|") {
                break;
            }
            end = after_first + idx + c.len_utf8();
        }
        return end;
    }
    after_first
}

/// Stable id of one piece.
pub fn piece_id(piece: &str) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in piece.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    ((h ^ (h >> 29)) % u64::from(VOCAB_SIZE)) as u32
}

/// Token ids of a text.
pub fn encode(text: &str) -> Vec<u32> {
    pieces(text).into_iter().map(piece_id).collect()
}

/// Number of tokens of a text.
pub fn count(text: &str) -> usize {
    pieces(text).len()
}

/// Appends the plain text of a message's `content` to `out`: the string,
/// the `text` of each part of an array, nothing for null, else its JSON.
fn push_content(out: &mut String, content: Option<&serde_json::Value>) {
    use std::fmt::Write as _;
    match content {
        Some(serde_json::Value::String(s)) => out.push_str(s),
        Some(serde_json::Value::Array(parts)) => {
            for p in parts {
                if let Some(t) = p.get("text").and_then(|t| t.as_str()) {
                    out.push_str(t);
                }
            }
        }
        None | Some(serde_json::Value::Null) => {}
        Some(other) => {
            let _ = write!(out, "{other}");
        }
    }
}

/// Renders chat messages and tool definitions into one prompt, the way a
/// ChatML chat template does: system (with the tools appended), then the
/// turns in order, then the open assistant turn. Earlier turns render the
/// same way whatever follows them, so a conversation's prefix is stable.
pub fn render_chat(messages: &[serde_json::Value], tools: &[serde_json::Value]) -> String {
    render_chat_with_tools(messages, &render_tools(tools))
}

/// The tool definitions as [`render_chat`] appends them to the system
/// turn: one JSON object a line after the heading; empty without tools.
/// An agent sends the same tools at every step, so a server renders them
/// once per set ([`render_chat_with_tools`]).
pub fn render_tools(tools: &[serde_json::Value]) -> String {
    let mut out = String::new();
    if tools.is_empty() {
        return out;
    }
    out.push_str(
        "\n\n# Tools\n\nYou may call one or more functions. Function signatures:\n<tools>",
    );
    for t in tools {
        out.push('\n');
        out.push_str(&t.to_string());
    }
    out.push_str("\n</tools>");
    out
}

/// [`render_chat`] with the tools already rendered ([`render_tools`]).
pub fn render_chat_with_tools(messages: &[serde_json::Value], tools_text: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let mut rest = messages;
    let first_is_system = messages
        .first()
        .and_then(|m| m.get("role"))
        .and_then(|r| r.as_str())
        == Some("system");
    if first_is_system || !tools_text.is_empty() {
        out.push_str("<|im_start|>system\n");
        if first_is_system {
            push_content(&mut out, messages[0].get("content"));
            rest = &messages[1..];
        }
        out.push_str(tools_text);
        out.push_str("<|im_end|>\n");
    }
    for m in rest {
        let role = m.get("role").and_then(|r| r.as_str()).unwrap_or("user");
        match role {
            "tool" => {
                out.push_str("<|im_start|>user\n<tool_response>\n");
                push_content(&mut out, m.get("content"));
                out.push_str("\n</tool_response><|im_end|>\n");
            }
            _ => {
                out.push_str("<|im_start|>");
                out.push_str(role);
                out.push('\n');
                push_content(&mut out, m.get("content"));
                if let Some(calls) = m.get("tool_calls").and_then(|c| c.as_array()) {
                    for c in calls {
                        let f = c.get("function").unwrap_or(&serde_json::Value::Null);
                        out.push_str("\n<tool_call>\n");
                        let _ = write!(out, "{f}");
                        out.push_str("\n</tool_call>");
                    }
                }
                out.push_str("<|im_end|>\n");
            }
        }
    }
    out.push_str("<|im_start|>assistant\n");
    out
}

/// The assistant turn as [`render_chat`] renders it when the client sends the
/// answer back in its next request (text, then each tool call, then the end
/// marker). Its token ids are what the engine caches for generated blocks, so
/// the next step of an agent hits the prefix cache through the answer, as
/// vLLM does when the chat template re-renders what the model wrote.
pub fn render_answer(answer: &PlannedAnswer) -> String {
    use super::answer::AnswerPart;
    let mut out = String::new();
    for part in &answer.parts {
        if let AnswerPart::Text(t) = part {
            out.push_str(t);
        }
    }
    for part in &answer.parts {
        if let AnswerPart::ToolCall { name, arguments } = part {
            out.push_str("\n<tool_call>\n");
            out.push_str(&serde_json::json!({"name": name, "arguments": arguments}).to_string());
            out.push_str("\n</tool_call>");
        }
    }
    out.push_str("<|im_end|>\n");
    out
}

/// The token pieces of a planned answer as they would stream: text pieces
/// as they are; a tool call as one header token (carrying the name) and then
/// its arguments' pieces.
pub fn answer_len(answer: &PlannedAnswer) -> usize {
    answer
        .parts
        .iter()
        .map(|p| match p {
            super::answer::AnswerPart::Text(t) => count(t),
            super::answer::AnswerPart::ToolCall { arguments, .. } => 1 + count(arguments),
        })
        .sum()
}

/// A stable 64-bit FNV-1a hash of a text (0 for the empty text is not
/// special: it is the FNV offset basis).
pub fn text_hash(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A seed for a request: the twin's seed mixed with the request's `seed`
/// field if it has one, else with a hash of the prompt text.
pub fn request_seed(twin_seed: u64, body_seed: Option<u64>, prompt: &str) -> u64 {
    request_seed_hashed(twin_seed, body_seed, || text_hash(prompt))
}

/// [`request_seed`] with the prompt's [`text_hash`] from `prompt_hash`
/// (called only when the body has no `seed`).
pub fn request_seed_hashed(
    twin_seed: u64,
    body_seed: Option<u64>,
    prompt_hash: impl FnOnce() -> u64,
) -> u64 {
    let base = body_seed.unwrap_or_else(prompt_hash);
    let mut z = base ^ twin_seed.rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests;
