//! Recorded sessions read into the one trace model, from the fixtures of
//! real recordings (`fixtures/sessions`): Claude Code conversations (WEKA
//! form, subagents beside their parent), TraceLab rows (plain and gzipped)
//! and the store the real OpenCode 1.18.33 wrote. Each is held against
//! what its file says, read independently here: the calls and their sizes,
//! the blocks they share, the waits and why, the subagents and their
//! offsets; a bad or cut file is named with its line and what came before
//! it is kept.

use std::path::{Path, PathBuf};

use codendum::replay::source::{self, detect_format};
use codendum_core::results::classroom_records::CallKind;
use codendum_core::trace::detect::ImportOptions;
use codendum_core::trace::{SourceFormat, Trace, TraceCall, WaitReason};
use serde_json::Value;

/// A file or folder of `fixtures/sessions`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/sessions")
        .join(rel)
}

/// The trace of `path`, its format detected, 16-token blocks where rebuilt.
pub fn read(path: &Path) -> Trace {
    source::read(
        path,
        None,
        ImportOptions {
            block_size: 16,
            max_sessions: None,
        },
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn gunzip(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let mut input = codendum_core::trace::open(path).expect("open");
    std::io::Read::read_to_end(&mut input, &mut out).expect("gunzip");
    out
}

/// A conversation file's calls in the file's own order, flattened: (the
/// subagent path, t since the conversation started, in, out, hash_ids,
/// think_time, input_types).
type FileCall = (String, f64, u64, u64, Vec<u64>, Option<f64>, Vec<String>);

fn file_calls(v: &Value, path: &str, start: f64, out: &mut Vec<FileCall>) {
    for e in v["requests"].as_array().expect("requests") {
        if e["type"] == "subagent" {
            let id = e["agent_id"].as_str().expect("agent id");
            let t = e["t"].as_f64().expect("t");
            file_calls(e, &format!("{path}/{id}"), start + t, out);
            continue;
        }
        out.push((
            path.to_string(),
            start + e["t"].as_f64().expect("t"),
            e["in"].as_u64().expect("in"),
            e["out"].as_u64().expect("out"),
            e["hash_ids"]
                .as_array()
                .map(|a| a.iter().map(|x| x.as_u64().expect("id")).collect())
                .unwrap_or_default(),
            e["think_time"].as_f64(),
            e["input_types"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|x| x.as_str().unwrap_or("").to_string())
                        .collect()
                })
                .unwrap_or_default(),
        ));
    }
}

