//! The simple file commands of the simulated shell (`ls`, `cat`, `grep`,
//! `find`, `wc`, `head`, `tail`, `git status`, ...), answered from the
//! in-memory project.

use super::workspace::{glob_regex, Workspace};

/// Runs one simple command. Returns `None` as text for a command this shell
/// does not know (the caller answers "command not found"), else the output
/// and the exit code.
pub fn file_command(
    ws: &mut Workspace,
    words: &[String],
    cwd: &mut String,
    stdin: Option<&str>,
) -> (Option<String>, i32) {
    let Some(cmd) = words.first() else {
        return (Some(String::new()), 0);
    };
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    let operands: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-'))
        .collect();
    let (text, code) = match cmd.as_str() {
        "true" | ":" => (String::new(), 0),
        "false" => (String::new(), 1),
        "pwd" => (format!("{}\n", Workspace::absolute(cwd)), 0),
        "echo" => (format!("{}\n", args.join(" ")), 0),
        "cd" => cd(ws, cwd, &args, &operands),
        "ls" => ls(ws, cwd, &operands),
        "cat" => read_each(ws, cwd, "cat", &operands, stdin, |t| t.to_string()),
        "head" | "tail" => head_tail(ws, cwd, cmd, &args, &operands, stdin),
        "wc" => wc(ws, cwd, &args, &operands, stdin),
        "grep" | "rg" => grep(ws, cwd, &args, stdin),
        "find" => find(ws, cwd, &args),
        "mkdir" | "touch" | "which" => touch(ws, cwd, cmd, &operands),
        "rm" => rm(ws, cwd, &operands),
        "git" => git(&args),
        _ => return (None, 127),
    };
    (Some(text), code)
}

fn cd(ws: &Workspace, cwd: &mut String, args: &[&str], operands: &[&str]) -> (String, i32) {
    match ws.resolve_from(cwd, operands.first().copied().unwrap_or("")) {
        Ok(p) if ws.is_dir(&p) => {
            *cwd = p;
            (String::new(), 0)
        }
        _ => (
            format!("bash: cd: {}: No such file or directory\n", args.join(" ")),
            1,
        ),
    }
}

fn head_tail(
    ws: &Workspace,
    cwd: &str,
    cmd: &str,
    args: &[&str],
    operands: &[&str],
    stdin: Option<&str>,
) -> (String, i32) {
    let n = count_flag(args).unwrap_or(10);
    let files: Vec<&str> = operands
        .iter()
        .copied()
        .filter(|o| o.parse::<usize>().is_err())
        .collect();
    let tail = cmd == "tail";
    read_each(ws, cwd, cmd, &files, stdin, |t| {
        let lines: Vec<&str> = t.lines().collect();
        let pick = if tail {
            &lines[lines.len().saturating_sub(n)..]
        } else {
            &lines[..n.min(lines.len())]
        };
        pick.iter().map(|l| format!("{l}\n")).collect()
    })
}

fn wc(
    ws: &Workspace,
    cwd: &str,
    args: &[&str],
    operands: &[&str],
    stdin: Option<&str>,
) -> (String, i32) {
    read_each(ws, cwd, "wc", operands, stdin, |t| {
        if args.contains(&"-l") {
            format!("{}\n", t.lines().count())
        } else {
            format!(
                "{} {} {}\n",
                t.lines().count(),
                t.split_whitespace().count(),
                t.len()
            )
        }
    })
}

fn rm(ws: &mut Workspace, cwd: &str, operands: &[&str]) -> (String, i32) {
    let mut out = String::new();
    for o in operands {
        if !ws
            .resolve_from(cwd, o)
            .map(|p| ws.remove(&p))
            .unwrap_or(false)
        {
            out.push_str(&format!(
                "rm: cannot remove '{o}': No such file or directory\n"
            ));
        }
    }
    let code = i32::from(!out.is_empty());
    (out, code)
}

