//! The scheduler: vLLM V1's continuous batching with chunked prefill, prefix
//! caching and preemption by recompute, timed by a [`StepModel`].
//!
//! Plain synchronous code: the caller adds requests, calls [`Engine::step`],
//! waits the returned duration on its clock and delivers the tokens.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use super::engine_stats::{EngineStats, FinishReason, TtftLog};
use super::filler::padding_piece;
use super::kv::{block_hash, BlockId, BlockPool};
use super::model::{PhysicalStepModel, StepModel, StepShape};
use super::tokenizer;
use codendum_core::profile::Profile;

/// A request id, unique among live requests.
pub type RequestId = u64;

/// Engine settings (the `[server]` table plus the step model).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Most requests running at once.
    pub max_num_seqs: usize,
    /// Token budget of one step.
    pub max_num_batched_tokens: u32,
    /// KV block size, tokens.
    pub block_size: u32,
    /// KV blocks in all, the reserved null block included.
    pub num_gpu_blocks: usize,
    /// Whether full blocks are kept for prefix hits.
    pub enable_prefix_caching: bool,
    /// Prompt + output limit, tokens.
    pub max_model_len: u32,
    /// How long a step takes.
    pub model: Arc<dyn StepModel>,
}

impl EngineConfig {
    /// The engine a profile describes.
    pub fn from_profile(p: &Profile) -> Self {
        EngineConfig {
            max_num_seqs: p.server.max_num_seqs as usize,
            max_num_batched_tokens: p.server.max_num_batched_tokens,
            block_size: p.server.block_size,
            num_gpu_blocks: usize::try_from(p.num_gpu_blocks()).unwrap_or(usize::MAX),
            enable_prefix_caching: p.server.enable_prefix_caching,
            max_model_len: p.server.max_model_len,
            model: Arc::new(PhysicalStepModel::new(&p.hardware)),
        }
    }
}

/// One request as the engine sees it.
#[derive(Debug, Clone, Default)]
pub struct EngineRequest {
    /// Unique id.
    pub id: RequestId,
    /// Prompt token ids (at least one).
    pub prompt: Vec<u32>,
    /// Output limit, tokens (at least one).
    pub max_tokens: u32,
    /// Output floor, tokens (end of sequence suppressed before it).
    pub min_tokens: u32,
    /// Generate exactly `max_tokens`.
    pub ignore_eos: bool,
    /// Tokens of the planned answer (where it would stop by itself).
    pub natural_len: u32,
    /// Token ids of the planned answer, for prefix-caching output blocks.
    /// Positions from `natural_len` on, when `min_tokens` or `ignore_eos`
    /// asks for more than the answer, take the ids of the padding the HTTP
    /// layer streams there ([`crate::filler::padding_piece`]); positions past
    /// a short list use filler ids.
    pub answer_ids: Vec<u32>,
}

/// Why a request was refused by [`Engine::add`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddError {
    /// The id is already in use.
    #[error("request id {0} is already in the engine")]
    DuplicateId(RequestId),
    /// Empty prompt or `max_tokens` 0.
    #[error("a request needs at least one prompt token and max_tokens >= 1")]
    Empty,
    /// Prompt + `max_tokens` exceeds `max_model_len`, or the prompt alone
    /// fills the whole KV cache.
    #[error("prompt {prompt} + max_tokens {max_tokens} tokens exceeds the limit of {limit}")]
    TooLong {
        /// Prompt tokens.
        prompt: u32,
        /// Requested output tokens.
        max_tokens: u32,
        /// The limit, tokens.
        limit: u64,
    },
}

/// Tokens one request got in a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepToken {
    /// The request.
    pub id: RequestId,
    /// New output tokens (0 or 1).
    pub new_tokens: u32,
    /// Set when the request finished with this step.
    pub finish: Option<FinishReason>,
}

/// What one step did.
#[derive(Debug, Clone, Default)]
pub struct StepReport {
    /// Modelled duration of the step (simulated time).
    pub duration: Duration,
    /// Requests that got output tokens or finished.
    pub tokens: Vec<StepToken>,
    /// Prompt tokens computed in prefill chunks.
    pub num_prefill_tokens: u64,
    /// Requests that decoded one token.
    pub num_decode: u64,
    /// Requests scheduled in the step.
    pub num_scheduled: usize,
    /// Requests preempted in the step.
    pub preempted: Vec<RequestId>,
    /// The shape handed to the step model.
    pub shape: StepShape,
}

