//! KV-cache blocks and the prefix cache, as vLLM's V1 block pool keeps them.
//!
//! Block 0 is the reserved null block, so `total_blocks - 1` blocks are
//! usable. A block is referenced by the requests that use it; a block nobody
//! references sits in the free queue, where it keeps its hash (and stays a
//! prefix-cache hit) until it is handed out again, least recently freed first.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A block index.
pub type BlockId = u32;

const NIL: u32 = u32::MAX;

/// Chained hash of one full block: covers `parent` (the hash of all earlier
/// blocks, 0 for the first) and the block's token ids.
pub fn block_hash(parent: u64, tokens: &[u32]) -> u64 {
    let mut h = parent ^ 0x243f_6a88_85a3_08d3;
    for &t in tokens {
        h = (h.rotate_left(5) ^ u64::from(t)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    splitmix(h)
}

/// A hasher that passes a `u64` key through: the map's keys are
/// [`block_hash`]es, already finished by a SplitMix64 mix, so hashing them
/// again (SipHash by default) only costs time on every prefix-cache lookup.
#[derive(Debug, Default, Clone, Copy)]
pub struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used by `u64` keys; fold anything else in.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A map keyed by block hashes, hashed by [`IdentityHasher`].
pub type BlockHashMap<V> = HashMap<u64, V, BuildHasherDefault<IdentityHasher>>;

fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The pool of KV blocks with its free queue (an intrusive doubly linked
/// list, O(1) removal of a cached block that gets hit) and the hash map of
/// cached full blocks.
#[derive(Debug, Clone)]
pub struct BlockPool {
    ref_cnt: Vec<u32>,
    hash: Vec<Option<u64>>,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    num_free: usize,
    cached: BlockHashMap<BlockId>,
    caching: bool,
}

impl BlockPool {
    /// A pool of `total_blocks` blocks (block 0 reserved), with or without
    /// prefix caching. `total_blocks` is raised to 2 at least.
    pub fn new(total_blocks: usize, caching: bool) -> Self {
        let n = total_blocks.max(2);
        let mut pool = BlockPool {
            ref_cnt: vec![0; n],
            hash: vec![None; n],
            prev: vec![NIL; n],
            next: vec![NIL; n],
            head: NIL,
            tail: NIL,
            num_free: 0,
            cached: BlockHashMap::default(),
            caching,
        };
        pool.ref_cnt[0] = 1;
        for b in 1..n {
            pool.push_back(b as u32);
        }
        pool
    }

    /// All blocks, the null block included.
    pub fn total_blocks(&self) -> usize {
        self.ref_cnt.len()
    }

    /// Blocks nobody references (cached ones included).
    pub fn num_free(&self) -> usize {
        self.num_free
    }

    /// Full blocks currently registered in the prefix cache.
    pub fn num_cached(&self) -> usize {
        self.cached.len()
    }

    /// KV usage as vLLM reports it: `1 - free / (total - 1)`, a fraction 0..1.
    pub fn usage(&self) -> f64 {
        let usable = (self.total_blocks() - 1) as f64;
        1.0 - self.num_free as f64 / usable
    }

    /// Whether prefix caching is on.
    pub fn caching(&self) -> bool {
        self.caching
    }

    /// The longest chain of cached blocks for `hashes` (at most
    /// `max_blocks`), and how many of them nobody references right now.
    pub fn longest_hit(&self, hashes: &[u64], max_blocks: usize) -> (Vec<BlockId>, usize) {
        let mut hit = Vec::new();
        let mut unreferenced = 0;
        if !self.caching {
            return (hit, 0);
        }
        for h in hashes.iter().take(max_blocks) {
            match self.cached.get(h) {
                Some(&b) => {
                    if self.ref_cnt[b as usize] == 0 {
                        unreferenced += 1;
                    }
                    hit.push(b);
                }
                None => break,
            }
        }
        (hit, unreferenced)
    }

    /// Takes a reference on cached blocks (removing them from the free queue
    /// if nobody held them).
    pub fn touch(&mut self, blocks: &[BlockId]) {
        for &b in blocks {
            if self.ref_cnt[b as usize] == 0 {
                self.unlink(b);
            }
            self.ref_cnt[b as usize] += 1;
        }
    }

    /// Hands out `n` blocks from the head of the free queue (evicting their
    /// cached hashes), or `None` when fewer than `n` are free.
    pub fn allocate(&mut self, n: usize, out: &mut Vec<BlockId>) -> bool {
        if n > self.num_free {
            return false;
        }
        for _ in 0..n {
            let b = self.head;
            self.unlink(b);
            if let Some(h) = self.hash[b as usize].take() {
                if self.cached.get(&h) == Some(&b) {
                    self.cached.remove(&h);
                }
            }
            self.ref_cnt[b as usize] = 1;
            out.push(b);
        }
        true
    }

    /// Drops one reference on each block; blocks nobody references join the
    /// tail of the free queue, the request's last block first (so a prefix
    /// outlives its tail).
    pub fn free(&mut self, blocks: &[BlockId]) {
        for &b in blocks.iter().rev() {
            let r = &mut self.ref_cnt[b as usize];
            if *r == 0 {
                continue;
            }
            *r -= 1;
            if *r == 0 {
                self.push_back(b);
            }
        }
    }

    /// Registers a full, computed block under its chained hash (no-op when
    /// caching is off, the block already has a hash, or another block already
    /// holds the same content).
    pub fn cache(&mut self, block: BlockId, hash: u64) {
        if !self.caching || self.hash[block as usize].is_some() {
            return;
        }
        if let std::collections::hash_map::Entry::Vacant(e) = self.cached.entry(hash) {
            e.insert(block);
            self.hash[block as usize] = Some(hash);
        }
    }

    fn push_back(&mut self, b: u32) {
        self.prev[b as usize] = self.tail;
        self.next[b as usize] = NIL;
        if self.tail == NIL {
            self.head = b;
        } else {
            self.next[self.tail as usize] = b;
        }
        self.tail = b;
        self.num_free += 1;
    }

    fn unlink(&mut self, b: u32) {
        let (p, n) = (self.prev[b as usize], self.next[b as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.prev[b as usize] = NIL;
        self.next[b as usize] = NIL;
        self.num_free -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_unreferenced_cached_blocks_as_free() {
        let mut pool = BlockPool::new(11, true);
        assert_eq!(pool.usage(), 0.0);
        let mut got = Vec::new();
        assert!(pool.allocate(5, &mut got));
        assert!((pool.usage() - 0.5).abs() < 1e-12);
        pool.cache(got[0], 42);
        pool.free(&got);
        assert_eq!(pool.usage(), 0.0);
        assert_eq!(pool.longest_hit(&[42], 1).0, vec![got[0]]);
    }

    #[test]
    fn evicts_least_recently_freed_first() {
        let mut pool = BlockPool::new(4, true); // 3 usable
        let (mut a, mut b) = (Vec::new(), Vec::new());
        assert!(pool.allocate(1, &mut a));
        assert!(pool.allocate(1, &mut b));
        pool.cache(a[0], 1);
        pool.cache(b[0], 2);
        pool.free(&a);
        pool.free(&b);
        let mut c = Vec::new();
        assert!(pool.allocate(2, &mut c)); // the never-used block, then a's
        assert_eq!(pool.longest_hit(&[1], 1).0.len(), 0, "a evicted");
        assert_eq!(pool.longest_hit(&[2], 1).0, b, "b kept");
        assert!(!pool.allocate(2, &mut c), "only one block left");
    }

    #[test]
    fn shared_block_counts_once() {
        let mut pool = BlockPool::new(11, true);
        let mut a = Vec::new();
        assert!(pool.allocate(1, &mut a));
        pool.cache(a[0], 7);
        let (hit, unref) = pool.longest_hit(&[7, 8], 2);
        assert_eq!((hit.len(), unref), (1, 0));
        pool.touch(&hit);
        assert!((pool.usage() - 0.1).abs() < 1e-12);
        pool.free(&a);
        assert!((pool.usage() - 0.1).abs() < 1e-12, "still referenced once");
        pool.free(&hit);
        assert_eq!(pool.usage(), 0.0);
    }

    #[test]
    fn chained_hash_depends_on_the_parent() {
        let t = [1u32; 16];
        assert_ne!(block_hash(0, &t), block_hash(1, &t));
        assert_eq!(block_hash(5, &t), block_hash(5, &t));
    }
}
