//! The agent's system prompts and tool definitions: our own built-in text,
//! sized like OpenCode's (system ≈ 2,000 tokens, tool definitions ≈ 5,000
//! tokens at ≈ 4 characters per token), or a captured one from
//! `--prompt-file`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use codendum_core::error::ConfigError;

const SYSTEM: &str = include_str!("../../fixtures/classroom/prompt/system.md");
const EXPLORE: &str = include_str!("../../fixtures/classroom/prompt/explore.md");
const TITLE: &str = include_str!("../../fixtures/classroom/prompt/title.md");
const COMPACTION: &str = include_str!("../../fixtures/classroom/prompt/compaction.md");

/// The explore subagent's read-only tools.
pub const EXPLORE_TOOLS: [&str; 4] = ["bash", "glob", "grep", "read"];

/// The title request's system prompt.
pub fn title_system() -> &'static str {
    TITLE
}

/// The compaction request's system prompt.
pub fn compaction_system() -> &'static str {
    COMPACTION
}

/// Where a prompt came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptSource {
    /// The built-in prompt.
    BuiltIn,
    /// A captured prompt file.
    File(PathBuf),
}

/// A system prompt and the tool definitions (OpenAI `tools` entries) for the
/// main agent, plus the explore subagent's.
#[derive(Debug, Clone)]
pub struct PromptSet {
    /// The main agent's system prompt.
    pub system: String,
    /// The main agent's tool definitions.
    pub tools: Vec<Value>,
    /// The explore subagent's system prompt.
    pub explore_system: String,
    /// The explore subagent's tool definitions.
    pub explore_tools: Vec<Value>,
    /// Built in, or which file.
    pub source: PromptSource,
}

impl Default for PromptSet {
    fn default() -> Self {
        Self::built_in()
    }
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
                "$schema": "http://json-schema.org/draft-07/schema#"
            }
        }
    })
}

fn built_in_tools() -> Vec<Value> {
    let s = |d: &str| json!({"type": "string", "description": d});
    let n = |d: &str| json!({"type": "number", "description": d});
    vec![
        tool(
            "bash",
            include_str!("../../fixtures/classroom/prompt/tools/bash.md"),
            json!({
                "command": s("The command line to run"),
                "timeout": n("Time limit in milliseconds (default 120000, at most 600000)"),
                "workdir": s("Folder to run the command in, instead of the project root"),
            }),
            &["command"],
        ),
        tool(
            "read",
            include_str!("../../fixtures/classroom/prompt/tools/read.md"),
            json!({
                "filePath": s("Path of the file or folder to read"),
                "offset": n("Line number to start at (1 is the first line)"),
                "limit": n("How many lines to return (at most 2000)"),
            }),
            &["filePath"],
        ),
        tool(
            "edit",
            include_str!("../../fixtures/classroom/prompt/tools/edit.md"),
            json!({
                "filePath": s("Path of the file to change"),
                "oldString": s("The exact text to replace"),
                "newString": s("The text to put in its place (must differ from oldString)"),
                "replaceAll": {"type": "boolean", "description": "Replace every occurrence (default false)"},
            }),
            &["filePath", "oldString", "newString"],
        ),
        tool(
            "write",
            include_str!("../../fixtures/classroom/prompt/tools/write.md"),
            json!({
                "filePath": s("Path of the file to write"),
                "content": s("The complete content of the file"),
            }),
            &["filePath", "content"],
        ),
        tool(
            "glob",
            include_str!("../../fixtures/classroom/prompt/tools/glob.md"),
            json!({
                "pattern": s("The glob pattern to match file paths against"),
                "path": s("Folder to search in (default: the project root)"),
            }),
            &["pattern"],
        ),
        tool(
            "grep",
            include_str!("../../fixtures/classroom/prompt/tools/grep.md"),
            json!({
                "pattern": s("Regular expression to search for"),
                "path": s("Folder or file to search (default: the project root)"),
                "include": s("Glob of the file names to search, e.g. *.java"),
            }),
            &["pattern"],
        ),
        tool(
            "list",
            include_str!("../../fixtures/classroom/prompt/tools/list.md"),
            json!({
                "path": s("Folder to list (default: the project root)"),
            }),
            &[],
        ),
        tool(
            "task",
            include_str!("../../fixtures/classroom/prompt/tools/task.md"),
            json!({
                "description": s("Short label of the task (3-5 words)"),
                "prompt": s("Complete instructions for the helper"),
                "subagent_type": {"type": "string", "enum": ["explore"], "description": "Type of helper"},
            }),
            &["description", "prompt", "subagent_type"],
        ),
        tool(
            "todowrite",
            include_str!("../../fixtures/classroom/prompt/tools/todowrite.md"),
            json!({
                "todos": {
                    "type": "array",
                    "description": "The complete, updated todo list",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": s("What is to be done"),
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"]},
                            "priority": {"type": "string", "enum": ["high", "medium", "low"]},
                            "id": s("Stable unique id of the item"),
                        },
                        "required": ["content", "status", "priority", "id"]
                    }
                },
            }),
            &["todos"],
        ),
    ]
}

/// The names of tool definitions.
pub fn tool_names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
        .map(String::from)
        .collect()
}

