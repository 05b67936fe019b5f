//! Rendering a calibration: the profile TOML, its hardware TOML (each value
//! with a comment saying where it came from) and the human summary.

use std::fmt::Write as _;

use super::fit::{ParamFit, Status};
use super::Calibration;

/// How many experts per token the hardware TOML states: only the share
/// matters to the model, so a fine numerator keeps the fitted share exact
/// to a fraction of a percent.
const EXPERTS_PER_TOKEN: u32 = 64;

fn uncertainty(p: &ParamFit, unit: f64) -> String {
    match p.status {
        Status::Fixed => format!(
            "fixed: {}",
            p.note.as_deref().unwrap_or("not identified by these runs")
        ),
        Status::AtZero => "fitted: at 0 (the best non-negative value)".to_string(),
        Status::Fitted => match p.bootstrap_sd.or(p.std_err) {
            Some(sd) => format!("fitted: ± {:.2e} (bootstrap SD)", sd * unit),
            None => "fitted".to_string(),
        },
    }
}

/// The hardware TOML of the fitted model.
pub fn hardware_toml(c: &Calibration) -> String {
    let f = &c.fit;
    let p = |name: &str| {
        f.params
            .iter()
            .find(|p| p.name == name)
            .expect("every param")
    };
    let bw = c.memory_bandwidth_gb_s;
    let coef = f.coefficients;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# Step-time model of {} fitted by `codendum calibrate`",
        c.server.model.value
    );
    let _ = writeln!(t, "# from {}.", sources_line(c));
    let _ = writeln!(
        t,
        "# Residual: {:.1} % RMS over {} observations ({} decode, {} TTFT).",
        f.rms_relative_error * 100.0,
        f.observations,
        f.decode_observations,
        f.observations - f.decode_observations
    );
    let _ = writeln!(
        t,
        "# A timing measures seconds, not bytes: memory_bandwidth_gb_s is a normalisation"
    );
    let _ = writeln!(
        t,
        "# and the byte figures below are seconds × that bandwidth.\n"
    );
    let _ = writeln!(t, "[hardware]");
    let _ = writeln!(
        t,
        "name = {:?}",
        format!(
            "fitted: {}",
            c.sources.first().map_or("", |s| s.server.as_str())
        )
    );
    let _ = writeln!(t, "# normalisation (--memory-bandwidth-gb-s)");
    let _ = writeln!(t, "memory_bandwidth_gb_s = {bw:?}");
    let _ = writeln!(
        t,
        "# fixed cost per step plus the weights every step reads (one number to a timing); {}",
        uncertainty(p("step_s"), 1e3)
    );
    let _ = writeln!(t, "step_fixed_ms = {:?}\n", round_sig(coef.step_s * 1e3));
    let _ = writeln!(t, "[model]");
    let _ = writeln!(t, "name = {:?}", c.server.model.value);
    let _ = writeln!(t, "# folded into step_fixed_ms");
    let _ = writeln!(t, "dense_weight_gb = 0.0");
    let _ = writeln!(
        t,
        "# all experts' weights at the bandwidth above; {}",
        uncertainty(p("expert_s"), bw)
    );
    let _ = writeln!(t, "expert_weight_gb = {:?}", round_sig(coef.expert_s * bw));
    match f.expert_share {
        Some(q) => {
            let total = (f64::from(EXPERTS_PER_TOKEN) / q).round().max(1.0) as u32;
            let _ = writeln!(
                t,
                "# fitted expert share per token {q:.5}; only the ratio matters"
            );
            let _ = writeln!(
                t,
                "experts_total = {total}\nexperts_per_token = {EXPERTS_PER_TOKEN}"
            );
        }
        None => {
            let _ = writeln!(t, "# dense: no expert-coverage term");
            let _ = writeln!(t, "experts_total = 1\nexperts_per_token = 0");
        }
    }
    let _ = writeln!(
        t,
        "# bytes per context token at the bandwidth above; {}",
        uncertainty(p("context_s"), bw * 1e9)
    );
    let _ = writeln!(
        t,
        "kv_bytes_per_token = {}\n",
        (coef.context_s * bw * 1e9).round().max(0.0) as u64
    );
    let _ = writeln!(t, "[prefill]");
    let _ = writeln!(t, "# {}", uncertainty(p("prefill_token_s"), 1e3));
    let _ = writeln!(
        t,
        "ms_per_token = {:?}",
        round_sig(coef.prefill_token_s * 1e3)
    );
    let _ = writeln!(t, "# {}", uncertainty(p("prefill_pair_s"), 1e9));
    let _ = writeln!(
        t,
        "ns_per_token_pair = {:?}\n",
        round_sig(coef.prefill_pair_s * 1e9)
    );
    let _ = writeln!(t, "[compute]");
    let _ = writeln!(
        t,
        "# compute per decoded sequence in a step; {}",
        uncertainty(p("decode_token_s"), 1e3)
    );
    let _ = writeln!(
        t,
        "ms_per_decode_token = {:?}",
        round_sig(coef.decode_token_s * 1e3)
    );
    t
}

