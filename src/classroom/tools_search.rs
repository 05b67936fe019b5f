//! The agent's search tools, run against the in-memory project: `glob`,
//! `grep` and `list`.

use serde_json::{Map, Value};

use super::tools::{opt_str, req_str, ToolResult, SEARCH_MAX_RESULTS};
use super::workspace::Workspace;

fn search_dir(ws: &Workspace, args: &Map<String, Value>) -> Result<String, String> {
    let dir = ws.resolve(opt_str(args, "path").unwrap_or(""))?;
    if !ws.is_dir(&dir) && ws.file(&dir).is_none() {
        return Err(format!("path not found: {}", Workspace::absolute(&dir)));
    }
    Ok(dir)
}

pub(super) fn glob(ws: &Workspace, args: &Map<String, Value>) -> Result<ToolResult, String> {
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

pub(super) fn grep(ws: &Workspace, args: &Map<String, Value>) -> Result<ToolResult, String> {
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

pub(super) fn list(ws: &Workspace, args: &Map<String, Value>) -> Result<ToolResult, String> {
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
