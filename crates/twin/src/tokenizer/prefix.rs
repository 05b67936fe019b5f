//! Encoding a conversation's prompts one after another without reading
//! them from the start each time.
//!
//! An agent resends its whole conversation at every step, so a session's
//! next prompt is its last one with a little added at the end. The pieces
//! of a text depend only on the text from where each piece starts (the
//! scanner never looks back, and looks ahead at most [`LOOKAHEAD`] bytes
//! past a piece's end), so the pieces of the shared beginning are the same
//! in both prompts as long as each was read inside it. [`PrefixEncoder`]
//! keeps a prompt's pieces and, for the next prompt, reuses those that end
//! at least [`LOOKAHEAD`] bytes before the two prompts first differ and
//! encodes only the rest: the same ids as [`super::encode`], found in time
//! proportional to what changed.

use std::collections::HashMap;

use super::{piece_id, pieces};

/// How far past its own end the scanner may read to decide a piece (a
/// `<|name|>` marker of up to 24 characters, a word or run cut short by
/// what follows it), bytes; a margin over the longest case.
pub const LOOKAHEAD: usize = 64;

/// Sessions a [`PromptCache`] keeps before it starts over (a class has a
/// few hundred; a long-lived server forgets rather than grows).
pub const MAX_SESSIONS: usize = 4096;

/// The last prompt of one session: its text, ids, where each piece ends
/// and the text's FNV-1a hash at each of those ends.
#[derive(Debug, Clone, Default)]
pub struct PrefixEncoder {
    text: String,
    ids: Vec<u32>,
    ends: Vec<usize>,
    hashes: Vec<u64>,
}

/// The token ids of a prompt and the hash of its text
/// ([`super::text_hash`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The ids [`super::encode`] gives.
    pub ids: Vec<u32>,
    /// [`super::text_hash`] of the text.
    pub hash: u64,
}

/// How many leading bytes two texts share (compared a block at a time).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= n && a[i..i + BLOCK] == b[i..i + BLOCK] {
        i += BLOCK;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// FNV-1a over `bytes`, from the state `h` (as [`super::text_hash`]).
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// FNV-1a's start state.
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

impl PrefixEncoder {
    /// The token ids of `text` (those [`super::encode`] gives), reusing
    /// the pieces of the previous text up to where it stops being shared.
    pub fn encode(&mut self, text: &str) -> Vec<u32> {
        self.encode_hashed(text).ids
    }

    /// [`PrefixEncoder::encode`] and the text's [`super::text_hash`],
    /// both continued from where the previous text stops being shared.
    pub fn encode_hashed(&mut self, text: &str) -> Encoded {
        let common = common_prefix(self.text.as_bytes(), text.as_bytes());
        let keep = self.ends.partition_point(|&e| e + LOOKAHEAD <= common);
        let start = keep.checked_sub(1).map_or(0, |k| self.ends[k]);
        let mut h = keep.checked_sub(1).map_or(FNV_START, |k| self.hashes[k]);
        self.ids.truncate(keep);
        self.ends.truncate(keep);
        self.hashes.truncate(keep);
        let mut at = start;
        for piece in pieces(&text[start..]) {
            at += piece.len();
            h = fnv(h, piece.as_bytes());
            self.ids.push(piece_id(piece));
            self.ends.push(at);
            self.hashes.push(h);
        }
        self.text.clear();
        self.text.push_str(text);
        Encoded {
            ids: self.ids.clone(),
            hash: h,
        }
    }
}

/// One [`PrefixEncoder`] per session (a client's `x-session-id`).
#[derive(Debug, Default)]
pub struct PromptCache {
    sessions: HashMap<String, PrefixEncoder>,
}

impl PromptCache {
    /// The ids and hash of `text`, sent by `session`: encoded from where it
    /// differs from that session's last prompt (from the start without a
    /// session).
    pub fn encode(&mut self, session: &str, text: &str) -> Encoded {
        if session.is_empty() {
            return Encoded {
                ids: super::encode(text),
                hash: super::text_hash(text),
            };
        }
        if self.sessions.len() >= MAX_SESSIONS && !self.sessions.contains_key(session) {
            self.sessions.clear();
        }
        self.sessions
            .entry(session.to_string())
            .or_default()
            .encode_hashed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::super::encode;
    use super::*;

    /// A seeded generator (SplitMix64) of texts made of the pieces that
    /// matter: words, spaces, indentation, punctuation, markers.
    struct Texts(u64);

    impl Texts {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn chunk(&mut self) -> String {
            const PARTS: [&str; 14] = [
                "word",
                " spaced",
                "    ",
                "\n        ",
                "();",
                "\"}",
                "<|im_start|>",
                "|>",
                "<|",
                "x_y1",
                " ",
                "\t",
                "é",
                "verylongidentifiername",
            ];
            (0..1 + self.next() % 12)
                .map(|_| PARTS[(self.next() % PARTS.len() as u64) as usize])
                .collect()
        }
    }

    #[test]
    fn a_growing_conversation_encodes_as_the_whole_text_does() {
        let mut t = Texts(9);
        let mut enc = PrefixEncoder::default();
        let mut text = String::new();
        for step in 0..400 {
            // Mostly appended; now and then an edit inside (a compaction).
            if step % 37 == 36 && text.len() > 10 {
                let cut = (t.next() as usize) % text.len();
                let cut = (0..=cut)
                    .rev()
                    .find(|c| text.is_char_boundary(*c))
                    .unwrap_or(0);
                text.truncate(cut);
            }
            text.push_str(&t.chunk());
            let got = enc.encode_hashed(&text);
            assert_eq!(got.ids, encode(&text), "step {step}: {text:?}");
            assert_eq!(got.hash, super::super::text_hash(&text), "step {step}");
        }
    }

    #[test]
    fn sessions_are_kept_apart() {
        let mut cache = PromptCache::default();
        let a = "<|im_start|>system\nYou help.<|im_end|>\n<|im_start|>user\nhi";
        let b = "<|im_start|>system\nYou help.<|im_end|>\n<|im_start|>user\nhello there";
        assert_eq!(cache.encode("s1", a).ids, encode(a));
        assert_eq!(cache.encode("s2", b).ids, encode(b));
        assert_eq!(cache.encode("s1", b).ids, encode(b));
        assert_eq!(cache.encode("", a).ids, encode(a));
        assert_eq!(cache.encode("s1", a).hash, super::super::text_hash(a));
        assert_eq!(common_prefix(&[1; 600], &[1; 700]), 600);
        let mut c = vec![1u8; 700];
        c[513] = 2;
        assert_eq!(common_prefix(&[1; 700], &c), 513);
    }
}
