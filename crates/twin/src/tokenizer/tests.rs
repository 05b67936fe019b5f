//! Tests of the tokenizer: pieces, ratios against real tokenizers, chat
//! rendering and stable ids.

use super::*;

#[test]
fn pieces_are_lossless_and_about_four_chars() {
    let text = "The quick brown fox jumps over the lazy dog, then implements \
                a small HTTP server in Java.\n    public static void main(String[] args) {\n        System.out.println(\"hi\");\n    }\n";
    let p = pieces(text);
    assert_eq!(p.concat(), text);
    let ratio = text.chars().count() as f64 / p.len() as f64;
    assert!((3.0..=5.0).contains(&ratio), "{ratio:.2} chars/token");
}

#[test]
fn project_sources_and_prompts_come_out_near_real_tokenizer_ratios() {
    let cases = [
        (
            include_str!("../../../../fixtures/classroom/java/src/main/java/chat/ChatServer.java"),
            3.0,
            4.2,
        ),
        (
            include_str!("../../../../fixtures/classroom/python/chat/server.py"),
            3.0,
            4.4,
        ),
        (
            include_str!("../../../../fixtures/classroom/java/pom.xml"),
            2.8,
            4.2,
        ),
        (
            include_str!("../../../../fixtures/classroom/prompt/system.md"),
            3.8,
            5.0,
        ),
    ];
    for (text, low, high) in cases {
        assert_eq!(pieces(text).concat(), text);
        let ratio = text.chars().count() as f64 / count(text) as f64;
        assert!(
            (low..=high).contains(&ratio),
            "{ratio:.2} chars/token, want {low}..{high}: {}",
            &text[..40]
        );
    }
}

#[test]
fn an_answer_renders_as_the_next_prompt_renders_it() {
    use crate::answer::AnswerPart;
    let answer = PlannedAnswer {
        parts: vec![
            AnswerPart::Text("I'll read it.".into()),
            AnswerPart::ToolCall {
                name: "read".into(),
                arguments: "{\"filePath\":\"a.java\"}".into(),
            },
        ],
    };
    let first = vec![serde_json::json!({"role":"user","content":"go"})];
    let before = render_chat(&first, &[]);
    let mut next = first.clone();
    next.push(serde_json::json!({"role":"assistant","content":"I'll read it.","tool_calls":[
        {"id":"x","type":"function","function":{"name":"read","arguments":"{\"filePath\":\"a.java\"}"}}]}));
    next.push(serde_json::json!({"role":"tool","tool_call_id":"x","content":"1: class A {}"}));
    let after = render_chat(&next, &[]);
    let expected = format!("{before}{}", render_answer(&answer));
    assert!(after.starts_with(&expected), "{after}");
}

#[test]
fn special_markers_are_one_token() {
    assert_eq!(
        pieces("<|im_start|>user\n"),
        vec!["<|im_start|>", "user", "\n"]
    );
    assert_eq!(pieces(" hello"), vec![" hello"]);
    assert_eq!(
        pieces("internationalization"),
        vec!["internat", "ionaliza", "tion"]
    );
}

#[test]
fn equal_text_equal_ids_and_stable_prefix() {
    let a = encode("Read the file src/Main.java and fix the bug.");
    assert_eq!(a, encode("Read the file src/Main.java and fix the bug."));
    assert!(a.iter().all(|&id| id < VOCAB_SIZE));
    let msgs = vec![
        serde_json::json!({"role":"system","content":"You are a coder."}),
        serde_json::json!({"role":"user","content":"Hi"}),
    ];
    let short = render_chat(&msgs, &[]);
    let mut longer = msgs.clone();
    longer.push(serde_json::json!({"role":"assistant","content":"Hello"}));
    longer.push(serde_json::json!({"role":"user","content":"More"}));
    let long = render_chat(&longer, &[]);
    let prefix = short.trim_end_matches("<|im_start|>assistant\n");
    assert!(long.starts_with(prefix));
    let (s, l) = (encode(prefix), encode(&long));
    assert_eq!(&l[..s.len()], &s[..]);
}

#[test]
fn odd_input_does_not_panic() {
    for t in [
        "",
        " ",
        "<|",
        "<|x",
        "é",
        "  \t\t   x",
        "a\u{301}b",
        "<||>",
        "日本語のテキスト",
    ] {
        assert_eq!(pieces(t).concat(), t);
    }
}
