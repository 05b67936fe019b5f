//! Maps the tools a request offers to what a coding agent does with them
//! (read a file, edit, run a command, ...), by name, description and
//! parameter names, and builds arguments that satisfy each tool's JSON schema.

use serde_json::{Map, Value};

use crate::answer::AnswerPart;
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
    /// A read tool that also lists folders (OpenCode's `read`: "Read a file
    /// or directory").
    pub reads_folders: bool,
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
    let first = first_sentence(&desc);
    let role = role_of(
        &Words::Name(&lname),
        &Words::Prose(&first),
        &params,
        &schema,
    )?;
    let slots = slots_for(role, &params, &schema);
    let path_doc = slots
        .iter()
        .find(|(s, _)| *s == Slot::Path)
        .and_then(|(_, p)| schema["properties"][p.as_str()]["description"].as_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let folders = |t: &str| has_any(t, &["directory", "folder"]);
    let reads_folders = role == ToolRole::Read && (folders(&first) || folders(&path_doc));
    Some(MappedTool {
        name,
        role,
        reads_folders,
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

/// The role of a tool: its parameters first (a path with old and new text
/// edits, a path with content writes, a command runs, a pattern searches, a
/// path alone reads or lists), its name and then its description's first
/// sentence to tell apart tools with the same parameters. A tool whose
/// parameters fit no role (`skill {name}`, `webfetch {url}`) gets none and is
/// never called.
fn role_of(
    name: &Words<'_>,
    prose: &Words<'_>,
    params: &[String],
    schema: &Value,
) -> Option<ToolRole> {
    let p = |slot| find_param(slot, params, schema).is_some();
    let named = |slot| named_param(slot, params).is_some();
    let says = |words: &[&str]| name.any(words) || prose.any(words);
    if p(Slot::Path) && p(Slot::Old) && p(Slot::New) {
        return Some(ToolRole::Edit);
    }
    if p(Slot::Path) && p(Slot::Content) {
        return Some(ToolRole::Write);
    }
    if p(Slot::Todos) && (says(&["todo"]) || named(Slot::Todos)) && !p(Slot::Path) {
        return Some(ToolRole::Todo);
    }
    if p(Slot::Prompt)
        && (named(Slot::SubagentType) || says(&["task", "subagent", "delegate", "agent"]))
    {
        return Some(ToolRole::Task);
    }
    if named(Slot::Command) {
        return Some(ToolRole::Shell);
    }
    if p(Slot::Pattern) {
        let grep: &[&str] = &["grep", "search", "content"];
        let glob: &[&str] = &["glob", "find", "match", "file"];
        for words in [name, prose] {
            if words.any(grep) {
                return Some(ToolRole::Grep);
            }
            if words.any(glob) {
                return Some(ToolRole::Glob);
            }
        }
        return params
            .iter()
            .any(|p| squash(p) == "include")
            .then_some(ToolRole::Grep);
    }
    let read: &[&str] = &["read", "view", "cat", "open", "show"];
    let list: &[&str] = &["list", "dir", "tree"];
    let lists = |w: &Words<'_>| w.any(list) || matches!(w, Words::Name("ls"));
    if p(Slot::Path) {
        for words in [name, prose] {
            if lists(words) && !words.any(read) {
                return Some(ToolRole::List);
            }
            if words.any(read) {
                return Some(ToolRole::Read);
            }
        }
        return None;
    }
    if lists(name) && required_names(schema).is_empty() {
        return Some(ToolRole::List);
    }
    if p(Slot::Command) && says(&["bash", "shell", "exec", "terminal", "command", "run"]) {
        return Some(ToolRole::Shell);
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

/// The parameter of a slot by its usual names only (`filePath`, `old_str`,
/// `cmd`, ...).
fn named_param(slot: Slot, params: &[String]) -> Option<String> {
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
    exact.iter().find_map(|want| {
        squashed
            .iter()
            .find(|(s, _)| s == want)
            .map(|(_, p)| (*p).clone())
    })
}

/// The parameter of a slot: by its usual names, then by a name containing
/// the slot's word (`sourcePath`), then (for a command) the only required
/// string parameter.
fn find_param(slot: Slot, params: &[String], schema: &Value) -> Option<String> {
    if let Some(p) = named_param(slot, params) {
        return Some(p);
    }
    let squashed: Vec<(String, &String)> = params.iter().map(|p| (squash(p), p)).collect();
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
