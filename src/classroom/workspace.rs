//! A student's project held in memory: files by path, folders implied by
//! the paths, and the name and content searches the tools need.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;

use super::scenario::{Scenario, PROJECT_ROOT};

/// One file and when it last changed (a counter, higher = more recent).
#[derive(Debug, Clone)]
struct Entry {
    content: String,
    changed: u64,
}

/// The in-memory project. Paths are stored relative to [`PROJECT_ROOT`]
/// (`src/main/java/chat/Message.java`); the empty path is the root.
#[derive(Debug, Clone)]
pub struct Workspace {
    files: BTreeMap<String, Entry>,
    counter: u64,
}

/// One line found by [`Workspace::grep`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepMatch {
    /// Path relative to the project root.
    pub path: String,
    /// 1-based line number.
    pub line: usize,
    /// The line's text.
    pub text: String,
}

impl Workspace {
    /// A fresh copy of a scenario's project.
    pub fn new(scenario: Scenario) -> Self {
        let mut ws = Workspace {
            files: BTreeMap::new(),
            counter: 0,
        };
        for (path, content) in scenario.files() {
            ws.write(path, content);
        }
        ws
    }

    /// Resolves a path given by the model (absolute inside the project, or
    /// relative to `base`, itself relative to the root) to a project-relative
    /// path. `.` and `..` are resolved; leaving the project is an error.
    pub fn resolve_from(&self, base: &str, path: &str) -> Result<String, String> {
        let path = path.trim();
        let mut parts: Vec<&str> = Vec::new();
        let rest = if let Some(r) = path.strip_prefix(PROJECT_ROOT) {
            if !(r.is_empty() || r.starts_with('/')) {
                return Err(format!("{path} is outside the project {PROJECT_ROOT}"));
            }
            r
        } else if path.starts_with('/') || path.starts_with('~') {
            return Err(format!("{path} is outside the project {PROJECT_ROOT}"));
        } else {
            parts.extend(base.split('/').filter(|s| !s.is_empty()));
            path
        };
        for seg in rest.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(format!("{path} is outside the project {PROJECT_ROOT}"));
                    }
                }
                s => parts.push(s),
            }
        }
        Ok(parts.join("/"))
    }

    /// [`Workspace::resolve_from`] the project root.
    pub fn resolve(&self, path: &str) -> Result<String, String> {
        self.resolve_from("", path)
    }

    /// The absolute path shown to the model for a project-relative path.
    pub fn absolute(rel: &str) -> String {
        if rel.is_empty() {
            PROJECT_ROOT.to_string()
        } else {
            format!("{PROJECT_ROOT}/{rel}")
        }
    }

    /// The content of a file, if it exists.
    pub fn file(&self, rel: &str) -> Option<&str> {
        self.files.get(rel).map(|e| e.content.as_str())
    }

    /// Whether `rel` is a folder (the root, or a prefix of some file's path).
    pub fn is_dir(&self, rel: &str) -> bool {
        if rel.is_empty() {
            return true;
        }
        let prefix = format!("{rel}/");
        self.files
            .range(prefix.clone()..)
            .next()
            .is_some_and(|(k, _)| k.starts_with(&prefix))
    }

    /// Creates or replaces a file.
    pub fn write(&mut self, rel: &str, content: &str) {
        self.counter += 1;
        self.files.insert(
            rel.to_string(),
            Entry {
                content: content.to_string(),
                changed: self.counter,
            },
        );
    }

    /// Removes a file; returns whether it existed.
    pub fn remove(&mut self, rel: &str) -> bool {
        self.files.remove(rel).is_some()
    }

    /// The immediate entries of a folder: sub-folders (ending in `/`) first,
    /// then files, each sorted by name.
    pub fn entries(&self, dir: &str) -> Vec<String> {
        let mut dirs = BTreeSet::new();
        let mut files = BTreeSet::new();
        for path in self.files_under(dir) {
            let tail = if dir.is_empty() {
                path
            } else {
                &path[dir.len() + 1..]
            };
            match tail.split_once('/') {
                Some((d, _)) => {
                    dirs.insert(format!("{d}/"));
                }
                None => {
                    files.insert(tail.to_string());
                }
            }
        }
        dirs.into_iter().chain(files).collect()
    }

    /// Every file path under a folder (or the path itself if it is a file).
    pub fn files_under<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.files.keys().map(String::as_str).filter(move |p| {
            dir.is_empty() || *p == dir || (p.starts_with(dir) && p[dir.len()..].starts_with('/'))
        })
    }

    /// Files under `dir` whose path (relative to `dir`) matches a glob, most
    /// recently changed first. A pattern without `/` matches the file name
    /// at any depth. Errors on an unusable pattern.
    pub fn glob(&self, dir: &str, pattern: &str) -> Result<Vec<String>, String> {
        let re = glob_regex(pattern)?;
        let by_name = !pattern.contains('/');
        let mut hits: Vec<(&str, u64)> = self
            .files_under(dir)
            .filter(|p| {
                let tail = if dir.is_empty() || *p == dir {
                    *p
                } else {
                    &p[dir.len() + 1..]
                };
                let subject = if by_name {
                    tail.rsplit('/').next().unwrap_or(tail)
                } else {
                    tail
                };
                re.is_match(subject)
            })
            .filter_map(|p| self.files.get(p).map(|e| (p, e.changed)))
            .collect();
        hits.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        Ok(hits.into_iter().map(|(p, _)| p.to_string()).collect())
    }

    /// Lines matching a regular expression in files under `dir`, optionally
    /// only in files whose name matches the `include` glob.
    pub fn grep(
        &self,
        dir: &str,
        pattern: &str,
        include: Option<&str>,
    ) -> Result<Vec<GrepMatch>, String> {
        let re = Regex::new(pattern).map_err(|e| format!("invalid regular expression: {e}"))?;
        let include = include.map(glob_regex).transpose()?;
        let mut out = Vec::new();
        for path in self.files_under(dir) {
            let name = path.rsplit('/').next().unwrap_or(path);
            if include.as_ref().is_some_and(|inc| !inc.is_match(name)) {
                continue;
            }
            let Some(content) = self.file(path) else {
                continue;
            };
            for (i, line) in content.lines().enumerate() {
                if re.is_match(line) {
                    out.push(GrepMatch {
                        path: path.to_string(),
                        line: i + 1,
                        text: line.to_string(),
                    });
                }
            }
        }
        Ok(out)
    }
}