fn count_flag(args: &[&str]) -> Option<usize> {
    for (i, a) in args.iter().enumerate() {
        if *a == "-n" {
            return args.get(i + 1).and_then(|n| n.parse().ok());
        }
        if let Some(n) = a.strip_prefix("-n").or_else(|| a.strip_prefix('-')) {
            if let Ok(n) = n.parse() {
                return Some(n);
            }
        }
    }
    None
}

fn read_each(
    ws: &Workspace,
    cwd: &str,
    cmd: &str,
    files: &[&str],
    stdin: Option<&str>,
    f: impl Fn(&str) -> String,
) -> (String, i32) {
    if files.is_empty() {
        return (f(stdin.unwrap_or("")), 0);
    }
    let mut out = String::new();
    let mut code = 0;
    for name in files {
        let path = ws.resolve_from(cwd, name).unwrap_or_default();
        match ws.file(&path) {
            Some(text) => out.push_str(&f(text)),
            None if ws.is_dir(&path) => {
                out.push_str(&format!("{cmd}: {name}: Is a directory\n"));
                code = 1;
            }
            None => {
                out.push_str(&format!("{cmd}: {name}: No such file or directory\n"));
                code = 1;
            }
        }
    }
    (out, code)
}

fn ls(ws: &Workspace, cwd: &str, operands: &[&str]) -> (String, i32) {
    let targets = if operands.is_empty() {
        vec!["."]
    } else {
        operands.to_vec()
    };
    let mut out = String::new();
    let mut code = 0;
    for t in &targets {
        let path = ws.resolve_from(cwd, t).unwrap_or_else(|_| "\u{0}".into());
        if ws.file(&path).is_some() {
            out.push_str(&format!("{t}\n"));
        } else if ws.is_dir(&path) {
            if targets.len() > 1 {
                out.push_str(&format!("{t}:\n"));
            }
            for e in ws.entries(&path) {
                out.push_str(&format!("{}\n", e.trim_end_matches('/')));
            }
        } else {
            out.push_str(&format!(
                "ls: cannot access '{t}': No such file or directory\n"
            ));
            code = 2;
        }
    }
    (out, code)
}

fn grep(ws: &Workspace, cwd: &str, args: &[&str], stdin: Option<&str>) -> (String, i32) {
    let flags: String = args
        .iter()
        .filter(|a| a.starts_with('-') && !a.starts_with("--"))
        .map(|a| &a[1..])
        .collect();
    let include = args.iter().find_map(|a| a.strip_prefix("--include="));
    let mut rest = args.iter().copied().filter(|a| !a.starts_with('-'));
    let Some(pattern) = rest.next() else {
        return ("Usage: grep [OPTION]... PATTERNS [FILE]...\n".into(), 2);
    };
    let pattern = if flags.contains('i') {
        format!("(?i){pattern}")
    } else {
        pattern.to_string()
    };
    let pattern = pattern.replace("\\|", "|");
    let paths: Vec<&str> = rest.collect();
    let mut out = String::new();
    if paths.is_empty() && !flags.contains('r') {
        let Ok(re) = regex::Regex::new(&pattern) else {
            return ("grep: Invalid regular expression\n".into(), 2);
        };
        for l in stdin.unwrap_or("").lines().filter(|l| re.is_match(l)) {
            out.push_str(&format!("{l}\n"));
        }
    } else {
        let targets = if paths.is_empty() { vec!["."] } else { paths };
        for t in targets {
            let dir = ws.resolve_from(cwd, t).unwrap_or_default();
            match ws.grep(&dir, &pattern, include) {
                Ok(hits) => {
                    for h in hits {
                        let shown = h.path.strip_prefix(&format!("{cwd}/")).unwrap_or(&h.path);
                        if flags.contains('l') {
                            if !out.contains(&format!("{shown}\n")) {
                                out.push_str(&format!("{shown}\n"));
                            }
                        } else if flags.contains('n') {
                            out.push_str(&format!("{shown}:{}:{}\n", h.line, h.text));
                        } else {
                            out.push_str(&format!("{shown}:{}\n", h.text));
                        }
                    }
                }
                Err(e) => return (format!("grep: {e}\n"), 2),
            }
        }
    }
    let code = i32::from(out.is_empty());
    (out, code)
}

