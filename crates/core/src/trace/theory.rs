//! The theoretical prefix-cache hit rate: what a prefix cache that never
//! evicts serves of the recorded sharing, prompts sent one after another.
//!
//! Per prompt, the hit is the longer of
//! - its leading full blocks that an earlier prompt began with: block k is
//!   a hit when an earlier prompt held the same ids at places 0 to k, as a
//!   server's prefix cache keys a block by everything before it too (a
//!   prompt shortened from the front starts with ids an earlier prompt held
//!   further in, and shares nothing with it);
//! - when it carries on an earlier call of its session with that call's
//!   answer ([`crate::trace::Carry`]), the full blocks of that call's
//!   prompt and answer: a server caches the blocks of the tokens it
//!   generated too, so the answer a conversation sends back is a hit
//!   although no earlier prompt held it.
//!
//! The rate is the hit tokens over all prompt tokens. Only whole blocks
//! count, at the trace's block size, so it is what a server with blocks of
//! that size (or a divisor of it) reaches when its cache is big enough and
//! no call is sent before the one it shares with has been prefilled; a
//! server's chat template adds a few tokens per prompt it does not see.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hasher};

use super::TraceCall;

/// The cache of [`crate::trace::theory`], fed the prompts in the order
/// they are sent.
#[derive(Debug, Clone)]
pub struct TheoreticalCache {
    block: u64,
    /// The prefixes seen, each as the key of its ids ([`prefix_keys`]).
    seen: HashSet<u64>,
    hit_tokens: u64,
    prompt_tokens: u64,
}

impl TheoreticalCache {
    /// An empty cache of `block_size`-token blocks.
    pub fn new(block_size: u32) -> Self {
        TheoreticalCache {
            block: u64::from(block_size.max(1)),
            seen: HashSet::new(),
            hit_tokens: 0,
            prompt_tokens: 0,
        }
    }

    /// Sends `call` (carrying on `carried`, with its answer when the flag
    /// says so): counts its hit tokens, returned, and keeps its blocks.
    pub fn send(&mut self, call: &TraceCall, carried: Option<(&TraceCall, bool)>) -> u64 {
        let full = ((call.input_tokens / self.block) as usize).min(call.hash_ids.len());
        let keys = prefix_keys(&call.hash_ids[..full]);
        let seen = keys.iter().take_while(|k| self.seen.contains(*k)).count();
        let answered = carried.filter(|(_, answer)| *answer).map_or(0, |(c, _)| {
            (((c.input_tokens + c.output_tokens).min(call.input_tokens)) / self.block) as usize
        });
        let hit = seen.max(answered) as u64 * self.block;
        self.hit_tokens += hit;
        self.prompt_tokens += call.input_tokens;
        self.seen.extend(keys);
        hit
    }

    /// Prompt tokens served from the cache so far.
    pub fn hit_tokens(&self) -> u64 {
        self.hit_tokens
    }

    /// Prompt tokens sent so far.
    pub fn prompt_tokens(&self) -> u64 {
        self.prompt_tokens
    }

    /// Hit tokens over prompt tokens (fraction 0–1); `None` before any
    /// prompt token.
    pub fn hit_rate(&self) -> Option<f64> {
        (self.prompt_tokens > 0).then(|| self.hit_tokens as f64 / self.prompt_tokens as f64)
    }
}

/// One key per leading prefix of `ids`: the k-th stands for ids 0 to k,
/// chained through a fixed-key hash (the same on every run).
fn prefix_keys(ids: &[u64]) -> Vec<u64> {
    let mut key = 0u64;
    ids.iter()
        .map(|&id| {
            let mut h = DefaultHasher::new();
            h.write_u64(key);
            h.write_u64(id);
            key = h.finish();
            key
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{Trace, TraceCall};
    use super::*;

    #[test]
    fn full_leading_blocks_seen_before_are_hits() {
        let t = Trace::new(
            4,
            vec![
                TraceCall::open(0.0, 10, 1, vec![1, 2, 3]),
                // Two leading blocks seen (8 tokens), then a new one.
                TraceCall::open(1.0, 12, 1, vec![1, 2, 4]),
                // First block new: nothing after it counts.
                TraceCall::open(2.0, 8, 1, vec![9, 2]),
            ],
        );
        let f = t.theoretical_hit_rate().expect("some tokens");
        assert!((f - 8.0 / 30.0).abs() < 1e-12, "{f}");
        assert_eq!(Trace::new(4, vec![]).theoretical_hit_rate(), None);
    }

    #[test]
    fn ids_seen_further_in_are_no_hit_at_the_front() {
        let mut cache = TheoreticalCache::new(4);
        cache.send(&TraceCall::open(0.0, 16, 1, vec![1, 2, 3, 4]), None);
        // The same conversation shortened by a block from the front: its
        // ids were all seen, but after block 1.
        assert_eq!(
            cache.send(&TraceCall::open(1.0, 16, 1, vec![2, 3, 4, 5]), None),
            0
        );
        // Sent again as it was, it shares its prefix with itself.
        assert_eq!(
            cache.send(&TraceCall::open(2.0, 12, 1, vec![2, 3, 4]), None),
            12
        );
        assert_eq!(cache.send(&TraceCall::open(3.0, 8, 1, vec![1, 2]), None), 8);
    }

    #[test]
    fn a_carried_answer_is_a_hit_though_no_prompt_held_it() {
        let mut a = TraceCall::open(0.0, 16, 8, vec![1, 2, 3, 4]);
        a.session = Some("s".into());
        // Its prompt, its answer (blocks 5 and 6, new ids) and 8 more tokens.
        let mut b = TraceCall::open(1.0, 32, 4, vec![1, 2, 3, 4, 5, 6, 7, 8]);
        b.session = Some("s".into());
        let mut cache = TheoreticalCache::new(4);
        assert_eq!(cache.send(&a, None), 0);
        assert_eq!(cache.send(&b, Some((&a, true))), 24, "prompt and answer");
        assert_eq!(cache.hit_tokens(), 24);
        assert_eq!(cache.prompt_tokens(), 48);
        // Without the answer only the prompt's blocks were seen.
        let mut cache = TheoreticalCache::new(4);
        cache.send(&a, None);
        assert_eq!(cache.send(&b, Some((&a, false))), 16);
        let t = Trace::new(4, vec![a, b]);
        assert_eq!(t.theoretical_hit_rate(), Some(0.5));
    }
}
