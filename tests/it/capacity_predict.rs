//! `codendum capacity`'s twin side in virtual time: the twin's own search
//! over a continuous class finds each tier's answer, and the live steps
//! replayed on the twin give the same figures as the twin's own steps;
//! the whole search against a server its prediction got wrong lands
//! within one step of the truth found by holding each class size by hand.

use std::path::Path;
use std::time::Duration;

use codendum::capacity::engine::{Settle, Timing};
use codendum::capacity::on_twin::capacity_on_twin;
use codendum::capacity::predict::{hold_on_twin, predict, predict_steps, TwinClass, WATCH_S};
use codendum::capacity::settings::{plan_prediction, CapacitySettings, TiersFrom};
use codendum::classroom::ClassroomConfig;
use codendum_core::bound::Outcome;
use codendum_core::profile::Profile;
use codendum_core::targets::parse_tiers;
use codendum_testkit::profiles::write_gb10_with_seats;

/// A two-seat server with the lab's hardware.
fn tiny(dir: &Path) -> Profile {
    seats(dir, 2)
}

/// A server of `seats` seats with the lab's hardware.
fn seats(dir: &Path, seats: u32) -> Profile {
    let path = write_gb10_with_seats(dir, &format!("seats-{seats}.toml"), seats);
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
        max_holds: 1,
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
        replay: None,
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
    // Steps are judged as soon as the calls still running cannot change
    // them (a call streaming has its TTFT known), not when the last call
    // of the window ends: some were judged with calls still running, and
    // every outcome is the one the window's final figures (re-measured
    // once all its calls ended) give; the last step's calls are cut off
    // when the class ends, so it is left out.
    assert!(
        p.steps.iter().any(|s| s.unfinished > 0),
        "no step judged before its calls ended"
    );
    for s in &p.steps[..p.steps.len() - 1] {
        for t in &s.tiers {
            let steering = t.checks.iter().filter(|c| c.steers).map(|c| c.outcome);
            assert_eq!(t.outcome, Outcome::worst(steering), "step {}", s.index);
        }
    }
    let again = predict_steps(&input, &p.steps, &timing()).expect("replays");
    assert_eq!(again.len(), p.steps.len());
}

/// The search predicts with a four-seat profile and measures a two-seat
/// server: the prediction is wrong, the search brackets away from it, and
/// each tier's answer is within one step (the search's resolution) of the
/// truth found by holding class sizes by hand, for every class seed from 1
/// to 10: held by hand, the size one step below the answer does not miss
/// and the size one step above its upper end (a range when sizes were too
/// close to call) does not meet. The search's server
/// time is recorded beside the plan's estimate for a server that carries a
/// fifth fewer.
///
/// Both sides judge a class in its steady state over windows long enough
/// for a P95: the search's steps come after minutes of the class running,
/// its students spread over their sessions (some pausing, some between
/// students), so each size held by hand settles for the twin's own watch
/// ([`WATCH_S`]) before its window instead of being judged in its opening
/// minute, when every student sends the exercise at once. Windows of ten
/// minutes hold a hundred calls or more; the two-seat server answers about
/// twenty in two minutes, whose P95 is their slowest call.
#[test]
fn a_wrong_prediction_still_lands_within_one_step_of_the_truth() {
    // Two class seeds in CI, 7 among them (a step judged right after a
    // decrease was once off by two there); all ten in the ignored test
    // below.
    wrong_predictions_land_within_one_step(&[3, 7]);
}

#[test]
#[ignore = "ten class seeds take about 3.5 min of CPU; run with: cargo test --test it -- --ignored ten_seeds"]
fn ten_seeds_of_a_wrong_prediction_land_within_one_step_of_the_truth() {
    wrong_predictions_land_within_one_step(&(1..=10).collect::<Vec<u64>>());
}

fn wrong_predictions_land_within_one_step(seeds: &[u64]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, guess) = (tiny(dir.path()), seats(dir.path(), 4));
    // The seeds run side by side, each on a paused runtime of its own.
    let off: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = seeds
            .iter()
            .map(|&seed| {
                let (server, guess) = (&server, &guess);
                s.spawn(move || lands_within_one_step(seed, server, guess))
            })
            .collect();
        runs.into_iter()
            .flat_map(|r| r.join().expect("the search of this class seed ran"))
            .collect()
    });
    assert!(off.is_empty(), "{}", off.join("\n"));
}

