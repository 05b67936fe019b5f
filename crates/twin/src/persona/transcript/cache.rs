//! Digests of conversations kept between calls, so that a conversation
//! growing by a step per call is read only where it grew: reading the whole
//! transcript on every call would make a session's cost grow with the
//! square of its calls.
//!
//! A digest is keyed by a chained hash of the offered tools and the messages
//! it has read. A request looks up its longest prefix with a digest, feeds
//! the digest the messages after it and keeps the result under the whole
//! conversation's key. The digest is the same as reading the conversation
//! from the start ([`Transcript::read`]), whatever is or is not cached: the
//! cache changes only the time taken.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

use super::{Reader, Transcript};
use crate::persona::tools::ToolKit;

/// Digests kept at most; past it the least recently used half is dropped.
/// A class keeps about two conversations per student open at once (the
/// main agent's and a subagent's).
pub const CAPACITY: usize = 1024;

/// Digests of recent conversations (see the module documentation).
#[derive(Debug, Default)]
pub struct TranscriptCache {
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// Key: chained hash of the tools and the messages read.
    map: HashMap<u64, Entry>,
    /// Lookups so far, the clock of least recent use.
    tick: u64,
}

#[derive(Debug)]
struct Entry {
    reader: Reader,
    /// The last message read, compared on a hit as a guard against a hash
    /// collision between two conversations of the same length.
    last: Value,
    used: u64,
}

impl TranscriptCache {
    /// The digest of `messages` read with the tools of `kit` (`tools` being
    /// the definitions the kit was built from), reading only the messages
    /// after the longest prefix already digested. The digest is kept for
    /// the conversation's next call when the lease is dropped.
    pub fn lease(&self, messages: &[Value], tools: &[Value], kit: &ToolKit) -> Lease<'_> {
        let keys = prefix_keys(messages, tools);
        let found = self.take_longest(messages, &keys);
        let (mut reader, start) = found.unwrap_or_default();
        reader.feed(&messages[start..], kit);
        let keep = keys.last().copied().zip(messages.last().cloned());
        Lease {
            cache: self,
            reader,
            keep,
        }
    }

    /// A copy of the digest of `messages` (see [`TranscriptCache::lease`]).
    pub fn read(&self, messages: &[Value], tools: &[Value], kit: &ToolKit) -> Transcript {
        Transcript::clone(&self.lease(messages, tools, kit))
    }

    /// Removes and returns the digest of the longest prefix of `messages`
    /// (with how many messages it read), if any is kept.
    fn take_longest(&self, messages: &[Value], keys: &[u64]) -> Option<(Reader, usize)> {
        let mut e = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        // keys[i] covers messages[..=i].
        for (i, key) in keys.iter().enumerate().rev() {
            let hit = e
                .map
                .get(key)
                .is_some_and(|entry| entry.last == messages[i] && entry.reader.t.len == i + 1);
            if hit {
                let entry = e.map.remove(key)?;
                return Some((entry.reader, i + 1));
            }
        }
        None
    }

    fn keep(&self, key: u64, reader: Reader, last: Value) {
        let mut e = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        e.tick += 1;
        let used = e.tick;
        if e.map.len() >= CAPACITY {
            let mut ages: Vec<u64> = e.map.values().map(|x| x.used).collect();
            ages.sort_unstable();
            let cut = ages[ages.len() / 2];
            e.map.retain(|_, x| x.used > cut);
        }
        e.map.insert(key, Entry { reader, last, used });
    }
}

/// Chained hashes of the tools and each prefix of `messages`: element `i`
/// covers the tools and `messages[..=i]`.
fn prefix_keys(messages: &[Value], tools: &[Value]) -> Vec<u64> {
    let mut h = Fold::new(0x5bd1_e995_a1b2_c3d4);
    for t in tools {
        h.value(t);
    }
    let mut keys = Vec::with_capacity(messages.len());
    for m in messages {
        h.value(m);
        h.word(0xff);
        keys.push(h.finish());
    }
    keys
}

/// A digest lent out by [`TranscriptCache::lease`]: it derefs to the
/// transcript and goes back into the cache when dropped.
#[derive(Debug)]
pub struct Lease<'a> {
    cache: &'a TranscriptCache,
    reader: Reader,
    /// The conversation's key and last message.
    keep: Option<(u64, Value)>,
}

impl std::ops::Deref for Lease<'_> {
    type Target = Transcript;

    fn deref(&self) -> &Transcript {
        &self.reader.t
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some((key, last)) = self.keep.take() {
            self.cache.keep(key, std::mem::take(&mut self.reader), last);
        }
    }
}

/// A fast non-cryptographic hash over JSON values, a word at a time.
struct Fold(u64);

impl Fold {
    fn new(seed: u64) -> Self {
        Fold(seed)
    }

