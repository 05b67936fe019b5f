//! Whole sessions, drawn jointly: the recorded sequence of model calls per
//! coding request of each learned session (`agent.sessions`), so a
//! simulated session takes one recorded session's shape — how many
//! requests it makes and how many calls each takes — instead of drawing
//! its follow-ups and each request's calls apart. A long recorded session
//! has both many requests and many calls per request; independent draws
//! lose that, and with it the calls a class sends.
//!
//! Two parties share the draw without talking to each other: the client
//! (the classroom's student, which decides how many requests a session
//! makes) and the model (the twin's persona, which decides how many calls
//! a request takes). Both see the session's first answer, so both derive
//! the session's rank from it ([`session_rank`]) and pick the same row
//! ([`SessionShapes::pick`]); the first request's first step, taken before
//! that answer exists, answers at once with the share of rows whose first
//! request took one call, and the pick keeps to the rows that agree with
//! what it did.

use serde_json::Value;

/// The recorded sessions' shapes.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionShapes {
    /// Where they come from, in a few words.
    pub source: String,
    /// One row per session: model calls (main-agent and subagent steps;
    /// titles and compactions apart) of each coding request, in order.
    /// Every row holds at least one request, every count is at least 1.
    pub calls: Vec<Vec<u32>>,
    /// The recorded prompt growth, when the sources have token sizes: one
    /// row per session, parallel to [`SessionShapes::calls`], holding each
    /// coding request's prompt tokens at its first and at its last
    /// main-agent call (every size at least 1). `None`: the rows carry no
    /// sizes, and prompts grow as the class's other fields say.
    pub prompt_tokens: Option<Vec<Vec<RequestPrompt>>>,
}

/// The prompt tokens of one recorded coding request's main-agent calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestPrompt {
    /// Prompt tokens of its first main-agent call.
    pub first: u64,
    /// Prompt tokens of its last main-agent call.
    pub last: u64,
}

impl SessionShapes {
    /// Sessions from their rows; rows without a request are dropped,
    /// counts of 0 raised to 1. `None` when no row is left.
    pub fn from_rows(source: impl Into<String>, rows: Vec<Vec<u32>>) -> Option<Self> {
        let rows = rows.into_iter().map(|r| (r, None)).collect();
        Self::from_rows_and_prompts(source, rows)
    }

    /// Sessions from their rows, each with its requests' prompt sizes when
    /// recorded (as [`SessionShapes::from_rows`]; the sizes of a row are
    /// dropped with it). The rows keep their sizes only when every kept
    /// row has one per request, each at least 1: a source without token
    /// sizes leaves the rows without them.
    pub fn from_rows_and_prompts(
        source: impl Into<String>,
        rows: Vec<(Vec<u32>, Option<Vec<RequestPrompt>>)>,
    ) -> Option<Self> {
        let (calls, prompts): (Vec<Vec<u32>>, Vec<Option<Vec<RequestPrompt>>>) = rows
            .into_iter()
            .filter(|(r, _)| !r.is_empty())
            .map(|(r, p)| (r.into_iter().map(|c| c.max(1)).collect(), p))
            .unzip();
        let sized = |(r, p): (&Vec<u32>, &Option<Vec<RequestPrompt>>)| {
            p.as_ref().is_some_and(|p| {
                p.len() == r.len() && p.iter().all(|q| q.first >= 1 && q.last >= 1)
            })
        };
        let prompt_tokens = calls
            .iter()
            .zip(&prompts)
            .all(sized)
            .then(|| prompts.into_iter().flatten().collect());
        (!calls.is_empty()).then(|| SessionShapes {
            source: source.into(),
            calls,
            prompt_tokens,
        })
    }

    /// The share (0..=1) of sessions whose first request took one call:
    /// how often a simulated session's first step is its answer.
    pub fn one_call_first_share(&self) -> f64 {
        let ones = self.calls.iter().filter(|r| r[0] <= 1).count();
        ones as f64 / self.calls.len() as f64
    }

    /// The row of a session at rank `u` (0..1) among the rows that agree
    /// with its first request's first step: those whose first request
    /// took one call when `first_answered_at_once`, the others otherwise
    /// (every row when none agrees).
    pub fn pick(&self, u: f64, first_answered_at_once: bool) -> &[u32] {
        &self.calls[self.pick_index(u, first_answered_at_once)]
    }

