use super::*;

#[test]
fn parses_the_documented_example() {
    let plan = FaultPlan::parse(
        "drop@0.05,malformed@2%,no-done@0.02,stall=30s@0.01,status=503@0.1:retry-after=2,\
         status=429@every:10,slow-headers=2s@#5..8,huge-chunk=1MiB@#3,bad-utf8@0.01:after=2,seed=9",
    )
    .unwrap();
    assert_eq!(plan.seed(), 9);
    let t = plan.terms();
    assert_eq!(t.len(), 9);
    assert_eq!(t[1].when, When::Rate(0.02));
    assert_eq!(t[3].fault, Fault::Stall(Duration::from_secs(30)));
    assert_eq!(
        t[4].fault,
        Fault::Status {
            code: 503,
            retry_after: Some(Duration::from_secs(2))
        }
    );
    assert_eq!(t[5].when, When::Every(10));
    assert_eq!(t[6].when, When::Range(5, 8));
    assert_eq!(t[7].fault, Fault::HugeChunk(1 << 20));
    assert_eq!(t[7].when, When::Range(3, 3));
    assert_eq!(t[8].after, Some(2));
}

#[test]
fn errors_name_the_bad_term() {
    for (spec, culprit) in [
        ("drop@0.1,explode@0.1", "explode@0.1"),
        ("drop", "drop"),
        ("drop@1.5", "drop@1.5"),
        ("status=200@0.1", "status=200@0.1"),
        ("status=503@every:0", "status=503@every:0"),
        ("stall@0.1", "stall@0.1"),
        ("stall=soon@0.1", "stall=soon@0.1"),
        ("huge-chunk=1GiB@0.1", "huge-chunk=1GiB@0.1"),
        ("drop@0.1:retry-after=2", "drop@0.1:retry-after=2"),
        ("status=500@#8..3", "status=500@#8..3"),
        ("drop=3@0.1", "drop=3@0.1"),
        ("seed=x", "seed=x"),
    ] {
        let e = FaultPlan::parse(spec).unwrap_err().to_string();
        assert!(e.contains("--faults") && e.contains(culprit), "{spec}: {e}");
    }
    assert!(FaultPlan::parse(" , ").is_err());
}

#[test]
fn decisions_are_seeded_and_schedules_exact() {
    let plan = FaultPlan::parse("status=503@every:3,drop@0.5").unwrap();
    let again = FaultPlan::parse("status=503@every:3,drop@0.5").unwrap();
    let other = FaultPlan::parse("status=503@every:3,drop@0.5")
        .unwrap()
        .with_seed(1);
    let a: Vec<_> = (1..=300).map(|n| plan.decide(n)).collect();
    let b: Vec<_> = (1..=300).map(|n| again.decide(n)).collect();
    let c: Vec<_> = (1..=300).map(|n| other.decide(n)).collect();
    assert_eq!(a, b);
    assert_ne!(a, c);
    let status = a
        .iter()
        .flatten()
        .filter(|i| matches!(i.fault, Fault::Status { .. }))
        .count();
    assert_eq!(status, 100);
    let drops = a
        .iter()
        .flatten()
        .filter(|i| i.fault == Fault::Drop)
        .count();
    assert!((70..=130).contains(&drops), "{drops} of 200 at rate 0.5");
    assert!(a
        .iter()
        .flatten()
        .all(|i| (1..=4).contains(&i.after_events)));
    assert_eq!(plan.next_request(), plan.decide(1));
    assert_eq!(plan.requests_seen(), 1);
}

fn ctx(chat: bool) -> StreamContext {
    StreamContext {
        head: ChunkHead {
            id: "chatcmpl-1".into(),
            created: 1,
            model: "m".into(),
        },
        chat,
        clock: Clock::scaled(1000.0),
    }
}

fn twin_like_stream() -> Vec<Result<Bytes, Infallible>> {
    let c = ctx(true);
    let mut events = vec![chunks::sse(&c.head.chat_role(None))];
    for t in ["a", "b", "c"] {
        events.push(chunks::sse(
            &c.head.chat_delta(&Piece::Text(t.into()), None),
        ));
    }
    events.push(chunks::sse(&c.head.chat_finish("length", None)));
    events.push(chunks::sse("[DONE]"));
    events.into_iter().map(|e| Ok(Bytes::from(e))).collect()
}

async fn run(fault: Fault, after: u32) -> (Vec<u8>, bool) {
    let inj = Injection {
        request: 1,
        fault,
        after_events: after,
    };
    let s = inject_stream(futures::stream::iter(twin_like_stream()), &inj, ctx(true));
    let items: Vec<_> = s.collect().await;
    let broken = items.iter().any(|i| i.is_err());
    let body = items
        .into_iter()
        .flatten()
        .flat_map(|b| b.to_vec())
        .collect();
    (body, broken)
}

fn outcome(body: &[u8]) -> codendum_core::openai::CallOutcome {
    let mut m = codendum_core::openai::stream::StreamMeter::new(0.0, false);
    m.on_bytes(body, 1.0);
    m.on_end(1.0);
    m.finish(200, 1.0)
}

fn kind(body: &[u8]) -> Option<&'static str> {
    outcome(body).error.map(|e| e.kind.as_str())
}

#[tokio::test]
async fn stream_faults_give_the_expected_client_errors() {
    let (body, broken) = run(Fault::Drop, 2).await;
    assert!(broken && !body.ends_with(b"[DONE]\n\n"));
    let (body, _) = run(Fault::Malformed, 2).await;
    assert_eq!(kind(&body), Some("bad_json"));
    let (body, _) = run(Fault::BadUtf8, 1).await;
    assert_eq!(kind(&body), Some("bad_json"));
    // Later than the stream is long: strikes before the finish chunk.
    let (body, broken) = run(Fault::NoDone, 99).await;
    assert!(!broken);
    assert_eq!(kind(&body), Some("incomplete"));
    let (body, _) = run(Fault::HugeChunk(100_000), 3).await;
    let o = outcome(&body);
    assert!(o.is_ok() && o.message.content.len() == 100_003);
    let (body, _) = run(Fault::SlowHeaders(Duration::from_secs(1)), 1).await;
    assert!(outcome(&body).is_ok());
}

#[tokio::test(start_paused = true)]
async fn stall_pauses_on_the_clock() {
    let clock = Clock::scaled(10.0);
    let (body, _) = run(Fault::Stall(Duration::from_secs(30)), 2).await;
    assert!(outcome(&body).is_ok());
    // ctx() uses a 1000x clock: 30 simulated s = 30 ms real = 0.3 s on `clock`.
    assert!(clock.now_secs() >= 0.3, "{}", clock.now_secs());
}

#[tokio::test]
async fn status_answers_carry_retry_after() {
    let inj = Injection {
        request: 1,
        fault: Fault::Status {
            code: 503,
            retry_after: Some(Duration::from_millis(1500)),
        },
        after_events: 1,
    };
    let clock = Clock::scaled(1000.0);
    let r = before_headers(Some(&inj), &clock).await.unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()[header::RETRY_AFTER], "2");
    let slow = Injection {
        fault: Fault::SlowHeaders(Duration::from_secs(1)),
        ..inj
    };
    assert!(before_headers(Some(&slow), &clock).await.is_none());
    assert!(before_headers(None, &clock).await.is_none());
}
