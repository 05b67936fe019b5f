//! One scheduler step of [`Engine`]: schedule, time, advance.

use std::time::Duration;

use super::{Engine, StepReport, StepToken};
use crate::kv::block_hash;
use crate::model::StepShape;

impl Engine {
    /// Runs one step: running requests first (one token per decode, the next
    /// chunk per prefill) within the token budget, preempting the most
    /// recently admitted request when a block runs out; then waiting
    /// requests in order while seats and budget are left and nothing was
    /// preempted, each only if its whole uncached prompt fits in free blocks.
    /// Advances engine time by the modelled duration.
    pub fn step(&mut self) -> StepReport {
        let t0 = self.now;
        let mut report = StepReport::default();
        let mut sched = std::mem::take(&mut self.sched);
        sched.clear();
        let mut budget = self.cfg.max_num_batched_tokens;

        let mut i = 0;
        while i < self.running.len() && budget > 0 {
            let slot = self.running[i];
            let (num_new, have, computed) = {
                let r = self.req(slot);
                let n = (r.num_tokens - r.num_computed).min(budget);
                (n, r.blocks.len(), r.num_computed)
            };
            let need = self.blocks_for(computed + num_new).saturating_sub(have);
            let mut scheduled = true;
            while need > self.pool.num_free() {
                let victim_is_self = self.running.last() == Some(&slot);
                if let Some(id) = self.preempt_last() {
                    report.preempted.push(id);
                }
                if victim_is_self {
                    scheduled = false;
                    break;
                }
            }
            if !scheduled {
                break;
            }
            let mut blocks = std::mem::take(&mut self.req_mut(slot).blocks);
            let ok = self.pool.allocate(need, &mut blocks);
            debug_assert!(ok, "free blocks were checked");
            self.req_mut(slot).blocks = blocks;
            sched.push((slot, num_new));
            budget -= num_new;
            i += 1;
        }

        if report.preempted.is_empty() {
            self.admit_waiting(&mut sched, &mut budget, t0);
        }

        let shape = self.shape_of(&sched);
        report.shape = shape;
        report.num_prefill_tokens = shape.prefill_tokens;
        report.num_decode = shape.num_decode;
        report.num_scheduled = sched.len();
        report.duration = self.cfg.model.step_time(&shape);
        let t1 = t0 + report.duration.as_secs_f64();
        self.now = t1;
        if shape.num_tokens > 0 {
            self.stats.steps += 1;
            self.stats.iteration_tokens.observe(shape.num_tokens as f64);
        }

        let mut any_done = false;
        for &(slot, n) in &sched {
            if let Some(tok) = self.advance(slot, n, t1) {
                any_done |= tok.finish.is_some();
                report.tokens.push(tok);
            }
        }
        if any_done {
            self.remove_done(&sched);
        }
        self.sched = sched;
        self.refresh_gauges();
        report
    }

    fn admit_waiting(&mut self, sched: &mut Vec<(usize, u32)>, budget: &mut u32, t0: f64) {
        let bs = self.cfg.block_size.max(1);
        while *budget > 0 && self.running.len() < self.cfg.max_num_seqs {
            let Some(&slot) = self.waiting.front() else {
                break;
            };
            let (hit, unreferenced, num_tokens) = {
                let r = self.req(slot);
                let max_hit_blocks = ((r.num_tokens - 1) / bs) as usize;
                let (hit, unref) = self.pool.longest_hit(&r.hashes, max_hit_blocks);
                (hit, unref, r.num_tokens)
            };
            let new_blocks = self.blocks_for(num_tokens) - hit.len();
            if new_blocks + unreferenced > self.pool.num_free() {
                break;
            }
            self.waiting.pop_front();
            self.pool.touch(&hit);
            let cached = hit.len() as u32 * bs;
            let num_new = (num_tokens - cached).min(*budget);
            let need = self.blocks_for(cached + num_new) - hit.len();
            let mut blocks = hit;
            let ok = self.pool.allocate(need, &mut blocks);
            debug_assert!(ok, "free blocks were checked");
            self.stats.prefix_queries += u64::from(num_tokens);
            self.stats.prefix_hits += u64::from(cached);
            let r = self.slab[slot].as_mut().expect("live slot");
            if !r.prompt_counted {
                r.prompt_counted = true;
                r.cached_at_first = cached.min(r.prompt_len);
                self.stats.prompt_tokens += u64::from(r.prompt_len);
                self.stats.prompt_tokens_cached += u64::from(r.cached_at_first);
                self.stats.prompt_tokens_computed += u64::from(r.prompt_len - r.cached_at_first);
            }
            r.num_cached_blocks = blocks.len().min((cached / bs) as usize);
            r.blocks = blocks;
            r.num_computed = cached;
            r.first_scheduled.get_or_insert(t0);
            self.running.push(slot);
            sched.push((slot, num_new));
            *budget -= num_new;
        }
    }

