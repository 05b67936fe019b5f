//! A scripted client runs whole coding requests against the persona, in
//! process: the persona's tool calls are executed against an in-memory
//! project (read gives numbered lines, edit replaces, the first test run fails
//! with a failure log, later runs pass). Checks calibration (calls and output
//! tokens per coding request) and that every call is valid.

use crate::persona_support;

use std::collections::BTreeMap;

use codendum_twin::answer::{AnswerPart, AnswerRequest, Responder};
use codendum_twin::persona::{fnv1a, mix, AgentPersona};
use persona_support::{check_calls, tools};
use serde_json::{json, Value};

const SYSTEM: &str = "You are a coding agent working in the user's project. Use the tools to \
                      read, change and test code. Keep answers short.";
const EXPLORE_SYSTEM: &str = "You are a read-only search agent. Find what the caller asks for \
                              with the tools and report file paths and findings.";

struct Project {
    files: BTreeMap<String, String>,
    java: bool,
    test_runs: usize,
    tool_errors: Vec<String>,
}

#[derive(Default)]
struct Tally {
    calls: usize,
    chars: usize,
    subagent_calls: usize,
}

impl Project {
    fn load(java: bool) -> Self {
        let name = if java {
            "project-java.json"
        } else {
            "project-python.json"
        };
        let v = persona_support::fixture(name);
        let files = v
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        Project {
            files,
            java,
            test_runs: 0,
            tool_errors: Vec::new(),
        }
    }

    fn listing(&self, filter: impl Fn(&str) -> bool) -> String {
        let v: Vec<&str> = self
            .files
            .keys()
            .map(String::as_str)
            .filter(|p| filter(p))
            .collect();
        v.join("\n")
    }

    fn error(&mut self, msg: String) -> String {
        self.tool_errors.push(msg.clone());
        format!("Error: {msg}")
    }

    fn exec(
        &mut self,
        name: &str,
        args: &Value,
        persona: &AgentPersona,
        tally: &mut Tally,
    ) -> String {
        let s = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        match name {
            "read" => {
                let path = s("filePath");
                match self.files.get(&path) {
                    Some(c) => c
                        .lines()
                        .enumerate()
                        .map(|(i, l)| format!("{}: {l}", i + 1))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    None if path == "." => self.listing(|_| true),
                    None => self.error(format!("file not found: {path}")),
                }
            }
            "list" => self.listing(|_| true),
            "glob" => {
                let pattern = s("pattern");
                let ext = pattern.rsplit_once("*.").map(|(_, e)| format!(".{e}"));
                self.listing(|p| ext.as_deref().is_none_or(|e| p.ends_with(e)))
            }
            "grep" => {
                let pattern = s("pattern");
                let mut out = Vec::new();
                for (p, c) in &self.files {
                    for (i, l) in c.lines().enumerate() {
                        if l.contains(&pattern) {
                            out.push(format!("{p}:{}: {}", i + 1, l.trim()));
                        }
                    }
                }
                out.truncate(100);
                out.join("\n")
            }
            "edit" => {
                let (path, old, new) = (s("filePath"), s("oldString"), s("newString"));
                let Some(content) = self.files.get(&path).cloned() else {
                    return self.error(format!("file not found: {path}"));
                };
                match content.matches(&old).count() {
                    1 => {
                        self.files.insert(path, content.replacen(&old, &new, 1));
                        "Edit applied successfully.".to_string()
                    }
                    0 => self.error(format!("oldString not found in {path}")),
                    _ => self.error(format!("oldString found several times in {path}")),
                }
            }
            "write" => {
                self.files.insert(s("filePath"), s("content"));
                "Wrote file successfully.".to_string()
            }
            "bash" => {
                let cmd = s("command");
                if cmd.contains("find") || cmd.starts_with("ls") {
                    return self.listing(|_| true);
                }
                self.test_runs += 1;
                match (self.test_runs, self.java) {
                    (1, true) => "[ERROR] Tests run: 3, Failures: 1, Errors: 0\n[ERROR] ChatServerTest.messageFormatsWithSender:12 expected: <alice: hello> but was: <null>\n\tat chat.ChatServer.broadcast(ChatServer.java:31)\n[INFO] BUILD FAILURE".into(),
                    (1, false) => "F..\n=== FAILURES ===\ntests/test_server.py:5: AssertionError\nchat/server.py:38: in broadcast\n1 failed, 2 passed in 0.12s".into(),
                    (_, true) => "[INFO] Tests run: 4, Failures: 0, Errors: 0\n[INFO] BUILD SUCCESS".into(),
                    (_, false) => "....\n4 passed in 0.10s".into(),
                }
            }
            "todowrite" => "Todo list updated.".into(),
            "task" => {
                let prompt = s("prompt");
                let explore_tools = tools("explore-tools.json");
                let mut messages = vec![
                    json!({"role":"system","content":EXPLORE_SYSTEM}),
                    json!({"role":"user","content":prompt}),
                ];
                let before = tally.calls;
                let text = self.run(persona, &explore_tools, &mut messages, tally, 7);
                tally.subagent_calls += tally.calls - before;
                text
            }
            other => self.error(format!("unknown tool {other}")),
        }
    }

