//! The persona's next step on recorded OpenCode-like requests
//! (fixtures/conversations): every tool call is checked against the offered
//! schema, and the step fits the phase of the conversation.

use crate::persona_support;

use codendum_twin::answer::{AnswerRequest, PlannedAnswer, Responder};
use codendum_twin::persona::{AgentPersona, PersonaConfig};
use persona_support::{calls, check_calls, fixture, output_chars};
use serde_json::Value;

fn plan_with(persona: &AgentPersona, name: &str, seed: u64) -> (PlannedAnswer, Vec<Value>) {
    let body = fixture(name);
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let req = AnswerRequest {
        messages: &messages,
        tools: &tools,
        prompt: "",
        max_tokens: 32000,
        ignore_eos: false,
        seed,
        session: "",
    };
    let answer = persona.plan(&req);
    if let Err(e) = check_calls(&answer, &tools) {
        panic!("{name} seed {seed}: {e}");
    }
    (answer, tools)
}

fn plan(name: &str, seed: u64) -> PlannedAnswer {
    plan_with(&AgentPersona::new(7), name, seed).0
}

/// The file contents shown in a fixture's read results, numbers stripped.
fn seen_text(name: &str) -> String {
    let body = fixture(name);
    let mut out = String::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] == "tool" {
            for line in m["content"].as_str().unwrap_or("").lines() {
                if let Some((n, rest)) = line.split_once(": ") {
                    if n.trim().chars().all(|c| c.is_ascii_digit()) {
                        out.push_str(rest);
                        out.push('\n');
                    }
                }
            }
        }
    }
    out
}

#[test]
fn fresh_task_looks_around_or_delegates() {
    let mut delegated = 0;
    for seed in 0..40 {
        let a = plan("fresh-task.json", seed);
        let c = calls(&a);
        assert!(!c.is_empty(), "seed {seed}: no tool call");
        match c[0].0.as_str() {
            "task" => {
                delegated += 1;
                assert_eq!(c[0].1["subagent_type"], "explore");
            }
            "list" | "glob" | "todowrite" => {}
            other => panic!("seed {seed}: unexpected first tool {other}"),
        }
        assert!(
            !a.content().is_empty(),
            "a sentence of reasoning comes first"
        );
    }
    assert!((4..=24).contains(&delegated), "delegated {delegated} of 40");
    for seed in 0..40 {
        let a = plan("fresh-task-no-subagent.json", seed);
        assert!(calls(&a).iter().all(|(n, _)| n != "task"));
    }
}

#[test]
fn after_a_listing_it_reads_files_that_were_listed() {
    let listed = fixture("project-java.json");
    for seed in 0..20 {
        let a = plan("after-list.json", seed);
        let c = calls(&a);
        assert!(!c.is_empty());
        for (name, args) in &c {
            if name == "read" {
                let path = args["filePath"].as_str().unwrap();
                assert!(listed.get(path).is_some(), "read an unseen file {path}");
            }
        }
    }
}

#[test]
fn after_reading_edits_use_verbatim_old_strings() {
    let seen = seen_text("after-read.json");
    let mut edits = 0;
    for seed in 0..40 {
        let a = plan("after-read.json", seed);
        for (name, args) in calls(&a) {
            if name == "edit" {
                edits += 1;
                let old = args["oldString"].as_str().unwrap();
                assert!(seen.contains(old), "oldString not seen: {old:?}");
                assert_ne!(args["oldString"], args["newString"]);
                let path = args["filePath"].as_str().unwrap();
                assert!(path.ends_with(".java"), "{path}");
            }
        }
    }
    assert!(edits > 0, "no seed edited after reading");
}

#[test]
fn after_a_failing_test_it_reads_the_failure_then_fixes() {
    for seed in 0..20 {
        let a = plan("after-failing-test.json", seed);
        let c = calls(&a);
        assert!(!c.is_empty(), "seed {seed}: gave up");
        assert!(c.iter().all(|(n, _)| n == "read"), "seed {seed}: {c:?}");
        assert!(c
            .iter()
            .any(|(_, a)| a["filePath"] == "src/main/java/chat/ChatServer.java"));
    }
}

