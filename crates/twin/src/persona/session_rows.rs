//! Each session's recorded row and current coding request, kept by the
//! client's session id (`x-session-id`), when the class draws sessions
//! whole (`agent.sessions`).
//!
//! Read from the conversation alone ([`sessions::row_of`]), the row and the
//! request hold only until the client compacts it: the compacted
//! conversation opens with a recap question and the summary, so its first
//! answer picks another row and its user messages (the recap question, a
//! "continue", the turns kept) no longer count the requests. Keyed by the
//! session, the persona keeps what it read before:
//!
//! - the row is picked once, from the session's first answer (as the
//!   client picks it), and kept for the session's life;
//! - a conversation is known by its first answer (its *epoch*); while that
//!   stays the same, the request is the epoch's first request plus the user
//!   messages added since;
//! - when the first answer changes (a compaction), the request is the one
//!   the session was on, or the next one when the persona's last answer in
//!   the session was final (the client compacted between two requests, so
//!   this call opens the next). A compaction mid-request leaves the request
//!   where it was, whatever user messages the recap adds; the persona
//!   reads the request's progress from the steps after the last user
//!   message, which restart at the recap's "continue", so the calls the
//!   request made before are carried and only what is left of the row's
//!   count is drawn for the rest (at least one call, the answer).
//!
//! The request number is thus derived from what the client sends and what
//! the persona answered, never from a mark hidden in the text. A call sent
//! again (a retry) reads the same request, so the count does not drift.
//! Without a session id the conversation alone decides, as before.

use std::collections::HashMap;
use std::sync::Mutex;

use codendum_core::class::{sessions, SessionShapes};
use serde_json::Value;

use super::request_plan::SessionCalls;

/// Sessions kept at most; past it the least recently used half is
/// dropped (a dropped session that calls again starts over from its
/// conversation).
pub const CAPACITY: usize = 4096;

/// The sessions' rows and requests (see the module documentation).
#[derive(Debug, Default)]
pub struct SessionRows {
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    map: HashMap<String, Entry>,
    /// Lookups so far, the clock of least recent use.
    tick: u64,
}

#[derive(Debug)]
struct Entry {
    /// The session's row: model calls of each coding request.
    row: Vec<u32>,
    /// The rank of the current conversation's first answer: it changes
    /// when the conversation is compacted.
    epoch: u64,
    /// Requests opened before the current conversation's first user
    /// message, so the request is `base + user messages - 1`.
    base: i64,
    /// The request (0: the first) of the session's latest call.
    request: usize,
    /// Calls the current request made in conversations compacted since it
    /// began: what is left of its row's calls is drawn for the rest.
    carried: u32,
    /// Assistant steps after the last user message of the latest call's
    /// conversation (that call's own answer not counted).
    since: u32,
    /// Whether the persona's latest answer in the session was final (no
    /// tool calls): a compaction after it precedes a new request.
    last_final: bool,
    used: u64,
}

impl SessionRows {
    /// The current request's calls for the conversation `messages` of the
    /// session `session` (empty: the client sent none, so the conversation
    /// alone decides). `None` when the class has no rows.
    pub fn calls(
        &self,
        shapes: Option<&SessionShapes>,
        session: &str,
        messages: &[Value],
    ) -> Option<SessionCalls> {
        let shapes = shapes?;
        let first_step = SessionCalls::FirstStep(shapes.one_call_first_share());
        if session.is_empty() {
            return Some(match sessions::row_of(shapes, messages) {
                Some((row, request)) => SessionCalls::Drawn(SessionShapes::calls_of(row, request)),
                None => first_step,
            });
        }
        let mut e = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        e.tick += 1;
        let tick = e.tick;
        let users = sessions::requests_opened(messages) as i64;
        let Some(first) = sessions::first_answer(messages) else {
            // No answer yet: the session's first step, before any answer
            // picks its row, or a known session that started over.
            return Some(match e.map.get_mut(session) {
                Some(entry) => {
                    entry.used = tick;
                    SessionCalls::Drawn(SessionShapes::calls_of(&entry.row, entry.request))
                }
                None => first_step,
            });
        };
        let epoch = sessions::session_rank(first).to_bits();
        let since = steps_since_user(messages);
        if !e.map.contains_key(session) && e.map.len() >= CAPACITY {
            evict_half(&mut e.map);
        }
        let entry = e.map.entry(session.to_string()).or_insert_with(|| Entry {
            row: sessions::row_for(shapes, first).to_vec(),
            epoch,
            base: 0,
            request: (users - 1).max(0) as usize,
            carried: 0,
            since,
            last_final: false,
            used: tick,
        });
        if entry.epoch != epoch {
            // Compacted: this call opens the next request after a final
            // answer, else it continues the session's request, which made
            // the calls of the conversation before as well.
            let request = match entry.last_final {
                true => entry.request + 1,
                false => entry.request,
            };
            entry.carried = match request == entry.request {
                true => entry.carried + entry.since + 1,
                false => 0,
            };
            entry.epoch = epoch;
            entry.base = request as i64 - (users - 1);
        }
        let request = (entry.base + users - 1).max(0) as usize;
        if request != entry.request {
            entry.carried = 0;
        }
        entry.request = request;
        entry.since = since;
        entry.used = tick;
        let calls = SessionShapes::calls_of(&entry.row, entry.request);
        Some(SessionCalls::Drawn(
            calls.saturating_sub(entry.carried).max(1),
        ))
    }

    /// Notes the persona's answer to the session's latest call: `final_answer`
    /// when it called no tool (the request ends there).
    pub fn answered(&self, session: &str, final_answer: bool) {
        if session.is_empty() {
            return;
        }
        let mut e = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        // Before the row is picked (the first step) nothing is kept: the
        // next call reads its request from the conversation.
        if let Some(entry) = e.map.get_mut(session) {
            entry.last_final = final_answer;
        }
    }

