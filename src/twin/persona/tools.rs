//! Maps the tools a request offers to what a coding agent does with them
//! (read a file, edit, run a command, ...), by name, description and
//! parameter names, and builds arguments that satisfy each tool's JSON schema.

use serde_json::{Map, Value};

use crate::twin::answer::AnswerPart;

#[path = "tool_args.rs"]
mod args;
use args::{coerce, fill_required, required_names, todo_items, type_of};

/// What a coding agent uses an offered tool for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolRole {
    /// Reads one file (`read {filePath}`, `view_file {path}`).
    Read,
    /// Replaces a string in a file (`edit {filePath, oldString, newString}`).
    Edit,
    /// Writes a whole file (`write {filePath, content}`).
    Write,
    /// Runs a shell command (`bash {command}`, `run_shell {cmd}`).
    Shell,
    /// Lists a folder (`list {path}`).
    List,
    /// Finds files by pattern (`glob {pattern}`).
    Glob,
    /// Searches file contents (`grep {pattern}`).
    Grep,
    /// Starts a subagent (`task {description, prompt, subagent_type}`).
    Task,
    /// Writes a todo list (`todowrite {todos}`).
    Todo,
}

/// A parameter slot that a role fills with a meaningful value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The file or folder path.
    Path,
    /// The text to replace.
    Old,
    /// The replacement text.
    New,
    /// A whole file's content.
    Content,
    /// A shell command line.
    Command,
    /// A glob or search pattern.
    Pattern,
    /// A short description (task tool).
    Description,
    /// The subagent's instructions (task tool).
    Prompt,
    /// The subagent kind (task tool).
    SubagentType,
    /// The todo list (todo tool).
    Todos,
}

/// An offered tool that maps to a role, with the parameter name of each slot.
#[derive(Debug, Clone)]
pub struct MappedTool {
    /// The function name as offered.
    pub name: String,
    /// What the agent uses it for.
    pub role: ToolRole,
    slots: Vec<(Slot, String)>,
    schema: Value,
}

/// The offered tools that could be mapped to roles.
#[derive(Debug, Clone, Default)]
pub struct ToolKit {
    tools: Vec<MappedTool>,
    offered: usize,
}

impl ToolKit {
    /// Maps OpenAI tool definitions (`{"type":"function","function":{...}}`).
    /// Definitions of other shapes are counted as offered but not mapped.
    pub fn from_definitions(definitions: &[Value]) -> Self {
        let tools = definitions.iter().filter_map(map_tool).collect();
        ToolKit {
            tools,
            offered: definitions.len(),
        }
    }

    /// Whether the request offered any tool at all (mapped or not).
    pub fn offered_any(&self) -> bool {
        self.offered > 0
    }

    /// The first offered tool with this role.
    pub fn get(&self, role: ToolRole) -> Option<&MappedTool> {
        self.tools.iter().find(|t| t.role == role)
    }

    /// Whether a tool with this role is offered.
    pub fn has(&self, role: ToolRole) -> bool {
        self.get(role).is_some()
    }

    /// The mapped tool of this function name.
    pub fn by_name(&self, name: &str) -> Option<&MappedTool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

impl MappedTool {
    /// The parameter name behind a slot, if the tool has one.
    pub fn param(&self, slot: Slot) -> Option<&str> {
        self.slots
            .iter()
            .find(|(s, _)| *s == slot)
            .map(|(_, n)| n.as_str())
    }

    /// Builds a tool call: the given slot values under the tool's own
    /// parameter names, then every other required parameter filled with a
    /// valid value for its schema.
    pub fn call(&self, values: Vec<(Slot, Value)>) -> AnswerPart {
        let props = self.schema.get("properties").and_then(Value::as_object);
        let mut args = Map::new();
        for (slot, value) in values {
            if let Some(name) = self.param(slot) {
                let prop = props.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
                let value = if slot == Slot::Todos {
                    todo_items(&value, prop)
                } else {
                    coerce(value, prop)
                };
                args.insert(name.to_string(), value);
            }
        }
        fill_required(&self.schema, &mut args);
        AnswerPart::ToolCall {
            name: self.name.clone(),
            arguments: Value::Object(args).to_string(),
        }
    }
}

fn map_tool(def: &Value) -> Option<MappedTool> {
    let f = def.get("function")?;
    let name = f.get("name")?.as_str()?.to_string();
    let desc = f
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    let schema = f.get("parameters").cloned().unwrap_or(Value::Null);
    let params: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let lname = name.to_ascii_lowercase();
    let role = role_from_words(&Words::Name(&lname), &params, &schema)
        .or_else(|| role_from_words(&Words::Prose(&first_sentence(&desc)), &params, &schema))?;
    let slots = slots_for(role, &params, &schema);
    Some(MappedTool {
        name,
        role,
        slots,
        schema,
    })
}

fn first_sentence(desc: &str) -> String {
    desc.split(['.', '\n']).next().unwrap_or("").to_string()
}

fn has_any(text: &str, words: &[&str]) -> bool {
    words.iter().any(|w| text.contains(w))
}

/// Where role words are looked for: a tool name (substrings count, so
/// `todowrite` and `runShell` match) or a description (whole words count, by
/// prefix, so "Reads a file" matches `read` but "tools" does not match `ls`).
enum Words<'a> {
    Name(&'a str),
    Prose(&'a str),
}

impl Words<'_> {
    fn any(&self, words: &[&str]) -> bool {
        match self {
            Words::Name(n) => has_any(n, words),
            Words::Prose(p) => p
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|tok| words.iter().any(|w| tok.starts_with(w))),
        }
    }
}