#[test]
fn after_a_passing_test_it_finishes_with_a_summary() {
    let persona = persona_support::ending_persona(7);
    for seed in 0..20 {
        let a = plan_with(&persona, "after-passing-test.json", seed).0;
        assert!(!a.has_tool_calls(), "seed {seed}: {a:?}");
        let t = a.content();
        let tokens = t.len() / 4;
        assert!((100..=450).contains(&tokens), "summary of {tokens} tokens");
        assert!(
            t.contains("ChatServer.java") && t.contains("mvn -q test"),
            "{t}"
        );
    }
}

#[test]
fn after_a_passing_test_with_calls_left_it_keeps_checking() {
    let mut spread = codendum_core::class::Class::lab().agent.clone();
    spread.calls_per_request = codendum_core::class::Distribution::value("test", 40.0);
    let persona = AgentPersona::with_spread(7, std::sync::Arc::new(spread));
    for seed in 0..20 {
        let (a, _) = plan_with(&persona, "after-passing-test.json", seed);
        let c = calls(&a);
        assert!(!c.is_empty(), "seed {seed}: answered with calls left");
        assert!(
            c.iter()
                .all(|(n, _)| ["read", "grep", "edit", "bash"].contains(&n.as_str())),
            "seed {seed}: {c:?}"
        );
    }
}

#[test]
fn renamed_tools_are_mapped_by_parameters() {
    let mut searched = 0;
    for seed in 0..30 {
        let a = plan("renamed-tools.json", seed);
        let c = calls(&a);
        assert!(!c.is_empty(), "seed {seed}: no call with renamed tools");
        for (name, args) in &c {
            match name.as_str() {
                "view_file" => assert!(args["path"].is_string()),
                "run_shell" => {
                    assert!(args["cmd"].is_string() && args["reason"].is_string());
                }
                "find_files" => {
                    searched += 1;
                    assert!(args["max_results"].as_i64().unwrap() >= 1);
                }
                other => panic!("unexpected {other}"),
            }
        }
    }
    assert!(searched > 0, "never looked around with find_files");
}

#[test]
fn unmappable_tools_get_a_text_answer() {
    let a = plan("unmappable-tools.json", 3);
    assert!(!a.has_tool_calls());
    assert!(a.content().len() > 200);
}

#[test]
fn subagent_searches_then_reads() {
    let (a, _) = plan_with(&AgentPersona::new(1), "subagent-first-step.json", 5);
    let c = calls(&a);
    assert_eq!(c.len(), 1);
    assert!(["glob", "list", "grep"].contains(&c[0].0.as_str()));
}

#[test]
fn title_compaction_and_chat_without_tools() {
    let title = plan("title.json", 1).content();
    let words = title.split_whitespace().count();
    assert!((1..=8).contains(&words), "{title}");
    assert!(!title.contains('\n'));

    let summary = plan("compaction.json", 1).content();
    let tokens = summary.len() / 4;
    assert!(
        (400..=1200).contains(&tokens),
        "compaction of {tokens} tokens"
    );
    for heading in ["Goal", "Progress", "Files", "Next steps"] {
        assert!(summary.contains(heading), "no {heading}: {summary}");
    }
    assert!(summary.contains("ChatServer.java"));

    let chat = plan("chat.json", 1);
    assert!(!chat.has_tool_calls());
    let tokens = output_chars(&chat) / 4;
    assert!((80..=400).contains(&tokens), "chat of {tokens} tokens");
}

#[test]
fn same_seed_same_answer_and_seeds_matter() {
    for name in [
        "fresh-task.json",
        "after-read.json",
        "after-passing-test.json",
    ] {
        assert_eq!(plan(name, 11), plan(name, 11), "{name}");
    }
    let distinct: std::collections::HashSet<String> = (0..10)
        .map(|s| format!("{:?}", plan("after-read.json", s)))
        .collect();
    assert!(distinct.len() > 5);
    let mut spread = codendum_core::class::Class::lab().agent.clone();
    spread.subagent_share = 1.0;
    let other = AgentPersona::with_config(PersonaConfig {
        seed: 99,
        todo_probability: 0.0,
        spread: std::sync::Arc::new(spread),
    });
    let (a, _) = plan_with(&other, "fresh-task.json", 0);
    assert_eq!(calls(&a)[0].0, "task");
}
