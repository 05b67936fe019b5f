//! The twin as a fleet: N replicas, each its own engine (scheduler, KV
//! blocks, prefix cache) on its own thread, behind one OpenAI endpoint and
//! a [`Router`] (`--replicas N --router POLICY`).
//!
//! - [`FleetCore`] (here): the router, each replica's requests in flight and
//!   requests served, and for `prefix-aware` the router's own record of the
//!   prompt prefixes it sent each replica ([`PrefixIndex`], as the cache-aware
//!   routers of SGLang and the vLLM Router keep one: the engines' caches are
//!   not asked).
//! - [`start_fleet`] (`fleet_http.rs`): the HTTP fleet; `/metrics` has one
//!   label set per replica (`engine="0"`, `"1"`, … as vLLM data parallel
//!   does), `/metrics/replica/N` one replica's page.
//! - [`FleetTransport`] and [`FleetSampler`] (`fleet_inproc.rs`): the same
//!   fleet without sockets, for the classroom and `plan` in virtual time.
//!
//! Every replica runs the same profile and seed, so a request gets the same
//! answer whichever replica serves it, and a fleet of one replica under any
//! router gives exactly the single twin's results. Request ids are shared
//! across the fleet, so chunk ids stay unique.

use codendum_core::profile::fleet::FleetSpec;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::kv::block_hash;
use super::routing::RouteKey;
pub use super::routing::Router;
use codendum_core::profile::fleet::RouterPolicy;
use codendum_core::profile::Profile;
mod http;
mod inproc;
pub mod pages;
pub use http::{start_fleet, FleetHandle};
pub use inproc::{FleetSampler, FleetTimeline, FleetTransport};

/// The `prefix-aware` overload margin for a profile: a quarter of its
/// `max_num_seqs` (at least 1 request). A replica holding the longest prefix
/// is passed over when it has more than this many requests in flight above
/// the least-loaded replica.
pub fn prefix_margin(profile: &Profile) -> usize {
    (profile.server.max_num_seqs as usize / 4).max(1)
}

/// Max over mean of the requests each replica served (1 = perfectly even);
/// `None` before any request. The counts as integers; the one definition
/// is [`codendum_core::server_figures::imbalance`].
pub fn imbalance(served: &[u64]) -> Option<f64> {
    let served: Vec<f64> = served.iter().map(|&s| s as f64).collect();
    codendum_core::server_figures::imbalance(&served)
}

/// The router's record of the prompt blocks it sent one replica: chained
/// block hashes, at most `capacity` (the replica's KV blocks), the least
/// recently routed forgotten first.
#[derive(Debug, Clone, Default)]
pub struct PrefixIndex {
    capacity: usize,
    tick: u64,
    seen: HashMap<u64, u64>,
    by_age: BTreeMap<u64, u64>,
}

impl PrefixIndex {
    /// An empty index of at most `capacity` blocks.
    pub fn new(capacity: usize) -> Self {
        PrefixIndex {
            capacity: capacity.max(1),
            ..PrefixIndex::default()
        }
    }

    /// How many leading blocks of `hashes` the index holds.
    pub fn matched(&self, hashes: &[u64]) -> usize {
        hashes
            .iter()
            .take_while(|h| self.seen.contains_key(h))
            .count()
    }

    /// Records `hashes` as just routed here.
    pub fn record(&mut self, hashes: &[u64]) {
        for &h in hashes {
            self.tick += 1;
            if let Some(old) = self.seen.insert(h, self.tick) {
                self.by_age.remove(&old);
            }
            self.by_age.insert(self.tick, h);
        }
        while self.seen.len() > self.capacity {
            let Some((_, h)) = self.by_age.pop_first() else {
                break;
            };
            self.seen.remove(&h);
        }
    }

    /// Blocks held.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether no block is held.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

/// The chained hashes of a prompt's full blocks of `block_size` tokens (the
/// engine's prefix-cache keys).
pub fn prompt_block_hashes(prompt: &[u32], block_size: u32) -> Vec<u64> {
    let mut parent = 0;
    prompt
        .chunks_exact(block_size.max(1) as usize)
        .map(|c| {
            parent = block_hash(parent, c);
            parent
        })
        .collect()
}

/// What the HTTP and in-process fleets share: the router and the loads.
#[derive(Debug)]
pub struct FleetCore {
    router: Mutex<Router>,
    in_flight: Vec<AtomicUsize>,
    served: Vec<AtomicU64>,
    prefixes: Option<Mutex<Vec<PrefixIndex>>>,
    block_size: u32,
    /// Request ids shared by every replica.
    pub ids: Arc<AtomicU64>,
}

impl FleetCore {
    /// The core of a fleet of `spec` replicas of `profile`, router seeded by `seed`.
    pub fn new(spec: FleetSpec, profile: &Profile, seed: u64) -> Self {
        let n = spec.replicas.max(1) as usize;
        let blocks = usize::try_from(profile.num_gpu_blocks()).unwrap_or(usize::MAX);
        let prefixes = (spec.router == RouterPolicy::PrefixAware)
            .then(|| Mutex::new(vec![PrefixIndex::new(blocks); n]));
        FleetCore {
            router: Mutex::new(Router::new(spec.router, seed, prefix_margin(profile))),
            in_flight: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            served: (0..n).map(|_| AtomicU64::new(0)).collect(),
            prefixes,
            block_size: profile.server.block_size,
            ids: Arc::new(AtomicU64::new(1)),
        }
    }

