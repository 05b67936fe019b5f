//! What a bench run will do against the server at hand: its cells, and the
//! shapes that fit the server's context. Made once the server is known
//! ([`super::ServerFacts`]), from what was asked ([`BenchConfig`]), and
//! kept apart from both: the calibration's cells are chosen here, for this
//! server, not written back into the config.

use super::calibration::{calibration_plan, CalibrationInputs};
use super::config::{fit_shapes, BenchConfig, Cell, Load};
use super::ServerFacts;
use codendum_core::results::SkippedShape;
use codendum_core::shape::Shape;

/// A bench run's cells against one server.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchPlan {
    /// The closed-loop cells in run order (each shape at each level, the
    /// calibration's, or the ones given); an open-loop run's rate levels
    /// are chosen as it goes.
    pub cells: Vec<Cell>,
    /// The shapes the run uses, in run order (those that do not fit are
    /// among them, and in [`Self::skipped`]).
    pub shapes: Vec<Shape>,
    /// The shapes whose prompt and output fit the server's context.
    pub fit: Vec<Shape>,
    /// The closed-loop levels the run uses.
    pub levels: Vec<u32>,
    /// The shapes that cannot fit, with why.
    pub skipped: Vec<SkippedShape>,
    /// What was changed to fit the server (a calibration's clamped
    /// prompts, a guessed ladder).
    pub notes: Vec<String>,
}

impl BenchPlan {
    /// The plan of `config` against the server `facts` describe.
    pub fn new(config: &BenchConfig, facts: &ServerFacts) -> BenchPlan {
        let (cells, notes) = match &config.load {
            Load::Calibration { ladder_given } => {
                let plan = calibration_plan(&CalibrationInputs {
                    ladder: if *ladder_given {
                        config.concurrency.clone()
                    } else {
                        Vec::new()
                    },
                    seats: facts.seats(),
                    max_model_len: facts.max_model_len,
                    output_tokens: config.output_tokens,
                });
                (Some(plan.cells), plan.notes)
            }
            Load::Cells(cells) => (Some(cells.clone()), Vec::new()),
            Load::Closed | Load::Rates { .. } | Load::Sweep { .. } | Load::FindRate { .. } => {
                (None, Vec::new())
            }
        };
        let (shapes, levels) = match &cells {
            Some(cells) => {
                let mut shapes = Vec::new();
                for c in cells {
                    if !shapes.contains(&c.shape) {
                        shapes.push(c.shape);
                    }
                }
                let mut levels: Vec<u32> = cells.iter().map(|c| c.concurrency).collect();
                levels.sort_unstable();
                levels.dedup();
                (shapes, levels)
            }
            None => (config.shapes.clone(), config.concurrency.clone()),
        };
        let (fit, skipped) = fit_shapes(&shapes, config.output_tokens, facts.max_model_len);
        let cells = cells.unwrap_or_else(|| config.grid());
        BenchPlan {
            cells,
            shapes,
            fit,
            levels,
            skipped,
            notes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(max_model_len: Option<u64>, seats: Option<u32>) -> ServerFacts {
        let mut f = ServerFacts {
            model: "m".into(),
            max_model_len,
            ..ServerFacts::default()
        };
        f.stated_engine = seats.map(|s| codendum_core::results::EngineSettings {
            max_num_seqs: s,
            max_num_batched_tokens: 8_192,
            enable_prefix_caching: true,
        });
        f
    }

    #[test]
    fn the_grid_keeps_the_asked_shapes_and_sets_aside_what_does_not_fit() {
        let config = BenchConfig::default();
        let plan = BenchPlan::new(&config, &facts(Some(8_192), None));
        assert_eq!(plan.shapes, Shape::ALL.to_vec());
        assert_eq!(plan.fit, vec![Shape::Short]);
        assert_eq!(plan.skipped.len(), 1);
        assert_eq!(plan.levels, config.concurrency);
        assert_eq!(plan.cells, config.grid());
    }

    #[test]
    fn calibration_cells_are_chosen_for_the_server_not_written_into_the_config() {
        let config = BenchConfig {
            load: Load::Calibration {
                ladder_given: false,
            },
            output_tokens: 128,
            ..BenchConfig::default()
        };
        let plan = BenchPlan::new(&config, &facts(Some(65_536), Some(16)));
        assert!(plan.cells.iter().any(|c| c.concurrency == 16), "{plan:?}");
        assert!(plan.cells.iter().all(|c| c.concurrency <= 16), "{plan:?}");
        assert_eq!(*plan.levels.last().unwrap_or(&0), 16);
        assert!(plan.skipped.is_empty());
        assert_eq!(config.concurrency, BenchConfig::default().concurrency);
    }
}