fn explore_subset(tools: &[Value]) -> Vec<Value> {
    tools
        .iter()
        .filter(|t| {
            t.pointer("/function/name")
                .and_then(Value::as_str)
                .is_some_and(|n| EXPLORE_TOOLS.contains(&n))
        })
        .cloned()
        .collect()
}

impl PromptSet {
    /// Our built-in prompt and tools.
    pub fn built_in() -> Self {
        let tools = built_in_tools();
        PromptSet {
            system: SYSTEM.to_string(),
            explore_tools: explore_subset(&tools),
            tools,
            explore_system: EXPLORE.to_string(),
            source: PromptSource::BuiltIn,
        }
    }

    /// Reads a captured prompt file: an OpenCode request body
    /// `{model, messages: [{role: "system", ...}, ...], tools: [...]}` or a
    /// plain `{"system": "...", "tools": [...]}`. The explore subagent uses
    /// the captured definitions of bash, glob, grep and read where present.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Unreadable {
            what: "prompt file",
            path: path.to_path_buf(),
            source,
        })?;
        let bad = |reason: String| ConfigError::BadFile {
            what: "prompt file",
            path: path.to_path_buf(),
            reason,
        };
        let (system, tools) = parse_prompt(&text).map_err(bad)?;
        let mut explore_tools = explore_subset(&tools);
        if explore_tools.is_empty() {
            explore_tools = explore_subset(&built_in_tools());
        }
        Ok(PromptSet {
            system,
            tools,
            explore_system: EXPLORE.to_string(),
            explore_tools,
            source: PromptSource::File(path.to_path_buf()),
        })
    }
}

/// Parses the text of a prompt file into (system prompt, tool definitions).
pub fn parse_prompt(text: &str) -> Result<(String, Vec<Value>), String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let system = if let Some(s) = v.get("system") {
        s.as_str()
            .map(String::from)
            .ok_or("\"system\" must be a string")?
    } else if let Some(msgs) = v.get("messages").and_then(Value::as_array) {
        let parts: Vec<String> = msgs
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
            .map(codendum_core::openai::message_text)
            .collect();
        if parts.is_empty() {
            return Err("\"messages\" has no system message".into());
        }
        parts.join("\n")
    } else {
        return Err(
            "expected a \"system\" string or a \"messages\" array with a system message".into(),
        );
    };
    if system.trim().is_empty() {
        return Err("the system prompt is empty".into());
    }
    let tools = match v.get("tools") {
        Some(Value::Array(t)) => t.clone(),
        Some(_) => return Err("\"tools\" must be an array".into()),
        None => return Err("no \"tools\" array".into()),
    };
    for (i, t) in tools.iter().enumerate() {
        let named = t.get("type").and_then(Value::as_str) == Some("function")
            && t.pointer("/function/name")
                .and_then(Value::as_str)
                .is_some();
        if !named {
            return Err(format!(
                "tools[{i}] is not {{\"type\":\"function\",\"function\":{{\"name\":...}}}}"
            ));
        }
    }
    Ok((system, tools))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_prompt_is_sized_like_opencode() {
        let p = PromptSet::built_in();
        let system_tokens = p.system.len() / 4;
        let tool_tokens = serde_json::to_string(&p.tools).unwrap_or_default().len() / 4;
        assert!((1_700..=2_300).contains(&system_tokens), "{system_tokens}");
        assert!((4_300..=5_700).contains(&tool_tokens), "{tool_tokens}");
        assert_eq!(tool_names(&p.tools).len(), 9);
        assert_eq!(
            tool_names(&p.explore_tools),
            vec!["bash", "read", "glob", "grep"]
        );
    }

    #[test]
    fn parses_captured_bodies_and_plain_files() {
        let body = r#"{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"You are X."}]},{"role":"user","content":"hi"}],
            "tools":[{"type":"function","function":{"name":"read","parameters":{}}},{"type":"function","function":{"name":"webfetch"}}]}"#;
        let (system, tools) = parse_prompt(body).unwrap();
        assert_eq!(system, "You are X.");
        assert_eq!(tools.len(), 2);
        let (system, _) = parse_prompt(r#"{"system":"S","tools":[]}"#).unwrap();
        assert_eq!(system, "S");
        assert!(parse_prompt(r#"{"tools":[]}"#).is_err());
        assert!(parse_prompt(r#"{"system":"S","tools":[{"name":"x"}]}"#)
            .unwrap_err()
            .contains("tools[0]"));
        assert!(parse_prompt("nope").is_err());
    }

    #[test]
    fn prompt_file_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("captured.json");
        std::fs::write(&path, "{\"system\": 3}").unwrap();
        let err = PromptSet::from_file(&path).unwrap_err().to_string();
        assert!(
            err.contains("captured.json") && err.contains("prompt file"),
            "{err}"
        );
        let err = PromptSet::from_file(&dir.path().join("missing.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing.json"), "{err}");
        std::fs::write(
            &path,
            r#"{"system":"S","tools":[{"type":"function","function":{"name":"grep"}}]}"#,
        )
        .unwrap();
        let p = PromptSet::from_file(&path).unwrap();
        assert_eq!(tool_names(&p.explore_tools), vec!["grep"]);
        assert_eq!(p.source, PromptSource::File(path));
    }
}
