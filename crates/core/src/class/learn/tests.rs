use super::*;
use crate::trace::timing::link_dependencies;

/// A call of `session` at `at_s` lasting `dur_s`, with `input` tokens of
/// blocks `ids` (block size 4) and `output` tokens.
fn call(
    session: &str,
    kind: CallKind,
    task: usize,
    (at_s, dur_s): (f64, f64),
    (input, output): (u64, u64),
    ids: Vec<u64>,
) -> TraceCall {
    let mut c = TraceCall::open(at_s, input, output, ids);
    c.session = Some(session.into());
    c.parent = (session == "sub").then(|| "main".to_string());
    c.kind = Some(kind);
    c.task = Some(task);
    c.duration_s = Some(dur_s);
    c
}

/// One session: an exercise with a title, two agent steps, a subagent of
/// two steps, a final answer; a follow-up 30 s later with two calls.
fn session() -> Trace {
    use CallKind::*;
    let mut t = Trace::new(
        4,
        vec![
            call("main", Title, 0, (0.0, 1.0), (10, 6), vec![90, 91, 92]),
            call("main", Agent, 0, (0.0, 2.0), (16, 8), vec![1, 2, 3, 4]),
            // 2 s of tools after the first step; 8 tokens of result added.
            call("sub", Subagent, 0, (4.0, 1.0), (12, 4), vec![50, 51, 52]),
            call(
                "sub",
                Subagent,
                0,
                (5.5, 1.0),
                (20, 40),
                vec![50, 51, 52, 53, 54],
            ),
            call(
                "main",
                Agent,
                0,
                (7.0, 2.0),
                (40, 100),
                vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
            ),
            call(
                "main",
                Agent,
                0,
                (10.0, 1.0),
                (148, 300),
                (1..=37).collect(),
            ),
            // The person waits 30 s, then asks again.
            call(
                "main",
                Agent,
                1,
                (41.0, 1.0),
                (460, 20),
                (1..=115).collect(),
            ),
            call(
                "main",
                Agent,
                1,
                (43.0, 1.0),
                (490, 60),
                (1..=123).collect(),
            ),
        ],
    );
    link_dependencies(&mut t);
    t
}

/// `n` copies of `one`, one after another 100 s apart, each with session
/// ids of its own and blocks of its own after the first two (the system
/// prompt and the tools every session shares).
fn copies(one: &Trace, n: usize) -> Trace {
    let mut t = Trace::new(one.block_size, Vec::new());
    for k in 0..n {
        for c in &one.calls {
            let mut c = c.clone();
            c.at_s += 100.0 * k as f64;
            c.session = c.session.as_ref().map(|s| format!("{s}{k}"));
            c.parent = c.parent.as_ref().map(|s| format!("{s}{k}"));
            for (i, id) in c.hash_ids.iter_mut().enumerate() {
                if i >= 2 {
                    *id += 1_000 * k as u64;
                }
            }
            t.calls.push(c);
        }
    }
    link_dependencies(&mut t);
    t
}

/// `v` repeated `n` times, in order.
fn times(v: &[f64], n: usize) -> crate::class::Shape {
    let mut all: Vec<f64> = v.iter().flat_map(|&x| [x].repeat(n)).collect();
    all.sort_by(f64::total_cmp);
    crate::class::Shape::Samples(all)
}

/// The learned class and report of `t`, defaults the lab's.
fn learn_one(t: &Trace) -> Learned {
    let src = Source {
        name: "s.json".into(),
        trace: t,
        tool_times: None,
    };
    learn(&[src], "mine", &Class::lab())
}

