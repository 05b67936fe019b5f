//! The agent's tools, run against the in-memory project: `read`, `write`,
//! `edit`, `bash`, `glob`, `grep`, `list`, `todowrite` and `task` (which the
//! agent loop turns into a subagent session). Unknown tools and invalid
//! arguments come back to the model as error results.

use std::time::Duration;

use rand::Rng;
use serde_json::{Map, Value};

use super::client_times::ClientTimeKind;
use super::shell::{self, ShellState};
use super::workspace::Workspace;

/// Most lines `read` returns, and most characters kept of one line.
pub const READ_MAX_LINES: usize = 2000;
/// Most paths `glob` and matches `grep` return.
pub const SEARCH_MAX_RESULTS: usize = 100;
/// Default `bash` time limit (milliseconds), as OpenCode's.
pub const BASH_DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest `bash` time limit a call may ask for (milliseconds).
pub const BASH_MAX_TIMEOUT_MS: u64 = 600_000;

/// The result of one tool call, as sent back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The tool message's content.
    pub content: String,
    /// The call failed (unknown tool, bad arguments, missing file, ...).
    /// A failing build is not a tool error: the tool worked.
    pub is_error: bool,
    /// Simulated time the tool took.
    pub elapsed: Duration,
}

impl ToolResult {
    pub(super) fn ok(content: impl Into<String>) -> Self {
        ToolResult {
            content: content.into(),
            is_error: false,
            elapsed: Duration::ZERO,
        }
    }

    fn error(content: impl Into<String>) -> Self {
        ToolResult {
            content: format!("Error: {}", content.into()),
            is_error: true,
            elapsed: Duration::ZERO,
        }
    }
}

/// What a tool call asks of the agent loop.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolStep {
    /// The tool ran; here is its result.
    Done(ToolResult),
    /// `task`: run a subagent with this prompt; its final text is the result.
    Subagent {
        /// Short label of the task.
        description: String,
        /// The subagent's instructions (its first user message).
        prompt: String,
        /// The kind of subagent (`explore`).
        subagent_type: String,
    },
}

/// The mutable world a session's tools act on.
pub struct ToolContext<'a, R: Rng> {
    /// The student's project.
    pub workspace: &'a mut Workspace,
    /// Whether the first test run fails, and how many ran.
    pub shell: &'a mut ShellState,
    /// The student's seeded random source.
    pub rng: &'a mut R,
    /// Names of the tools this session offered the model.
    pub offered: &'a [String],
}

/// Runs one tool call (`name` with JSON `arguments`).
pub fn execute<R: Rng>(ctx: &mut ToolContext<'_, R>, name: &str, arguments: &str) -> ToolStep {
    if !ctx.offered.iter().any(|n| n == name) {
        return ToolStep::Done(ToolResult::error(format!(
            "unknown tool {name:?}; available tools: {}",
            ctx.offered.join(", ")
        )));
    }
    let args = match parse_args(name, arguments) {
        Ok(a) => a,
        Err(e) => return ToolStep::Done(ToolResult::error(e)),
    };
    let result = match name {
        "read" => read(ctx.workspace, &args),
        "write" => write(ctx.workspace, &args),
        "edit" => edit(ctx.workspace, &args),
        "bash" => bash(ctx, &args),
        "glob" => glob(ctx.workspace, &args),
        "grep" => grep(ctx.workspace, &args),
        "list" => list(ctx.workspace, &args),
        "todowrite" => todowrite(&args),
        "task" => {
            return match (
                req_str(name, &args, "description"),
                req_str(name, &args, "prompt"),
                req_str(name, &args, "subagent_type"),
            ) {
                (Ok(description), Ok(prompt), Ok(subagent_type)) => ToolStep::Subagent {
                    description,
                    prompt,
                    subagent_type,
                },
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                    ToolStep::Done(ToolResult::error(e))
                }
            }
        }
        "webfetch" => Err("the network is not reachable from the lab workstation".into()),
        other => Err(format!("the tool {other:?} is not available in this lab")),
    };
    let mut r = result.unwrap_or_else(ToolResult::error);
    if r.elapsed.is_zero() {
        r.elapsed = client_time(name, ctx.shell, ctx.rng);
    }
    ToolStep::Done(r)
}

/// The client-side time of a tool call that did not simulate its own (bash
/// simulates builds, tests and simple commands itself): the session's
/// measured samples of the tool's kind when there are some
/// (`--client-times`), else the class's distribution for it.
fn client_time(name: &str, shell: &ShellState, rng: &mut impl Rng) -> Duration {
    let kind = match name {
        "edit" | "write" => ClientTimeKind::AfterEdit,
        "read" | "glob" | "grep" | "list" => ClientTimeKind::FileTool,
        _ => ClientTimeKind::OtherTool,
    };
    Duration::from_secs_f64(shell.tool_time(kind, rng))
}

fn parse_args(name: &str, arguments: &str) -> Result<Map<String, Value>, String> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(format!(
            "invalid arguments for tool {name}: expected a JSON object"
        )),
        Err(e) => Err(format!(
            "invalid arguments for tool {name}: not valid JSON ({e})"
        )),
    }
}