#[derive(Debug)]
struct Req {
    id: RequestId,
    prompt_len: u32,
    max_tokens: u32,
    answer: Vec<u32>,
    /// Where the streamed padding starts, when the answer is padded.
    padded_from: Option<u32>,
    target_len: u32,
    end_reason: FinishReason,
    num_tokens: u32,
    num_output: u32,
    num_computed: u32,
    hashes: Vec<u64>,
    tail: Vec<u32>,
    blocks: Vec<BlockId>,
    num_cached_blocks: usize,
    arrival: f64,
    first_scheduled: Option<f64>,
    first_token: Option<f64>,
    last_token: f64,
    preemptions: u32,
    prompt_counted: bool,
    cached_at_first: u32,
    done: bool,
}

impl Req {
    /// The id of output token `j`: the planned answer's, the padding's past
    /// a padded answer (the text a client sends back then tokenizes to the
    /// same ids, so its blocks hit the cache as vLLM's generated blocks do).
    fn output_id(&self, j: u32) -> u32 {
        if let Some(from) = self.padded_from.filter(|&from| j >= from) {
            return tokenizer::piece_id(padding_piece((j - from) as usize));
        }
        self.answer
            .get(j as usize)
            .copied()
            .unwrap_or(0x2000_0000 | (j % 4096))
    }
}

/// The scheduler with its KV pool, clock position and statistics.
#[derive(Debug)]
pub struct Engine {
    cfg: EngineConfig,
    pool: BlockPool,
    slab: Vec<Option<Req>>,
    free_slots: Vec<usize>,
    index: HashMap<RequestId, usize>,
    running: Vec<usize>,
    waiting: VecDeque<usize>,
    sched: Vec<(usize, u32)>,
    now: f64,
    stats: EngineStats,
}

impl Engine {
    /// An idle engine at time 0.
    pub fn new(cfg: EngineConfig) -> Self {
        let pool = BlockPool::new(cfg.num_gpu_blocks, cfg.enable_prefix_caching);
        Engine {
            cfg,
            pool,
            slab: Vec::new(),
            free_slots: Vec::new(),
            index: HashMap::new(),
            running: Vec::new(),
            waiting: VecDeque::new(),
            sched: Vec::new(),
            now: 0.0,
            stats: EngineStats::default(),
        }
    }

    /// Keeps every request's TTFT in the engine's statistics from now on
    /// ([`EngineStats::ttft_log`]).
    pub fn keep_ttft_log(&mut self) {
        if !self.stats.ttft_log.is_kept() {
            self.stats.ttft_log = TtftLog::keeping();
        }
    }

    /// The engine's settings.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// Current engine time (simulated): end of the latest step or the latest
    /// [`Engine::advance_to`].
    pub fn now(&self) -> Duration {
        Duration::from_secs_f64(self.now)
    }

    /// Moves engine time forward to `t` (never backwards), e.g. after idling.
    pub fn advance_to(&mut self, t: Duration) {
        self.now = self.now.max(t.as_secs_f64());
    }

    /// Whether nothing is running or waiting.
    pub fn is_idle(&self) -> bool {
        self.running.is_empty() && self.waiting.is_empty()
    }

