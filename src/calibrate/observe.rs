//! From timed requests to equations of the step-time model.
//!
//! Two kinds of observation, both from the client's own timestamps:
//!
//! - **decode**: a request's mean time per step between its first and last
//!   token, `(e2e - ttft) / (output_tokens - 1)`. Both ends cross the same
//!   network, so the path cancels. Every step in that window decoded this
//!   request and the others whose windows overlap it, read their contexts,
//!   and now and then carried another request's prefill (the requests whose
//!   first token came inside the window). Averaging those over the window
//!   gives the mean step's composition, which is linear in the model's
//!   coefficients.
//! - **ttft**: the time to first token of a request that met an idle
//!   server (nothing else in flight from its start to its first token): its
//!   prefill step(s) plus the path (network, HTTP, tokenisation), a constant
//!   of its own, or minus the path when the server's own TTFT histogram
//!   measured it for the level.

use super::model::{ExpertUse, Terms};

/// One request as the calibration sees it: times in seconds from the run's
/// start, sizes in tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimedRequest {
    /// Index of the level (cell) it ran in, across all runs.
    pub level: usize,
    /// Which input run it belongs to (levels of different runs never overlap
    /// in time).
    pub run: usize,
    /// Start, seconds.
    pub start: f64,
    /// First token, seconds after the start.
    pub ttft: f64,
    /// Last token, seconds after the start.
    pub e2e: f64,
    /// Prompt tokens (as the server counted them), tokens.
    pub input_tokens: u64,
    /// Output tokens, tokens.
    pub output_tokens: u64,
    /// The path's share of the level's TTFT (client mean minus the server's
    /// own `vllm:time_to_first_token_seconds` mean), seconds, when the
    /// server measured it: subtracted, so the fit needs no path term.
    pub path_s: Option<f64>,
}

impl TimedRequest {
    fn first_token(&self) -> f64 {
        self.start + self.ttft
    }
    fn end(&self) -> f64 {
        self.start + self.e2e
    }
    fn decode_len(&self) -> f64 {
        self.e2e - self.ttft
    }
}

/// What an observation measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObservationKind {
    /// Mean step time while the request decoded.
    Decode,
    /// Time to first token on an idle server.
    Ttft,
}

/// One equation: `seconds ≈ terms · coefficients`.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// What is measured.
    pub kind: ObservationKind,
    /// The level (cell) the request ran in.
    pub level: usize,
    /// The measured time, seconds.
    pub seconds: f64,
    /// The model's terms for it.
    pub terms: Terms,
}

/// The equations of every usable request. `budget` is the server's token
/// budget per step (`max_num_batched_tokens`): longer prompts are prefilled
/// in chunks of it.
pub fn observations(requests: &[TimedRequest], budget: u64) -> Vec<Observation> {
    let budget = budget.max(1);
    let prefill_from = prefill_starts(requests);
    let mut out = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let same_run: Vec<(&TimedRequest, f64)> = requests
            .iter()
            .zip(&prefill_from)
            .enumerate()
            .filter(|(j, (s, _))| *j != i && s.run == r.run)
            .map(|(_, (s, &p))| (s, p))
            .collect();
        if let Some(o) = decode_observation(r, &same_run, budget) {
            out.push(o);
        }
        let others: Vec<&TimedRequest> = same_run.iter().map(|(s, _)| *s).collect();
        if let Some(o) = ttft_observation(r, &others, budget) {
            out.push(o);
        }
    }
    out
}

/// When each request's prefill began, seconds: the engine prefills prompts
/// in arrival order, so a prompt's prefill starts at its own start or at the
/// previous first token of its run, whichever is later.
fn prefill_starts(requests: &[TimedRequest]) -> Vec<f64> {
    requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let f = r.first_token();
            let prev = requests
                .iter()
                .enumerate()
                .filter(|(j, q)| *j != i && q.run == r.run)
                .map(|(_, q)| q.first_token())
                .filter(|&t| t < f)
                .fold(f64::NEG_INFINITY, f64::max);
            r.start.max(prev).min(f)
        })
        .collect()
}

fn overlap(a0: f64, a1: f64, b0: f64, b1: f64) -> f64 {
    (a1.min(b1) - a0.max(b0)).max(0.0)
}

/// Sizes of the prefill chunks of a prompt of `tokens` under `budget`.
pub fn chunks(tokens: u64, budget: u64) -> Vec<u64> {
    let mut left = tokens;
    let mut out = Vec::new();
    while left > 0 {
        let c = left.min(budget);
        out.push(c);
        left -= c;
    }
    out
}

/// Token pairs of a prompt computed from scratch: `n (n - 1) / 2`.
pub fn prompt_pairs(tokens: u64) -> f64 {
    let n = tokens as f64;
    n * (n - 1.0) / 2.0
}

