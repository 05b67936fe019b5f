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

#[test]
fn a_session_s_requests_steps_and_waits_are_measured() {
    let t = session();
    let src = Source {
        name: "s.json".into(),
        trace: &t,
        tool_times: None,
    };
    let l = learn(&[src], "mine", &Class::lab());
    let (c, r) = (&l.class, &l.report);
    assert_eq!(c.name, "mine");
    assert_eq!(
        (r.sessions, r.calls, r.coding_requests, r.subagent_sessions),
        (1, 8, 2, 1)
    );
    let a = &c.agent;
    // Requests: 5 steps (two main, two subagent, the answer), then 2.
    assert_eq!(
        a.calls_per_request.shape,
        crate::class::Shape::Samples(vec![2.0, 5.0])
    );
    assert_eq!(a.subagent_share, 0.5);
    assert_eq!(
        a.subagent_calls.shape,
        crate::class::Shape::Samples(vec![2.0])
    );
    assert_eq!(a.output_tokens.title.mean(), 6.0);
    assert_eq!(
        a.output_tokens.final_answer.shape,
        crate::class::Shape::Samples(vec![60.0, 300.0])
    );
    assert_eq!(
        a.output_tokens.agent_step.shape,
        crate::class::Shape::Samples(vec![8.0, 20.0, 100.0])
    );
    assert_eq!(a.output_tokens.subagent_step.mean(), 22.0);
    assert_eq!(c.person.pause_s.mean(), 30.0);
    assert_eq!(c.person.follow_ups.mean(), 1.0);
    // The session whole: its two requests' calls, in order.
    let shapes = a.sessions.as_ref().expect("sessions");
    assert_eq!(shapes.calls, vec![vec![5, 2]]);
    assert!(r.learned.iter().any(|(f, _)| f == "agent.sessions"));
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
fn measured_tool_kinds_win_and_a_source_without_times_keeps_the_defaults() {
    let t = session();
    let times = BTreeMap::from([("build_test".to_string(), vec![4.0, 9.0])]);
    let l = learn(
        &[Source {
            name: "cap".into(),
            trace: &t,
            tool_times: Some(times),
        }],
        "x",
        &Class::lab(),
    );
    assert_eq!(l.class.agent.tool_s.build_test.mean(), 6.5);
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
    let mut t = session();
    for c in &mut t.calls {
        if let Some(d) = c.after.as_mut() {
            d.reason = WaitReason::Tool;
        }
    }
    t.calls[3].after.as_mut().expect("linked").reason = WaitReason::Person;
    t.calls[3].after.as_mut().expect("linked").gap_s = 12.0;
    t.calls[6].after.as_mut().expect("linked").reason = WaitReason::Person;
    let learn_one = |t: &Trace| {
        let src = Source {
            name: "s.json".into(),
            trace: t,
            tool_times: None,
        };
        learn(&[src], "mine", &Class::lab())
    };
    let l = learn_one(&t);
    let pauses = &l.class.person.pause_s;
    // The follow-up's 30 s and the permission's 12 s are the person's.
    assert_eq!(pauses.shape, crate::class::Shape::Samples(vec![12.0, 30.0]));
    // The follow-up's first call, had it said "tool", would be a tool wait:
    // the reason wins over the position.
    t.calls[6].after.as_mut().expect("linked").reason = WaitReason::Tool;
    let l = learn_one(&t);
    assert_eq!(
        l.class.person.pause_s.shape,
        crate::class::Shape::Samples(vec![12.0])
    );
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
    // The session twice, the second's prompts on blocks of its own after
    // the first two (its system prompt and tools).
    let one = session();
    let mut two = session();
    for c in &mut two.calls {
        c.session = c.session.as_ref().map(|s| format!("{s}2"));
        c.parent = c.parent.as_ref().map(|s| format!("{s}2"));
        for (i, id) in c.hash_ids.iter_mut().enumerate() {
            if i >= 2 {
                *id += 1_000;
            }
        }
    }
    let mut t = one.clone();
    t.calls.extend(two.calls);
    link_dependencies(&mut t);
    let src = Source {
        name: "two.json".into(),
        trace: &t,
        tool_times: None,
    };
    let l = learn(&[src], "two", &Class::lab());
    let a = &l.class.agent;
    // Two blocks of 4 tokens shared by both first prompts (16 tokens).
    assert_eq!(
        a.shared_prompt_tokens.as_ref().map(|d| d.shape.clone()),
        Some(crate::class::Shape::Samples(vec![8.0, 8.0]))
    );
    // Five main-agent calls a session: one bucket (10 calls, from call 0).
    assert_eq!(a.prompt_tokens_by_call.len(), 1);
    assert_eq!(a.prompt_tokens_by_call[0].tokens.count, 10);
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
