//! Unit tests of the agent's tools.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::scenario::Scenario;
use super::shell::ShellState;
use super::tools::{execute, ToolContext, ToolResult, ToolStep};
use super::workspace::Workspace;

struct World {
    ws: Workspace,
    shell: ShellState,
    rng: ChaCha8Rng,
    offered: Vec<String>,
}

impl World {
    fn new(scenario: Scenario) -> Self {
        let offered = [
            "read",
            "write",
            "edit",
            "bash",
            "glob",
            "grep",
            "list",
            "task",
            "todowrite",
            "webfetch",
        ];
        World {
            ws: Workspace::new(scenario),
            shell: ShellState {
                scenario,
                first_test_fails: false,
                test_runs: 0,
                client_times: Default::default(),
                tool_s: std::sync::Arc::new(
                    codendum_core::class::Class::lab().agent.tool_s.clone(),
                ),
            },
            rng: ChaCha8Rng::seed_from_u64(1),
            offered: offered.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn step(&mut self, name: &str, args: serde_json::Value) -> ToolStep {
        let mut ctx = ToolContext {
            workspace: &mut self.ws,
            shell: &mut self.shell,
            rng: &mut self.rng,
            offered: &self.offered,
        };
        execute(&mut ctx, name, &args.to_string())
    }

    fn call(&mut self, name: &str, args: serde_json::Value) -> ToolResult {
        match self.step(name, args) {
            ToolStep::Done(r) => r,
            other => panic!("expected a result, got {other:?}"),
        }
    }
}

#[test]
fn read_numbers_lines_pages_and_lists_folders() {
    let mut w = World::new(Scenario::Java);
    let r = w.call(
        "read",
        json!({"filePath": "src/main/java/chat/Message.java"}),
    );
    assert!(!r.is_error);
    assert!(
        r.content
            .starts_with("1: package chat;\n2: \n3: import java.util.Objects;"),
        "{}",
        r.content
    );
    let r = w.call(
        "read",
        json!({"filePath": "/home/student/chat/pom.xml", "offset": 3, "limit": 2}),
    );
    assert!(r.content.starts_with("3: "), "{}", r.content);
    assert_eq!(r.content.lines().filter(|l| l.contains(": ")).count(), 2);
    assert!(r.content.contains("Use offset 5"));
    let r = w.call("read", json!({"filePath": "src"}));
    assert_eq!(r.content, "/home/student/chat/src/\nmain/\ntest/\n");
    let r = w.call(
        "read",
        json!({"filePath": "src/main/java/chat/message.java"}),
    );
    assert!(r.is_error);
    assert!(r.content.contains("Did you mean"), "{}", r.content);
}

#[test]
fn read_caps_at_2000_lines() {
    let mut w = World::new(Scenario::Python);
    let long: String = (0..2500).map(|i| format!("x = {i}\n")).collect();
    w.call("write", json!({"filePath": "big.py", "content": long}));
    let r = w.call("read", json!({"filePath": "big.py"}));
    assert!(r.content.contains("2000: x = 1999\n"));
    assert!(!r.content.contains("2001: "));
    let r = w.call(
        "read",
        json!({"filePath": "big.py", "limit": 5000, "offset": 2400}),
    );
    assert!(r.content.contains("2500: x = 2499") && r.content.contains("End of file"));
}

#[test]
fn edit_replaces_exactly_and_reports_missing_or_ambiguous_text() {
    let mut w = World::new(Scenario::Python);
    let r = w.call("edit", json!({"filePath": "chat/server.py", "oldString": "port = int(sys.argv[1]) if len(sys.argv) > 1 else 5050", "newString": "port = 6060"}));
    assert!(!r.is_error, "{}", r.content);
    assert!(w
        .ws
        .file("chat/server.py")
        .is_some_and(|t| t.contains("port = 6060\n")));
    let r = w.call(
        "edit",
        json!({"filePath": "chat/server.py", "oldString": "no such text", "newString": "x"}),
    );
    assert!(r.is_error && r.content.contains("not found"));
    let r = w.call(
        "edit",
        json!({"filePath": "chat/server.py", "oldString": "self.lock", "newString": "self.mutex"}),
    );
    assert!(r.is_error && r.content.contains("occurs"), "{}", r.content);
    let r = w.call("edit", json!({"filePath": "chat/server.py", "oldString": "self.lock", "newString": "self.mutex", "replaceAll": true}));
    assert!(!r.is_error);
    assert!(w
        .ws
        .file("chat/server.py")
        .is_some_and(|t| !t.contains("self.lock")));
    let r = w.call(
        "edit",
        json!({"filePath": "chat/new.py", "oldString": "", "newString": "pass\n"}),
    );
    assert!(!r.is_error);
    assert_eq!(w.ws.file("chat/new.py"), Some("pass\n"));
}

#[test]
fn write_creates_and_refuses_outside_the_project() {
    let mut w = World::new(Scenario::Java);
    let r = w.call("write", json!({"filePath": "src/test/java/chat/PrivateTest.java", "content": "class PrivateTest {}\n"}));
    assert!(!r.is_error);
    assert!(w.ws.file("src/test/java/chat/PrivateTest.java").is_some());
    let r = w.call("write", json!({"filePath": "/etc/hosts", "content": "x"}));
    assert!(r.is_error && r.content.contains("outside the project"));
}

#[test]
fn bash_builds_take_simulated_time_and_file_commands_answer() {
    let mut w = World::new(Scenario::Java);
    let r = w.call("bash", json!({"command": "mvn -q test"}));
    assert!(!r.is_error);
    assert_eq!(
        r.content, "(no output)\n",
        "a quiet passing run prints nothing"
    );
    assert!((3.0..=12.0).contains(&r.elapsed.as_secs_f64()));
    let r = w.call("bash", json!({"command": "mvn test"}));
    assert!(r.content.contains("BUILD SUCCESS"));
    let r = w.call("bash", json!({"command": "mvn -q compile"}));
    assert_eq!(r.content, "(no output)\n");
    assert!((3.0..=12.0).contains(&r.elapsed.as_secs_f64()));
    let r = w.call("read", json!({"filePath": "pom.xml"}));
    let lab = codendum_core::class::Class::lab();
    let (low, high) = (
        lab.agent.tool_s.file_tool.min(),
        lab.agent.tool_s.file_tool.max(),
    );
    assert!(
        (low..=high).contains(&r.elapsed.as_secs_f64()),
        "file tools take client time"
    );
    let r = w.call(
        "bash",
        json!({"command": "grep -rn PRIVATE src || echo none"}),
    );
    assert_eq!(r.content, "none\n");
    let r = w.call(
        "bash",
        json!({"command": "ls", "workdir": "src/main/java/chat"}),
    );
    assert_eq!(
        r.content,
        "ChatClient.java\nChatServer.java\nMessage.java\n"
    );
    let r = w.call("bash", json!({"command": "find . -name '*Test.java'"}));
    assert_eq!(r.content.lines().count(), 2, "{}", r.content);
    let r = w.call("bash", json!({"command": "head -n 2 README.md"}));
    assert_eq!(r.content, "# Lab 4: a small chat server\n\n");
    let r = w.call("bash", json!({"command": "cargo build"}));
    assert!(r.content.contains("command not found") && r.content.contains("exit code 127"));
    let r = w.call(
        "bash",
        json!({"command": "python -m chat.server", "timeout": 1500}),
    );
    assert_eq!(r.elapsed.as_millis(), 1500);
}

#[test]
fn first_test_run_fails_when_drawn() {
    let mut w = World::new(Scenario::Python);
    w.shell.first_test_fails = true;
    let r = w.call("bash", json!({"command": "python -m pytest -q"}));
    assert!(
        r.content.contains("1 failed") && r.content.contains("exit code 1"),
        "{}",
        r.content
    );
    let r = w.call("bash", json!({"command": "pytest"}));
    assert!(r.content.contains("5 passed"));
}

#[test]
fn glob_grep_and_list_search_the_project() {
    let mut w = World::new(Scenario::Java);
    let r = w.call("glob", json!({"pattern": "**/*.java", "path": "src/test"}));
    assert_eq!(r.content.lines().count(), 2);
    assert!(r
        .content
        .lines()
        .all(|l| l.starts_with("/home/student/chat/src/test/")));
    let r = w.call("glob", json!({"pattern": "*.rs"}));
    assert_eq!(r.content, "No files found");
    let r = w.call(
        "grep",
        json!({"pattern": "class \\w+", "include": "*.java"}),
    );
    assert!(r.content.starts_with("Found "), "{}", r.content);
    assert!(r.content.contains("Line 6: public final class Message {"));
    let r = w.call("grep", json!({"pattern": "("}));
    assert!(r.is_error);
    let r = w.call("list", json!({}));
    assert!(
        r.content.contains(
            "\n  src/\n    main/\n      java/\n        chat/\n          ChatClient.java\n"
        ),
        "{}",
        r.content
    );
}

#[test]
fn glob_and_grep_cap_at_100_results() {
    let mut w = World::new(Scenario::Python);
    for i in 0..150 {
        w.ws.write(&format!("gen/m{i}.py"), "import os\n");
    }
    let r = w.call("glob", json!({"pattern": "gen/*.py"}));
    assert_eq!(
        r.content.lines().filter(|l| l.starts_with('/')).count(),
        100
    );
    assert!(r.content.contains("of 150"));
    let r = w.call("grep", json!({"pattern": "^import os", "path": "gen"}));
    assert_eq!(
        r.content
            .lines()
            .filter(|l| l.starts_with("  Line"))
            .count(),
        100
    );
}

#[test]
fn task_asks_for_a_subagent_and_todowrite_validates() {
    let mut w = World::new(Scenario::Java);
    let s = w.step("task", json!({"description": "find parser", "prompt": "Where is parse?", "subagent_type": "explore"}));
    assert!(
        matches!(s, ToolStep::Subagent { ref subagent_type, .. } if subagent_type == "explore")
    );
    let r = w.call("task", json!({"description": "x"}));
    assert!(r.is_error && r.content.contains("missing required parameter prompt"));
    let r = w.call(
        "todowrite",
        json!({"todos": [{"content": "a", "status": "pending", "priority": "high", "id": "1"}]}),
    );
    assert!(!r.is_error && r.content.starts_with("1 todos"));
    let r = w.call("todowrite", json!({"todos": [{"content": 3}]}));
    assert!(r.is_error);
}

#[test]
fn unknown_tools_and_bad_arguments_are_errors() {
    let mut w = World::new(Scenario::Java);
    let r = w.call("rm_rf", json!({}));
    assert!(r.is_error && r.content.contains("unknown tool"));
    let mut ctx = ToolContext {
        workspace: &mut w.ws,
        shell: &mut w.shell,
        rng: &mut w.rng,
        offered: &w.offered,
    };
    match execute(&mut ctx, "read", "{\"filePath\": ") {
        ToolStep::Done(r) => assert!(r.is_error && r.content.contains("not valid JSON")),
        other => panic!("{other:?}"),
    }
    let r = w.call("read", json!({"path": "pom.xml"}));
    assert!(r.is_error && r.content.contains("missing required parameter filePath"));
    let r = w.call("webfetch", json!({"url": "https://example.org"}));
    assert!(r.is_error);
}