    /// Runs the agent loop until a text answer; returns that text.
    fn run(
        &mut self,
        persona: &AgentPersona,
        tools: &[Value],
        messages: &mut Vec<Value>,
        tally: &mut Tally,
        salt: u64,
    ) -> String {
        for _ in 0..200 {
            let seed = mix(salt, fnv1a(&Value::Array(messages.clone()).to_string()));
            let req = AnswerRequest {
                messages,
                tools,
                prompt: "",
                max_tokens: 32000,
                ignore_eos: false,
                seed,
                session: "",
            };
            let answer = persona.plan(&req);
            if let Err(e) = check_calls(&answer, tools) {
                panic!("invalid call: {e}");
            }
            tally.calls += 1;
            // Output tokens as the twin counts them in `usage`: one per streamed piece.
            tally.chars += codendum_twin::chunks::plan_pieces(&answer, |_| String::new()).len();
            let mut text = String::new();
            let mut calls = Vec::new();
            for (i, part) in answer.parts.iter().enumerate() {
                match part {
                    AnswerPart::Text(t) => text.push_str(t),
                    AnswerPart::ToolCall { name, arguments } => {
                        let id = format!("call_{}_{i}", messages.len());
                        calls.push((id, name.clone(), arguments.clone()));
                    }
                }
            }
            if calls.is_empty() {
                messages.push(json!({"role":"assistant","content":text}));
                return text;
            }
            let tool_calls: Vec<Value> = calls
                .iter()
                .map(|(id, n, a)| json!({"id":id,"type":"function","function":{"name":n,"arguments":a}}))
                .collect();
            messages.push(json!({"role":"assistant","content":text,"tool_calls":tool_calls}));
            for (id, name, arguments) in calls {
                let args: Value = serde_json::from_str(&arguments).unwrap();
                let result = self.exec(&name, &args, persona, tally);
                messages.push(json!({"role":"tool","tool_call_id":id,"content":result}));
            }
        }
        panic!("the agent did not finish within 200 steps");
    }
}

const TASKS: &[&str] = &[
    "Add a message history to the chat server: new clients should receive the last 10 messages when they connect. Add tests.",
    "Let users pick a nickname with a /nick command and show it in front of their messages. Add tests for it.",
    "The server crashes when a client disconnects while a broadcast is running. Fix it and add a test.",
];

fn session(java: bool, seed: u64, tools_file: &str) -> (Tally, Project, String) {
    let persona = AgentPersona::new(seed);
    let tools = tools(tools_file);
    let mut project = Project::load(java);
    let task = TASKS[(seed % TASKS.len() as u64) as usize];
    let mut messages = vec![
        json!({"role":"system","content":SYSTEM}),
        json!({"role":"user","content":task}),
    ];
    let mut tally = Tally::default();
    let text = project.run(&persona, &tools, &mut messages, &mut tally, seed);
    (tally, project, text)
}

#[test]
fn fifty_sessions_follow_the_lab_class() {
    let n = 50;
    let class = codendum_core::class::Class::lab();
    let a = &class.agent;
    let (mut calls, mut tokens, mut sub, mut tested) = (0usize, 0usize, 0usize, 0usize);
    let mut per_session = Vec::new();
    for seed in 0..n {
        let java = seed % 2 == 0;
        let (tally, project, text) = session(java, 1000 + seed, "opencode-tools.json");
        assert!(
            project.tool_errors.is_empty(),
            "seed {seed}: tool errors {:?}",
            project.tool_errors
        );
        tested += usize::from(project.test_runs >= 1);
        let cmd = if java { "mvn -q test" } else { "pytest -q" };
        assert!(
            text.contains(cmd) || text.contains("I did not run the tests"),
            "seed {seed}: the summary says nothing of the tests: {text}"
        );
        calls += tally.calls;
        tokens += tally.chars;
        sub += tally.subagent_calls;
        per_session.push(tally.calls);
    }
    let mean_calls = calls as f64 / n as f64;
    let mean_tokens = tokens as f64 / n as f64;
    // What the class implies for a request: its calls, its subagents' steps
    // at their size, one final answer, agent steps for the rest.
    let class_calls = a.calls_per_request.mean();
    let sub_calls = a.subagent_share * a.subagent_calls.mean();
    let o = &a.output_tokens;
    let implied = (class_calls - 1.0 - sub_calls) * o.agent_step.mean()
        + sub_calls * o.subagent_step.mean()
        + o.final_answer.mean();
    eprintln!(
        "mean calls {mean_calls:.1} (class {class_calls:.1}), mean output tokens {mean_tokens:.0} \
         (class {implied:.0}), subagent calls {sub}, tested {tested} of {n}, calls per session {per_session:?}"
    );
    assert!(
        (0.85 * class_calls..=1.3 * class_calls).contains(&mean_calls),
        "mean calls {mean_calls:.1} against the class's {class_calls:.1}"
    );
    assert!(
        (0.75 * implied..=1.35 * implied).contains(&mean_tokens),
        "mean output tokens {mean_tokens:.0} against the class's {implied:.0}"
    );
    assert!(sub > 0, "no session delegated to a subagent");
    assert!(
        tested as u64 * 10 >= n * 7,
        "only {tested} of {n} sessions ran the tests"
    );
    let min = per_session.iter().min().copied().unwrap_or(0);
    let max = per_session.iter().max().copied().unwrap_or(0);
    assert!(
        max - min >= 10,
        "no spread in calls per session: {min}..{max}"
    );
}

#[test]
fn the_same_seed_gives_the_same_session() {
    let (a, pa, ta) = session(true, 77, "opencode-tools.json");
    let (b, pb, tb) = session(true, 77, "opencode-tools.json");
    assert_eq!((a.calls, a.chars), (b.calls, b.chars));
    assert_eq!(pa.files, pb.files);
    assert_eq!(ta, tb);
}