#[test]
fn a_session_s_requests_steps_and_waits_are_measured() {
    let n = MIN_OBSERVATIONS;
    let t = copies(&session(), n);
    let l = learn_one(&t);
    let (c, r) = (&l.class, &l.report);
    assert_eq!(c.name, "mine");
    assert_eq!(
        (r.sessions, r.calls, r.coding_requests, r.subagent_sessions),
        (n, 8 * n, 2 * n, n)
    );
    let a = &c.agent;
    // Requests: 5 steps (two main, two subagent, the answer), then 2.
    assert_eq!(a.calls_per_request.shape, times(&[2.0, 5.0], n));
    assert_eq!(a.subagent_share, 0.5);
    assert_eq!(a.subagent_calls.shape, times(&[2.0], n));
    assert_eq!(a.output_tokens.title.mean(), 6.0);
    assert_eq!(a.output_tokens.final_answer.shape, times(&[60.0, 300.0], n));
    assert_eq!(
        a.output_tokens.agent_step.shape,
        times(&[8.0, 20.0, 100.0], n)
    );
    assert_eq!(a.output_tokens.subagent_step.mean(), 22.0);
    assert_eq!(c.person.pause_s.mean(), 30.0);
    assert_eq!(c.person.follow_ups.mean(), 1.0);
    // Each session whole: its two requests' calls, in order.
    let shapes = a.sessions.as_ref().expect("sessions");
    assert_eq!(shapes.calls, vec![vec![5, 2]; n]);
    assert!(r.learned.iter().any(|(f, _)| f == "agent.sessions"));
    // With each request's main-agent prompts, first and last: 16 to 148
    // tokens over the exercise's five calls, 460 to 490 over the follow-up's.
    let sized = |first, last| RequestPrompt { first, last };
    assert_eq!(
        shapes.prompt_tokens,
        Some(vec![vec![sized(16, 148), sized(460, 490)]; n])
    );
    assert_eq!(shapes.prompt_tokens_at(0, 0, 2), Some(82));
    assert!(r
        .learned
        .iter()
        .any(|(f, why)| f == "agent.sessions" && why.contains("(P50 460 and 490)")));
    assert_eq!(c.person.session_s.as_ref().map(|d| d.mean()), Some(44.0));
    assert_eq!(a.prompt_tokens.as_ref().map(|d| d.mean()), Some(16.0));
    // 148 − (40 + 100) and 490 − (460 + 20); the subagent's 20 − (12 + 4).
    let appended = a.appended_tokens.as_ref().expect("appended");
    assert!(appended.quantile(1.0) >= 10.0, "{appended:?}");
    // No tool kinds: every kind gets the client's gaps, said.
    assert!(a.tool_s.file_tool.count > 0);
    assert!(r
        .learned
        .iter()
        .any(|(f, why)| f == "agent.tool_s.build_test" && why.contains("not told apart")));
    assert!(r.kept.iter().any(|(f, _)| f == "agent.first_test_fails"));
    assert!(r
        .kept
        .iter()
        .any(|(f, why)| f == "agent.compact_at_tokens" && why.contains("no compactions")));
    // What is learned writes and reads back.
    let text = crate::class::write::to_toml(c);
    assert_eq!(
        Class::parse(&text, std::path::Path::new("l.toml")).expect(&text),
        *c
    );
}

#[test]
fn one_session_is_too_few_to_learn_from_and_each_field_says_so() {
    let l = learn_one(&session());
    // Its five main-agent calls, five tool waits and five calls carrying
    // on a conversation are enough for their fields; every other field
    // keeps the lab's value.
    let learned: Vec<&str> = l.report.learned.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        learned,
        [
            "agent.appended_tokens",
            "agent.prompt_tokens_by_call",
            "agent.tool_s.file_tool",
            "agent.tool_s.after_edit",
            "agent.tool_s.build_test",
            "agent.tool_s.bash",
            "agent.tool_s.other_tool",
        ]
    );
    let mut lab = (*Class::lab()).clone();
    lab.name = "mine".into();
    lab.description = l.class.description.clone();
    lab.agent.appended_tokens = l.class.agent.appended_tokens.clone();
    lab.agent.prompt_tokens_by_call = l.class.agent.prompt_tokens_by_call.clone();
    lab.agent.tool_s = l.class.agent.tool_s.clone();
    assert_eq!(l.class, lab);
    let kept = |field: &str| {
        l.report
            .kept
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, why)| why.clone())
            .unwrap_or_else(|| panic!("{field} not kept: {:?}", l.report.kept))
    };
    let needed = format!("{MIN_OBSERVATIONS} needed");
    assert_eq!(
        kept("agent.calls_per_request"),
        format!("2 coding requests seen, {needed}")
    );
    assert_eq!(
        kept("agent.subagent_share"),
        format!("2 coding requests seen, {needed}")
    );
    assert_eq!(
        kept("person.pause_s"),
        format!("1 wait before a follow-up request seen, {needed}")
    );
    assert_eq!(
        kept("agent.sessions"),
        format!(
            "1 session with a model call seen, {needed}; follow-ups and calls per request are drawn apart"
        )
    );
    assert_eq!(
        kept("agent.subagent_calls"),
        format!("1 subagent session seen, {needed}")
    );
    assert_eq!(
        kept("agent.prompt_tokens"),
        format!("1 first prompt of a session seen, {needed}; the simulated project's own")
    );
}

