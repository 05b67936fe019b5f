//! The calibration workload (`codendum bench --calibration`): cells chosen
//! so that `codendum calibrate` can tell the step-time model's terms apart.
//!
//! | cells | what they separate |
//! |---|---|
//! | 256-token prompts at N = 1, 2, 4, … up to the seats | fixed cost per step, per-sequence cost and the expert-coverage curve of an MoE |
//! | prompts of 4,096, 8,192, 16,384 and 32,768 tokens (clamped to `max_model_len`) at N = 1, a quarter, half and all of the seats, each cell one wave of N requests, cells whose N × prompt exceeds [`CONTEXT_CELL_TOKENS`] left out or cut to fit | the per-context-token cost of decoding where a class reads (its prompts reach ~14,000 tokens), and any batch-dependent cost at those contexts |
//! | cold prompts of 1,024 and 2,048 tokens at N = 1 (with the N = 1 cells above: five sizes) | prefill per token and per token pair |
//!
//! Every prompt is unique (the bench's tag starts it), so nothing is served
//! from the prefix cache. A prompt that cannot fit `max_model_len` with its
//! output is shrunk to the largest that fits, with a note.

use super::config::Cell;
use codendum_core::shape::Shape;

/// Output tokens per request of a calibration run (unless
/// `--output-tokens` is given): enough decode steps per request to time
/// them, few enough that the long prompts do not spend minutes decoding.
pub const CALIBRATION_OUTPUT_TOKENS: u32 = 128;
/// Prompt of the decode ladder, tokens.
pub const DECODE_PROMPT_TOKENS: u32 = 256;
/// Prompts of the context cells, tokens (each clamped to `max_model_len`).
pub const CONTEXT_PROMPT_TOKENS: [u32; 4] = [4_096, 8_192, 16_384, 32_768];
/// Most prompt tokens one context cell sends (batch × prompt), tokens: the
/// prefill of a wave is most of a context cell's time, and this keeps a
/// GB10-class server's calibration run under ten minutes.
pub const CONTEXT_CELL_TOKENS: u64 = 98_304;
/// Cold prompts timed one at a time besides the context cells', tokens.
pub const COLD_PROMPT_TOKENS: [u32; 2] = [1_024, 2_048];
/// Batch sizes of the decode ladder when the server's seats are not known.
pub const DEFAULT_LADDER: [u32; 5] = [1, 2, 4, 8, 16];
/// Room kept below `max_model_len` for the chat template, tokens.
const TEMPLATE_ROOM: u64 = 64;

/// The cells of a calibration run and what was changed to fit the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalibrationPlan {
    /// The cells, in run order.
    pub cells: Vec<Cell>,
    /// Notes for the plan printout (clamped prompts, a guessed ladder).
    pub notes: Vec<String>,
}

/// What the plan is built from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CalibrationInputs {
    /// The decode ladder (`--concurrency`); empty: powers of two up to the
    /// seats, or [`DEFAULT_LADDER`].
    pub ladder: Vec<u32>,
    /// The server's seats (`max_num_seqs`), when known (the twin's profile).
    pub seats: Option<u32>,
    /// The server's `max_model_len`, tokens, when it states one.
    pub max_model_len: Option<u64>,
    /// Output tokens per request.
    pub output_tokens: u32,
}

/// Builds the calibration cells.
pub fn calibration_plan(inputs: &CalibrationInputs) -> CalibrationPlan {
    let mut notes = Vec::new();
    let ladder = ladder(inputs, &mut notes);
    let top = ladder.iter().copied().max().unwrap_or(1);
    let mut cells = Vec::new();
    let mut push = |tokens: u32, n: u32, requests: u64, notes: &mut Vec<String>| {
        let Some(shape) = fitted_shape(tokens, inputs, notes) else {
            return;
        };
        if !cells
            .iter()
            .any(|c: &Cell| c.shape == shape && c.concurrency == n)
        {
            cells.push(Cell {
                shape,
                concurrency: n,
                requests,
            });
        }
    };
    for &n in &ladder {
        push(
            DECODE_PROMPT_TOKENS,
            n,
            (2 * u64::from(n)).max(6),
            &mut notes,
        );
    }
    for tokens in COLD_PROMPT_TOKENS {
        push(tokens, 1, 4, &mut notes);
    }
    for tokens in CONTEXT_PROMPT_TOKENS {
        // The batch cap follows the prompt as sent (clamped), so a clamped
        // size is not run again at the batches of a longer one.
        let Some(sent) = fitted_shape(tokens, inputs, &mut Vec::new()) else {
            continue;
        };
        let sent = u32::try_from(sent.input_tokens()).unwrap_or(tokens);
        for n in context_batches(top, sent) {
            let requests = if n == 1 { 2 } else { u64::from(n) };
            push(tokens, n, requests, &mut notes);
        }
    }
    notes.dedup();
    CalibrationPlan { cells, notes }
}