fn role_from_words(text: &Words<'_>, params: &[String], schema: &Value) -> Option<ToolRole> {
    let p = |slot| find_param(slot, params, schema).is_some();
    if text.any(&["todo"]) {
        return p(Slot::Todos).then_some(ToolRole::Todo);
    }
    if text.any(&["task", "subagent", "delegate", "agent"]) && p(Slot::Prompt) {
        return Some(ToolRole::Task);
    }
    if text.any(&["bash", "shell", "exec", "terminal", "command", "run"]) && p(Slot::Command) {
        return Some(ToolRole::Shell);
    }
    if text.any(&["edit", "replace", "patch", "modify"])
        && p(Slot::Path)
        && p(Slot::Old)
        && p(Slot::New)
    {
        return Some(ToolRole::Edit);
    }
    if text.any(&["write", "create", "save"]) && p(Slot::Path) && p(Slot::Content) {
        return Some(ToolRole::Write);
    }
    if text.any(&["read", "view", "cat", "open", "show"]) && p(Slot::Path) {
        return Some(ToolRole::Read);
    }
    if text.any(&["grep", "search"]) && p(Slot::Pattern) {
        return Some(ToolRole::Grep);
    }
    if text.any(&["glob", "find"]) && p(Slot::Pattern) {
        return Some(ToolRole::Glob);
    }
    if text.any(&["list", "dir", "tree"]) || matches!(text, Words::Name("ls")) {
        return Some(ToolRole::List);
    }
    None
}

fn slots_for(role: ToolRole, params: &[String], schema: &Value) -> Vec<(Slot, String)> {
    let wanted: &[Slot] = match role {
        ToolRole::Read | ToolRole::List => &[Slot::Path],
        ToolRole::Edit => &[Slot::Path, Slot::Old, Slot::New],
        ToolRole::Write => &[Slot::Path, Slot::Content],
        ToolRole::Shell => &[Slot::Command],
        ToolRole::Glob | ToolRole::Grep => &[Slot::Pattern],
        ToolRole::Task => &[Slot::Description, Slot::Prompt, Slot::SubagentType],
        ToolRole::Todo => &[Slot::Todos],
    };
    wanted
        .iter()
        .filter_map(|&s| find_param(s, params, schema).map(|n| (s, n)))
        .collect()
}

fn squash(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase()
}

fn find_param(slot: Slot, params: &[String], schema: &Value) -> Option<String> {
    let exact: &[&str] = match slot {
        Slot::Path => &[
            "filepath",
            "path",
            "file",
            "filename",
            "absolutepath",
            "targetfile",
            "dirpath",
            "directory",
            "dir",
        ],
        Slot::Old => &["oldstring", "oldstr", "oldtext", "old", "search"],
        Slot::New => &["newstring", "newstr", "newtext", "new", "replacement"],
        Slot::Content => &["content", "contents", "text", "filetext", "data", "body"],
        Slot::Command => &["command", "cmd", "script", "commandline", "shellcommand"],
        Slot::Pattern => &["pattern", "query", "regex", "glob", "search", "term"],
        Slot::Description => &["description", "title", "summary"],
        Slot::Prompt => &["prompt", "instructions", "task", "message"],
        Slot::SubagentType => &["subagenttype", "agenttype", "agent", "type"],
        Slot::Todos => &["todos", "todo", "items", "tasks"],
    };
    let squashed: Vec<(String, &String)> = params.iter().map(|p| (squash(p), p)).collect();
    for want in exact {
        if let Some((_, p)) = squashed.iter().find(|(s, _)| s == want) {
            return Some((*p).clone());
        }
    }
    let fuzzy = match slot {
        Slot::Path => "path",
        Slot::Old => "old",
        Slot::New => "new",
        Slot::Command => "command",
        Slot::Todos => "todo",
        _ => return None,
    };
    let found = squashed.iter().find(|(s, _)| s.contains(fuzzy));
    if let Some((_, p)) = found {
        return Some((*p).clone());
    }
    // A shell tool whose only required parameter is a string takes the command there.
    if slot == Slot::Command {
        let required = required_names(schema);
        if let [only] = required.as_slice() {
            let prop = &schema["properties"][only.as_str()];
            if type_of(prop) == "string" {
                return Some(only.clone());
            }
        }
    }
    None
}