fn common(a: &[u64], b: &[u64]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[test]
fn claude_code_conversations_keep_their_calls_sizes_blocks_waits_and_subagents() {
    let dir = fixture("claude-code");
    assert_eq!(
        detect_format(&dir).expect("detects"),
        SourceFormat::ClaudeCode
    );
    let trace = read(&dir);
    assert!(trace.unread.is_empty(), "{:?}", trace.unread);
    assert_eq!(trace.block_size, 64);
    let src = trace.source.clone().expect("source");
    assert_eq!(src.files, 6);
    assert_eq!(
        src.licence.as_deref(),
        Some("traces from callanjfox/kv-cache-tester (Apache-2.0)")
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(".json"))
        .collect();
    files.sort();
    let mut total = 0;
    for f in &files {
        let bytes = if f.extension().is_some_and(|e| e == "gz") {
            gunzip(f)
        } else {
            std::fs::read(f).expect("read")
        };
        let v: Value = serde_json::from_slice(&bytes).expect("json");
        let id = v["id"].as_str().expect("id").to_string();
        let mut expected = Vec::new();
        file_calls(&v, &id, 0.0, &mut expected);
        // The trace's calls of this conversation, in the file's order.
        let mut got: Vec<&TraceCall> = trace
            .calls
            .iter()
            .filter(|c| {
                c.session
                    .as_deref()
                    .is_some_and(|s| s == id || s.starts_with(&format!("{id}/")))
            })
            .collect();
        got.sort_by(|a, b| {
            let key = |c: &TraceCall| {
                expected
                    .iter()
                    .position(|e| {
                        Some(e.0.as_str()) == c.session.as_deref()
                            && e.1 == c.at_s
                            && e.2 == c.input_tokens
                    })
                    .expect("a call of the file")
            };
            key(a).cmp(&key(b))
        });
        assert_eq!(got.len(), expected.len(), "{id}: calls");
        total += got.len();
        for (k, (c, e)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(
                (c.input_tokens, c.output_tokens),
                (e.2, e.3),
                "{id} call {k}: sizes"
            );
            assert_eq!(c.hash_ids.len(), e.4.len(), "{id} call {k}: blocks");
            assert_eq!(
                c.parent.is_some(),
                e.0.contains('/'),
                "{id} call {k}: parent"
            );
            // Recorded sharing kept: the blocks any two calls of the
            // conversation have in common at their head.
            for (c2, e2) in got.iter().zip(&expected).take(k) {
                assert_eq!(
                    common(&c.hash_ids, &c2.hash_ids),
                    common(&e.4, &e2.4),
                    "{id} call {k}: shared blocks"
                );
            }
            // Waits: a call after the first of its (sub)conversation waits
            // the recorded think time, a tool's when it carries a result.
            let first_of_agent = !expected[..k].iter().any(|p| p.0 == e.0);
            match (c.after, first_of_agent) {
                (None, true) => assert!(
                    !e.0.contains('/'),
                    "{id} call {k}: a subagent waits for its parent"
                ),
                (Some(d), true) => {
                    assert_eq!(d.reason, WaitReason::Tool);
                    let parent = got[..k]
                        .iter()
                        .any(|p| std::ptr::eq(*p, &trace.calls[d.call]));
                    assert!(parent, "{id} call {k}: waits for an earlier call");
                }
                (Some(d), false) => {
                    assert_eq!(
                        Some(d.gap_s),
                        e.5.or(Some(d.gap_s)),
                        "{id} call {k}: think time"
                    );
                    let reason = if e.6.iter().any(|t| t == "tool_result") {
                        WaitReason::Tool
                    } else if e.6.iter().any(|t| t == "text") {
                        WaitReason::Person
                    } else {
                        WaitReason::Unknown
                    };
                    assert_eq!(d.reason, reason, "{id} call {k}: why it waited");
                }
                (None, false) => panic!("{id} call {k}: no wait"),
            }
        }
    }
    assert_eq!(total, trace.calls.len());
    // trace_0277: four subagents beside their parent from their offsets.
    let offsets: Vec<(String, f64)> = trace
        .subagent_offsets()
        .into_iter()
        .map(|(s, p, o)| {
            assert_eq!(p, "trace_0277");
            (s, o)
        })
        .collect();
    let expected = [
        ("trace_0277/agent_001", 79.224),
        ("trace_0277/agent_002", 183.906),
        ("trace_0277/agent_003", 211.347),
        ("trace_0277/agent_004", 723.533),
    ];
    assert_eq!(offsets.len(), 4);
    for ((s, o), (es, eo)) in offsets.iter().zip(expected) {
        assert_eq!(s, es);
        assert!((o - eo).abs() < 1e-9, "{s}: {o}");
    }
    // Every conversation's head: the tool definitions of one Claude Code
    // release shared across conversations of the same tool_tokens.
    let firsts: Vec<&TraceCall> = trace
        .calls
        .iter()
        .filter(|c| c.at_s == 0.0 && c.parent.is_none())
        .collect();
    assert_eq!(firsts.len(), 6);
    assert!(trace.theoretical_hit_rate().expect("rate") > 0.5);
}

#[test]
fn a_cut_conversation_is_named_with_its_line_and_the_others_kept() {
    let dir = tempfile::tempdir().expect("dir");
    for name in ["trace_0187.json", "trace_0242.json"] {
        std::fs::copy(fixture("claude-code").join(name), dir.path().join(name)).expect("copy");
    }
    let text = std::fs::read_to_string(fixture("claude-code/trace_0504.json")).expect("read");
    std::fs::write(dir.path().join("trace_0504.json"), &text[..text.len() / 2]).expect("write");
    let trace = read(dir.path());
    assert_eq!(trace.sessions(), vec!["trace_0187", "trace_0242"]);
    assert_eq!(trace.unread.len(), 1);
    let u = &trace.unread[0];
    assert!(u.file.ends_with("trace_0504.json"), "{u}");
    assert_eq!(u.line, 1);
    assert!(u.reason.contains("not a JSON conversation"), "{u}");
    // Alone, the cut file is the error, naming it and its line.
    let e = source::read(
        &dir.path().join("trace_0504.json"),
        None,
        ImportOptions {
            block_size: 16,
            max_sessions: None,
        },
    )
    .expect_err("nothing to read");
    let line = e.to_string();
    assert!(
        line.contains("trace_0504.json") && line.contains("line 1"),
        "{line}"
    );
}

/// TraceLab's rows, read independently: (session, round, input, prefix,
/// output, first input event).
fn tracelab_rows() -> Vec<(String, u64, u64, u64, u64, String)> {
    std::fs::read_to_string(fixture("tracelab/round_trace.jsonl"))
        .expect("read")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("row");
            (
                v["session_id"].as_str().expect("session").to_string(),
                v["round_index"].as_u64().expect("round"),
                v["input_tokens_total"].as_u64().expect("input"),
                v["prefix_tokens"].as_u64().expect("prefix"),
                v["output_tokens"].as_u64().expect("output"),
                v["first_input_event_type"]
                    .as_str()
                    .expect("first")
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn tracelab_rows_become_sessions_in_round_order_plain_or_gzipped() {
    let plain = fixture("tracelab/round_trace.jsonl");
    let gz = fixture("tracelab/round_trace.jsonl.gz");
    for p in [&plain, &gz] {
        assert_eq!(detect_format(p).expect("detects"), SourceFormat::Tracelab);
    }
    let trace = read(&plain);
    let mut other = read(&gz);
    other.source = trace.source.clone();
    assert_eq!(other, trace, "gzipped, the same trace");
    assert!(trace.unread.is_empty(), "{:?}", trace.unread);
    assert_eq!(trace.sessions().len(), 2);
    let rows = tracelab_rows();
    assert_eq!(trace.calls.len(), rows.len());
    for s in trace.sessions() {
        let calls: Vec<&TraceCall> = trace
            .calls
            .iter()
            .filter(|c| c.session.as_deref() == Some(s))
            .collect();
        let mut mine: Vec<_> = rows.iter().filter(|r| r.0 == s).collect();
        mine.sort_by_key(|r| r.1);
        assert_eq!(calls.len(), mine.len());
        for (k, (c, r)) in calls.iter().zip(&mine).enumerate() {
            assert_eq!(
                (c.input_tokens, c.output_tokens),
                (r.2, r.4),
                "{s} round {k}"
            );
            if k == 0 {
                assert!(c.after.is_none());
                continue;
            }
            let d = c.after.expect("waits for the previous round");
            assert_eq!(trace.calls[d.call].session.as_deref(), Some(s));
            let reason = match r.5.as_str() {
                "user_message" => WaitReason::Person,
                _ => WaitReason::Tool,
            };
            assert_eq!(d.reason, reason, "{s} round {k}");
            // The provider's cached prefix is shared with the previous
            // prompt (all of it when the conversation carries on).
            let previous = calls[k - 1];
            let shared = common(&c.hash_ids, &previous.hash_ids) as u64 * 16;
            let at_least = r.3.min(previous.input_tokens) / 16 * 16;
            assert!(
                shared >= at_least.min(previous.input_tokens / 16 * 16),
                "{s} round {k}: {shared} < {at_least}"
            );
        }
    }
    // The Claude session's first row: a person's message 1 person wait later.
    let person_waits = trace
        .calls
        .iter()
        .filter(|c| c.after.is_some_and(|d| d.reason == WaitReason::Person))
        .count();
    assert_eq!(
        person_waits,
        rows.iter()
            .filter(|r| r.1 > 0 && r.5 == "user_message")
            .count()
    );
}

#[test]
fn a_cut_gzip_keeps_the_rows_before_the_cut_and_says_where() {
    let dir = tempfile::tempdir().expect("dir");
    let bytes = std::fs::read(fixture("tracelab/round_trace.jsonl.gz")).expect("read");
    let cut = dir.path().join("cut.jsonl.gz");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).expect("write");
    let trace = read(&cut);
    assert!(
        !trace.calls.is_empty() && trace.calls.len() < 19,
        "{}",
        trace.calls.len()
    );
    assert_eq!(trace.unread.len(), 1);
    let u = &trace.unread[0];
    assert!(u.file.ends_with("cut.jsonl.gz") && u.line > 1, "{u}");
    assert!(u.reason.contains("sessions read before it are kept"), "{u}");
    // A bad line in the middle of a plain file: the same.
    let text = std::fs::read_to_string(fixture("tracelab/round_trace.jsonl")).expect("read");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(12, "{\"session_id\": \"x\", \"round_index\": \"seven\"}");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, lines.join("\n")).expect("write");
    let trace = read(&bad);
    assert_eq!(trace.calls.len(), 12, "the twelve rows before line 13");
    assert_eq!(trace.unread[0].line, 13);
}

#[test]
fn the_real_opencode_store_holds_every_call_its_capture_recorded() {
    let dir = fixture("opencode-1.18.33");
    assert_eq!(
        detect_format(&dir).expect("detects"),
        SourceFormat::Opencode
    );
    let store = read(&dir);
    assert!(store.unread.is_empty(), "{:?}", store.unread);
    let capture = read(&dir.join("capture"));
    assert_eq!(
        capture.source.as_ref().map(|s| s.format),
        Some(SourceFormat::Capture)
    );
    // OpenCode does not store its title calls; every other call is in both,
    // session by session, in the same order and of the same sizes.
    let of = |t: &Trace, s: &str| -> Vec<(u64, u64, Option<CallKind>)> {
        t.calls
            .iter()
            .filter(|c| c.session.as_deref() == Some(s) && c.kind != Some(CallKind::Title))
            .map(|c| (c.input_tokens, c.output_tokens, c.kind))
            .collect()
    };
    assert_eq!(store.sessions(), capture.sessions());
    assert_eq!(store.sessions().len(), 3);
    for s in store.sessions() {
        assert_eq!(of(&store, s), of(&capture, s), "{s}");
    }
    assert_eq!(store.calls.len(), 31);
    assert_eq!(
        capture
            .calls
            .iter()
            .filter(|c| c.kind == Some(CallKind::Title))
            .count(),
        1
    );
    // Two subagents beside the main session; two coding requests, the
    // second after a person's wait.
    let subs = store.subagent_offsets();
    assert_eq!(subs.len(), 2);
    assert!(subs
        .iter()
        .all(|(_, p, o)| p == store.sessions()[0] && *o > 0.0));
    let person: Vec<&TraceCall> = store
        .calls
        .iter()
        .filter(|c| c.after.is_some_and(|d| d.reason == WaitReason::Person))
        .collect();
    assert_eq!(person.len(), 1);
    assert_eq!(person[0].task, Some(1));
    assert!(
        person[0].after.expect("waits").gap_s > 5.0,
        "the 5 s between the two runs"
    );
    // The subagents' first steps wait for the main agent's task call, the
    // main agent's next step for the subagent's last answer.
    for (sub, _, _) in &subs {
        let first = store
            .calls
            .iter()
            .position(|c| c.session.as_deref() == Some(sub.as_str()))
            .expect("a call");
        let d = store.calls[first].after.expect("waits");
        assert_eq!(store.calls[d.call].parent, None);
        assert_eq!(d.reason, WaitReason::Tool);
    }
}

#[test]
fn a_format_given_overrides_detection_and_a_wrong_one_is_named() {
    let opts = ImportOptions {
        block_size: 16,
        max_sessions: None,
    };
    let e = source::read(
        &fixture("tracelab/round_trace.jsonl"),
        Some(SourceFormat::Mooncake),
        opts,
    )
    .expect_err("not Mooncake lines");
    let line = e.to_string();
    assert!(
        line.contains("round_trace.jsonl") && line.contains("line 1"),
        "{line}"
    );
    let t = source::read(
        &fixture("claude-code/trace_0187.json"),
        Some(SourceFormat::ClaudeCode),
        opts,
    )
    .expect("reads");
    assert_eq!(t.calls.len(), 3);
    // At most N sessions of a TraceLab file, the first by their first row.
    let t = source::read(
        &fixture("tracelab/round_trace.jsonl"),
        None,
        ImportOptions {
            block_size: 16,
            max_sessions: Some(1),
        },
    )
    .expect("reads");
    assert_eq!(t.sessions().len(), 1);
}
