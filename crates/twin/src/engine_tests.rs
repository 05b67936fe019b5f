//! Scheduler behaviour: admission by fit, chunked prefill, prefix hits,
//! preemption, KV usage, LRU eviction, determinism.

use std::sync::Arc;

use super::engine::{Engine, EngineConfig, EngineRequest, StepToken};
use super::engine_stats::FinishReason;
use super::model::PhysicalStepModel;
use codendum_core::profile::hardware::{HardwareProfile, GB10_QWEN3_CODER_TOML};

fn config(num_gpu_blocks: usize, max_num_seqs: usize) -> EngineConfig {
    let hw = HardwareProfile::parse(GB10_QWEN3_CODER_TOML).expect("hardware parses");
    EngineConfig {
        max_num_seqs,
        max_num_batched_tokens: 8192,
        block_size: 16,
        num_gpu_blocks,
        enable_prefix_caching: true,
        max_model_len: 65536,
        model: Arc::new(PhysicalStepModel::new(&hw)),
    }
}

fn prompt(seed: u32, len: usize) -> Vec<u32> {
    (0..len as u32).map(|i| seed * 100_000 + i).collect()
}

fn req(id: u64, prompt: Vec<u32>, natural_len: u32) -> EngineRequest {
    EngineRequest {
        id,
        prompt,
        max_tokens: 1000,
        natural_len,
        ..EngineRequest::default()
    }
}

#[test]
fn admits_only_what_fits_in_free_blocks() {
    let mut e = Engine::new(config(11, 16)); // 10 usable blocks = 160 tokens
    e.add(req(1, prompt(1, 100), 5)).expect("add");
    e.add(req(2, prompt(2, 100), 5)).expect("add");
    e.step();
    assert_eq!((e.num_running(), e.num_waiting()), (1, 1));
    assert!(
        (e.kv_usage() - 0.7).abs() < 1e-9,
        "7 of 10 blocks: {}",
        e.kv_usage()
    );
    e.run_to_idle(100);
    assert_eq!(e.stats().finished_stop, 2);
    assert_eq!(e.stats().preemptions, 0);
}

#[test]
fn caps_running_at_max_num_seqs() {
    let mut e = Engine::new(config(1000, 2));
    for id in 0..5 {
        e.add(req(id, prompt(id as u32, 20), 3)).expect("add");
    }
    e.step();
    assert_eq!((e.num_running(), e.num_waiting()), (2, 3));
    assert_eq!(e.stats().running, 2);
}

#[test]
fn chunks_prefill_at_the_token_budget() {
    let mut e = Engine::new(config(5000, 16));
    e.add(req(1, prompt(1, 20_000), 3)).expect("add");
    let r1 = e.step();
    assert_eq!(r1.num_prefill_tokens, 8192);
    assert!(r1.tokens.is_empty());
    let r2 = e.step();
    assert_eq!(r2.num_prefill_tokens, 8192);
    let r3 = e.step();
    assert_eq!(r3.num_prefill_tokens, 20_000 - 2 * 8192);
    assert_eq!(r3.tokens.len(), 1, "first token with the last chunk");
    // a second request shares the budget with the first one's decode
    e.add(req(2, prompt(2, 9000), 3)).expect("add");
    let r4 = e.step();
    assert_eq!((r4.num_decode, r4.num_prefill_tokens), (1, 8191));
}

#[test]
fn prefix_hits_are_whole_blocks_and_never_the_last_token() {
    let mut e = Engine::new(config(1000, 16));
    e.add(req(1, prompt(1, 40), 2)).expect("add");
    e.run_to_idle(10);
    e.add(req(2, prompt(1, 40), 2)).expect("add");
    e.step();
    assert_eq!(e.stats().prefix_hits, 32, "2 full blocks of 40 tokens");
    // exactly 2 blocks long: the last token must be computed, so 1 block hits
    e.run_to_idle(10);
    e.add(req(3, prompt(1, 32), 2)).expect("add");
    e.step();
    assert_eq!(e.stats().prefix_hits, 32 + 16);
    assert_eq!(e.stats().prefix_queries, 40 + 40 + 32);
    assert_eq!(e.stats().prompt_tokens, 112);
    assert_eq!(e.stats().prompt_tokens_cached, 48);
    assert_eq!(e.stats().prompt_tokens_computed, 64);
}

