//! What the runs' design can tell the fit: the terms it cannot separate
//! (fixed before fitting, with the reason), and the decode windows that
//! time others' prefill more than decoding (left out of the second pass).

use super::model::{Coefficients, PARAMS};
use super::observe::{Observation, ObservationKind};

/// Most of a decode window's modelled time may be others' prefill, as a
/// fraction, for the window to be kept in the second pass.
const MAX_PREFILL_SHARE: f64 = 0.05;

/// The observations without the decode windows whose modelled time is more
/// than [`MAX_PREFILL_SHARE`] prefill, when idle-server TTFTs time the
/// prefill and at least half of the decode windows stay.
pub(crate) fn prefill_light(
    obs: &[Observation],
    c: &Coefficients,
    share: Option<f64>,
) -> Vec<Observation> {
    let has_ttft = obs.iter().any(|o| o.kind == ObservationKind::Ttft);
    let prefill_share = |o: &Observation| {
        let total = c.predict(&o.terms, share).max(1e-12);
        let p =
            c.prefill_token_s * o.terms.prefill_tokens + c.prefill_pair_s * o.terms.prefill_pairs;
        p / total
    };
    let kept: Vec<Observation> = obs
        .iter()
        .filter(|o| o.kind == ObservationKind::Ttft || prefill_share(o) <= MAX_PREFILL_SHARE)
        .cloned()
        .collect();
    let decode = |v: &[Observation]| {
        v.iter()
            .filter(|o| o.kind == ObservationKind::Decode)
            .count()
    };
    if has_ttft && 4 * decode(&kept) >= decode(obs) {
        kept
    } else {
        obs.to_vec()
    }
}

/// Terms the runs' design cannot separate, fixed before fitting.
pub(crate) fn structural_fixes(
    obs: &[Observation],
) -> ([Option<(f64, String)>; PARAMS], Vec<String>) {
    let mut fixed: [Option<(f64, String)>; PARAMS] = Default::default();
    let mut sizes: Vec<u64> = obs
        .iter()
        .filter(|o| o.kind == ObservationKind::Ttft)
        .map(|o| o.terms.prefill_tokens.round() as u64)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let path_measured = obs.iter().any(|o| o.kind == ObservationKind::Ttft)
        && obs
            .iter()
            .all(|o| o.kind == ObservationKind::Decode || o.terms.path == 0.0);
    let prefill_in_decode = obs
        .iter()
        .any(|o| o.terms.prefill_tokens > 0.0 && o.terms.path == 0.0);
    match sizes.len() {
        0 => {
            fixed[5] = Some((
                0.0,
                "no request met an idle server: the path to the first token is not measured".into(),
            ));
            if !prefill_in_decode {
                fixed[3] = Some((0.0, "no prefill is timed in these runs".into()));
                fixed[4] = Some((0.0, "no prefill is timed in these runs".into()));
            }
        }
        1 => {
            fixed[4] = Some((0.0, "one prompt size on an idle server: the per-pair cost cannot be told from the per-token cost".into()));
            fixed[5] = Some((
                0.0,
                "one prompt size on an idle server: the path cannot be told from the prefill"
                    .into(),
            ));
        }
        2 => {
            fixed[4] = Some((
                0.0,
                "two prompt sizes on an idle server: the per-pair cost needs a third".into(),
            ));
        }
        _ => {}
    }
    if path_measured {
        fixed[5] = Some((
            0.0,
            "the server's own TTFT histogram measured the path: subtracted from each TTFT".into(),
        ));
    }
    let batches: Vec<f64> = obs
        .iter()
        .filter(|o| o.kind == ObservationKind::Decode)
        .map(|o| o.terms.experts.first().map_or(1.0, |e| e.tokens))
        .collect();
    let lo = batches.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = batches.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut notes = Vec::new();
    if hi - lo < 0.5 {
        let why = "one batch size: the fixed cost per step and the per-sequence cost cannot be told apart; the expert term is fixed at 0 (all in step_s)";
        fixed[1] = Some((0.0, why.into()));
        fixed[6] = Some((
            0.0,
            "one batch size: a compute cost per decoded sequence cannot be told from the fixed cost".into(),
        ));
        notes.push(why.into());
    }
    (fixed, notes)
}