    /// The index in [`SessionShapes::calls`] of the row [`SessionShapes::pick`]
    /// picks.
    pub fn pick_index(&self, u: f64, first_answered_at_once: bool) -> usize {
        let agree: Vec<usize> = (0..self.calls.len())
            .filter(|&i| (self.calls[i][0] <= 1) == first_answered_at_once)
            .collect();
        let rows: Vec<usize> = if agree.is_empty() {
            (0..self.calls.len()).collect()
        } else {
            agree
        };
        let u = if u.is_finite() {
            u.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let i = ((u * rows.len() as f64) as usize).min(rows.len() - 1);
        rows[i]
    }

    /// The recorded prompt tokens of main-agent call `step` (0: the
    /// request's first) of coding request `request` of row `row`: from the
    /// request's first call's size to its last call's, evenly over the
    /// request's recorded calls (and the last call's size past them).
    /// `None` when the rows carry no sizes or the session is past its
    /// row's requests.
    pub fn prompt_tokens_at(&self, row: usize, request: usize, step: u32) -> Option<u64> {
        let q = self.prompt_tokens.as_ref()?.get(row)?.get(request)?;
        let calls = self.calls.get(row)?.get(request).copied().unwrap_or(1);
        let span = f64::from(calls.saturating_sub(1).max(1));
        let at = (f64::from(step) / span).min(1.0);
        let (first, last) = (q.first as f64, q.last as f64);
        Some((first + (last - first) * at).round().max(1.0) as u64)
    }

    /// Model calls of coding request `request` (0: the first) of a
    /// session whose row is `row`; past the row's end, its last request's.
    pub fn calls_of(row: &[u32], request: usize) -> u32 {
        row.get(request).or(row.last()).copied().unwrap_or(1)
    }

    /// Checks the rows; the error says what is wrong in a few words.
    pub fn check(&self) -> Result<(), String> {
        if self.calls.is_empty() {
            return Err("calls is empty".into());
        }
        for (i, r) in self.calls.iter().enumerate() {
            if r.is_empty() {
                return Err(format!("calls[{i}] is empty (a session has a request)"));
            }
            if let Some(j) = r.iter().position(|&c| c == 0) {
                return Err(format!("calls[{i}][{j}] is 0 (a request makes a call)"));
            }
        }
        let Some(prompts) = &self.prompt_tokens else {
            return Ok(());
        };
        if prompts.len() != self.calls.len() {
            return Err(format!(
                "first_prompt_tokens has {} rows, calls {} (one per session)",
                prompts.len(),
                self.calls.len()
            ));
        }
        for (i, (p, r)) in prompts.iter().zip(&self.calls).enumerate() {
            if p.len() != r.len() {
                return Err(format!(
                    "first_prompt_tokens[{i}] has {} requests, calls[{i}] {}",
                    p.len(),
                    r.len()
                ));
            }
            if let Some(j) = p.iter().position(|q| q.first == 0 || q.last == 0) {
                return Err(format!(
                    "first_prompt_tokens[{i}][{j}] or last_prompt_tokens[{i}][{j}] is 0 (a prompt has a token)"
                ));
            }
        }
        Ok(())
    }

    /// The mean model calls of a session (its requests' calls summed).
    pub fn mean_calls(&self) -> f64 {
        let total: u64 = self
            .calls
            .iter()
            .map(|r| r.iter().map(|&c| u64::from(c)).sum::<u64>())
            .sum();
        total as f64 / self.calls.len() as f64
    }
}

/// The index of the row of the session whose first assistant message is
/// `first_answer` (the row [`row_for`] gives).
pub fn row_index_for(shapes: &SessionShapes, first_answer: &Value) -> usize {
    shapes.pick_index(session_rank(first_answer), answered_at_once(first_answer))
}

/// Whether an assistant message (OpenAI chat form) answered without
/// calling a tool.
pub fn answered_at_once(message: &Value) -> bool {
    message
        .get("tool_calls")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}

/// A session's rank (0..1) from its first assistant message (OpenAI chat
/// form): a hash of its text and its tool calls' names and arguments, the
/// parts a client sends back unchanged, so the client and the model
/// derive the same rank.
pub fn session_rank(first_answer: &Value) -> f64 {
    // FNV-1a over the parts, each ended by a zero byte.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |s: &str| {
        for b in s.bytes().chain(std::iter::once(0)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(first_answer
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or(""));
    for call in first_answer
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let f = call.get("function");
        let part = |k: &str| f.and_then(|f| f.get(k)).and_then(Value::as_str);
        eat(part("name").unwrap_or(""));
        eat(part("arguments").unwrap_or(""));
    }
    // SplitMix64's finaliser spreads the hash before it becomes a rank.
    let mut z = h;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The first assistant message of a conversation (OpenAI chat messages,
/// the system message included or not).
pub fn first_answer(messages: &[Value]) -> Option<&Value> {
    messages
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
}

/// Coding requests a conversation has opened: its user messages.
pub fn requests_opened(messages: &[Value]) -> usize {
    messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .count()
}

/// The row of the session whose first assistant message is
/// `first_answer`: its rank and whether it answered at once pick it.
pub fn row_for<'a>(shapes: &'a SessionShapes, first_answer: &Value) -> &'a [u32] {
    shapes.pick(session_rank(first_answer), answered_at_once(first_answer))
}

/// Which row a conversation is on and which of its requests is current:
/// `None` before its first answer (its first request's first step). It
/// reads the conversation alone, so it holds only until the conversation
/// is compacted (its first answer becomes the summary, its user messages
/// no longer count the requests); a party that knows the session keeps
/// the row it picked before.
pub fn row_of<'a>(shapes: &'a SessionShapes, messages: &[Value]) -> Option<(&'a [u32], usize)> {
    let first = first_answer(messages)?;
    Some((
        row_for(shapes, first),
        requests_opened(messages).saturating_sub(1),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shapes() -> SessionShapes {
        SessionShapes::from_rows("t", vec![vec![1], vec![3, 8], vec![12, 5, 20], vec![]]).unwrap()
    }

    #[test]
    fn rows_are_kept_whole_and_the_pick_agrees_with_the_first_step() {
        let s = shapes();
        assert_eq!(s.calls.len(), 3, "the empty row is dropped");
        assert!((s.one_call_first_share() - 1.0 / 3.0).abs() < 1e-12);
        for u in [0.0, 0.3, 0.99, 1.0] {
            assert_eq!(s.pick(u, true), &[1]);
            assert_ne!(s.pick(u, false), &[1]);
        }
        assert_eq!(s.pick(0.2, false), &[3, 8]);
        assert_eq!(s.pick(0.7, false), &[12, 5, 20]);
        assert_eq!(SessionShapes::calls_of(&[3, 8], 5), 8);
        assert!((s.mean_calls() - (1.0 + 11.0 + 37.0) / 3.0).abs() < 1e-12);
        assert!(SessionShapes::from_rows("t", vec![vec![]]).is_none());
        assert_eq!(s.prompt_tokens, None);
        for u in [0.0, 0.4, 0.9] {
            assert_eq!(s.pick(u, false), &s.calls[s.pick_index(u, false)][..]);
        }
    }

    fn sized(first: u64, last: u64) -> RequestPrompt {
        RequestPrompt { first, last }
    }

    #[test]
    fn rows_carry_their_prompt_growth_evenly_over_a_requests_calls() {
        let s = SessionShapes::from_rows_and_prompts(
            "t",
            vec![
                (vec![], Some(vec![])),
                (
                    vec![5, 1],
                    Some(vec![sized(10_000, 18_000), sized(19_000, 19_000)]),
                ),
                (vec![3], Some(vec![sized(8_000, 9_000)])),
            ],
        )
        .unwrap();
        assert_eq!(s.calls, vec![vec![5, 1], vec![3]]);
        assert!(s.check().is_ok());
        // Five calls: the first at 10K, the last (step 4) at 18K, 2K a step.
        let at = |row, request, step| s.prompt_tokens_at(row, request, step);
        assert_eq!(at(0, 0, 0), Some(10_000));
        assert_eq!(at(0, 0, 1), Some(12_000));
        assert_eq!(at(0, 0, 4), Some(18_000));
        assert_eq!(
            at(0, 0, 9),
            Some(18_000),
            "past the recorded calls: the last size"
        );
        assert_eq!(at(0, 1, 0), Some(19_000));
        assert_eq!(at(0, 2, 0), None, "past the row's requests");
        assert_eq!(at(1, 0, 1), Some(8_500));
        // A row without sizes (or a size of 0) leaves every row without.
        let bare = SessionShapes::from_rows_and_prompts(
            "t",
            vec![
                (vec![2], Some(vec![sized(100, 200)])),
                (vec![2], Some(vec![sized(0, 200)])),
            ],
        )
        .unwrap();
        assert_eq!(bare.prompt_tokens, None);
        assert_eq!(bare.prompt_tokens_at(0, 0, 0), None);
        let mut bad = s.clone();
        bad.prompt_tokens.as_mut().unwrap()[1].push(sized(1, 1));
        assert!(bad
            .check()
            .unwrap_err()
            .contains("first_prompt_tokens[1] has 2 requests"));
    }

    #[test]
    fn client_and_model_derive_the_same_row_from_the_conversation() {
        let s = shapes();
        let answer = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{\"filePath\":\"x\"}"}}]});
        // The client's copy (its own call id) and the model's view of it.
        let mut echoed = answer.clone();
        echoed["tool_calls"][0]["id"] = json!("call_0_0");
        assert_eq!(session_rank(&answer), session_rank(&echoed));
        let messages = vec![
            json!({"role": "system", "content": "s"}),
            json!({"role": "user", "content": "do it"}),
            echoed,
            json!({"role": "tool", "tool_call_id": "call_0_0", "content": "x"}),
            json!({"role": "assistant", "content": "done"}),
            json!({"role": "user", "content": "more"}),
        ];
        let (row, request) = row_of(&s, &messages).unwrap();
        assert_eq!(row, s.pick(session_rank(&answer), false));
        assert_eq!(request, 1);
        assert!(row_of(&s, &messages[..2]).is_none());
    }

    #[test]
    fn ranks_spread_evenly() {
        // Different first answers land all over 0..1.
        let ranks: Vec<f64> = (0..4000)
            .map(|i| session_rank(&json!({"role": "assistant", "content": format!("answer {i}")})))
            .collect();
        for q in 0..10 {
            let lo = f64::from(q) / 10.0;
            let n = ranks.iter().filter(|r| **r >= lo && **r < lo + 0.1).count();
            assert!((300..=500).contains(&n), "decile {q}: {n}");
        }
    }
}
