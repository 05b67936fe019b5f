//! Reading a shell command line as the simulated shell does: splitting it
//! at `&&`, `||`, `;` and pipes (outside quotes), a simple command into
//! words, and what kind of command it is (a build, a test run, a server that
//! does not end).

/// Whether a command line builds or runs tests somewhere in it (`mvn test`,
/// `cd x && pytest -q`, `javac …`), as the simulated shell classifies it.
pub fn is_build_or_test(command: &str) -> bool {
    split_top(command, &["&&", "||", ";"])
        .iter()
        .flat_map(|(segment, _)| split_top(segment, &["|"]))
        .any(|(stage, _)| matches!(classify(&words(&stage)), Some(Kind::Test | Kind::Build)))
}

/// What a simple command does in the simulated shell.
pub(crate) enum Kind {
    /// Runs the tests (and builds first).
    Test,
    /// Builds without testing.
    Build,
    /// Starts a server that never ends by itself, printing this.
    Hang(&'static str),
}

/// Splits at top-level separators (outside quotes); each piece comes with
/// the separator that follows it.
pub(crate) fn split_top(s: &str, seps: &[&str]) -> Vec<(String, String)> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut i = 0;
    let bytes: Vec<char> = s.chars().collect();
    'outer: while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None => {
                for sep in seps {
                    let sc: Vec<char> = sep.chars().collect();
                    let is_pipe_of_or = *sep == "|" && bytes.get(i + 1) == Some(&'|');
                    if bytes[i..].starts_with(&sc) && !is_pipe_of_or {
                        parts.push((cur.trim().to_string(), sep.to_string()));
                        cur.clear();
                        i += sc.len();
                        continue 'outer;
                    }
                }
            }
        }
        cur.push(c);
        i += 1;
    }
    if !cur.trim().is_empty() {
        parts.push((cur.trim().to_string(), String::new()));
    }
    parts.retain(|(p, _)| !p.is_empty());
    parts
}

/// Splits a simple command into words, honouring quotes; drops `2>&1`.
pub(crate) fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            None => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out.retain(|w| w != "2>&1" && w != "2>/dev/null");
    out
}

/// What kind of command `words` is; `None`: a plain command.
pub(crate) fn classify(words: &[String]) -> Option<Kind> {
    let first = words.first()?.as_str();
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    let has = |a: &str| args.contains(&a);
    let skip_tests = args.iter().any(|a| a.starts_with("-DskipTests"));
    match first {
        "mvn" | "./mvnw" | "mvnw" => Some(
            if !skip_tests
                && ["test", "verify", "package", "install"]
                    .iter()
                    .any(|g| has(g))
            {
                Kind::Test
            } else if args.iter().any(|a| a.starts_with("exec:")) {
                Kind::Hang("chat server on port 5050\n")
            } else {
                Kind::Build
            },
        ),
        "gradle" | "./gradlew" => Some(if has("test") || has("build") || has("check") {
            Kind::Test
        } else {
            Kind::Build
        }),
        "pytest" | "py.test" => Some(Kind::Test),
        "python" | "python3" if args.first() == Some(&"-m") => match args.get(1) {
            Some(&"pytest") => Some(Kind::Test),
            Some(m) if m.contains("server") => Some(Kind::Hang("chat server on port 5050\n")),
            Some(m) if m.contains("client") => None,
            _ => Some(Kind::Build),
        },
        "javac" => Some(Kind::Build),
        "java" if args.iter().any(|a| a.contains("Server")) => {
            Some(Kind::Hang("chat server on port 5050\n"))
        }
        _ => None,
    }
}
