//! How long the rest of a calibration run will take, from the cells this
//! server has already run (not from the twin's GB10): a speed guess read off
//! the measured levels, scaled by how far the same guess was off on them.

use super::config::{BenchConfig, Cell};
use super::preview::{about_duration, estimate_level, SpeedGuess};
use codendum_core::results::LevelSummary;

/// The server's speeds as the finished levels show them; `None` before a
/// level with one request at a time has finished.
pub fn measured_speed(levels: &[LevelSummary]) -> Option<SpeedGuess> {
    let alone: Vec<&LevelSummary> = levels
        .iter()
        .filter(|l| l.concurrency == 1 && l.successes > 0)
        .collect();
    let single = alone
        .iter()
        .filter_map(|l| l.tpot_mean_s)
        .filter(|t| *t > 0.0)
        .map(|t| 1.0 / t)
        .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))))?;
    let prefill = prefill_rate(&alone);
    let peak = levels
        .iter()
        .map(|l| l.output_tok_per_s)
        .fold(single, f64::max);
    Some(SpeedGuess {
        single_stream_tok_per_s: single,
        peak_output_tok_per_s: peak,
        prefill_tok_per_s: if prefill > 0.0 { prefill } else { 1_000.0 },
    })
}

/// Prompt tokens per second of prefill: the slope between the two longest
/// prompts timed alone (the fixed cost of a step and the path cancel), else
/// the longest prompt over its TTFT; 0 when none is timed.
fn prefill_rate(alone: &[&LevelSummary]) -> f64 {
    let mut points: Vec<(f64, f64)> = alone
        .iter()
        .filter_map(|l| Some((l.mean_input_tokens?, l.ttft_p50_s.filter(|t| *t > 0.0)?)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    match points.as_slice() {
        [.., (n0, t0), (n1, t1)] if n1 > n0 && t1 > t0 => (n1 - n0) / (t1 - t0),
        [.., (n, t)] => n / t,
        [] => 0.0,
    }
}

/// Estimated seconds for the cells still to run: the measured speed guess
/// applied to them, times the ratio of measured to estimated time on the
/// cells already run. `None` before the first cell at one request at a time.
pub fn remaining_seconds(
    config: &BenchConfig,
    done: &[LevelSummary],
    cells_done: &[Cell],
    cells_left: &[Cell],
) -> Option<f64> {
    let speed = measured_speed(done)?;
    let est = |c: &Cell| {
        estimate_level(
            config,
            c.shape.input_tokens(),
            c.concurrency,
            c.requests,
            &speed,
        )
        .as_secs_f64()
    };
    let estimated_done: f64 = cells_done.iter().map(est).sum();
    let measured_done: f64 = done.iter().map(|l| l.wall_time_s).sum();
    let scale = if estimated_done > 0.0 && measured_done > 0.0 {
        (measured_done / estimated_done).clamp(0.25, 4.0)
    } else {
        1.0
    };
    Some(cells_left.iter().map(est).sum::<f64>() * scale)
}

/// The progress line after a calibration cell: how many are done, the time
/// so far, and what is left (`unknown` until a cell alone has run).
pub fn progress_line(
    config: &BenchConfig,
    done: &[LevelSummary],
    cells: &[Cell],
    elapsed_s: f64,
) -> String {
    let n = done.len().min(cells.len());
    let left = remaining_seconds(config, done, &cells[..n], &cells[n..]).map_or_else(
        || "unknown until a cell at N=1 has run".to_string(),
        |s| {
            format!(
                "{} left (from this server's cells so far)",
                about_duration(s)
            )
        },
    );
    format!(
        "calibration: {n} of {} cells done in {}; {left}",
        cells.len(),
        took(elapsed_s)
    )
}

/// A measured duration for people: `42 s`, `10 min 15 s`.
pub fn took(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    if s < 60 {
        format!("{s} s")
    } else {
        format!("{} min {} s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codendum_core::shape::Shape;

    fn level(n: u32, input: f64, tpot: f64, ttft: f64, out: f64, wall: f64) -> LevelSummary {
        LevelSummary {
            concurrency: n,
            successes: 4,
            mean_input_tokens: Some(input),
            tpot_mean_s: Some(tpot),
            ttft_p50_s: Some(ttft),
            output_tok_per_s: out,
            wall_time_s: wall,
            ..LevelSummary::default()
        }
    }

    fn cell(tokens: u32, n: u32, requests: u64) -> Cell {
        Cell {
            shape: Shape::Sized(tokens),
            concurrency: n,
            requests,
        }
    }

    #[test]
    fn nothing_is_estimated_before_a_cell_alone_has_run() {
        let config = BenchConfig::default();
        let cells = [cell(256, 4, 8), cell(256, 1, 8)];
        let line = progress_line(
            &config,
            &[level(4, 256.0, 0.1, 1.0, 30.0, 40.0)],
            &cells,
            40.0,
        );
        assert!(line.contains("1 of 2 cells done in 40 s"), "{line}");
        assert!(line.contains("unknown"), "{line}");
    }

    #[test]
    fn prefill_speed_is_the_slope_between_the_longest_prompts_alone() {
        // 1,024 tokens in 0.5 s and 2,048 in 0.8 s: 0.2 s of fixed cost,
        // 1,024 tokens per 0.3 s.
        let a = level(1, 1_024.0, 0.03, 0.5, 30.0, 10.0);
        let b = level(1, 2_048.0, 0.03, 0.8, 30.0, 10.0);
        let r = prefill_rate(&[&a, &b]);
        assert!((r - 1_024.0 / 0.3).abs() < 1e-6, "{r}");
        assert!((prefill_rate(&[&a]) - 2_048.0).abs() < 1e-9);
    }

    #[test]
    fn a_slow_server_gets_a_long_estimate() {
        let config = BenchConfig::default();
        // A CPU: 5 tok/s alone, prefill 200 tok/s; 8 requests of 128 tokens
        // one at a time took 210 s.
        let done = [level(1, 256.0, 0.2, 1.3, 4.9, 210.0)];
        let cells = [cell(256, 1, 8), cell(256, 1, 8)];
        let left = remaining_seconds(&config, &done, &cells[..1], &cells[1..]).expect("known");
        assert!((left - 210.0).abs() < 1.0, "{left}");
        assert_eq!(took(615.0), "10 min 15 s");
    }
}
