//! The persona against OpenCode 1.18.33's real toolset and requests recorded
//! from a real `opencode run` (fixtures/opencode): tools chosen by what they
//! do, folders listed with `read`, no `skill` or `webfetch` calls, a missing
//! test runner tried another way and then reported plainly, compile and edit
//! errors answered, short titles.

use crate::persona_support;

use codendum_twin::answer::{AnswerRequest, PlannedAnswer, Responder};
use codendum_twin::persona::tools::{ToolKit, ToolRole};
use codendum_twin::persona::AgentPersona;
use persona_support::{calls, check_calls};
use serde_json::{json, Value};

fn load(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/opencode")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

fn plan_body(body: &Value, seed: u64) -> PlannedAnswer {
    plan_with(&AgentPersona::new(1), body, seed)
}

fn plan_with(persona: &AgentPersona, body: &Value, seed: u64) -> PlannedAnswer {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let req = AnswerRequest {
        messages: &messages,
        tools: &tools,
        prompt: "",
        max_tokens: 8192,
        ignore_eos: false,
        seed,
        session: "",
    };
    let answer = persona.plan(&req);
    if let Err(e) = check_calls(&answer, &tools) {
        panic!("seed {seed}: {e}");
    }
    answer
}

/// The body with one more step: an assistant call of `tool` with `args`,
/// answered by `result`.
fn with_step(mut body: Value, tool: &str, args: Value, result: &str) -> Value {
    let id = format!("call-{}", body["messages"].as_array().map_or(0, Vec::len));
    let messages = body["messages"].as_array_mut().expect("messages");
    messages.push(json!({"role": "assistant", "content": "", "tool_calls": [
        {"id": id, "type": "function", "function": {"name": tool, "arguments": args.to_string()}}
    ]}));
    messages.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
    body
}

#[test]
fn opencode_tools_are_mapped_by_what_they_do() {
    let tools = load("tools-1.18.33.json");
    let kit = ToolKit::from_definitions(tools.as_array().unwrap());
    let role = |name: &str| kit.by_name(name).map(|t| t.role);
    assert_eq!(role("bash"), Some(ToolRole::Shell));
    assert_eq!(role("edit"), Some(ToolRole::Edit));
    assert_eq!(role("write"), Some(ToolRole::Write));
    assert_eq!(role("read"), Some(ToolRole::Read));
    assert_eq!(role("glob"), Some(ToolRole::Glob));
    assert_eq!(role("grep"), Some(ToolRole::Grep));
    assert_eq!(role("task"), Some(ToolRole::Task));
    assert_eq!(role("todowrite"), Some(ToolRole::Todo));
    // `skill {name}` speaks of skills "listed" in the prompt: not a folder listing.
    assert_eq!(role("skill"), None);
    assert_eq!(role("webfetch"), None);
    assert!(!kit.has(ToolRole::List));
    assert!(kit.get(ToolRole::Read).unwrap().reads_folders);
}

#[test]
fn first_step_never_calls_skill_or_webfetch_and_lists_with_read() {
    let body = load("first-step.json");
    let mut listed_with_read = 0;
    for seed in 0..60 {
        let a = plan_body(&body, seed);
        let c = calls(&a);
        assert!(!c.is_empty(), "seed {seed}: no call");
        for (name, args) in &c {
            assert!(
                ["read", "glob", "task", "todowrite"].contains(&name.as_str()),
                "seed {seed}: {name} {args}"
            );
            if name == "read" && args["filePath"] == "." {
                listed_with_read += 1;
            }
        }
    }
    assert!(listed_with_read > 0, "never listed the folder with read");
}

#[test]
fn a_folder_read_leads_to_its_subfolders() {
    let body = with_step(
        load("first-step.json"),
        "read",
        json!({"filePath": "."}),
        "<path>/home/student/chat</path>\n<type>directory</type>\n<entries>\nchat/\n\
         pyproject.toml\nREADME.md\ntests/\n\n(4 entries)\n</entries>",
    );
    for seed in 0..10 {
        let c = calls(&plan_body(&body, seed));
        let paths: Vec<&str> = c
            .iter()
            .filter_map(|(_, a)| a["filePath"].as_str())
            .collect();
        assert!(
            c.iter().all(|(n, _)| n == "read") && paths.contains(&"chat"),
            "seed {seed}: {c:?}"
        );
    }
}

#[test]
fn a_missing_pytest_is_tried_another_way_then_reported() {
    let body = load("pytest-missing.json");
    let c = calls(&plan_body(&body, 3));
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].0, "bash");
    assert_eq!(c[0].1["command"], "python3 -m pytest -q");

    let body = with_step(
        body,
        "bash",
        json!({"command": "python3 -m pytest -q"}),
        "/usr/bin/python3: No module named pytest\n",
    );
    // At the request's last call, the answer says why the tests did not run.
    for seed in 0..10 {
        let a = plan_with(&persona_support::ending_persona(1), &body, seed);
        assert!(!a.has_tool_calls(), "seed {seed}: {a:?}");
        let t = a.content();
        assert!(t.contains("not installed"), "{t}");
        assert!(t.contains("No module named pytest"), "{t}");
        assert!(!t.contains("passes") && !t.starts_with("Done"), "{t}");
        assert!(t.contains("`tests/test_message.py`"), "{t}");
    }
}

#[test]
fn a_compile_error_is_read_where_it_is() {
    let body = load("compile-error.json");
    for seed in 0..10 {
        let c = calls(&plan_body(&body, seed));
        assert_eq!(c.len(), 1, "seed {seed}: {c:?}");
        assert_eq!(c[0].0, "read", "seed {seed}: {c:?}");
        assert_eq!(c[0].1["filePath"], "chat/protocol.py");
    }
}

#[test]
fn an_edit_that_did_not_apply_is_retried_after_reading_again() {
    let body = load("compile-error.json");
    let messages = body["messages"].as_array().unwrap();
    // Drop the compile step: the last step is then a successful edit.
    let mut body = body.clone();
    body["messages"] = json!(messages[..messages.len() - 2]);
    let body = with_step(
        body,
        "edit",
        json!({"filePath": "chat/protocol.py", "oldString": "class Nope:", "newString": "x"}),
        "Error: Could not find oldString in the file.",
    );
    let c = calls(&plan_body(&body, 1));
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].0, "read");
    assert_eq!(c[0].1["filePath"], "chat/protocol.py");
}

#[test]
fn the_title_is_short_and_clean() {
    let a = plan_body(&load("title.json"), 1);
    let t = a.content();
    assert!(!a.has_tool_calls());
    assert!(t.len() <= 50 && !t.contains('\n'), "{t}");
    assert!(!t.contains('"'), "{t}");
    let last = t.split_whitespace().last().unwrap_or("");
    assert!(!["that", "with", "a", "the", "to"].contains(&last), "{t}");
    assert!(t.starts_with("Add a function"), "{t}");
}
