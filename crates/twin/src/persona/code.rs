//! Code the persona writes: Java or Python methods, tests and whole files for
//! a small chat client/server project, sized to a target length.

use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::paths::{basename, Lang};

const JAVA_METHODS: &[&str] = &[
    "/** Returns the last {@code limit} {n}s, oldest first. */
public List<{N}> recent{N}s(int limit) {
    if (limit <= 0) {
        return List.of();
    }
    int from = Math.max(0, {n}s.size() - limit);
    return new ArrayList<>({n}s.subList(from, {n}s.size()));
}",
    "/** Adds a {n} and tells every connected client about it. */
public synchronized void add{N}({N} {n}) {
    Objects.requireNonNull({n}, \"{n}\");
    {n}s.add({n});
    for (ClientHandler client : clients) {
        client.send(format{N}({n}));
    }
}",
    "private String format{N}({N} {n}) {
    StringBuilder line = new StringBuilder();
    line.append('[').append({n}.timestamp()).append(\"] \");
    line.append({n}.sender()).append(\": \").append({n}.text());
    return line.toString();
}",
    "/** Parses one line from a client; returns null when it is not a command. */
static {N}Command parse{N}Command(String line) {
    if (line == null || !line.startsWith(\"/\")) {
        return null;
    }
    String[] parts = line.substring(1).trim().split(\"\\\\s+\", 2);
    String argument = parts.length > 1 ? parts[1] : \"\";
    return new {N}Command(parts[0].toLowerCase(Locale.ROOT), argument);
}",
    "public boolean remove{N}(String id) {
    Iterator<{N}> it = {n}s.iterator();
    while (it.hasNext()) {
        if (it.next().id().equals(id)) {
            it.remove();
            return true;
        }
    }
    return false;
}",
    "private void drop{N}Client(IOException e, ClientHandler client) {
    log.warning(\"client \" + client.name() + \" failed: \" + e.getMessage());
    clients.remove(client);
    try {
        client.close();
    } catch (IOException ignored) {
        // the connection is already gone
    }
}",
    "public Map<String, Integer> count{N}sBySender() {
    Map<String, Integer> counts = new TreeMap<>();
    for ({N} {n} : {n}s) {
        counts.merge({n}.sender(), 1, Integer::sum);
    }
    return counts;
}",
];

const JAVA_TESTS: &[&str] = &[
    "@Test
void keeps{N}sInOrder() {
    ChatServer server = new ChatServer(0);
    server.add{N}(new {N}(\"alice\", \"hello\"));
    server.add{N}(new {N}(\"bob\", \"hi\"));
    List<{N}> recent = server.recent{N}s(2);
    assertEquals(2, recent.size());
    assertEquals(\"alice\", recent.get(0).sender());
}",
    "@Test
void ignoresBlank{N}s() {
    ChatServer server = new ChatServer(0);
    assertThrows(NullPointerException.class, () -> server.add{N}(null));
    assertTrue(server.recent{N}s(5).isEmpty());
}",
    "@Test
void parses{N}Commands() {
    assertNull(ChatServer.parse{N}Command(\"hello\"));
    {N}Command cmd = ChatServer.parse{N}Command(\"/nick  carol\");
    assertEquals(\"nick\", cmd.name());
    assertEquals(\"carol\", cmd.argument());
}",
];

const PY_METHODS: &[&str] = &[
    "def recent_{n}s(self, limit: int) -> list[{N}]:
    \"\"\"Return the last `limit` {n}s, oldest first.\"\"\"
    if limit <= 0:
        return []
    return list(self._{n}s[-limit:])",
    "def add_{n}(self, {n}: {N}) -> None:
    \"\"\"Store a {n} and send it to every connected client.\"\"\"
    self._{n}s.append({n})
    for client in list(self._clients):
        try:
            client.send(self.format_{n}({n}))
        except OSError:
            self._clients.discard(client)",
    "@staticmethod
def format_{n}({n}: {N}) -> str:
    stamp = {n}.timestamp.strftime(\"%H:%M:%S\")
    return f\"[{stamp}] {{n}.sender}: {{n}.text}\"",
    "@staticmethod
def parse_{n}_command(line: str) -> tuple[str, str] | None:
    \"\"\"Split '/name argument' into its parts; None for plain {n}s.\"\"\"
    if not line.startswith(\"/\"):
        return None
    name, _, argument = line[1:].strip().partition(\" \")
    return name.lower(), argument.strip()",
    "def remove_{n}(self, {n}_id: str) -> bool:
    for index, {n} in enumerate(self._{n}s):
        if {n}.id == {n}_id:
            del self._{n}s[index]
            return True
    return False",
    "def count_{n}s_by_sender(self) -> dict[str, int]:
    counts: dict[str, int] = {}
    for {n} in self._{n}s:
        counts[{n}.sender] = counts.get({n}.sender, 0) + 1
    return dict(sorted(counts.items()))",
];

const PY_TESTS: &[&str] = &[
    "def test_{n}s_keep_their_order():
    server = ChatServer(port=0)
    server.add_{n}({N}(sender=\"alice\", text=\"hello\"))
    server.add_{n}({N}(sender=\"bob\", text=\"hi\"))
    recent = server.recent_{n}s(2)
    assert [m.sender for m in recent] == [\"alice\", \"bob\"]",
    "def test_blank_{n}s_are_rejected():
    server = ChatServer(port=0)
    with pytest.raises(ValueError):
        server.add_{n}({N}(sender=\"alice\", text=\"   \"))
    assert server.recent_{n}s(5) == []",
    "def test_{n}_commands_are_parsed():
    assert ChatServer.parse_{n}_command(\"hello\") is None
    assert ChatServer.parse_{n}_command(\"/nick  carol\") == (\"nick\", \"carol\")",
];

/// Nouns the generated code is about.
pub const NOUNS: &[&str] = &[
    "message", "room", "user", "history", "session", "nickname", "command", "channel", "reply",
    "client",
];

fn fill(template: &str, noun: &str) -> String {
    let mut cap = noun.to_string();
    if let Some(first) = cap.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    template.replace("{n}", noun).replace("{N}", &cap)
}

fn indent_block(block: &str, indent: &str) -> String {
    block
        .lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{indent}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Short additions (a comment, a note for later) for edits smaller than a
/// method; comments are valid wherever a method is, and harmless twice.
const JAVA_SMALL: &[&str] = &[
    "// {N}s are kept in arrival order; the newest goes last.",
    "// A {n} longer than the line limit is cut, never rejected.",
    "// Callers hold the clients lock while they touch the {n} list.",
    "// TODO: persist {n}s between restarts.",
    "// The {n} text is trimmed before it is stored.",
];

const PY_SMALL: &[&str] = &[
    "# {N}s are kept in arrival order; the newest goes last.",
    "# A {n} longer than the line limit is cut, never rejected.",
    "# Callers hold the clients lock while they touch the {n} list.",
    "# TODO: persist {n}s between restarts.",
    "# The {n} text is trimmed before it is stored.",
];

/// What is left below this many characters is filled with short
/// additions rather than a whole method.
const SMALL_BELOW: usize = 240;

/// Methods (or test functions when `tests`) of about `target_chars`
/// characters, each line indented by `indent`, separated by blank lines;
/// a small target (or the rest of one) gets short comment lines instead.
pub fn block(
    lang: Lang,
    tests: bool,
    rng: &mut ChaCha8Rng,
    noun: &str,
    target_chars: usize,
    indent: &str,
) -> String {
    let pool = match (lang, tests) {
        (Lang::Java, false) => JAVA_METHODS,
        (Lang::Java, true) => JAVA_TESTS,
        (Lang::Python, false) => PY_METHODS,
        (Lang::Python, true) => PY_TESTS,
    };
    let mut out: Vec<String> = Vec::new();
    let mut len = 0;
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.shuffle(rng);
    let mut round = 0;
    let small = match lang {
        Lang::Java => JAVA_SMALL,
        Lang::Python => PY_SMALL,
    };
    while len < target_chars {
        if target_chars - len < SMALL_BELOW {
            let mut lines: Vec<String> = Vec::new();
            while len < target_chars {
                let line = format!(
                    "{indent}{}",
                    fill(small.choose(rng).copied().unwrap_or(""), noun)
                );
                len += line.len() + 1;
                lines.push(line);
            }
            out.push(lines.join("\n"));
            break;
        }
        let i = order[(out.len()) % order.len()];
        if out.len() % order.len() == 0 && !out.is_empty() {
            round += 1;
        }
        let n = if round == 0 {
            noun.to_string()
        } else {
            NOUNS.choose(rng).copied().unwrap_or(noun).to_string()
        };
        let piece = indent_block(&fill(pool[i], &n), indent);
        len += piece.len() + 2;
        out.push(piece);
    }
    out.join("\n\n")
}

/// A whole new file for `path` of about `target_chars` characters: a Java
/// class (a JUnit test class when the path is a test) or a Python module.
pub fn new_file(
    lang: Lang,
    path: &str,
    tests: bool,
    rng: &mut ChaCha8Rng,
    noun: &str,
    target_chars: usize,
) -> String {
    let name = basename(path);
    let stem = name.rsplit_once('.').map(|(s, _)| s).unwrap_or(name);
    match lang {
        Lang::Java => {
            let package = java_package(path);
            let header = if tests {
                "import static org.junit.jupiter.api.Assertions.*;\n\nimport java.util.List;\n\nimport org.junit.jupiter.api.Test;\n"
            } else {
                "import java.util.ArrayList;\nimport java.util.List;\nimport java.util.Objects;\n"
            };
            let body = block(
                lang,
                tests,
                rng,
                noun,
                target_chars.saturating_sub(200),
                "    ",
            );
            let field = if tests {
                String::new()
            } else {
                fill(
                    "    private final List<{N}> {n}s = new ArrayList<>();\n\n",
                    noun,
                )
            };
            let visibility = if tests { "" } else { "public " };
            format!(
                "package {package};\n\n{header}\n{visibility}class {stem} {{\n{field}{body}\n}}\n"
            )
        }
        Lang::Python => {
            let body = if tests {
                block(lang, true, rng, noun, target_chars.saturating_sub(120), "")
            } else {
                let methods = block(
                    lang,
                    false,
                    rng,
                    noun,
                    target_chars.saturating_sub(250),
                    "    ",
                );
                fill(
                    "class {N}Store:\n    \"\"\"Keeps the {n}s of one chat room.\"\"\"\n\n    def __init__(self) -> None:\n        self._{n}s: list[{N}] = []\n        self._clients: set = set()\n\n",
                    noun,
                ) + &methods
            };
            let imports = if tests {
                "import pytest\n\nfrom chat.server import ChatServer, Message\n"
            } else {
                "from __future__ import annotations\n\nfrom chat.models import Message\n"
            };
            let doc = fill("\"\"\"{N} handling for the chat project.\"\"\"\n\n", noun);
            format!("{doc}{imports}\n\n{body}\n")
        }
    }
}

/// The Java package of a source path (`src/main/java/chat/net/X.java` →
/// `chat.net`), `chat` when the path says nothing.
pub fn java_package(path: &str) -> String {
    let dir = super::paths::dirname(path);
    let pkg = match dir.split_once("java/") {
        Some((_, p)) => p.replace('/', "."),
        None => String::new(),
    };
    if pkg.is_empty() {
        "chat".to_string()
    } else {
        pkg
    }
}
