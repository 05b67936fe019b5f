//! The built-in lab projects a simulated student works on: a small
//! client-server chat in Java (Maven + JUnit) or Python (pytest), the lab
//! exercise and the follow-up requests. The files are compiled into the
//! binary (`include_str!`), never read from the repository at run time.

use serde::{Deserialize, Serialize};

use codendum_core::error::ConfigError;

/// Which project the students work on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// Java with Maven and JUnit 5 (the default).
    #[default]
    Java,
    /// Python with pytest.
    Python,
}

/// Where the project lives in the simulated file system.
pub const PROJECT_ROOT: &str = "/home/student/chat";

const JAVA_FILES: &[(&str, &str)] = &[
    (
        "pom.xml",
        include_str!("../../fixtures/classroom/java/pom.xml"),
    ),
    (
        "README.md",
        include_str!("../../fixtures/classroom/java/README.md"),
    ),
    (
        "src/main/java/chat/Message.java",
        include_str!("../../fixtures/classroom/java/src/main/java/chat/Message.java"),
    ),
    (
        "src/main/java/chat/ChatServer.java",
        include_str!("../../fixtures/classroom/java/src/main/java/chat/ChatServer.java"),
    ),
    (
        "src/main/java/chat/ChatClient.java",
        include_str!("../../fixtures/classroom/java/src/main/java/chat/ChatClient.java"),
    ),
    (
        "src/test/java/chat/MessageTest.java",
        include_str!("../../fixtures/classroom/java/src/test/java/chat/MessageTest.java"),
    ),
    (
        "src/test/java/chat/ChatServerTest.java",
        include_str!("../../fixtures/classroom/java/src/test/java/chat/ChatServerTest.java"),
    ),
];

const PYTHON_FILES: &[(&str, &str)] = &[
    (
        "pyproject.toml",
        include_str!("../../fixtures/classroom/python/pyproject.toml"),
    ),
    (
        "README.md",
        include_str!("../../fixtures/classroom/python/README.md"),
    ),
    (
        "chat/__init__.py",
        include_str!("../../fixtures/classroom/python/chat/__init__.py"),
    ),
    (
        "chat/protocol.py",
        include_str!("../../fixtures/classroom/python/chat/protocol.py"),
    ),
    (
        "chat/server.py",
        include_str!("../../fixtures/classroom/python/chat/server.py"),
    ),
    (
        "chat/client.py",
        include_str!("../../fixtures/classroom/python/chat/client.py"),
    ),
    (
        "tests/test_protocol.py",
        include_str!("../../fixtures/classroom/python/tests/test_protocol.py"),
    ),
    (
        "tests/test_server.py",
        include_str!("../../fixtures/classroom/python/tests/test_server.py"),
    ),
];

const JAVA_EXERCISE: &str = "Lab 4, exercise 2. Our chat server in this project relays every \
message to the other clients, but nobody knows who is online. Add a private-message feature: \
a client that types `/msg <name> <text>` sends the text only to the user with that name. \
Extend the protocol in Message.java with a PRIVATE type that carries the recipient, make \
ChatServer remember each client's name from its JOIN message and deliver PRIVATE messages \
only to the named user (answer with an ERR line if the user is not online), and make \
ChatClient understand the /msg command. Add JUnit tests for encoding and parsing the new \
message type and for the server delivering a private message to one client only. Use Maven \
to build; do not add dependencies.";

const PYTHON_EXERCISE: &str = "Lab 4, exercise 2. Our chat server in this project relays \
every message to the other clients, but nobody knows who is online. Add a private-message \
feature: a client that types `/msg <name> <text>` sends the text only to the user with that \
name. Extend the protocol in chat/protocol.py with a PRIVATE type that carries the \
recipient, make the server remember each client's name from its JOIN message and deliver \
PRIVATE messages only to the named user (answer with an ERR line if the user is not online), \
and make the client understand the /msg command. Add pytest tests for encoding and parsing \
the new message type and for the server delivering a private message to one client only. \
Use only the standard library.";

const FOLLOW_UPS: [&str; 3] = [
    "Run the tests and fix any failure.",
    "When a client disconnects without sending LEAVE, the others are never told. Make the \
server broadcast a LEAVE for that user when its connection closes, and add a test for it.",
    "Review the server for thread-safety problems around the client list and fix what you \
find. Run the whole test suite again at the end and tell me the result.",
];

impl Scenario {
    /// Parses the `--scenario` value (`java` or `python`, any case).
    pub fn from_name(name: &str) -> Result<Self, ConfigError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "java" => Ok(Scenario::Java),
            "python" => Ok(Scenario::Python),
            other => Err(ConfigError::invalid(
                "--scenario",
                format!("unknown scenario {other:?} (expected java or python)"),
            )),
        }
    }

    /// The scenario's name as given on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Java => "java",
            Scenario::Python => "python",
        }
    }

    /// The project's files as (path relative to [`PROJECT_ROOT`], content).
    pub fn files(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Scenario::Java => JAVA_FILES,
            Scenario::Python => PYTHON_FILES,
        }
    }

    /// The lab exercise: the first coding request of every student.
    pub fn exercise(self) -> &'static str {
        match self {
            Scenario::Java => JAVA_EXERCISE,
            Scenario::Python => PYTHON_EXERCISE,
        }
    }

    /// The follow-up requests, in the order a student sends them (three).
    pub fn follow_ups(self) -> &'static [&'static str] {
        &FOLLOW_UPS
    }

    /// The text of coding request `index` (0 = the exercise, 1.. = follow-ups),
    /// or `None` past the last follow-up.
    pub fn request(self, index: usize) -> Option<&'static str> {
        match index {
            0 => Some(self.exercise()),
            i => self.follow_ups().get(i - 1).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_parse_and_unknown_names_the_flag() {
        assert_eq!(Scenario::from_name("Java").unwrap(), Scenario::Java);
        assert_eq!(Scenario::from_name("python").unwrap(), Scenario::Python);
        let err = Scenario::from_name("rust").unwrap_err().to_string();
        assert!(err.contains("--scenario"), "{err}");
    }

    #[test]
    fn each_scenario_has_a_build_file_tests_and_requests() {
        for s in [Scenario::Java, Scenario::Python] {
            let names: Vec<&str> = s.files().iter().map(|(p, _)| *p).collect();
            assert!(names
                .iter()
                .any(|p| *p == "pom.xml" || *p == "pyproject.toml"));
            assert!(names.iter().any(|p| p.contains("test")));
            assert!(names.contains(&"README.md"));
            assert!(s.files().iter().all(|(_, c)| c.len() > 20));
            assert!(s.request(0).is_some_and(|t| t.contains("PRIVATE")));
            assert_eq!(s.request(3), Some(FOLLOW_UPS[2]));
            assert_eq!(s.request(4), None);
        }
    }
}