fn req_str(tool: &str, args: &Map<String, Value>, key: &str) -> Result<String, String> {
    match args.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!(
            "invalid arguments for tool {tool}: {key} must be a string"
        )),
        None => Err(format!(
            "invalid arguments for tool {tool}: missing required parameter {key}"
        )),
    }
}

fn opt_str<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && *s != "undefined")
}

fn opt_u64(args: &Map<String, Value>, key: &str) -> Option<u64> {
    args.get(key)
        .and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f.max(0.0) as u64)))
}

fn read(ws: &Workspace, args: &Map<String, Value>) -> Result<ToolResult, String> {
    let path = ws.resolve(&req_str("read", args, "filePath")?)?;
    if ws.file(&path).is_none() && ws.is_dir(&path) {
        return list_dir(ws, &path);
    }
    let Some(text) = ws.file(&path) else {
        let name = path
            .rsplit('/')
            .next()
            .unwrap_or(&path)
            .to_ascii_lowercase();
        let similar: Vec<String> = ws
            .files_under("")
            .filter(|p| !name.is_empty() && p.to_ascii_lowercase().contains(&name))
            .map(Workspace::absolute)
            .collect();
        let hint = if similar.is_empty() {
            String::new()
        } else {
            format!("\nDid you mean one of these?\n{}", similar.join("\n"))
        };
        return Err(format!(
            "file not found: {}{hint}",
            Workspace::absolute(&path)
        ));
    };
    let lines: Vec<&str> = text.lines().collect();
    let start = opt_u64(args, "offset").unwrap_or(1).max(1) as usize;
    let limit =
        (opt_u64(args, "limit").unwrap_or(READ_MAX_LINES as u64) as usize).clamp(1, READ_MAX_LINES);
    if start > lines.len().max(1) {
        return Err(format!(
            "offset {start} is past the end of the file ({} lines)",
            lines.len()
        ));
    }
    let end = (start - 1 + limit).min(lines.len());
    let mut out = String::new();
    for (i, line) in lines[start - 1..end].iter().enumerate() {
        let line: String = line.chars().take(READ_MAX_LINES).collect();
        out.push_str(&format!("{}: {line}\n", start + i));
    }
    if end < lines.len() {
        out.push_str(&format!(
            "\n(File has more lines. Use offset {} to read beyond line {end}.)\n",
            end + 1
        ));
    } else {
        out.push_str(&format!("\n(End of file - {} lines)\n", lines.len()));
    }
    Ok(ToolResult::ok(out))
}

fn list_dir(ws: &Workspace, path: &str) -> Result<ToolResult, String> {
    let mut out = format!("{}/\n", Workspace::absolute(path));
    for e in ws.entries(path) {
        out.push_str(&format!("{e}\n"));
    }
    Ok(ToolResult::ok(out))
}

fn write(ws: &mut Workspace, args: &Map<String, Value>) -> Result<ToolResult, String> {
    let path = ws.resolve(&req_str("write", args, "filePath")?)?;
    let content = req_str("write", args, "content")?;
    if ws.is_dir(&path) {
        return Err(format!("{} is a folder", Workspace::absolute(&path)));
    }
    ws.write(&path, &content);
    Ok(ToolResult::ok(format!(
        "Wrote file successfully: {}",
        Workspace::absolute(&path)
    )))
}

fn edit(ws: &mut Workspace, args: &Map<String, Value>) -> Result<ToolResult, String> {
    let path = ws.resolve(&req_str("edit", args, "filePath")?)?;
    let old = req_str("edit", args, "oldString")?;
    let new = req_str("edit", args, "newString")?;
    let all = args
        .get("replaceAll")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if old == new {
        return Err("oldString and newString are the same; nothing to change".into());
    }
    let shown = Workspace::absolute(&path);
    let current = match ws.file(&path) {
        Some(t) => t.to_string(),
        None if old.is_empty() => {
            ws.write(&path, &new);
            return Ok(ToolResult::ok(format!("Created {shown}")));
        }
        None => return Err(format!("file not found: {shown}")),
    };
    if old.is_empty() {
        return Err(
            "oldString is empty but the file exists; use write to replace a whole file".into(),
        );
    }
    let count = current.matches(old.as_str()).count();
    let updated = match count {
        0 => return Err(format!("oldString not found in {shown}; read the file and copy the text exactly")),
        1 => current.replacen(old.as_str(), &new, 1),
        _ if all => current.replace(old.as_str(), &new),
        n => {
            return Err(format!(
                "oldString occurs {n} times in {shown}; give more surrounding lines to make it unique, or set replaceAll"
            ))
        }
    };
    ws.write(&path, &updated);
    Ok(ToolResult::ok(format!(
        "Edited {shown}: {count} replacement(s)."
    )))
}

