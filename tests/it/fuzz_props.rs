//! The fuzz targets of `fuzz/` as property tests that run in CI: arbitrary
//! input never panics, and structured input survives a round trip.

use codendum_core::openai::chunk::{parse_chunk, Assembler};
use codendum_core::openai::sse::{decode_all, OwnedSseEvent, SseDecoder};
use codendum_core::openai::stream::StreamMeter;
use codendum_core::prom::{parse, ServerSnapshot};
use codendum_twin::chunks::{ChunkHead, Piece};
use codendum_twin::faults::FaultPlan;
use codendum_twin::request_body::parse_generation_body;
use proptest::prelude::*;
use serde_json::{json, Value};

fn decode_in_pieces(body: &[u8], step: usize) -> Vec<OwnedSseEvent> {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    for piece in body.chunks(step.max(1)) {
        decoder.push(piece);
        while let Some(ev) = decoder.next_event() {
            out.push(ev.to_owned_event());
        }
    }
    out.extend(decoder.finish().map(|e| e.to_owned_event()));
    out
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("model".to_string()),
                    Just("messages".to_string()),
                    Just("prompt".to_string()),
                    Just("max_tokens".to_string()),
                    Just("tools".to_string()),
                    Just("stream_options".to_string()),
                    Just("role".to_string()),
                    Just("content".to_string()),
                    "[a-z_]{1,8}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sse_never_panics_and_ignores_splits(body in prop::collection::vec(any::<u8>(), 0..512), step in 1usize..40) {
        let whole = decode_all(&body);
        prop_assert_eq!(&whole, &decode_in_pieces(&body, step));
        prop_assert!(whole.iter().all(|e| !matches!(e, OwnedSseEvent::Data(d) if d.is_empty())));
        let mut meter = StreamMeter::new(0.0, true);
        for (i, piece) in body.chunks(step).enumerate() {
            meter.on_bytes(piece, i as f64);
        }
        meter.on_end(1e3);
        prop_assert!(meter.finish(200, 1e3).e2e >= 0.0);
    }

    #[test]
    fn sse_round_trips_data_events(
        payloads in prop::collection::vec("[a-zA-Z0-9{}\":,.]{1,24}", 0..8),
        crlf in any::<bool>(),
        step in 1usize..16,
    ) {
        let end = if crlf { "\r\n" } else { "\n" };
        let mut body = String::from(": keep-alive");
        body.push_str(end);
        for p in &payloads {
            body.push_str(&format!("data: {p}{end}{end}"));
        }
        body.push_str(&format!("data: [DONE]{end}{end}"));
        let mut expected: Vec<OwnedSseEvent> =
            payloads.iter().map(|p| OwnedSseEvent::Data(p.as_bytes().to_vec())).collect();
        expected.push(OwnedSseEvent::Done);
        prop_assert_eq!(decode_in_pieces(body.as_bytes(), step), expected);
    }

    #[test]
    fn chunks_never_panic(data in prop::collection::vec(any::<u8>(), 0..256), json in arbitrary_json()) {
        let mut asm = Assembler::new();
        if let Ok(c) = parse_chunk(&data) {
            asm.apply(&c);
        }
        let text = json.to_string();
        if let Ok(c) = parse_chunk(text.as_bytes()) {
            asm.apply(&c);
        }
    }

    #[test]
    fn twin_chunks_parse_back(text in ".{0,40}", name in "[a-z_]{1,12}", args in ".{0,30}") {
        let head = ChunkHead { id: "chatcmpl-1".into(), created: 1, model: "m".into() };
        let mut asm = Assembler::new();
        for piece in [
            Piece::Text(text.clone()),
            Piece::ToolHead { index: 0, id: "call-1".into(), name: name.clone() },
            Piece::ToolArgs { index: 0, text: args.clone() },
        ] {
            let chunk = head.chat_delta(&piece, None);
            let parsed = parse_chunk(chunk.as_bytes()).expect("the twin's chunk parses");
            asm.apply(&parsed);
        }
        let finish = head.chat_finish("tool_calls", None);
        asm.apply(&parse_chunk(finish.as_bytes()).expect("finish chunk parses"));
        prop_assert_eq!(&asm.message.content, &text);
        prop_assert_eq!(&asm.message.tool_calls[0].name, &name);
        prop_assert_eq!(&asm.message.tool_calls[0].arguments, &args);
        prop_assert_eq!(asm.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn prom_never_panics(text in "\\PC{0,300}", lines in prop::collection::vec("[a-z_:{}=\",. #0-9eE+-]{0,40}", 0..12)) {
        let _ = parse(&text).map(|p| ServerSnapshot::from_exposition(&p));
        let page = lines.join("\n");
        if let Ok(p) = parse(&page) {
            let snap = ServerSnapshot::from_exposition(&p);
            let _ = ServerSnapshot::sum(&[snap.clone(), snap]);
        }
    }

    #[test]
    fn prom_round_trips_samples(
        samples in prop::collection::vec(("[a-z_][a-z0-9_:]{0,20}", "[a-z_][a-z0-9_]{0,8}", "\\PC{0,16}", -1e12f64..1e12), 1..10),
    ) {
        let escape = |v: &str| v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
        let page: String = samples
            .iter()
            .map(|(name, label, value, x)| format!("{name}{{{label}=\"{}\"}} {x:e}\n", escape(value)))
            .collect();
        let parsed = parse(&page).expect("generated page parses");
        prop_assert_eq!(parsed.samples.len(), samples.len());
        for (s, (name, label, value, x)) in parsed.samples.iter().zip(&samples) {
            prop_assert_eq!(s.name, name.as_str());
            let got = s.label(label);
            prop_assert_eq!(got.as_deref(), Some(value.as_str()));
            prop_assert_eq!(s.value, *x);
        }
    }

    #[test]
    fn twin_body_never_panics(data in prop::collection::vec(any::<u8>(), 0..256), json in arbitrary_json(), chat in any::<bool>(), len in 1u32..100_000) {
        let _ = parse_generation_body(&data, chat, "m", len);
        let text = json.to_string();
        if let Ok(b) = parse_generation_body(text.as_bytes(), chat, "m", len) {
            prop_assert!(!b.prompt_ids.is_empty() && b.params.max_tokens >= 1);
            prop_assert!(b.prompt_ids.len() as u64 + u64::from(b.params.max_tokens) <= u64::from(len));
        }
    }

    #[test]
    fn twin_body_keeps_valid_parameters(
        content in "[a-zA-Z ]{1,80}",
        max_tokens in 1u64..512,
        stream in any::<bool>(),
        usage in any::<bool>(),
        huge in any::<bool>(),
    ) {
        let asked = if huge { u64::MAX - max_tokens } else { max_tokens };
        let body = json!({
            "model": "m", "messages": [{"role": "user", "content": content}],
            "max_tokens": asked, "stream": stream,
            "stream_options": {"include_usage": usage},
        });
        let r = parse_generation_body(body.to_string().as_bytes(), true, "m", 65_536);
        if huge {
            prop_assert_eq!(r.expect_err("too long").param, Some("input_tokens"));
        } else {
            let b = r.expect("valid body");
            prop_assert_eq!(u64::from(b.params.max_tokens), max_tokens);
            prop_assert_eq!(b.params.stream, stream);
            prop_assert_eq!(b.params.include_usage, usage);
            prop_assert_eq!(b.messages().len(), 1);
        }
    }

    #[test]
    fn fault_specs_never_panic(spec in "\\PC{0,60}", words in prop::collection::vec("(drop|stall|status|every|seed|after|retry-after|#|@|:|=|,|\\.\\.|[0-9]{1,3}|%|s|ms|MiB)", 0..12)) {
        let _ = FaultPlan::parse(&spec);
        let _ = FaultPlan::parse(&words.concat());
    }

    #[test]
    fn fault_terms_round_trip(code in 400u16..600, every in 1u64..50, rate in 0u32..=100, secs in 0u32..1000, a in 1u64..20, span in 0u64..20) {
        let spec = format!("status={code}@every:{every}:retry-after={secs},drop@{rate}%,stall={secs}s@#{a}..{}", a + span);
        let plan = FaultPlan::parse(&spec).expect("generated spec parses");
        prop_assert_eq!(plan.terms().len(), 3);
        for n in 1..=100u64 {
            if n % every == 0 {
                let i = plan.decide(n).expect("every strikes");
                let is_status = matches!(i.fault, codendum_twin::faults::Fault::Status { code: c, .. } if c == code);
                prop_assert!(is_status);
            }
        }
    }

    #[test]
    fn session_readers_never_panic(lines in prop::collection::vec(arbitrary_json(), 0..8), block in 1u32..80) {
        use codendum_core::trace::{claude_code, mooncake, tracelab};
        let text: String = lines.iter().map(|v| v.to_string() + "\n").collect();
        let walk = |t: &codendum_core::trace::Trace| {
            let _ = t.conversations();
            let _ = t.theoretical_hit_rate();
            let _ = t.subagent_offsets();
        };
        if let Ok(t) = mooncake::read_trace(text.as_bytes(), block) {
            walk(&t);
        }
        if let Ok(t) = tracelab::read_rows(text.as_bytes(), block, None) {
            walk(&t);
        }
        for v in &lines {
            let doc = serde_json::json!({"id": "c", "block_size": block, "tool_tokens": block * 2, "requests": [v, {"t": 1.0, "in": 100, "out": 1}, {"type": "subagent", "t": 2.0, "requests": [v]}]});
            if let Ok((c, _)) = claude_code::read_conversation(doc.to_string().as_bytes(), "c.json") {
                walk(&claude_code::to_trace(vec![c]));
            }
        }
    }
}
