//! The fit on synthetic observations with known coefficients.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::fit::{fit, FitOptions, Status};
use super::model::{Coefficients, ExpertUse, Terms};
use super::observe::{prompt_pairs, Observation, ObservationKind};

fn truth() -> Coefficients {
    Coefficients {
        step_s: 0.023,
        expert_s: 0.116,
        context_s: 1.97e-7,
        prefill_token_s: 3.0e-4,
        prefill_pair_s: 1.4e-8,
        path_s: 0.004,
        decode_token_s: 0.0,
    }
}

const SHARE: f64 = 1.0 / 16.0;

/// Decode windows at batches 1..=16 and contexts 300..17,000, some with a
/// prefill inside; idle TTFTs for six prompt sizes; 2 % multiplicative noise.
fn synthetic(c: &Coefficients, share: Option<f64>, batches: &[f64], seed: u64) -> Vec<Observation> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut obs = Vec::new();
    let mut push = |terms: Terms, kind, level, rng: &mut ChaCha8Rng| {
        let noise = 1.0 + rng.gen_range(-0.02..0.02);
        obs.push(Observation {
            kind,
            level,
            seconds: c.predict(&terms, share) * noise,
            terms,
        });
    };
    for (level, &d) in batches.iter().enumerate() {
        for ctx in [300.0, 4_200.0, 17_000.0] {
            for k in 0..4 {
                let prefill = if k % 2 == 0 { 0.0 } else { 512.0 };
                let steps = 127.0;
                let chunk_share = if prefill > 0.0 { 1.0 / steps } else { 0.0 };
                let terms = Terms {
                    steps: 1.0,
                    experts: vec![
                        ExpertUse {
                            weight: 1.0 - chunk_share,
                            tokens: d,
                        },
                        ExpertUse {
                            weight: chunk_share,
                            tokens: d + prefill,
                        },
                    ],
                    context_tokens: d * ctx,
                    prefill_tokens: prefill / steps,
                    prefill_pairs: prompt_pairs(prefill as u64) / steps,
                    path: 0.0,
                    decode_tokens: d,
                };
                push(terms, ObservationKind::Decode, level, &mut rng);
            }
        }
    }
    for (i, p) in [256u64, 1_024, 2_048, 4_096, 8_192].into_iter().enumerate() {
        for _ in 0..5 {
            let terms = Terms {
                steps: 1.0,
                experts: vec![ExpertUse {
                    weight: 1.0,
                    tokens: p as f64,
                }],
                context_tokens: 0.0,
                prefill_tokens: p as f64,
                prefill_pairs: prompt_pairs(p),
                path: 1.0,
                decode_tokens: 0.0,
            };
            push(terms, ObservationKind::Ttft, batches.len() + i, &mut rng);
        }
    }
    obs
}

#[test]
fn known_coefficients_are_recovered_within_their_uncertainty() {
    let c = truth();
    let obs = synthetic(&c, Some(SHARE), &[1.0, 2.0, 4.0, 8.0, 12.0, 16.0], 11);
    let f = fit(
        &obs,
        FitOptions {
            bootstrap_rounds: 200,
            seed: 5,
        },
    )
    .expect("fits");
    let share = f.expert_share.expect("an MoE is found");
    assert!((share / SHARE - 1.0).abs() < 0.25, "share {share}");
    for (p, want) in f.params.iter().zip(c.to_array()) {
        if p.name == "decode_token_s" {
            // No compute term in the truth: at most a trace of one.
            assert!(
                p.value * 16.0 < 0.05 * c.step_s,
                "decode_token_s {:e}",
                p.value
            );
            continue;
        }
        assert_eq!(p.status, Status::Fitted, "{}", p.name);
        let sd = p.bootstrap_sd.expect("bootstrap");
        assert!(
            sd > 0.0 && sd < want.abs(),
            "{}: sd {sd:e} against {want:e}",
            p.name
        );
        // Within three bootstrap SDs, or 10 %: the share and the expert
        // term trade off a little against each other.
        let off = (p.value - want).abs();
        assert!(
            off <= 3.0 * sd || off <= 0.1 * want,
            "{}: {:e} vs {want:e} (sd {sd:e})",
            p.name,
            p.value
        );
    }
    assert!(f.rms_relative_error < 0.03, "{}", f.rms_relative_error);
}

fn fit_without_bootstrap(obs: &[Observation]) -> super::fit::Fit {
    let options = FitOptions {
        bootstrap_rounds: 0,
        seed: 1,
    };
    fit(obs, options).expect("fits")
}

#[test]
fn a_dense_server_is_fitted_as_dense() {
    let mut c = truth();
    c.expert_s = 0.0;
    let obs = synthetic(&c, None, &[1.0, 4.0, 16.0], 3);
    let f = fit_without_bootstrap(&obs);
    assert_eq!(f.expert_share, None);
    assert!((f.coefficients.step_s / c.step_s - 1.0).abs() < 0.05);
}

#[test]
fn a_compute_bound_dense_server_is_dense_with_a_compute_term() {
    // A CPU: every decoded sequence costs 4 ms of compute, more than the
    // step's fixed cost at 8 in flight. The expert curve could stand in for
    // that near-linear growth; it must not.
    let mut c = truth();
    c.expert_s = 0.0;
    c.decode_token_s = 0.004;
    let obs = synthetic(&c, None, &[1.0, 2.0, 4.0, 8.0], 9);
    let f = fit_without_bootstrap(&obs);
    assert_eq!(f.expert_share, None, "{:?}", f.notes);
    let got = f.coefficients.decode_token_s;
    assert!(
        (got / c.decode_token_s - 1.0).abs() < 0.05,
        "decode_token_s {got:e}"
    );
    assert!((f.coefficients.context_s / c.context_s - 1.0).abs() < 0.1);
}

#[test]
fn one_batch_size_fixes_the_expert_term_and_says_so() {
    let obs = synthetic(&truth(), Some(SHARE), &[1.0], 2);
    let f = fit(&obs, FitOptions::default()).expect("fits what it can");
    let expert = f
        .params
        .iter()
        .find(|p| p.name == "expert_s")
        .expect("param");
    assert_eq!(expert.status, Status::Fixed);
    assert!(expert
        .note
        .as_deref()
        .unwrap_or("")
        .contains("cannot be told apart"));
    assert!(
        f.notes.iter().any(|n| n.contains("one batch size")),
        "{:?}",
        f.notes
    );
}

#[test]
fn no_decode_timing_is_an_error() {
    let obs: Vec<Observation> = synthetic(&truth(), Some(SHARE), &[1.0], 2)
        .into_iter()
        .filter(|o| o.kind == ObservationKind::Ttft)
        .collect();
    let e = fit(&obs, FitOptions::default()).expect_err("nothing times a step");
    assert!(e.contains("two output tokens"), "{e}");
}