/// `sessions` copies of the session, each ending with a compaction of
/// its conversation at 732 tokens.
fn compacted(sessions: usize) -> Trace {
    let mut one = session();
    one.calls.push(call(
        "main",
        CallKind::Compaction,
        1,
        (45.0, 2.0),
        (732, 90),
        (1..=183).collect(),
    ));
    copies(&one, sessions)
}

#[test]
fn a_compaction_threshold_needs_enough_compactions() {
    // One compaction: the threshold stays the simulated project's own.
    let l = learn_one(&compacted(1));
    assert_eq!(l.class.agent.compact_at_tokens, None);
    assert!(l.report.kept.contains(&(
        "agent.compact_at_tokens".to_string(),
        format!("1 compaction seen, {MIN_OBSERVATIONS} needed; the simulated project's own")
    )));
    assert!(l.report.kept.contains(&(
        "agent.output_tokens.compaction".to_string(),
        format!("1 compaction summary seen, {MIN_OBSERVATIONS} needed")
    )));
    assert_eq!(
        l.class.agent.output_tokens.compaction,
        Class::lab().agent.output_tokens.compaction
    );
    // Enough: learned.
    let n = MIN_OBSERVATIONS;
    let l = learn_one(&compacted(n));
    assert_eq!(
        l.class.agent.compact_at_tokens.map(|d| d.shape),
        Some(times(&[732.0], n))
    );
    assert_eq!(
        l.class.agent.output_tokens.compaction.shape,
        times(&[90.0], n)
    );
    assert!(l
        .report
        .learned
        .iter()
        .any(|(f, why)| f == "agent.compact_at_tokens"
            && why.ends_with(&format!("from {n} compactions"))));
}

#[test]
fn measured_tool_kinds_win_and_a_source_without_times_keeps_the_defaults() {
    let t = copies(&session(), MIN_OBSERVATIONS);
    let learn_with = |measured: Vec<f64>| {
        let kinds = BTreeMap::from([("build_test".to_string(), measured)]);
        let src = Source {
            name: "cap".into(),
            trace: &t,
            tool_times: Some(kinds),
        };
        learn(&[src], "x", &Class::lab())
    };
    let l = learn_with([4.0, 9.0].repeat(3));
    assert_eq!(l.class.agent.tool_s.build_test.mean(), 6.5);
    assert!(l
        .report
        .learned
        .iter()
        .any(|(f, why)| f == "agent.tool_s.build_test" && why.contains("from 6 measured")));
    // Two measured times are too few: the client's gaps (15 of them) stand
    // in, as for the kinds not measured.
    let l = learn_with(vec![4.0, 9.0]);
    assert_eq!(
        l.class.agent.tool_s.build_test,
        l.class.agent.tool_s.file_tool
    );
    // An open-loop trace: sizes only.
    let open = Trace::new(16, vec![TraceCall::open(0.0, 100, 10, vec![1; 7])]);
    let l = learn(
        &[Source {
            name: "mooncake.jsonl".into(),
            trace: &open,
            tool_times: None,
        }],
        "y",
        &Class::lab(),
    );
    assert_eq!(l.class.agent.tool_s, Class::lab().agent.tool_s);
    assert!(l
        .report
        .kept
        .iter()
        .any(|(f, why)| f == "agent.tool_s.file_tool" && why.contains("no tool times")));
    assert_eq!(l.report.sessions, 0);
}

#[test]
fn a_recorded_wait_reason_decides_whose_wait_it_is() {
    // The same session, its recording now saying why each call waited: the
    // subagent's second step waited for a person (a permission asked), the
    // follow-up's second call for a tool.
    let n = MIN_OBSERVATIONS;
    let mut t = copies(&session(), n);
    for c in &mut t.calls {
        if let Some(d) = c.after.as_mut() {
            d.reason = WaitReason::Tool;
        }
    }
    // Copy k's calls are 8k to 8k + 7.
    let mark = |t: &mut Trace, at: usize, reason: WaitReason, gap_s: Option<f64>| {
        for k in 0..n {
            let d = t.calls[8 * k + at].after.as_mut().expect("linked");
            d.reason = reason;
            d.gap_s = gap_s.unwrap_or(d.gap_s);
        }
    };
    mark(&mut t, 3, WaitReason::Person, Some(12.0));
    mark(&mut t, 6, WaitReason::Person, None);
    let l = learn_one(&t);
    let pauses = &l.class.person.pause_s;
    // The follow-up's 30 s and the permission's 12 s are the person's.
    assert_eq!(pauses.shape, times(&[12.0, 30.0], n));
    // The follow-up's first call, had it said "tool", would be a tool wait:
    // the reason wins over the position.
    mark(&mut t, 6, WaitReason::Tool, None);
    let l = learn_one(&t);
    assert_eq!(l.class.person.pause_s.shape, times(&[12.0], n));
    assert!(l.class.agent.tool_s.bash.quantile(1.0) >= 30.0);
}

