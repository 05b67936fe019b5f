//! Routing policies of a fleet of twin replicas (see [`super::fleet`]): which
//! replica gets the next request. Each policy is a plain function of the
//! replicas' loads (requests in flight) and, for `power-of-two`, a seeded
//! random draw; [`Router`] keeps the little state they need (the round-robin
//! counter and the random generator).
//!
//! - `round-robin`: replica 0, 1, …, N-1, 0, …
//! - `least-loaded`: fewest requests in flight, ties by the lower index.
//! - `power-of-two`: two distinct replicas drawn at random (seeded), the less
//!   loaded of the two (ties: the first drawn).
//! - `session`: a consistent hash (jump hash) of the `x-session-id` header,
//!   else of the API key, else round-robin for a request with neither.
//! - `prefix-aware`: the replica whose cache holds the longest prefix of the
//!   prompt, unless its load exceeds the least-loaded replica's by more than
//!   the overload margin (requests); else, and when no replica holds any
//!   prefix, least-loaded.
//!
//! [`vllm_ring`] is the real vLLM Router's `consistent_hash` assignment, for
//! comparing `session` with it.

use codendum_core::profile::fleet::RouterPolicy;

/// What a request offers the router besides the loads.
#[derive(Debug, Clone, Copy, Default)]
pub struct RouteKey<'a> {
    /// The `x-session-id` header, if sent and not empty.
    pub session: Option<&'a str>,
    /// The API key (bearer token), if sent and not empty. Hashed in memory
    /// only, never stored.
    pub api_key: Option<&'a str>,
    /// Per replica: how many leading KV blocks of the prompt its cache holds
    /// (`prefix-aware` only; empty: unknown).
    pub cached_blocks: &'a [usize],
}

/// The router's state: the policy, the round-robin counter and the seeded
/// generator of `power-of-two`.
#[derive(Debug, Clone)]
pub struct Router {
    policy: RouterPolicy,
    next: usize,
    rng: u64,
    margin: usize,
}

impl Router {
    /// A router of `policy` seeded with `seed`; `margin` is the
    /// `prefix-aware` overload margin, requests in flight.
    pub fn new(policy: RouterPolicy, seed: u64, margin: usize) -> Self {
        Router {
            policy,
            next: 0,
            rng: seed ^ 0x6a09_e667_f3bc_c908,
            margin,
        }
    }

    /// The policy.
    pub fn policy(&self) -> RouterPolicy {
        self.policy
    }

    /// The replica for the next request; `loads[i]` is replica i's requests
    /// in flight (its length is the fleet size, at least 1).
    pub fn pick(&mut self, loads: &[usize], key: &RouteKey<'_>) -> usize {
        let n = loads.len().max(1);
        match self.policy {
            RouterPolicy::RoundRobin => self.round_robin(n),
            RouterPolicy::LeastLoaded => least_loaded(loads),
            RouterPolicy::PowerOfTwo => {
                let (a, b) = draw_two(&mut self.rng, n);
                power_of_two(loads, a, b)
            }
            RouterPolicy::Session => match key.session.or(key.api_key) {
                Some(k) => jump_hash(key_hash(k), n),
                None => self.round_robin(n),
            },
            RouterPolicy::PrefixAware => prefix_choice(key.cached_blocks, loads, self.margin),
        }
    }

    fn round_robin(&mut self, n: usize) -> usize {
        let i = self.next % n;
        self.next = (i + 1) % n;
        i
    }
}

/// The index of the smallest load; ties go to the lower index (0 for none).
pub fn least_loaded(loads: &[usize]) -> usize {
    loads
        .iter()
        .enumerate()
        .min_by_key(|(i, l)| (**l, *i))
        .map_or(0, |(i, _)| i)
}

/// The less loaded of replicas `a` and `b` (ties: `a`, the first drawn).
pub fn power_of_two(loads: &[usize], a: usize, b: usize) -> usize {
    let load = |i: usize| loads.get(i).copied().unwrap_or(usize::MAX);
    if load(b) < load(a) {
        b
    } else {
        a
    }
}

/// SplitMix64: the next value of the generator `state`.
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Two distinct replicas of `n` drawn from the generator (both 0 when n = 1).
pub fn draw_two(state: &mut u64, n: usize) -> (usize, usize) {
    if n < 2 {
        return (0, 0);
    }
    let a = (splitmix(state) % n as u64) as usize;
    let b = (splitmix(state) % (n as u64 - 1)) as usize;
    (a, if b >= a { b + 1 } else { b })
}

/// A stable 64-bit hash of a routing key (FNV-1a, then one SplitMix round).
pub fn key_hash(key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    splitmix(&mut h)
}

/// Lamping and Veach's jump consistent hash: the bucket of `key` among `n`
/// (0 for n ≤ 1). Growing the fleet from n to n+1 moves only 1/(n+1) of the keys.
pub fn jump_hash(mut key: u64, n: usize) -> usize {
    let (mut b, mut j): (i64, i64) = (-1, 0);
    while j < n as i64 {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b.max(0) as usize
}

/// `prefix-aware`: the replica with the most cached leading blocks of the
/// prompt (ties by the lower index), unless its load exceeds the least
/// loaded replica's by more than `margin` requests; least-loaded when no
/// replica holds any block or the best one is overloaded.
pub fn prefix_choice(cached_blocks: &[usize], loads: &[usize], margin: usize) -> usize {
    let least = least_loaded(loads);
    let best = cached_blocks
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)))
        .map(|(i, _)| i);
    match best {
        Some(b) if b < loads.len() && loads[b] <= loads[least].saturating_add(margin) => b,
        _ => least,
    }
}

#[cfg(test)]
mod tests;
pub mod vllm_ring;
