//! What a replayed call leaves for the calls of its session that wait for
//! it or continue it: when its answer ended, whether it succeeded, and the
//! conversation as sent with the answer's text.

use std::sync::Arc;

/// A conversation as sent: the turn before, the answer to it (when this
/// turn follows the answer), and this turn's user message. Shared between
/// the calls of a session, so a long session holds its text once.
#[derive(Debug)]
pub struct Turn {
    /// The turn before, when this one continues a conversation.
    pub(super) before: Option<Arc<Turn>>,
    /// The answer to the turn before, when this turn follows it.
    pub(super) answer: Option<String>,
    /// This turn's user message.
    pub(super) user: String,
}

impl Turn {
    /// The messages of the conversation up to and including this turn.
    pub(super) fn messages(&self) -> Vec<serde_json::Value> {
        let mut chain = Vec::new();
        let mut at = Some(self);
        while let Some(t) = at {
            chain.push(t);
            at = t.before.as_deref();
        }
        let mut out = Vec::with_capacity(chain.len() * 2);
        for t in chain.into_iter().rev() {
            if let Some(a) = &t.answer {
                out.push(serde_json::json!({"role": "assistant", "content": a}));
            }
            out.push(serde_json::json!({"role": "user", "content": t.user}));
        }
        out
    }
}

/// What a call left for the calls that wait for it or continue it.
#[derive(Debug)]
pub struct Sent {
    /// When its answer ended (or it was passed over), seconds since the
    /// replay started.
    pub end: f64,
    /// Whether it was sent and succeeded.
    pub ok: bool,
    /// Its conversation, while a later call may continue it.
    pub(super) turn: Option<Arc<Turn>>,
    /// Its answer's text, while a later call may continue it.
    pub(super) answer: String,
}

impl Sent {
    /// A call not sent (passed over at `end_s`).
    pub fn not_sent(end_s: f64) -> Self {
        Sent {
            end: end_s,
            ok: false,
            turn: None,
            answer: String::new(),
        }
    }
}