/// The search of class seed `seed` predicted with `guess` against the twin
/// of `server`, each tier's answer beside the truth by hand; what is off
/// by more than one step.
fn lands_within_one_step(seed: u64, server: &Profile, guess: &Profile) -> Vec<String> {
    let mut class = ClassroomConfig::new("", None);
    class.seed = seed;
    let tiers = parse_tiers("fast:ttft_p95=5s,slow:ttft_p95=40s").expect("tiers");
    let settings = CapacitySettings {
        class: class.clone(),
        replay: None,
        tiers: tiers.clone(),
        tiers_from: TiersFrom::Tiers,
        left_out: Vec::new(),
        profile: guess.clone(),
        max_users: 16,
        hold: Duration::from_secs(600),
        join_over: Duration::from_secs(20),
        settle: None,
        resolution: None,
        budget: None,
    };
    let timeout = Duration::from_secs(900);
    let found = capacity_on_twin(&settings, server, timeout).expect("searches");
    let answers = found.twin.answers();
    let predicted: Vec<u32> = found.predicted.answers.iter().map(|a| a.carries).collect();
    let steps: Vec<u32> = found.twin.run.steps.iter().map(|s| s.users).collect();
    eprintln!("seed {seed}: predicted {predicted:?}, found {answers:?} in steps {steps:?}");
    for s in &found.twin.run.steps {
        eprintln!(
            "seed {seed} step {}: {} students, settled {:.0} s, {} windows, ttft p95 {:?} s over {} calls, {:?}",
            s.index,
            s.users,
            s.settle_s,
            s.holds,
            s.measured.ttft_p95_s,
            s.measured.requests,
            s.tiers.iter().map(|t| t.outcome).collect::<Vec<_>>()
        );
    }
    let mut off = Vec::new();
    if found.predicted.answers[1].carries <= answers[1].0 {
        off.push(format!(
            "seed {seed}: the four-seat prediction {predicted:?} is not above the two-seat answers {answers:?}"
        ));
    }
    let input = TwinClass {
        profile: server,
        class: &class,
        replay: None,
        tiers: &tiers,
    };
    // The sizes one step beyond the search's range are held by hand, past
    // their opening burst, and judged as the search judges (held longer
    // while too close to call): one step below its answer must not miss,
    // one step above its upper end must not meet. More students only make
    // a ceiling harder to meet, so the truth (the size below the first
    // miss, with the sizes too close to call) is then within one step of
    // the answer.
    let by_hand = Timing {
        settle: Settle::Fixed(WATCH_S),
        ..found.timing.clone()
    };
    let resolution = found.bounds.resolution;
    let mut held: std::collections::BTreeMap<u32, Vec<Outcome>> = Default::default();
    let mut hold = |users: u32| -> Vec<Outcome> {
        held.entry(users)
            .or_insert_with(|| {
                let step = hold_on_twin(&input, users, &by_hand).expect("holds");
                eprintln!(
                    "seed {seed}: {users} students by hand: {:?} (ttft p95 {:?} s over {} calls, {} windows)",
                    step.tiers.iter().map(|t| t.outcome).collect::<Vec<_>>(),
                    step.measured.ttft_p95_s,
                    step.measured.requests,
                    step.holds
                );
                step.tiers.iter().map(|t| t.outcome).collect()
            })
            .clone()
    };
    for (i, tier) in tiers.iter().enumerate() {
        let (answer, upper) = answers[i];
        let below = answer.saturating_sub(resolution);
        if below >= 1 && hold(below)[i] == Outcome::Missed {
            off.push(format!(
                "seed {seed}: {}: the search found {answer}..={upper}, but {below} students missed by hand (resolution {resolution})",
                tier.name
            ));
        }
        let above = upper + resolution + 1;
        if above <= settings.max_users && hold(above)[i] == Outcome::Met {
            off.push(format!(
                "seed {seed}: {}: the search found {answer}..={upper}, but {above} students met by hand (resolution {resolution})",
                tier.name
            ));
        }
    }
    let plan = plan_prediction(
        &found.predicted,
        &settings.search(&found.predicted, found.bounds),
        &found.timing,
    );
    eprintln!(
        "seed {seed}: server time {:.0} s, estimated {:.0} s ({:.0} s if it carries a fifth fewer)",
        found.twin.run.server_time_s, plan.server_time_s, plan.server_time_if_off_s
    );
    if found.twin.run.server_time_s <= 0.0 {
        off.push(format!("seed {seed}: no server time"));
    }
    off
}

/// The lab's GB10 with its profile's TTFT ceiling: the twin's answer, its
/// times to plateau and its steps' figures (run by hand with --ignored).
#[test]
#[ignore = "a measurement printed for docs/capacity-search.md, minutes of CPU; run by hand with --ignored --nocapture"]
fn gb10_forty_students() {
    let profile = Profile::load("classroom-64k").expect("profile");
    let class = ClassroomConfig::new("", None);
    let tiers =
        parse_tiers("interactive:ttft_p95=30s,speed_p50=5,profile:ttft_p95=75s").expect("tiers");
    let input = TwinClass {
        profile: &profile,
        class: &class,
        replay: None,
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

/// The twin the search predicts with answers as the class's agent says: a
/// class whose agent answers every coding request in one call makes one
/// agent call per coding request on the twin, where the default agent
/// makes many.
#[test]
fn the_twin_answers_with_the_class_agent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = seats(dir.path(), 4);
    let tiers = parse_tiers("slow:ttft_p95=40s").expect("tiers");
    // Agent calls started in a ten-minute window of four students, and
    // coding requests completed in it.
    let counts = |class: &ClassroomConfig| {
        let input = TwinClass {
            profile: &profile,
            class,
            replay: None,
            tiers: &tiers,
        };
        let long = Timing {
            hold_s: 600.0,
            ..timing()
        };
        let step = hold_on_twin(&input, 4, &long).expect("holds");
        let m = &step.measured;
        let agent = m
            .requests_by_kind
            .get(&codendum_core::results::classroom_records::CallKind::Agent)
            .copied()
            .unwrap_or(0);
        (agent, m.coding_requests)
    };
    let mut class = ClassroomConfig::new("", None);
    class.seed = 3;
    let lab = counts(&class);
    let mut one_call = (*class.class).clone();
    one_call.agent.calls_per_request =
        codendum_core::class::Distribution::value("one call a request", 1.0);
    one_call.agent.subagent_share = 0.0;
    class.class = std::sync::Arc::new(one_call);
    let single = counts(&class);
    eprintln!("agent calls, coding requests: lab {lab:?}, one-call class {single:?}");
    // One call a request: a request under way at either end of the window
    // adds at most one call per student.
    assert!(single.1 >= 10, "{single:?}");
    assert!(single.0 <= single.1 + 2 * 4, "{single:?}");
    assert!(lab.1 >= 1 && lab.0 >= 3 * lab.1, "{lab:?}");
}
