//! The synthetic prompt a replay sends: every block id becomes the same
//! `block_size` words wherever it appears, so equal leading ids give an
//! equal text prefix (and the server's prefix cache sees the sharing), and
//! different ids give different text.
//!
//! Each word is a short common English word with one leading space: one
//! token for the twin's tokenizer and for the BPE vocabularies of the
//! models a lab serves, so `n` tokens are `n` words. No recorded text is
//! used.

/// Words of one token each (with their leading space).
const WORDS: &[&str] = &[
    " server",
    " client",
    " message",
    " socket",
    " thread",
    " queue",
    " buffer",
    " handler",
    " request",
    " response",
    " session",
    " timeout",
    " student",
    " project",
    " module",
    " compile",
    " test",
    " assert",
    " method",
    " class",
    " field",
    " value",
    " string",
    " number",
    " list",
    " map",
    " error",
    " retry",
    " stream",
    " token",
    " window",
    " cache",
    " model",
    " prompt",
    " answer",
    " build",
    " deploy",
    " config",
    " channel",
    " user",
    " room",
    " history",
    " format",
    " parse",
    " the",
    " a",
    " of",
    " and",
    " to",
    " in",
    " with",
    " for",
    " when",
    " then",
    " every",
    " each",
    " new",
    " file",
    " line",
    " code",
    " read",
    " write",
    " open",
    " close",
];

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Appends the first `words` words of block `id` (salted with `salt`, so
/// two replays against one server do not hit each other's cache).
fn push_block(out: &mut String, id: u64, salt: u64, words: usize) {
    let mut state = splitmix(id ^ splitmix(salt));
    for _ in 0..words {
        state = splitmix(state);
        out.push_str(WORDS[(state % WORDS.len() as u64) as usize]);
    }
}

/// The prompt of `input_tokens` words for blocks `hash_ids` of
/// `block_size` tokens: block `i` gives words `i·block_size ..`, the last
/// one only as many as remain. Blocks past the end of `hash_ids` are unique
/// to this call (`unique` tells calls apart).
pub fn prompt_text(
    hash_ids: &[u64],
    input_tokens: u64,
    block_size: u32,
    salt: u64,
    unique: u64,
) -> String {
    let b = u64::from(block_size.max(1));
    let mut out = String::with_capacity(input_tokens as usize * 7);
    let mut left = input_tokens;
    let mut i = 0u64;
    while left > 0 {
        let words = left.min(b);
        match hash_ids.get(i as usize) {
            Some(&id) => push_block(&mut out, id, salt, words as usize),
            // Past the trace's ids: a block nobody else has.
            None => push_block(
                &mut out,
                splitmix(unique ^ 0x5bd1_e995).wrapping_add(i),
                salt ^ 0xa076_1d64_78bd_642f,
                words as usize,
            ),
        }
        left -= words;
        i += 1;
    }
    // The first word's leading space is dropped (a prompt starts with a word).
    if out.starts_with(' ') {
        out.remove(0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_leading_ids_give_an_equal_prefix() {
        let a = prompt_text(&[1, 2, 3], 40, 16, 7, 0);
        let b = prompt_text(&[1, 2, 9], 48, 16, 7, 1);
        assert_eq!(a.split(' ').count(), 40);
        assert_eq!(b.split(' ').count(), 48);
        let common = a
            .split(' ')
            .zip(b.split(' '))
            .take_while(|(x, y)| x == y)
            .count();
        assert!((32..40).contains(&common), "{common} words in common");
        assert_eq!(a, prompt_text(&[1, 2, 3], 40, 16, 7, 5), "deterministic");
        assert_ne!(a, prompt_text(&[1, 2, 3], 40, 16, 8, 0), "salted");
        // Past the ids: unique per call.
        let x = prompt_text(&[], 32, 16, 7, 1);
        let y = prompt_text(&[], 32, 16, 7, 2);
        assert_ne!(x[..20], y[..20]);
    }
}