/// Prefix-cache hits, tokens, of a next turn: `first` runs to its end, then
/// its prompt (`prompt(1, 32)`), `answer` and 20 new tokens are sent.
fn next_turn_hits(first: EngineRequest, answer: &[u32]) -> u64 {
    let mut e = Engine::new(config(1000, 16));
    e.add(first).expect("add");
    e.run_to_idle(100);
    let mut next = prompt(1, 32);
    next.extend(answer);
    next.extend(prompt(7, 20));
    e.add(req(2, next, 2)).expect("add");
    e.step();
    e.stats().prefix_hits
}

#[test]
fn generated_blocks_are_cached_for_the_next_turn() {
    let answer: Vec<u32> = (0..40).map(|i| 900_000 + i).collect();
    let mut r = req(1, prompt(1, 32), 40);
    r.answer_ids = answer.clone();
    // 32 prompt + 40 answer = 72 tokens: 4 full blocks computed before the end
    assert_eq!(next_turn_hits(r, &answer), 64);
}

#[test]
fn a_padded_answer_is_cached_as_its_padding_text() {
    use super::filler::padding_piece;
    use super::tokenizer;
    // A 10-token answer asked for 40 (min_tokens): 30 tokens of padding.
    let planned: Vec<u32> = (0..12).map(|i| 900_000 + i).collect();
    let mut r = req(1, prompt(1, 32), 10);
    r.answer_ids = planned.clone();
    r.min_tokens = 40;
    // The next turn holds the answer's 10 tokens and the padding's text.
    let padding: String = (0..30).map(padding_piece).collect();
    let mut answer = planned[..10].to_vec();
    answer.extend(tokenizer::encode(&padding));
    // 32 + 10 + 30 = 72 tokens, the last one never computed: 4 full blocks.
    assert_eq!(next_turn_hits(r, &answer), 64);
}

#[test]
fn every_first_token_is_logged_in_engine_time_when_asked() {
    let mut e = Engine::new(config(1000, 16));
    e.add(req(9, prompt(9, 40), 3)).expect("add");
    e.run_to_idle(100);
    assert!(e.stats().ttft_log.samples().is_empty(), "off by default");
    let mut e = Engine::new(config(1000, 16));
    e.keep_ttft_log();
    e.add(req(1, prompt(1, 300), 3)).expect("add");
    e.add(req(2, prompt(2, 40), 3)).expect("add");
    e.run_to_idle(100);
    let log = e.stats().ttft_log.samples();
    assert_eq!(log.len(), 2);
    assert!(log.iter().all(|&t| t > 0.0), "{log:?}");
    let sum: f64 = log.iter().sum();
    assert!(
        (sum - e.stats().ttft.sum).abs() < 1e-12,
        "the histogram's sum"
    );
    // A clone shares the list (the published stats see later requests).
    let published = e.stats().clone();
    e.add(req(3, prompt(3, 40), 3)).expect("add");
    e.run_to_idle(100);
    assert_eq!(published.ttft_log.samples().len(), 3);
}

#[test]
fn preempts_the_latest_admitted_when_blocks_run_out() {
    let mut e = Engine::new(config(11, 16)); // 160 tokens
    e.add(req(1, prompt(1, 48), 60)).expect("add");
    e.add(req(2, prompt(2, 48), 60)).expect("add");
    let mut preempted = Vec::new();
    let mut order = Vec::new();
    for _ in 0..500 {
        if e.is_idle() {
            break;
        }
        let rep = e.step();
        preempted.extend(rep.preempted);
        order.extend(
            rep.tokens
                .iter()
                .filter(|t| t.finish.is_some())
                .map(|t| t.id),
        );
    }
    assert!(e.is_idle());
    assert_eq!(
        preempted.first(),
        Some(&2),
        "the most recently admitted goes"
    );
    assert_eq!(e.stats().preemptions, preempted.len() as u64);
    assert!(e.stats().preemptions >= 1);
    assert_eq!(order, vec![1, 2]);
    assert_eq!(e.stats().generation_tokens, 120);
    assert_eq!(e.stats().request_preemptions.count, 2);
}

