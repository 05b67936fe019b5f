//! Reading file names and file contents out of conversation text: path-like
//! tokens, numbered `read` output, and listings (flat or indented trees).

/// File extensions the persona recognises as files.
const EXTENSIONS: &[&str] = &[
    "java",
    "py",
    "xml",
    "md",
    "toml",
    "txt",
    "json",
    "cfg",
    "ini",
    "gradle",
    "kts",
    "kt",
    "js",
    "ts",
    "rs",
    "go",
    "yml",
    "yaml",
    "properties",
    "sh",
    "c",
    "h",
    "cpp",
    "rb",
];

/// The language a project (or file) is written in, as far as the persona cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// Java with Maven or Gradle.
    Java,
    /// Python with pytest.
    Python,
}

/// The language of a file, by extension.
pub fn lang_of(path: &str) -> Option<Lang> {
    match extension(path) {
        Some("java") | Some("kt") | Some("gradle") => Some(Lang::Java),
        Some("py") => Some(Lang::Python),
        _ => None,
    }
}

fn extension(path: &str) -> Option<&str> {
    let base = basename(path);
    let (stem, ext) = base.rsplit_once('.')?;
    (!stem.is_empty()).then_some(ext)
}

/// The last component of a path.
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The folder part of a path (`""` for a bare name).
pub fn dirname(path: &str) -> &str {
    path.rsplit_once('/').map(|(d, _)| d).unwrap_or("")
}

/// Whether a path names a test file.
pub fn is_test_path(path: &str) -> bool {
    let base = basename(path).to_ascii_lowercase();
    base.starts_with("test_")
        || base.ends_with("_test.py")
        || base.ends_with("test.java")
        || base.ends_with("tests.java")
        || path.contains("/test/")
        || path.starts_with("tests/")
        || path.contains("/tests/")
}

/// Whether a token looks like a file path with a known extension.
pub fn is_file_like(token: &str) -> bool {
    if token.is_empty() || token.contains("//") || token.starts_with("http") {
        return false;
    }
    if !token
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
    {
        return false;
    }
    match extension(token) {
        Some(ext) => EXTENSIONS.contains(&ext),
        None => false,
    }
}

/// Path-like tokens of a text, in order of first appearance, without
/// duplicates and without a leading `./`.
pub fn path_tokens(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let separators = |c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '\'' | '"'
                    | '`'
                    | '('
                    | ')'
                    | '['
                    | ']'
                    | '{'
                    | '}'
                    | '<'
                    | '>'
                    | ','
                    | ';'
                    | ':'
                    | '='
                    | '*'
                    | '|'
            )
    };
    for raw in text.split(separators) {
        let token = raw.trim_end_matches(['.', '!', '?']);
        let token = token.strip_prefix("./").unwrap_or(token);
        if is_file_like(token) && !out.iter().any(|p| p == token) {
            out.push(token.to_string());
        }
    }
    out
}

/// The file content of a `read` result with numbered lines (`12: text`,
/// `00012| text`, `    12\ttext`), line numbers removed. `None` when no line
/// is numbered.
pub fn numbered_content(result: &str) -> Option<String> {
    let mut lines = Vec::new();
    for line in result.lines() {
        if let Some(text) = strip_line_number(line) {
            lines.push(text);
        }
    }
    if lines.is_empty() {
        None
    } else {
        Some(lines.join("\n"))
    }
}

fn strip_line_number(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches(' ');
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let rest = &rest[digits..];
    let mut chars = rest.chars();
    match chars.next() {
        Some(':') | Some('|') => {
            let after = &rest[1..];
            Some(after.strip_prefix(' ').unwrap_or(after))
        }
        Some('\t') => Some(&rest[1..]),
        None => None,
        Some(_) => None,
    }
}

/// File paths of a listing: an indented tree whose folders end in `/`
/// (paths rebuilt from the indentation), or a flat list of paths. Entries of
/// a flat listing of `base` (a folder other than `.`) get `base/` in front
/// when they are bare names.
pub fn listing_paths(text: &str, base: Option<&str>) -> Vec<String> {
    let tree = text.lines().any(|l| l.trim_end().ends_with('/'));
    if !tree {
        let base = base.map(|b| b.trim_end_matches('/')).filter(|b| *b != ".");
        return path_tokens(text)
            .into_iter()
            .map(|p| match base {
                Some(b) if !p.contains('/') => format!("{b}/{p}"),
                _ => p,
            })
            .collect();
    }
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let name = line.trim_start_matches(|c: char| {
            c.is_whitespace() || matches!(c, '├' | '└' | '│' | '─' | '-' | '|' | '`')
        });
        let name = name.trim_end();
        if name.is_empty() {
            continue;
        }
        let indent = line.chars().count() - name.chars().count() - trailing_ws(line);
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        if let Some(dir) = name.strip_suffix('/') {
            stack.push((indent, dir.to_string()));
            continue;
        }
        let mut path = String::new();
        for (_, dir) in &stack {
            if dir != "." && !dir.is_empty() {
                path.push_str(dir.trim_end_matches('/'));
                path.push('/');
            }
        }
        path.push_str(name);
        if is_file_like(&path) && !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// The entries of a folder read in OpenCode's form (`<type>directory</type>`
/// then one name a line between `<entries>` and `</entries>`, folders ending
/// in `/`), as (files, folders) under `base`. `None` for any other text.
pub fn folder_entries(text: &str, base: &str) -> Option<(Vec<String>, Vec<String>)> {
    if !text.contains("<type>directory</type>") {
        return None;
    }
    let body = text.split("<entries>").nth(1)?.split("</entries>").next()?;
    let base = base.trim_end_matches('/');
    let under = |name: &str| match base {
        "" | "." => name.to_string(),
        b => format!("{b}/{name}"),
    };
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    for line in body.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('(') {
            continue;
        }
        match line.strip_suffix('/') {
            Some(dir) => dirs.push(under(dir)),
            None if is_file_like(line) => files.push(under(line)),
            None => {}
        }
    }
    Some((files, dirs))
}

fn trailing_ws(line: &str) -> usize {
    line.chars().count() - line.trim_end().chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_from_prose_and_stack_traces() {
        let t = path_tokens(
            "Fix `src/main/java/chat/Server.java` see (ServerTest.java:42) and ./pom.xml. java.util.List",
        );
        assert_eq!(
            t,
            vec![
                "src/main/java/chat/Server.java",
                "ServerTest.java",
                "pom.xml"
            ]
        );
    }

    #[test]
    fn numbered_lines_in_both_styles() {
        assert_eq!(
            numbered_content("<file>\n1: package chat;\n2: \n3:     int x;\n</file>").unwrap(),
            "package chat;\n\n    int x;"
        );
        assert_eq!(
            numbered_content("00001| def f():\n00002|     return 1\n").unwrap(),
            "def f():\n    return 1"
        );
        assert!(numbered_content("no numbers here").is_none());
    }

    #[test]
    fn tree_listing_rebuilds_paths() {
        let text = "/home/s/chat/\n  src/\n    chat/\n      server.py\n  tests/\n    test_server.py\n  pyproject.toml\n";
        let p = listing_paths(text, None);
        assert_eq!(
            p,
            vec![
                "/home/s/chat/src/chat/server.py",
                "/home/s/chat/tests/test_server.py",
                "/home/s/chat/pyproject.toml"
            ]
        );
        assert_eq!(
            listing_paths("a.py\nb.py", Some("src")),
            vec!["src/a.py", "src/b.py"]
        );
    }
}
