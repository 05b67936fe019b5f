//! What a tool result says: a test or compile command, a failed log, a tool
//! error, a program that is not installed.

/// Whether a shell command runs the tests (a build that also tests counts).
pub fn is_test_command(command: &str) -> bool {
    !is_compile_command(command)
        && ["test", "pytest", "mvn", "gradle", "unittest", "verify"]
            .iter()
            .any(|w| command.contains(w))
}

/// Whether a shell command only compiles (`mvn -q compile`,
/// `python -m compileall`): its log says whether the code builds, not
/// whether the tests pass.
pub fn is_compile_command(command: &str) -> bool {
    command.contains("compile") && !command.contains("test")
}

/// Whether a test log shows a failure (`FAIL`, `ERROR`, `failed`, a traceback).
pub fn log_failed(log: &str) -> bool {
    [
        "FAIL",
        "ERROR",
        "failed",
        "Traceback",
        "error:",
        "Error:",
        "Error compiling",
        "Exception",
    ]
    .iter()
    .any(|w| log.contains(w))
}

pub(super) fn is_error_result(text: &str) -> bool {
    let l = text.trim().to_ascii_lowercase();
    l.starts_with("error")
        || l.contains("not found")
        || l.contains("no such file")
        || l.starts_with("failed")
        || l.contains("execution failed")
        || (!l.contains('\n') && l.ends_with("failed"))
}

/// Whether a shell result says the program itself is not installed.
pub fn program_missing(text: &str) -> bool {
    [
        "command not found",
        "No module named",
        ": not found",
        "is not recognized as",
    ]
    .iter()
    .any(|w| text.contains(w))
}