    fn shape_of(&self, sched: &[(usize, u32)]) -> StepShape {
        let mut s = StepShape::default();
        for &(slot, n) in sched {
            let r = self.req(slot);
            let (n, c) = (u64::from(n), u64::from(r.num_computed));
            s.num_tokens += n;
            if n == 1 {
                s.num_decode += 1;
                s.decode_context_tokens += c + 1;
            } else {
                s.prefill_tokens += n;
                s.prefill_pairs += n * c + n * (n - 1) / 2;
            }
        }
        s
    }

    /// Applies a scheduled chunk of `n` tokens; returns the token event when
    /// the request produced an output token.
    fn advance(&mut self, slot: usize, n: u32, t1: f64) -> Option<StepToken> {
        let bs = self.cfg.block_size.max(1) as usize;
        let r = self.slab[slot].as_mut().expect("live slot");
        r.num_computed += n;
        let full = ((r.num_computed as usize) / bs).min(r.hashes.len());
        for k in r.num_cached_blocks..full {
            self.pool.cache(r.blocks[k], r.hashes[k]);
        }
        r.num_cached_blocks = r.num_cached_blocks.max(full);
        if r.num_computed < r.num_tokens {
            return None;
        }
        let tok = r.output_id(r.num_output);
        r.num_output += 1;
        r.num_tokens += 1;
        r.tail.push(tok);
        if r.tail.len() == bs {
            let parent = r.hashes.last().copied().unwrap_or(0);
            r.hashes.push(block_hash(parent, &r.tail));
            r.tail.clear();
        }
        self.stats.generation_tokens += 1;
        match r.first_token {
            None => {
                r.first_token = Some(t1);
                self.stats.ttft.observe(t1 - r.arrival);
                self.stats.ttft_log.push(t1 - r.arrival);
            }
            Some(_) => self.stats.itl.observe(t1 - r.last_token),
        }
        r.last_token = t1;
        let finish = (r.num_output >= r.target_len).then_some(r.end_reason);
        if let Some(reason) = finish {
            r.done = true;
            let r = &*r;
            let st = &mut self.stats;
            st.count_finish(reason);
            let scheduled = r.first_scheduled.unwrap_or(r.arrival);
            let first = r.first_token.unwrap_or(t1);
            st.e2e.observe(t1 - r.arrival);
            st.queue.observe(scheduled - r.arrival);
            st.inference.observe(t1 - scheduled);
            st.prefill.observe(first - scheduled);
            st.decode.observe(t1 - first);
            if r.num_output > 1 {
                st.tpot.observe((t1 - first) / f64::from(r.num_output - 1));
            }
            st.request_prompt_tokens.observe(f64::from(r.prompt_len));
            st.request_generation_tokens
                .observe(f64::from(r.num_output));
            st.request_max_generation_tokens
                .observe(f64::from(r.num_output));
            st.request_max_tokens.observe(f64::from(r.max_tokens));
            st.request_n.observe(1.0);
            st.request_preemptions.observe(f64::from(r.preemptions));
            st.request_prefill_computed
                .observe(f64::from(r.prompt_len - r.cached_at_first));
        }
        Some(StepToken {
            id: r.id,
            new_tokens: 1,
            finish,
        })
    }

    fn remove_done(&mut self, sched: &[(usize, u32)]) {
        let slab = &self.slab;
        self.running
            .retain(|&s| !slab[s].as_ref().is_some_and(|r| r.done));
        for &(slot, _) in sched {
            if self.slab[slot].as_ref().is_some_and(|r| r.done) {
                if let Some(r) = self.slab[slot].take() {
                    self.pool.free(&r.blocks);
                    self.index.remove(&r.id);
                    self.free_slots.push(slot);
                }
            }
        }
    }

    /// Runs steps until nothing is left (for tests and planning); returns the
    /// total modelled time. Stops after `max_steps` steps.
    pub fn run_to_idle(&mut self, max_steps: usize) -> Duration {
        let mut total = Duration::ZERO;
        for _ in 0..max_steps {
            if self.is_idle() {
                break;
            }
            total += self.step().duration;
        }
        total
    }
}