#[test]
fn prompts_by_call_are_learned_in_buckets_and_sparse_buckets_merge() {
    // Three sessions of 40 main-agent calls, prompts 1,000 + 100 a call
    // (+ 10 per session), so each bucket's values are known.
    let obs: Vec<(u32, f64)> = (0..3)
        .flat_map(|s| {
            (0..40u32).map(move |k| (k, 1_000.0 + 100.0 * f64::from(k) + 10.0 * f64::from(s)))
        })
        .collect();
    let (buckets, line) = by_call(&obs, "t").expect("buckets");
    let starts: Vec<u32> = buckets.iter().map(|b| b.from_call).collect();
    // Calls 0, 1 and 2–3 hold 3, 3 and 6 observations: one bucket.
    assert_eq!(starts, vec![0, 4, 8, 16, 32]);
    assert_eq!(buckets[0].tokens.count, 12);
    assert_eq!(
        (buckets[0].tokens.min(), buckets[0].tokens.max()),
        (1_000.0, 1_320.0)
    );
    assert_eq!(
        (buckets[4].tokens.min(), buckets[4].tokens.max()),
        (4_200.0, 4_920.0)
    );
    assert!(
        line.contains("from 120 main-agent calls in 5 buckets"),
        "{line}"
    );
    // A session's rank reads each place's size; past the last bucket, the last.
    let mut a = Class::lab().agent.clone();
    a.prompt_tokens_by_call = buckets;
    assert_eq!(a.prompt_tokens_at(0, 0.0), Some(1_000.0));
    assert_eq!(a.prompt_tokens_at(9, 1.0), Some(2_520.0));
    assert_eq!(a.prompt_tokens_at(500, 1.0), Some(4_920.0));
    assert!(by_call(&[], "t").is_none());
}

#[test]
fn a_learned_class_holds_prompts_by_call_and_the_shared_head_and_reads_back() {
    let n = MIN_OBSERVATIONS;
    let t = copies(&session(), n);
    let src = Source {
        name: "two.json".into(),
        trace: &t,
        tool_times: None,
    };
    let l = learn(&[src], "two", &Class::lab());
    let a = &l.class.agent;
    // Two blocks of 4 tokens shared by every first prompt (16 tokens).
    assert_eq!(
        a.shared_prompt_tokens.as_ref().map(|d| d.shape.clone()),
        Some(times(&[8.0], n))
    );
    // Five main-agent calls a session: calls 0 and 1 (n each) in one
    // bucket, calls 2–3 (2n) and 4 (n) in the next.
    let buckets: Vec<(u32, u64)> = a
        .prompt_tokens_by_call
        .iter()
        .map(|b| (b.from_call, b.tokens.count))
        .collect();
    let n64 = n as u64;
    assert_eq!(buckets, vec![(0, 2 * n64), (2, 3 * n64)]);
    assert!(l
        .report
        .learned
        .iter()
        .any(|(f, why)| f == "agent.prompt_tokens_by_call" && why.contains("0+ ")));
    let text = crate::class::write::to_toml(&l.class);
    assert!(text.contains("schema_version = 3"), "{text}");
    assert!(text.contains("[[agent.prompt_tokens_by_call]]"), "{text}");
    let back = Class::parse(&text, std::path::Path::new("two.toml")).expect(&text);
    assert_eq!(back, l.class);
    // A version-1 file may not hold them.
    let old = text.replace("schema_version = 3", "schema_version = 1");
    let e = Class::parse(&old, std::path::Path::new("old.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs schema_version 2"), "{e}");
}

#[test]
fn a_source_without_prompt_sizes_learns_rows_without_them_and_says_so() {
    let mut t = copies(&session(), MIN_OBSERVATIONS);
    for c in &mut t.calls {
        c.input_tokens = 0;
    }
    let l = learn_one(&t);
    let shapes = l.class.agent.sessions.as_ref().expect("sessions");
    assert_eq!(shapes.calls, vec![vec![5, 2]; MIN_OBSERVATIONS]);
    assert_eq!(shapes.prompt_tokens, None);
    assert!(l
        .report
        .kept
        .iter()
        .any(|(f, why)| f == "agent.sessions.first_prompt_tokens"
            && why.contains("no prompt token sizes")));
    let text = crate::class::write::to_toml(&l.class);
    assert!(!text.contains("first_prompt_tokens"), "{text}");
}