/// Batch sizes of the context cells at a prompt of `tokens`: 1, a quarter,
/// half and all of `seats`, each cut to [`CONTEXT_CELL_TOKENS`] / `tokens`,
/// without repeats.
fn context_batches(seats: u32, tokens: u32) -> Vec<u32> {
    let cap = u32::try_from(CONTEXT_CELL_TOKENS / u64::from(tokens.max(1)))
        .unwrap_or(u32::MAX)
        .max(1);
    let mut out: Vec<u32> = Vec::new();
    for n in [1, seats / 4, seats / 2, seats] {
        let n = n.clamp(1, cap);
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

fn ladder(inputs: &CalibrationInputs, notes: &mut Vec<String>) -> Vec<u32> {
    if !inputs.ladder.is_empty() {
        return inputs.ladder.clone();
    }
    match inputs.seats {
        Some(seats) => {
            let mut l: Vec<u32> = std::iter::successors(Some(1u32), |n| n.checked_mul(2))
                .take_while(|&n| n < seats)
                .collect();
            l.push(seats.max(1));
            l
        }
        None => {
            notes.push(format!(
                "the server's max_num_seqs is not known: the decode ladder is {}; pass \
                 --concurrency to reach its seats",
                DEFAULT_LADDER.map(|n| n.to_string()).join(", ")
            ));
            DEFAULT_LADDER.to_vec()
        }
    }
}

/// The shape for a prompt of `tokens`, shrunk to fit `max_model_len`; `None`
/// when not even a short prompt fits.
fn fitted_shape(tokens: u32, inputs: &CalibrationInputs, notes: &mut Vec<String>) -> Option<Shape> {
    let Some(limit) = inputs.max_model_len else {
        return Some(Shape::Sized(tokens));
    };
    let room = limit.saturating_sub(u64::from(inputs.output_tokens) + TEMPLATE_ROOM);
    if u64::from(tokens) <= room {
        return Some(Shape::Sized(tokens));
    }
    if room < 64 {
        notes.push(format!(
            "prompts of {tokens} tokens left out: max_model_len {limit} leaves no room"
        ));
        return None;
    }
    let clamped = u32::try_from(room).unwrap_or(u32::MAX);
    notes.push(format!(
        "prompts of {tokens} tokens clamped to {clamped}: max_model_len is {limit} with {} output tokens",
        inputs.output_tokens
    ));
    Some(Shape::Sized(clamped))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(seats: Option<u32>, limit: Option<u64>) -> CalibrationInputs {
        CalibrationInputs {
            ladder: Vec::new(),
            seats,
            max_model_len: limit,
            output_tokens: CALIBRATION_OUTPUT_TOKENS,
        }
    }

    #[test]
    fn ladder_climbs_to_the_seats_and_every_term_has_cells() {
        let plan = calibration_plan(&inputs(Some(24), Some(65_536)));
        let decode: Vec<u32> = plan
            .cells
            .iter()
            .filter(|c| c.shape == Shape::Sized(DECODE_PROMPT_TOKENS))
            .map(|c| c.concurrency)
            .collect();
        assert_eq!(decode, vec![1, 2, 4, 8, 16, 24]);
        let at = |tokens: u32| -> Vec<u32> {
            plan.cells
                .iter()
                .filter(|c| c.shape == Shape::Sized(tokens))
                .map(|c| c.concurrency)
                .collect()
        };
        // A quarter, half and all of 24 seats, cut to 96K prompt tokens a cell.
        assert_eq!(at(4_096), vec![1, 6, 12, 24]);
        assert_eq!(at(8_192), vec![1, 6, 12]);
        assert_eq!(at(16_384), vec![1, 6]);
        assert_eq!(at(32_768), vec![1, 3]);
        let cold: Vec<u64> = plan
            .cells
            .iter()
            .filter(|c| c.concurrency == 1)
            .map(|c| c.shape.input_tokens())
            .collect();
        assert!(cold.contains(&32_768) && cold.contains(&1_024), "{cold:?}");
        assert!(plan.notes.is_empty(), "{:?}", plan.notes);
    }

    #[test]
    fn long_prompts_are_clamped_to_max_model_len_with_a_note() {
        let plan = calibration_plan(&inputs(Some(8), Some(2_048)));
        let largest = plan.cells.iter().map(|c| c.shape.input_tokens()).max();
        assert_eq!(largest, Some(2_048 - 128 - 64));
        assert!(
            plan.notes.iter().any(|n| n.contains("clamped")),
            "{:?}",
            plan.notes
        );
        // 4096 … 32768 all clamp to the same size: one cell, not four, and
        // no batch beyond the seats' cells of that size.
        let at_clamped: Vec<u32> = plan
            .cells
            .iter()
            .filter(|c| c.shape.input_tokens() == 1_856)
            .map(|c| c.concurrency)
            .collect();
        assert_eq!(at_clamped, vec![1, 2, 4, 8]);
        let at_largest = plan
            .cells
            .iter()
            .filter(|c| c.shape.input_tokens() == 1_856 && c.concurrency == 1)
            .count();
        assert_eq!(at_largest, 1);
    }

    #[test]
    fn unknown_seats_use_the_default_ladder_and_say_so() {
        let plan = calibration_plan(&inputs(None, None));
        assert!(plan.notes.iter().any(|n| n.contains("--concurrency")));
        assert!(plan.cells.iter().any(|c| c.concurrency == 16));
    }
}