/// Six significant digits, so the TOML reads well and round-trips.
fn round_sig(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return 0.0;
    }
    let digits = 6 - 1 - v.abs().log10().floor() as i32;
    let m = 10f64.powi(digits);
    (v * m).round() / m
}

fn sources_line(c: &Calibration) -> String {
    c.sources
        .iter()
        .map(|s| format!("{} ({} requests)", s.folder.display(), s.requests))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The profile TOML naming the hardware TOML `hardware/<name>.toml`
/// (without `[targets]`: [`super::targets`] writes those).
pub fn profile_toml(c: &Calibration) -> String {
    let s = &c.server;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# Profile written by `codendum calibrate` from {}.",
        sources_line(c)
    );
    if c.from_twin {
        let _ = writeln!(t, "# Source: the embedded twin, not a real server.");
    }
    let _ = writeln!(
        t,
        "# The step-time model is in hardware/{}.toml; each value says where it came from.\n",
        c.name
    );
    let _ = writeln!(t, "[server]");
    let line = |t: &mut String, key: &str, value: String, source: &str| {
        let _ = writeln!(t, "# {source}\n{key} = {value}");
    };
    line(
        &mut t,
        "served_model_name",
        format!("{:?}", s.served_model_name.value),
        &s.served_model_name.source,
    );
    line(
        &mut t,
        "model",
        format!("{:?}", s.model.value),
        &s.model.source,
    );
    line(
        &mut t,
        "max_model_len",
        s.max_model_len.value.to_string(),
        &s.max_model_len.source,
    );
    line(
        &mut t,
        "max_num_seqs",
        s.max_num_seqs.value.to_string(),
        &s.max_num_seqs.source,
    );
    line(
        &mut t,
        "max_num_batched_tokens",
        s.max_num_batched_tokens.value.to_string(),
        &s.max_num_batched_tokens.source,
    );
    line(
        &mut t,
        "block_size",
        s.block_size.value.to_string(),
        &s.block_size.source,
    );
    line(
        &mut t,
        "kv_cache_tokens",
        s.kv_cache_tokens.value.to_string(),
        &s.kv_cache_tokens.source,
    );
    line(
        &mut t,
        "enable_prefix_caching",
        s.enable_prefix_caching.value.to_string(),
        &s.enable_prefix_caching.source,
    );
    line(
        &mut t,
        "hardware",
        format!("{:?}", c.name),
        "fitted: see the hardware TOML",
    );
    let r = &c.region;
    let _ = writeln!(
        t,
        "\n# What the calibration runs measured: plan, bench and classroom warn beyond it."
    );
    let _ = writeln!(t, "[calibration]");
    let _ = writeln!(
        t,
        "# longest context (prompt + output), tokens\nmax_context_tokens = {}",
        r.max_context_tokens
    );
    let _ = writeln!(t, "# most requests in flight\nmax_batch = {}", r.max_batch);
    let _ = writeln!(
        t,
        "# prompt lengths, tokens\nmin_prompt_tokens = {}\nmax_prompt_tokens = {}",
        r.min_prompt_tokens, r.max_prompt_tokens
    );
    t
}

/// The summary for stderr: parameters, then levels.
pub fn summary_text(c: &Calibration) -> String {
    let mut t = String::new();
    let f = &c.fit;
    let _ = writeln!(
        t,
        "Fit: {} observations, residual {:.1} % RMS; expert share {}",
        f.observations,
        f.rms_relative_error * 100.0,
        f.expert_share
            .map_or("none (dense)".to_string(), |q| format!("{q:.4}"))
    );
    for p in &f.params {
        let _ = writeln!(
            t,
            "  {:<16} {:>12.4e}  {}",
            p.name,
            p.value,
            uncertainty(p, 1.0)
        );
    }
    let _ = writeln!(
        t,
        "{:<14} {:>5} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}",
        "level", "req", "tpot", "fitted", "held out", "ttft", "fitted", "held out"
    );
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1}", v * 1e3));
    let s = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    for l in &c.levels {
        let _ = writeln!(
            t,
            "{:<14} {:>5} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}",
            l.level,
            l.requests,
            ms(Some(l.tpot_measured_s)),
            ms(Some(l.tpot_fitted_s)),
            ms(l.tpot_held_out_s),
            s(l.ttft_measured_s),
            s(l.ttft_fitted_s),
            s(l.ttft_held_out_s)
        );
    }
    let _ = writeln!(t, "TPOT in ms, TTFT (requests on an idle server) in s.");
    let r = &c.region;
    let _ = writeln!(
        t,
        "Calibrated region: contexts up to {} tokens, up to {} in flight, prompts of {} to {} tokens.",
        codendum_core::profile::region::grouped(r.max_context_tokens),
        r.max_batch,
        codendum_core::profile::region::grouped(r.min_prompt_tokens),
        codendum_core::profile::region::grouped(r.max_prompt_tokens)
    );
    for n in &c.notes {
        let _ = writeln!(t, "note: {n}");
    }
    t
}