#[test]
fn evicts_least_recently_freed_blocks_first() {
    let mut e = Engine::new(config(9, 16)); // 8 usable blocks
    e.add(req(1, prompt(1, 48), 1)).expect("add");
    e.run_to_idle(10);
    e.add(req(2, prompt(2, 48), 1)).expect("add");
    e.run_to_idle(10);
    // 3 + 3 blocks cached, 2 never used; a 4-block prompt evicts 2 of A's
    e.add(req(3, prompt(3, 64), 1)).expect("add");
    e.run_to_idle(10);
    let hits_before = e.stats().prefix_hits;
    e.add(req(4, prompt(2, 48), 1)).expect("add");
    e.step();
    assert_eq!(e.stats().prefix_hits - hits_before, 32, "B survived");
    e.run_to_idle(10);
    let hits_before = e.stats().prefix_hits;
    e.add(req(5, prompt(1, 48), 1)).expect("add");
    e.step();
    assert!(e.stats().prefix_hits - hits_before < 32, "A was evicted");
}

#[test]
fn lengths_follow_max_min_and_ignore_eos() {
    let mut e = Engine::new(config(1000, 16));
    let mk = |id, natural, max, min, ignore| EngineRequest {
        id,
        prompt: prompt(id as u32, 10),
        max_tokens: max,
        min_tokens: min,
        ignore_eos: ignore,
        natural_len: natural,
        answer_ids: Vec::new(),
    };
    e.add(mk(1, 5, 100, 0, false)).expect("add");
    e.add(mk(2, 500, 100, 0, false)).expect("add");
    e.add(mk(3, 5, 100, 0, true)).expect("add");
    e.add(mk(4, 5, 100, 20, false)).expect("add");
    let mut counts = std::collections::HashMap::new();
    let mut reasons = std::collections::HashMap::new();
    while !e.is_idle() {
        for StepToken {
            id,
            new_tokens,
            finish,
        } in e.step().tokens
        {
            *counts.entry(id).or_insert(0) += new_tokens;
            if let Some(f) = finish {
                reasons.insert(id, f);
            }
        }
    }
    assert_eq!((counts[&1], reasons[&1]), (5, FinishReason::Stop));
    assert_eq!((counts[&2], reasons[&2]), (100, FinishReason::Length));
    assert_eq!((counts[&3], reasons[&3]), (100, FinishReason::Length));
    assert_eq!((counts[&4], reasons[&4]), (20, FinishReason::Stop));
}

#[test]
fn abort_frees_blocks_and_counts() {
    let mut e = Engine::new(config(11, 16));
    e.add(req(1, prompt(1, 100), 50)).expect("add");
    e.step();
    assert!(e.kv_usage() > 0.5);
    assert!(e.abort(1));
    assert!(!e.abort(1));
    assert_eq!(e.kv_usage(), 0.0);
    assert_eq!(e.stats().finished_abort, 1);
    assert!(e.is_idle());
}

#[test]
fn rejects_duplicates_and_oversized_requests() {
    let mut e = Engine::new(config(11, 16));
    e.add(req(1, prompt(1, 10), 1)).expect("add");
    assert!(e.add(req(1, prompt(1, 10), 1)).is_err());
    assert!(
        e.add(req(2, prompt(1, 200), 1)).is_err(),
        "bigger than the cache"
    );
    assert!(e.add(req(3, Vec::new(), 1)).is_err());
}

#[test]
fn same_inputs_give_the_same_run() {
    let run = || {
        let mut e = Engine::new(config(300, 4));
        for id in 0..10u64 {
            e.add(req(
                id,
                prompt((id % 3) as u32, 100 + 37 * id as usize),
                30 + id as u32,
            ))
            .expect("add");
        }
        let mut trace = Vec::new();
        while !e.is_idle() {
            let r = e.step();
            trace.push((r.duration, r.tokens, r.preempted));
        }
        (trace, e.stats().clone())
    };
    assert_eq!(run(), run());
}

#[test]
fn decode_step_time_follows_the_model() {
    let mut e = Engine::new(config(100_000, 16));
    for id in 0..16u64 {
        e.add(req(id, prompt(id as u32, 13_000), 100)).expect("add");
    }
    let mut last = None;
    for _ in 0..60 {
        let r = e.step();
        if r.num_decode == 16 {
            last = Some(r.duration);
        }
    }
    let t = last.expect("a full decode step").as_secs_f64();
    let rate = 16.0 / t;
    assert!(
        (106.0..=124.0).contains(&rate),
        "16 x 13K decode: {rate:.1} tok/s"
    );
}