/// Translates a glob (`*`, `**`, `?`, `{a,b}`, `[...]`) into an anchored
/// regular expression over `/`-separated paths.
pub fn glob_regex(pattern: &str) -> Result<Regex, String> {
    let chars: Vec<char> = pattern.trim().chars().collect();
    let mut re = String::from("^");
    let mut i = 0;
    let mut braces = 0usize;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' if chars.get(i + 1) == Some(&'*') => {
                if chars.get(i + 2) == Some(&'/') {
                    re.push_str("(?:.*/)?");
                    i += 3;
                } else {
                    re.push_str(".*");
                    i += 2;
                }
                continue;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '{' => {
                braces += 1;
                re.push_str("(?:");
            }
            '}' if braces > 0 => {
                braces -= 1;
                re.push(')');
            }
            ',' if braces > 0 => re.push('|'),
            '[' => {
                let end = chars[i + 1..].iter().position(|&c| c == ']');
                match end {
                    Some(n) if n > 0 => {
                        let class: String = chars[i + 1..i + 1 + n].iter().collect();
                        let class = class.replacen('!', "^", usize::from(class.starts_with('!')));
                        re.push('[');
                        re.push_str(&class.replace('\\', "\\\\"));
                        re.push(']');
                        i += n + 2;
                        continue;
                    }
                    _ => re.push_str("\\["),
                }
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    if braces > 0 {
        return Err(format!("invalid glob {pattern:?}: unclosed {{"));
    }
    re.push('$');
    Regex::new(&re).map_err(|e| format!("invalid glob {pattern:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_inside_the_project_only() {
        let ws = Workspace::new(Scenario::Java);
        assert_eq!(ws.resolve("./pom.xml").unwrap(), "pom.xml");
        assert_eq!(
            ws.resolve("/home/student/chat/src/main/").unwrap(),
            "src/main"
        );
        assert_eq!(ws.resolve("/home/student/chat").unwrap(), "");
        assert_eq!(ws.resolve_from("src/main", "../test").unwrap(), "src/test");
        assert!(ws.resolve("/etc/passwd").is_err());
        assert!(ws.resolve("../../x").is_err());
        assert!(ws.resolve("/home/student/chatter").is_err());
    }

    #[test]
    fn folders_are_implied_and_listed_dirs_first() {
        let ws = Workspace::new(Scenario::Java);
        assert!(ws.is_dir("src/main/java"));
        assert!(!ws.is_dir("src/ma"));
        assert!(!ws.is_dir("pom.xml"));
        assert_eq!(ws.entries(""), vec!["src/", "README.md", "pom.xml"]);
        assert_eq!(ws.entries("src"), vec!["main/", "test/"]);
    }

    #[test]
    fn glob_matches_names_paths_and_braces_newest_first() {
        let mut ws = Workspace::new(Scenario::Java);
        let all = ws.glob("", "**/*.java").unwrap();
        assert_eq!(all.len(), 5);
        assert_eq!(ws.glob("", "*Test.java").unwrap().len(), 2);
        assert_eq!(ws.glob("src/test", "**/*.java").unwrap().len(), 2);
        assert_eq!(ws.glob("", "*.{xml,md}").unwrap().len(), 2);
        ws.write("pom.xml", "<project/>");
        assert_eq!(ws.glob("", "*.{xml,md}").unwrap()[0], "pom.xml");
        assert!(ws.glob("", "src/{main").is_err());
        assert!(ws.glob("", "nothing*.rs").unwrap().is_empty());
    }

    #[test]
    fn grep_finds_lines_with_include_filter() {
        let ws = Workspace::new(Scenario::Python);
        let hits = ws.grep("", r"def test_\w+", Some("*.py")).unwrap();
        assert_eq!(hits.len(), 5);
        assert!(hits.iter().all(|m| m.path.starts_with("tests/")));
        let hits = ws.grep("chat", "class ChatServer", None).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].path, "chat/server.py");
        assert!(ws.grep("", "(unclosed", None).is_err());
    }
}
