//! `codendum capacity`'s twin side in virtual time: the twin's own search
//! over a continuous class finds each tier's answer, and the live steps
//! replayed on the twin give the same figures as the twin's own steps.

use std::path::Path;

use codendum::capacity::engine::{Settle, Timing};
use codendum::capacity::predict::{predict, predict_steps, TwinClass};
use codendum::classroom::ClassroomConfig;
use codendum_core::profile::Profile;
use codendum_core::targets::parse_tiers;

/// A two-seat server with the lab's hardware.
fn tiny(dir: &Path) -> Profile {
    let text = "[server]\nserved_model_name = \"qwen3-coder\"\n\
         model = \"Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8\"\nmax_model_len = 65536\n\
         max_num_seqs = 2\nmax_num_batched_tokens = 8192\nblock_size = 16\n\
         kv_cache_tokens = 1362640\nhardware = \"gb10-qwen3-coder-30b-a3b-fp8\"\n\
         enable_prefix_caching = true\n";
    let path = dir.join("tiny.toml");
    std::fs::write(&path, text).expect("profile");
    Profile::load(&path.display().to_string()).expect("loads")
}

fn timing() -> Timing {
    Timing {
        hold_s: 120.0,
        join_over_s: 20.0,
        settle: Settle::Fixed(60.0),
        drain_cap_s: 900.0,
        budget_s: None,
        step_cap: 40,
    }
}

#[test]
fn the_twin_finds_each_tier_and_replays_its_steps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = tiny(dir.path());
    let mut class = ClassroomConfig::new("", None);
    class.seed = 3;
    let tiers = parse_tiers("fast:ttft_p95=5s,slow:ttft_p95=40s").expect("tiers");
    let input = TwinClass {
        profile: &profile,
        class: &class,
        tiers: &tiers,
    };
    let began = std::time::Instant::now();
    let p = predict(&input, 12, &timing()).expect("predicts");
    eprintln!("{:?} in {:.1}s", p.answers, began.elapsed().as_secs_f64());
    for s in &p.steps {
        eprintln!(
            "{} users: ttft p95 {:?} calls {} {:?}",
            s.users,
            s.measured.ttft_p95_s,
            s.measured.requests,
            s.tiers.iter().map(|t| t.outcome).collect::<Vec<_>>()
        );
    }
    eprintln!("plateaus {:?}", p.plateaus);
    assert!(p.answers[0].carries <= p.answers[1].carries);
    let again = predict_steps(&input, &p.steps, &timing()).expect("replays");
    assert_eq!(again.len(), p.steps.len());
}

/// The lab's GB10 with its profile's TTFT ceiling: the twin's answer, its
/// times to plateau and its steps' figures (run by hand with --ignored).
#[test]
#[ignore]
fn gb10_forty_students() {
    let profile = Profile::load("classroom-64k").expect("profile");
    let class = ClassroomConfig::new("", None);
    let tiers =
        parse_tiers("interactive:ttft_p95=30s,speed_p50=5,profile:ttft_p95=75s").expect("tiers");
    let input = TwinClass {
        profile: &profile,
        class: &class,
        tiers: &tiers,
    };
    let t = Timing {
        hold_s: 180.0,
        join_over_s: 30.0,
        ..timing()
    };
    let began = std::time::Instant::now();
    let p = predict(&input, 100, &t).expect("predicts");
    eprintln!("{:?} in {:.1}s", p.answers, began.elapsed().as_secs_f64());
    for s in &p.steps {
        eprintln!(
            "{} users: ttft p50 {:?} p95 {:?} speed {:?} calls {} waiting {:?} {:?}",
            s.users,
            s.measured.ttft_p50_s,
            s.measured.ttft_p95_s,
            s.measured.output_speed_p50_tok_s,
            s.measured.requests,
            s.measured.server.peak_waiting,
            s.tiers.iter().map(|t| t.outcome).collect::<Vec<_>>()
        );
    }
    eprintln!("plateaus {:?}", p.plateaus);
}