    fn word(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(23) ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn bytes(&mut self, b: &[u8]) {
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        self.word(u64::from_le_bytes(w) ^ ((b.len() as u64) << 56));
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.word(1),
            Value::Bool(b) => self.word(2 + u64::from(*b)),
            Value::Number(n) => {
                self.word(4);
                self.bytes(n.to_string().as_bytes());
            }
            Value::String(s) => {
                self.word(5);
                self.bytes(s.as_bytes());
            }
            Value::Array(items) => {
                self.word(6 ^ ((items.len() as u64) << 8));
                for i in items {
                    self.value(i);
                }
            }
            Value::Object(map) => {
                self.word(7 ^ ((map.len() as u64) << 8));
                for (k, x) in map {
                    self.bytes(k.as_bytes());
                    self.value(x);
                }
            }
        }
    }

    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kit(tools: &[Value]) -> ToolKit {
        ToolKit::from_definitions(tools)
    }

    fn tools() -> Vec<Value> {
        vec![json!({"type": "function", "function": {"name": "read",
            "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}}}}})]
    }

    /// A conversation of two requests with reads, and its prefixes.
    fn conversation() -> Vec<Value> {
        let mut m = vec![
            json!({"role": "system", "content": "You are a coding agent."}),
            json!({"role": "user", "content": "Fix src/Main.java please"}),
        ];
        for i in 0..3 {
            let id = format!("call_{i}");
            m.push(json!({"role": "assistant", "content": format!("step {i}"),
                "tool_calls": [{"id": id, "type": "function", "function": {"name": "read",
                "arguments": format!("{{\"filePath\": \"src/F{i}.java\"}}")}}]}));
            m.push(json!({"role": "tool", "tool_call_id": id,
                "content": format!("<file>\n00001| class F{i} {{}}\n</file>")}));
        }
        m.push(json!({"role": "user", "content": "Now the tests in src/T.java"}));
        m.push(
            json!({"role": "assistant", "content": "ok", "tool_calls": [{"id": "call_9",
            "type": "function", "function": {"name": "read",
            "arguments": "{\"filePath\": \"src/T.java\"}"}}]}),
        );
        m.push(json!({"role": "tool", "tool_call_id": "call_9", "content": "no such file"}));
        m
    }

    /// Equal digests (file contents compared as sorted maps: the order of a
    /// `HashMap` differs between two maps holding the same entries).
    fn same(a: &Transcript, b: &Transcript) {
        let sorted = |t: &Transcript| {
            let contents: std::collections::BTreeMap<_, _> = t.contents.iter().collect();
            let rest = Transcript {
                contents: HashMap::new(),
                ..t.clone()
            };
            format!("{contents:?} {rest:?}")
        };
        assert_eq!(sorted(a), sorted(b));
    }

    #[test]
    fn a_growing_conversation_reads_as_a_whole() {
        let (tools, all) = (tools(), conversation());
        let k = kit(&tools);
        let cache = TranscriptCache::default();
        for n in 1..=all.len() {
            let cached = cache.read(&all[..n], &tools, &k);
            same(&cached, &Transcript::read(&all[..n], &k));
        }
        // A prefix read again after the conversation grew, and a branch.
        same(
            &cache.read(&all[..5], &tools, &k),
            &Transcript::read(&all[..5], &k),
        );
        let mut branch = all[..6].to_vec();
        branch.push(json!({"role": "user", "content": "stop"}));
        same(
            &cache.read(&branch, &tools, &k),
            &Transcript::read(&branch, &k),
        );
    }

    #[test]
    fn other_tools_or_an_edited_message_miss() {
        let (tools, all) = (tools(), conversation());
        let k = kit(&tools);
        let cache = TranscriptCache::default();
        cache.read(&all[..6], &tools, &k);
        let none: Vec<Value> = Vec::new();
        same(
            &cache.read(&all[..8], &none, &kit(&none)),
            &Transcript::read(&all[..8], &kit(&none)),
        );
        let mut edited = all.clone();
        edited[3]["content"] = json!("<file>\n00001| class Other {}\n</file>");
        same(
            &cache.read(&edited, &tools, &k),
            &Transcript::read(&edited, &k),
        );
    }

    #[test]
    fn the_cache_stays_bounded() {
        let (tools, all) = (tools(), conversation());
        let k = kit(&tools);
        let cache = TranscriptCache::default();
        for i in 0..CAPACITY + 10 {
            let mut m = all[..2].to_vec();
            m[1]["content"] = json!(format!("task {i}"));
            cache.read(&m, &tools, &k);
        }
        let len = cache.inner.lock().map(|e| e.map.len()).unwrap_or(0);
        assert!(len <= CAPACITY, "{len} digests kept");
    }
}
