//! Realistic console logs of builds and test runs (Maven/Surefire, pytest),
//! derived from the tests that are in the student's workspace right now.

use super::scenario::Scenario;
use super::workspace::Workspace;

/// A test found in the workspace: file, name and the line it starts on.
#[derive(Debug, Clone)]
struct FoundTest {
    path: String,
    name: String,
    line: usize,
}

fn find_tests(ws: &Workspace, scenario: Scenario) -> Vec<FoundTest> {
    let mut out = Vec::new();
    let (dir, marker) = match scenario {
        Scenario::Java => ("src/test", "@Test"),
        Scenario::Python => ("tests", "def test_"),
    };
    for path in ws.files_under(dir) {
        let Some(content) = ws.file(path) else {
            continue;
        };
        let lines: Vec<&str> = content.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.contains(marker) {
                continue;
            }
            let name = match scenario {
                Scenario::Python => line.trim().trim_start_matches("def ").split('(').next(),
                Scenario::Java => lines
                    .get(i + 1)
                    .and_then(|l| l.split('(').next())
                    .and_then(|l| l.split_whitespace().last()),
            };
            if let Some(name) = name.filter(|n| !n.is_empty()) {
                out.push(FoundTest {
                    path: path.to_string(),
                    name: name.to_string(),
                    line: i + 2,
                });
            }
        }
    }
    out
}