fn find(ws: &Workspace, cwd: &str, args: &[&str]) -> (String, i32) {
    let start = args
        .first()
        .filter(|a| !a.starts_with('-'))
        .copied()
        .unwrap_or(".");
    let name = args
        .iter()
        .position(|a| *a == "-name" || *a == "-iname")
        .and_then(|i| args.get(i + 1));
    let only_dirs = args.windows(2).any(|w| w == ["-type", "d"]);
    let Ok(dir) = ws.resolve_from(cwd, start) else {
        return (format!("find: '{start}': No such file or directory\n"), 1);
    };
    if !ws.is_dir(&dir) && ws.file(&dir).is_none() {
        return (format!("find: '{start}': No such file or directory\n"), 1);
    }
    let re = match name.map(|n| glob_regex(n)).transpose() {
        Ok(re) => re,
        Err(e) => return (format!("find: {e}\n"), 1),
    };
    let prefix = start.trim_end_matches('/');
    let mut out = String::new();
    let mut seen_dirs = std::collections::BTreeSet::new();
    for p in ws.files_under(&dir) {
        let tail = if dir.is_empty() {
            p
        } else {
            p.get(dir.len() + 1..).unwrap_or("")
        };
        if only_dirs {
            let mut acc = String::new();
            for seg in tail
                .split('/')
                .rev()
                .skip(1)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
            {
                acc = if acc.is_empty() {
                    seg.to_string()
                } else {
                    format!("{acc}/{seg}")
                };
                if re.as_ref().is_none_or(|r| r.is_match(seg)) && seen_dirs.insert(acc.clone()) {
                    out.push_str(&format!("{prefix}/{acc}\n"));
                }
            }
        } else {
            let base = p.rsplit('/').next().unwrap_or(p);
            if re.as_ref().is_none_or(|r| r.is_match(base)) {
                out.push_str(&format!("{prefix}/{tail}\n"));
            }
        }
    }
    (out, 0)
}

fn touch(ws: &mut Workspace, cwd: &str, cmd: &str, operands: &[&str]) -> (String, i32) {
    match cmd {
        "which" => {
            let known = [
                "mvn", "java", "javac", "python", "python3", "pytest", "git", "grep",
            ];
            let out: String = operands
                .iter()
                .filter(|o| known.contains(o))
                .map(|o| format!("/usr/bin/{o}\n"))
                .collect();
            let code = i32::from(out.is_empty());
            (out, code)
        }
        "touch" => {
            for o in operands {
                if let Ok(p) = ws.resolve_from(cwd, o) {
                    if ws.file(&p).is_none() {
                        ws.write(&p, "");
                    }
                }
            }
            (String::new(), 0)
        }
        _ => (String::new(), 0),
    }
}

fn git(args: &[&str]) -> (String, i32) {
    match args.first().copied() {
        Some("status") => ("On branch main\nYour branch is up to date with 'origin/main'.\n\nnothing added to commit but untracked files present (use \"git add\" to track)\n".into(), 0),
        Some("log") => ("4f1c2ab (HEAD -> main, origin/main) Lab 4 starting point\n9d03e77 Lab 3 solution\n".into(), 0),
        Some("diff") | Some("add") | Some("show") => (String::new(), 0),
        Some("branch") => ("* main\n".into(), 0),
        Some(other) => (format!("git: '{other}' is not available in this lab workstation\n"), 1),
        None => ("usage: git [--version] [--help] <command> [<args>]\n".into(), 1),
    }
}