    /// Counters, histograms and the gauges of the latest step.
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }

    /// Requests running.
    pub fn num_running(&self) -> usize {
        self.running.len()
    }

    /// Requests waiting.
    pub fn num_waiting(&self) -> usize {
        self.waiting.len()
    }

    /// KV usage now, fraction 0..1.
    pub fn kv_usage(&self) -> f64 {
        self.pool.usage()
    }

    /// Queues a request (arrival = engine time now).
    pub fn add(&mut self, r: EngineRequest) -> Result<(), AddError> {
        let now = self.now();
        self.add_arrived(r, now)
    }

    /// Queues a request that arrived at `arrival` (simulated; clamped to
    /// the engine's time). While a step runs, the engine's time is already
    /// the step's end: a request that came in during it arrived earlier, and
    /// its queue time and TTFT count from then, as vLLM's do (from the API
    /// server's receipt of the request).
    pub fn add_arrived(&mut self, r: EngineRequest, arrival: Duration) -> Result<(), AddError> {
        let arrival = arrival.as_secs_f64().min(self.now);
        if self.index.contains_key(&r.id) {
            return Err(AddError::DuplicateId(r.id));
        }
        if r.prompt.is_empty() || r.max_tokens == 0 {
            return Err(AddError::Empty);
        }
        let prompt_len = u32::try_from(r.prompt.len()).unwrap_or(u32::MAX);
        let total = u64::from(prompt_len) + u64::from(r.max_tokens);
        let bs = u64::from(self.cfg.block_size.max(1));
        let kv_tokens = (self.pool.total_blocks() as u64 - 1) * bs;
        let limit = u64::from(self.cfg.max_model_len);
        if total > limit || u64::from(prompt_len) >= kv_tokens {
            return Err(AddError::TooLong {
                prompt: prompt_len,
                max_tokens: r.max_tokens,
                limit: limit.min(kv_tokens),
            });
        }
        // A request alone must never outgrow the whole cache: cap its output.
        let room = u32::try_from(kv_tokens - u64::from(prompt_len)).unwrap_or(u32::MAX);
        let max_tokens = r.max_tokens.min(room);
        let (hashes, tail) = prompt_blocks(&r.prompt, bs as usize);
        let (target_len, end_reason) = planned_end(&r, max_tokens);
        let req = Req {
            id: r.id,
            prompt_len,
            max_tokens: r.max_tokens,
            answer: r.answer_ids,
            padded_from: (target_len > r.natural_len).then_some(r.natural_len),
            target_len,
            end_reason,
            num_tokens: prompt_len,
            num_output: 0,
            num_computed: 0,
            hashes,
            tail,
            blocks: Vec::new(),
            num_cached_blocks: 0,
            arrival,
            first_scheduled: None,
            first_token: None,
            last_token: self.now,
            preemptions: 0,
            prompt_counted: false,
            cached_at_first: 0,
            done: false,
        };
        self.push_waiting(req);
        Ok(())
    }

    /// Puts a new request in a free slab slot and at the back of the queue.
    fn push_waiting(&mut self, req: Req) {
        let id = req.id;
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.slab[s] = Some(req);
                s
            }
            None => {
                self.slab.push(Some(req));
                self.slab.len() - 1
            }
        };
        self.index.insert(id, slot);
        self.waiting.push_back(slot);
        self.stats.waiting = self.waiting.len();
    }

    /// Drops a request (client gone): frees its blocks and counts an abort.
    /// Returns whether the request was live.
    pub fn abort(&mut self, id: RequestId) -> bool {
        let Some(slot) = self.index.remove(&id) else {
            return false;
        };
        self.running.retain(|s| *s != slot);
        self.waiting.retain(|s| *s != slot);
        if let Some(req) = self.slab[slot].take() {
            self.pool.free(&req.blocks);
        }
        self.free_slots.push(slot);
        self.stats.count_finish(FinishReason::Abort);
        self.refresh_gauges();
        true
    }

    fn refresh_gauges(&mut self) {
        self.stats.running = self.running.len();
        self.stats.waiting = self.waiting.len();
        self.stats.kv_usage = self.pool.usage();
    }

    fn req(&self, slot: usize) -> &Req {
        self.slab[slot].as_ref().expect("live slot") // invariant: running/waiting hold live slots
    }

    fn req_mut(&mut self, slot: usize) -> &mut Req {
        self.slab[slot].as_mut().expect("live slot")
    }

    fn blocks_for(&self, tokens: u32) -> usize {
        tokens.div_ceil(self.cfg.block_size.max(1)) as usize
    }

    fn preempt_last(&mut self) -> Option<RequestId> {
        let slot = self.running.pop()?;
        let req = self.slab[slot].as_mut().expect("live slot");
        self.pool.free(&req.blocks);
        req.blocks.clear();
        req.num_cached_blocks = 0;
        req.num_computed = 0;
        req.preemptions += 1;
        let id = req.id;
        self.waiting.push_front(slot);
        self.stats.preemptions += 1;
        Some(id)
    }
}

/// The chained hashes of a prompt's full blocks of `bs` tokens (prefix-cache
/// keys) and the tokens of its last, partial block.
fn prompt_blocks(prompt: &[u32], bs: usize) -> (Vec<u64>, Vec<u32>) {
    let mut hashes = Vec::with_capacity(prompt.len() / bs + 1);
    let mut parent = 0;
    let chunks = prompt.chunks_exact(bs);
    let tail = chunks.remainder().to_vec();
    for c in chunks {
        parent = block_hash(parent, c);
        hashes.push(parent);
    }
    (hashes, tail)
}

/// How long a request's answer will be and why it ends, given its output cap.
fn planned_end(r: &EngineRequest, max_tokens: u32) -> (u32, FinishReason) {
    let floor = r.min_tokens.min(max_tokens);
    if r.ignore_eos {
        (max_tokens, FinishReason::Length)
    } else {
        let want = r.natural_len.max(floor).max(1);
        if want >= max_tokens {
            (max_tokens, FinishReason::Length)
        } else {
            (want, FinishReason::Stop)
        }
    }
}
mod engine_step;