fn java_class(path: &str) -> String {
    path.trim_start_matches("src/test/java/")
        .trim_end_matches(".java")
        .replace('/', ".")
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The log of a Maven build without tests (`mvn compile`, `javac`, ...).
pub fn build_log(scenario: Scenario, seconds: f64) -> String {
    match scenario {
        Scenario::Java => format!(
            "[INFO] Scanning for projects...\n[INFO] \n[INFO] -------------------------< edu.lab:chat >--------------------------\n\
[INFO] Building chat 0.1.0-SNAPSHOT\n[INFO]   from pom.xml\n[INFO] --------------------------------[ jar ]---------------------------------\n\
[INFO] \n[INFO] --- resources:3.3.1:resources (default-resources) @ chat ---\n[INFO] skip non existing resourceDirectory /home/student/chat/src/main/resources\n\
[INFO] \n[INFO] --- compiler:3.13.0:compile (default-compile) @ chat ---\n[INFO] Recompiling the module because of changed source code.\n\
[INFO] Compiling 3 source files with javac [debug release 21] to target/classes\n[INFO] ------------------------------------------------------------------------\n\
[INFO] BUILD SUCCESS\n[INFO] ------------------------------------------------------------------------\n[INFO] Total time:  {seconds:.3} s\n"
        ),
        Scenario::Python => String::new(),
    }
}

/// The log of a test run; `fail` picks one test (by `pick`, any number)
/// that fails with an assertion error.
pub fn test_log(
    ws: &Workspace,
    scenario: Scenario,
    seconds: f64,
    fail: bool,
    pick: usize,
) -> String {
    let tests = find_tests(ws, scenario);
    let failed = if fail && !tests.is_empty() {
        Some(pick % tests.len())
    } else {
        None
    };
    match scenario {
        Scenario::Java => surefire(&tests, failed, seconds),
        Scenario::Python => pytest(&tests, failed, seconds),
    }
}

/// A log as a quiet run (`mvn -q`, `pytest -q`) prints it: Maven drops its
/// `[INFO]` lines (a passing run prints nothing), pytest drops the session
/// header.
pub fn quiet(scenario: Scenario, log: &str) -> String {
    match scenario {
        Scenario::Java => log
            .lines()
            .filter(|l| !l.starts_with("[INFO]"))
            .map(|l| format!("{l}\n"))
            .collect(),
        Scenario::Python => match log.find("\n\n") {
            Some(at) if log.starts_with("=====") => log[at + 2..].to_string(),
            _ => log.to_string(),
        },
    }
}

fn surefire(tests: &[FoundTest], failed: Option<usize>, seconds: f64) -> String {
    let mut log = build_log(Scenario::Java, seconds);
    let cut = log.find("[INFO] ------------------------------------------------------------------------\n[INFO] BUILD").unwrap_or(log.len());
    log.truncate(cut);
    log.push_str("[INFO] \n[INFO] --- surefire:3.2.5:test (default-test) @ chat ---\n[INFO] \n[INFO] -------------------------------------------------------\n[INFO]  T E S T S\n[INFO] -------------------------------------------------------\n");
    let mut classes: Vec<&str> = tests.iter().map(|t| t.path.as_str()).collect();
    classes.dedup();
    let fail_test = failed.and_then(|i| tests.get(i));
    for path in &classes {
        let class = java_class(path);
        let n = tests.iter().filter(|t| t.path == *path).count();
        log.push_str(&format!("[INFO] Running {class}\n"));
        match fail_test.filter(|t| t.path == *path) {
            Some(t) => log.push_str(&format!(
                "[ERROR] Tests run: {n}, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.061 s <<< FAILURE! -- in {class}\n\
[ERROR] {class}.{name} -- Time elapsed: 0.009 s <<< FAILURE!\n\
org.opentest4j.AssertionFailedError: expected: <MSG|alice|hello> but was: <MSG|alice|hello|>\n\
\tat org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)\n\
\tat org.junit.jupiter.api.AssertionFailureBuilder.buildAndThrow(AssertionFailureBuilder.java:132)\n\
\tat org.junit.jupiter.api.AssertEquals.failNotEqual(AssertEquals.java:197)\n\
\tat org.junit.jupiter.api.Assertions.assertEquals(Assertions.java:1145)\n\
\tat {class}.{name}({file}:{line})\n\tat java.base/java.lang.reflect.Method.invoke(Method.java:580)\n\n",
                name = t.name,
                file = file_name(&t.path),
                line = t.line + 1
            )),
            None => log.push_str(&format!(
                "[INFO] Tests run: {n}, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.0{} s -- in {class}\n",
                40 + n
            )),
        }
    }
    let total = tests.len();
    log.push_str("[INFO] \n[INFO] Results:\n[INFO] \n");
    match fail_test {
        Some(t) => log.push_str(&format!(
            "[ERROR] Failures: \n[ERROR]   {short}.{name}:{line} expected: <MSG|alice|hello> but was: <MSG|alice|hello|>\n\
[INFO] \n[ERROR] Tests run: {total}, Failures: 1, Errors: 0, Skipped: 0\n[INFO] \n\
[INFO] ------------------------------------------------------------------------\n[INFO] BUILD FAILURE\n\
[INFO] ------------------------------------------------------------------------\n[INFO] Total time:  {seconds:.3} s\n\
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-surefire-plugin:3.2.5:test (default-test) on project chat: There are test failures.\n\
[ERROR] \n[ERROR] Please refer to /home/student/chat/target/surefire-reports for the individual test results.\n",
            short = file_name(&t.path).trim_end_matches(".java"),
            name = t.name,
            line = t.line + 1
        )),
        None => log.push_str(&format!(
            "[INFO] Tests run: {total}, Failures: 0, Errors: 0, Skipped: 0\n[INFO] \n\
[INFO] ------------------------------------------------------------------------\n[INFO] BUILD SUCCESS\n\
[INFO] ------------------------------------------------------------------------\n[INFO] Total time:  {seconds:.3} s\n"
        )),
    }
    log
}

fn pytest(tests: &[FoundTest], failed: Option<usize>, seconds: f64) -> String {
    let mut log = format!(
        "============================= test session starts ==============================\n\
platform linux -- Python 3.12.3, pytest-8.2.2, pluggy-1.5.0\nrootdir: /home/student/chat\n\
configfile: pyproject.toml\ntestpaths: tests\ncollected {} items\n\n",
        tests.len()
    );
    let mut files: Vec<&str> = tests.iter().map(|t| t.path.as_str()).collect();
    files.dedup();
    let mut done = 0usize;
    for path in &files {
        let marks: String = tests
            .iter()
            .enumerate()
            .filter(|(_, t)| t.path == *path)
            .map(|(i, _)| if Some(i) == failed { 'F' } else { '.' })
            .collect();
        done += marks.len();
        let pct = (done * 100).checked_div(tests.len()).unwrap_or(100);
        log.push_str(&format!(
            "{path:<width$}[{pct:>3}%]\n",
            path = format!("{path} {marks}"),
            width = 73
        ));
    }
    let passed = tests.len() - usize::from(failed.is_some());
    match failed.and_then(|i| tests.get(i)) {
        Some(t) => log.push_str(&format!(
            "\n=================================== FAILURES ===================================\n\
_____________________________ {name} _____________________________\n\n    def {name}():\n        m = Message(MessageType.MSG, \"alice\", \"hello\")\n\
>       assert Message.parse(m.encode()) == m\n\
E       AssertionError: assert Message(type=<MessageType.MSG: 'MSG'>, sender='alice', text='hello|') == Message(type=<MessageType.MSG: 'MSG'>, sender='alice', text='hello')\n\n\
{path}:{line}: AssertionError\n=========================== short test summary info ============================\n\
FAILED {path}::{name} - AssertionError: assert Message(type=<MessageType.MSG: 'MSG'>, sender='alice', text='hello|') == ...\n\
========================= 1 failed, {passed} passed in {seconds:.2}s ==========================\n",
            name = t.name,
            path = t.path,
            line = t.line + 1
        )),
        None => log.push_str(&format!(
            "\n============================== {passed} passed in {seconds:.2}s ===============================\n"
        )),
    }
    log
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surefire_log_counts_the_workspace_tests() {
        let ws = Workspace::new(Scenario::Java);
        let ok = test_log(&ws, Scenario::Java, 7.5, false, 0);
        assert!(ok.contains("Tests run: 5, Failures: 0"), "{ok}");
        assert!(ok.contains("BUILD SUCCESS"));
        let bad = test_log(&ws, Scenario::Java, 7.5, true, 2);
        assert!(bad.contains("BUILD FAILURE"));
        assert!(
            bad.contains("MessageTest.escapesThePipeInsideText"),
            "{bad}"
        );
        assert!(bad.contains("Tests run: 5, Failures: 1"));
    }

    #[test]
    fn pytest_log_marks_the_failed_test() {
        let ws = Workspace::new(Scenario::Python);
        let bad = test_log(&ws, Scenario::Python, 4.0, true, 0);
        assert!(bad.contains("collected 5 items"), "{bad}");
        assert!(bad.contains("1 failed, 4 passed"));
        assert!(bad.contains("FAILED tests/test_protocol.py::test_encodes_and_parses"));
        let ok = test_log(&ws, Scenario::Python, 4.0, false, 0);
        assert!(ok.contains("5 passed"));
    }

    #[test]
    fn quiet_runs_print_only_what_matters() {
        let ws = Workspace::new(Scenario::Java);
        let ok = test_log(&ws, Scenario::Java, 7.5, false, 0);
        assert_eq!(quiet(Scenario::Java, &ok), "");
        let bad = quiet(Scenario::Java, &test_log(&ws, Scenario::Java, 7.5, true, 2));
        assert!(bad.starts_with("[ERROR] Tests run:"), "{bad}");
        assert!(bad.contains("AssertionFailedError") && bad.contains("There are test failures"));
        assert!(!bad.contains("[INFO]"));
        let ws = Workspace::new(Scenario::Python);
        let bad = quiet(
            Scenario::Python,
            &test_log(&ws, Scenario::Python, 4.0, true, 0),
        );
        assert!(bad.starts_with("tests/"), "{bad}");
        assert!(bad.contains("1 failed, 4 passed") && !bad.contains("platform linux"));
    }
}