    /// Replicas.
    pub fn len(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether the fleet has no replica (never: at least one).
    pub fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }

    /// Whether the router needs the prompt's tokens (`prefix-aware`).
    pub fn wants_prompt(&self) -> bool {
        self.prefixes.is_some()
    }

    /// Requests in flight per replica.
    pub fn loads(&self) -> Vec<usize> {
        self.in_flight
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .collect()
    }

    /// Requests routed to each replica so far.
    pub fn served(&self) -> Vec<u64> {
        self.served
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .collect()
    }

    /// Picks the replica for a request and counts it in flight there until
    /// the returned guard is dropped. `prompt`: its token ids, for
    /// `prefix-aware` (see [`FleetCore::wants_prompt`]).
    pub fn route(
        self: &Arc<Self>,
        session: Option<&str>,
        api_key: Option<&str>,
        prompt: Option<&[u32]>,
    ) -> InFlight {
        let hashes = prompt.map(|p| prompt_block_hashes(p, self.block_size));
        let mut prefixes = self.prefixes.as_ref().and_then(|m| m.lock().ok());
        let cached: Vec<usize> = match (&prefixes, &hashes) {
            (Some(p), Some(h)) => p.iter().map(|i| i.matched(h)).collect(),
            _ => Vec::new(),
        };
        let key = RouteKey {
            session: session.filter(|s| !s.is_empty()),
            api_key: api_key.filter(|k| !k.is_empty()),
            cached_blocks: &cached,
        };
        let loads = self.loads();
        let replica = match self.router.lock() {
            Ok(mut r) => r.pick(&loads, &key),
            Err(_) => super::routing::least_loaded(&loads),
        }
        .min(self.len() - 1);
        if let (Some(p), Some(h)) = (prefixes.as_mut(), &hashes) {
            p[replica].record(h);
        }
        self.in_flight[replica].fetch_add(1, Ordering::Relaxed);
        self.served[replica].fetch_add(1, Ordering::Relaxed);
        InFlight {
            core: Arc::clone(self),
            replica,
        }
    }
}

/// A request counted in flight on one replica until dropped.
#[derive(Debug)]
pub struct InFlight {
    core: Arc<FleetCore>,
    replica: usize,
}

impl InFlight {
    /// The replica chosen.
    pub fn replica(&self) -> usize {
        self.replica
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.core.in_flight[self.replica].fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_index_matches_leading_blocks_and_forgets_the_oldest() {
        let mut ix = PrefixIndex::new(4);
        ix.record(&[1, 2, 3]);
        assert_eq!(ix.matched(&[1, 2, 3, 9]), 3);
        assert_eq!(ix.matched(&[2, 3]), 2);
        assert_eq!(ix.matched(&[9, 1]), 0);
        ix.record(&[1, 7]);
        assert_eq!(ix.len(), 4);
        ix.record(&[8]);
        // 2 was the least recently routed: forgotten.
        assert_eq!(ix.len(), 4);
        assert_eq!(ix.matched(&[1, 2]), 1);
    }

    #[test]
    fn block_hashes_chain_over_full_blocks_only() {
        let p: Vec<u32> = (0..40).collect();
        let h = prompt_block_hashes(&p, 16);
        assert_eq!(h.len(), 2);
        assert_eq!(h, prompt_block_hashes(&p[..32], 16));
        assert_ne!(prompt_block_hashes(&p[16..], 16)[0], h[1]);
    }

    #[test]
    fn imbalance_is_max_over_mean() {
        assert_eq!(imbalance(&[]), None);
        assert_eq!(imbalance(&[0, 0]), None);
        assert_eq!(imbalance(&[5, 5]), Some(1.0));
        assert_eq!(imbalance(&[6, 2]), Some(1.5));
    }

    #[test]
    fn specs_are_checked() {
        assert!(FleetSpec::parse(0, "session")
            .expect_err("zero")
            .contains("0 replicas"));
        assert!(FleetSpec::parse(2, "sticky")
            .expect_err("unknown")
            .contains("valid: round-robin"));
        let s = FleetSpec::parse(3, "least-loaded").expect("ok");
        assert_eq!((s.replicas, s.router), (3, RouterPolicy::LeastLoaded));
    }

    #[test]
    fn routing_counts_requests_in_flight_until_the_guard_drops() {
        let profile = Profile::load("classroom-64k").expect("profile");
        let spec = FleetSpec::parse(2, "least-loaded").expect("spec");
        let core = Arc::new(FleetCore::new(spec, &profile, 1));
        let a = core.route(None, None, None);
        let b = core.route(None, None, None);
        assert_eq!((a.replica(), b.replica()), (0, 1));
        assert_eq!(core.loads(), vec![1, 1]);
        drop(a);
        assert_eq!(core.route(None, None, None).replica(), 0);
        assert_eq!(core.loads(), vec![0, 1]);
        assert_eq!(core.served(), vec![2, 1]);
    }
}