    /// Sessions kept now.
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map
            .len()
    }

    /// Whether no session is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Assistant messages after the conversation's last user message: the
/// steps its current request has made since.
fn steps_since_user(messages: &[Value]) -> u32 {
    let is = |m: &Value, r: &str| m.get("role").and_then(Value::as_str) == Some(r);
    messages
        .iter()
        .rev()
        .take_while(|m| !is(m, "user"))
        .filter(|m| is(m, "assistant"))
        .count() as u32
}

/// Drops the least recently used half of the sessions.
fn evict_half(map: &mut HashMap<String, Entry>) {
    let mut used: Vec<u64> = map.values().map(|e| e.used).collect();
    used.sort_unstable();
    let cut = used[used.len() / 2];
    map.retain(|_, e| e.used >= cut);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shapes() -> SessionShapes {
        SessionShapes::from_rows("t", vec![vec![4, 7, 2, 9], vec![5, 3, 11, 6]]).unwrap()
    }

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    fn step(id: &str) -> [Value; 2] {
        [
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": id, "type": "function",
                "function": {"name": "read", "arguments": format!("{{\"filePath\":\"{id}\"}}")}}]}),
            json!({"role": "tool", "tool_call_id": id, "content": "x"}),
        ]
    }

    fn answer(text: &str) -> Value {
        json!({"role": "assistant", "content": text})
    }

    /// Calls drawn for `messages` in session `s`, noting the answer.
    fn call(rows: &SessionRows, s: &str, messages: &[Value], final_answer: bool) -> SessionCalls {
        let c = rows.calls(Some(&shapes()), s, messages).unwrap();
        rows.answered(s, final_answer);
        c
    }

    #[test]
    fn a_compaction_mid_request_keeps_the_row_and_the_request() {
        let rows = SessionRows::default();
        let s = "ses_a";
        let mut m = vec![user("exercise")];
        assert!(matches!(
            call(&rows, s, &m, false),
            SessionCalls::FirstStep(_)
        ));
        m.extend(step("a"));
        let row = sessions::row_for(&shapes(), &m[1]).to_vec();
        assert_eq!(call(&rows, s, &m, true), SessionCalls::Drawn(row[0]));
        m.push(answer("done"));
        m.push(user("follow-up"));
        assert_eq!(call(&rows, s, &m, false), SessionCalls::Drawn(row[1]));
        m.extend(step("b"));
        assert_eq!(call(&rows, s, &m, false), SessionCalls::Drawn(row[1]));
        // Compacted mid-request: recap, summary, the last turn kept, continue.
        let summary = answer("Goal: ... Next steps: ...");
        let mut c = vec![user("What did we do so far?"), summary.clone()];
        c.push(user("follow-up"));
        c.extend(step("b"));
        c.push(user("Continue if you have next steps"));
        // The conversation alone would read its row's third request.
        let all = shapes();
        let alone = sessions::row_of(&all, &c).unwrap();
        assert_eq!(alone.1, 2);
        // The request goes on with what is left of its calls: it made two.
        let left = SessionCalls::Drawn((row[1] - 2).max(1));
        assert_eq!(call(&rows, s, &c, false), left);
        c.extend(step("c"));
        assert_eq!(call(&rows, s, &c, true), left);
        c.push(answer("done again"));
        c.push(user("next"));
        assert_eq!(call(&rows, s, &c, false), SessionCalls::Drawn(row[2]));
        // The same call sent again reads the same request.
        assert_eq!(call(&rows, s, &c, false), SessionCalls::Drawn(row[2]));
    }

    #[test]
    fn a_compaction_between_requests_opens_the_next_one() {
        let rows = SessionRows::default();
        let s = "ses_b";
        let mut m = vec![user("exercise")];
        call(&rows, s, &m, false);
        m.extend(step("a"));
        let row = sessions::row_for(&shapes(), &m[1]).to_vec();
        assert_eq!(call(&rows, s, &m, true), SessionCalls::Drawn(row[0]));
        // Compacted after the final answer: recap, summary, the new request.
        let c = vec![
            user("What did we do so far?"),
            answer("Goal: ..."),
            user("follow-up"),
        ];
        assert_eq!(call(&rows, s, &c, false), SessionCalls::Drawn(row[1]));
        // Two compactions in one request (the second mid-request, after
        // the request's first call).
        let c2 = vec![
            user("What did we do so far?"),
            answer("Goal, again: ..."),
            user("Continue"),
        ];
        let left = SessionCalls::Drawn((row[1] - 1).max(1));
        assert_eq!(call(&rows, s, &c2, false), left);
    }

    #[test]
    fn without_a_session_the_conversation_decides_and_nothing_is_kept() {
        let rows = SessionRows::default();
        let mut m = vec![user("exercise")];
        m.extend(step("a"));
        m.push(answer("done"));
        m.push(user("more"));
        let all = shapes();
        let (row, request) = sessions::row_of(&all, &m).unwrap();
        let got = rows.calls(Some(&all), "", &m).unwrap();
        assert_eq!(got, SessionCalls::Drawn(row[request]));
        assert!(rows.is_empty());
        assert!(rows.calls(None, "ses_c", &m).is_none());
    }

    #[test]
    fn sessions_past_the_capacity_drop_the_least_recent_half() {
        let rows = SessionRows::default();
        let mut m = vec![user("exercise")];
        m.extend(step("a"));
        for i in 0..CAPACITY + 1 {
            rows.calls(Some(&shapes()), &format!("ses_{i}"), &m);
        }
        assert!(rows.len() <= CAPACITY / 2 + 1, "{}", rows.len());
        assert!(!rows.is_empty());
    }
}