/// `others` are the run's other requests, each with the time its prefill
/// began: the share of a prefill that falls inside the window (spread
/// evenly over its time) counts as carried by the window's steps.
fn decode_observation(
    r: &TimedRequest,
    others: &[(&TimedRequest, f64)],
    budget: u64,
) -> Option<Observation> {
    let (w0, w1, len) = (r.first_token(), r.end(), r.decode_len());
    if r.output_tokens < 2 || len.is_nan() || len <= 0.0 {
        return None;
    }
    let steps = (r.output_tokens - 1) as f64;
    let mut decoders = 1.0;
    let mut context = r.input_tokens as f64 + r.output_tokens as f64 / 2.0;
    let mut prefill_tokens = 0.0;
    let mut prefill_pairs = 0.0;
    // (chunk size, share of it inside the window)
    let mut chunk_sizes: Vec<(u64, f64)> = Vec::new();
    for &(s, p0) in others {
        let shared = overlap(w0, w1, s.first_token(), s.end());
        if shared > 0.0 {
            let share = shared / len;
            let mid = (w0.max(s.first_token()) + w1.min(s.end())) / 2.0;
            let progress = ((mid - s.first_token()) / s.decode_len().max(1e-9)).clamp(0.0, 1.0);
            decoders += share;
            context += share * (s.input_tokens as f64 + s.output_tokens as f64 * progress);
        }
        let f = s.first_token();
        let inside = if f > p0 {
            overlap(w0, w1, p0, f) / (f - p0)
        } else if f > w0 && f <= w1 {
            1.0
        } else {
            0.0
        };
        if inside > 0.0 {
            prefill_tokens += inside * s.input_tokens as f64;
            prefill_pairs += inside * prompt_pairs(s.input_tokens);
            chunk_sizes.extend(
                chunks(s.input_tokens, budget)
                    .into_iter()
                    .map(|c| (c, inside)),
            );
        }
    }
    let carried: f64 = chunk_sizes.iter().map(|(_, w)| w).sum();
    let chunk_steps = carried.min(steps);
    let mut experts = vec![ExpertUse {
        weight: (steps - chunk_steps) / steps,
        tokens: decoders,
    }];
    let cap = if carried > 0.0 {
        chunk_steps / carried
    } else {
        0.0
    };
    experts.extend(chunk_sizes.iter().map(|&(c, w)| ExpertUse {
        weight: w * cap / steps,
        tokens: decoders + c as f64,
    }));
    Some(Observation {
        kind: ObservationKind::Decode,
        level: r.level,
        seconds: len / steps,
        terms: Terms {
            steps: 1.0,
            experts,
            context_tokens: context,
            prefill_tokens: prefill_tokens / steps,
            prefill_pairs: prefill_pairs / steps,
            path: 0.0,
            decode_tokens: decoders,
        },
    })
}

fn ttft_observation(
    r: &TimedRequest,
    others: &[&TimedRequest],
    budget: u64,
) -> Option<Observation> {
    let (a, b) = (r.start, r.first_token());
    if r.ttft.is_nan() || r.ttft <= 0.0 || r.input_tokens == 0 {
        return None;
    }
    // A tiny allowance: a request starts as the previous one's last chunk
    // arrives.
    let eps = 1e-4;
    if others
        .iter()
        .any(|s| overlap(a + eps, b, s.start, s.end()) > 0.0)
    {
        return None;
    }
    let sizes = chunks(r.input_tokens, budget);
    let (seconds, path) = match r.path_s {
        Some(p) if r.ttft - p > 0.0 => (r.ttft - p, 0.0),
        _ => (r.ttft, 1.0),
    };
    Some(Observation {
        kind: ObservationKind::Ttft,
        level: r.level,
        seconds,
        terms: Terms {
            steps: sizes.len() as f64,
            experts: sizes
                .iter()
                .map(|&c| ExpertUse {
                    weight: 1.0,
                    tokens: c as f64,
                })
                .collect(),
            context_tokens: 0.0,
            prefill_tokens: r.input_tokens as f64,
            prefill_pairs: prompt_pairs(r.input_tokens),
            path,
            decode_tokens: 0.0,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(level: usize, start: f64, ttft: f64, e2e: f64, input: u64) -> TimedRequest {
        TimedRequest {
            level,
            run: 0,
            start,
            ttft,
            e2e,
            input_tokens: input,
            output_tokens: 11,
            path_s: None,
        }
    }

    #[test]
    fn a_lone_request_gives_one_decode_and_one_ttft_equation() {
        let obs = observations(&[req(0, 0.0, 0.5, 1.5, 300)], 8_192);
        assert_eq!(obs.len(), 2);
        let d = &obs[0];
        assert_eq!(d.kind, ObservationKind::Decode);
        assert!((d.seconds - 0.1).abs() < 1e-12);
        assert!((d.terms.experts[0].tokens - 1.0).abs() < 1e-12);
        assert!((d.terms.context_tokens - 305.5).abs() < 1e-9);
        let t = &obs[1];
        assert_eq!(t.kind, ObservationKind::Ttft);
        assert_eq!(t.terms.path, 1.0);
        assert_eq!(t.terms.prefill_pairs, 300.0 * 299.0 / 2.0);
    }

    #[test]
    fn overlapping_requests_share_steps_and_their_prefills_count() {
        // B's first token arrives inside A's decode window: A's steps carried
        // B's prefill; B's decode window is half inside A's.
        let a = req(0, 0.0, 0.2, 2.2, 100);
        let b = req(0, 1.0, 0.2, 3.2, 100);
        let obs = observations(&[a, b], 8_192);
        let a_dec = obs
            .iter()
            .find(|o| o.kind == ObservationKind::Decode)
            .expect("decode");
        // A: window 0.2..2.2, B decodes 1.2..3.2: an overlap of 1.0 of 2.0.
        assert!((a_dec.terms.experts[0].tokens - 1.5).abs() < 1e-9);
        assert!((a_dec.terms.prefill_tokens - 10.0).abs() < 1e-9); // 100 / 10 steps
                                                                   // B started while A was in flight: no idle TTFT for B, one for A.
        let ttfts = obs
            .iter()
            .filter(|o| o.kind == ObservationKind::Ttft)
            .count();
        assert_eq!(ttfts, 1);
    }

    #[test]
    fn long_prompts_are_chunked_by_the_budget() {
        assert_eq!(chunks(20_000, 8_192), vec![8_192, 8_192, 3_616]);
        let obs = observations(&[req(0, 0.0, 5.0, 6.0, 20_000)], 8_192);
        let t = obs
            .iter()
            .find(|o| o.kind == ObservationKind::Ttft)
            .expect("ttft");
        assert_eq!(t.terms.steps, 3.0);
    }
}
