//! `bench --calibration`: the calibration cells for the server at hand, once
//! its seats (the embedded twin's profile) and `max_model_len` are known.

use crate::bench::calibration::{calibration_plan, CalibrationInputs};
use crate::bench::{plan_text, resolve_model, BenchConfig, ServerInfo, SpeedGuess};
use crate::connect::Connection;
use crate::events::{Event, Events};
use codendum_core::error::Error;

/// Fills `config.cells` (and the shapes they use) with the calibration
/// workload; prints its notes, and for the embedded twin its plan (a live
/// server's plan is printed by the preflight).
pub async fn plan_cells(
    config: &mut BenchConfig,
    conn: &Connection,
    events: &Events,
) -> Result<(), Error> {
    let ladder = config.calibration.clone().unwrap_or_default();
    let model = resolve_model(config, conn.client.as_ref()).await?;
    let max_model_len = ServerInfo::max_model_len(conn.client.as_ref(), &model).await;
    let seats = conn.profile.as_ref().map(|p| p.server.max_num_seqs);
    let plan = calibration_plan(&CalibrationInputs {
        ladder,
        seats,
        max_model_len,
        output_tokens: config.output_tokens,
    });
    for note in &plan.notes {
        events.note(format!("calibration: {note}"));
    }
    config.set_cells(plan.cells);
    if conn.is_embedded() {
        events.emit(Event::Plan(plan_text(
            config,
            &model,
            Some(&speed_of(conn)),
        )));
    }
    Ok(())
}

/// The plan's speed guess: the twin's own model when embedded.
fn speed_of(conn: &Connection) -> SpeedGuess {
    let Some(p) = &conn.profile else {
        return SpeedGuess::default();
    };
    let m = codendum_twin::model::PhysicalStepModel::new(&p.hardware);
    let seats = u64::from(p.server.max_num_seqs);
    SpeedGuess {
        single_stream_tok_per_s: m.decode_tokens_per_s(1, 2_000),
        peak_output_tok_per_s: m.decode_tokens_per_s(seats, 2_000),
        prefill_tok_per_s: 1.0 / (p.hardware.prefill.ms_per_token / 1e3).max(1e-6),
    }
}