fn bash<R: Rng>(
    ctx: &mut ToolContext<'_, R>,
    args: &Map<String, Value>,
) -> Result<ToolResult, String> {
    let command = req_str("bash", args, "command")?;
    if command.trim().is_empty() {
        return Err("command is empty".into());
    }
    let timeout_ms = opt_u64(args, "timeout")
        .unwrap_or(BASH_DEFAULT_TIMEOUT_MS)
        .clamp(1, BASH_MAX_TIMEOUT_MS);
    let workdir = match opt_str(args, "workdir") {
        Some(w) => {
            let p = ctx.workspace.resolve(w)?;
            if !ctx.workspace.is_dir(&p) {
                return Err(format!("workdir {w} is not a folder of the project"));
            }
            p
        }
        None => String::new(),
    };
    let out = shell::run(
        ctx.workspace,
        ctx.shell,
        ctx.rng,
        &command,
        &workdir,
        Duration::from_millis(timeout_ms),
    );
    let mut content = out.output;
    if content.is_empty() {
        content.push_str("(no output)\n");
    }
    if out.exit_code != 0 && !out.timed_out {
        content.push_str(&format!("\n(exit code {})\n", out.exit_code));
    }
    Ok(ToolResult {
        content,
        is_error: false,
        elapsed: out.elapsed,
    })
}

fn todowrite(args: &Map<String, Value>) -> Result<ToolResult, String> {
    let Some(Value::Array(todos)) = args.get("todos") else {
        return Err(
            "invalid arguments for tool todowrite: missing required parameter todos (an array)"
                .into(),
        );
    };
    for (i, t) in todos.iter().enumerate() {
        let ok = t.get("content").is_some_and(Value::is_string)
            && t.get("status").is_some_and(Value::is_string);
        if !ok {
            return Err(format!(
                "invalid arguments for tool todowrite: todos[{i}] needs content and status strings"
            ));
        }
    }
    let open = todos
        .iter()
        .filter(|t| t.get("status").and_then(Value::as_str) != Some("completed"))
        .count();
    let body = serde_json::to_string_pretty(todos).unwrap_or_default();
    Ok(ToolResult::ok(format!("{open} todos\n{body}")))
}

// The search tools, run against the in-memory project: `glob`, `grep` and
// `list`.

fn search_dir(ws: &Workspace, args: &Map<String, Value>) -> Result<String, String> {
    let dir = ws.resolve(opt_str(args, "path").unwrap_or(""))?;
    if !ws.is_dir(&dir) && ws.file(&dir).is_none() {
        return Err(format!("path not found: {}", Workspace::absolute(&dir)));
    }
    Ok(dir)
}

fn glob(ws: &Workspace, args: &Map<String, Value>) -> Result<ToolResult, String> {
    let pattern = req_str("glob", args, "pattern")?;
    let dir = search_dir(ws, args)?;
    let hits = ws.glob(&dir, &pattern)?;
    if hits.is_empty() {
        return Ok(ToolResult::ok("No files found"));
    }
    let mut out: String = hits
        .iter()
        .take(SEARCH_MAX_RESULTS)
        .map(|p| format!("{}\n", Workspace::absolute(p)))
        .collect();
    if hits.len() > SEARCH_MAX_RESULTS {
        out.push_str(&format!("\n(Results are truncated: showing the first {SEARCH_MAX_RESULTS} of {}. Use a more specific pattern or path.)\n", hits.len()));
    }
    Ok(ToolResult::ok(out))
}

fn grep(ws: &Workspace, args: &Map<String, Value>) -> Result<ToolResult, String> {
    let pattern = req_str("grep", args, "pattern")?;
    let dir = search_dir(ws, args)?;
    let hits = ws.grep(&dir, &pattern, opt_str(args, "include"))?;
    if hits.is_empty() {
        return Ok(ToolResult::ok("No matches found"));
    }
    let mut out = format!("Found {} matches\n", hits.len());
    let mut last = "";
    for h in hits.iter().take(SEARCH_MAX_RESULTS) {
        if h.path != last {
            out.push_str(&format!("\n{}:\n", Workspace::absolute(&h.path)));
            last = &h.path;
        }
        out.push_str(&format!("  Line {}: {}\n", h.line, h.text));
    }
    if hits.len() > SEARCH_MAX_RESULTS {
        out.push_str(&format!("\n(Results are truncated: showing {SEARCH_MAX_RESULTS} of {} matches. Narrow the pattern, path or include.)\n", hits.len()));
    }
    Ok(ToolResult::ok(out))
}

fn list(ws: &Workspace, args: &Map<String, Value>) -> Result<ToolResult, String> {
    let dir = ws.resolve(opt_str(args, "path").unwrap_or(""))?;
    if !ws.is_dir(&dir) {
        return Err(format!("{} is not a folder", Workspace::absolute(&dir)));
    }
    let mut out = format!("{}/\n", Workspace::absolute(&dir));
    tree(ws, &dir, 1, &mut out);
    Ok(ToolResult::ok(out))
}

fn tree(ws: &Workspace, dir: &str, depth: usize, out: &mut String) {
    for e in ws.entries(dir) {
        out.push_str(&format!("{}{e}\n", "  ".repeat(depth)));
        if let Some(sub) = e.strip_suffix('/') {
            let child = if dir.is_empty() {
                sub.to_string()
            } else {
                format!("{dir}/{sub}")
            };
            tree(ws, &child, depth + 1, out);
        }
    }
}
