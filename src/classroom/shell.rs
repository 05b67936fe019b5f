//! The simulated `bash` of a student's workstation: builds and tests take
//! seconds of simulated time and print realistic logs, simple file commands
//! answer from the in-memory project, anything else answers like a shell.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;

use super::buildlog::{self, build_log, test_log};
use super::client_times::{ClientTimeKind, ClientTimes};
use super::command_line::{classify, split_top, words, Kind};
use super::scenario::Scenario;
use super::workspace::Workspace;
use codendum_core::class::ToolTimes;

/// Per-session shell state: whether the first test run is to fail, and
/// where tool times come from.
#[derive(Debug, Clone)]
pub struct ShellState {
    /// The project's language and build tool.
    pub scenario: Scenario,
    /// Drawn once per session: the first test run fails.
    pub first_test_fails: bool,
    /// Test runs so far in this session.
    pub test_runs: u32,
    /// Measured client times (`--client-times`, from `codendum capture`):
    /// a kind with samples is drawn from them.
    pub client_times: Arc<ClientTimes>,
    /// The class's tool times, for the kinds without measured samples.
    pub tool_s: Arc<ToolTimes>,
}

impl ShellState {
    /// A session's state with the class's tool times; draws whether its
    /// first test run fails (`first_test_fails`, a fraction 0..1).
    pub fn new(
        scenario: Scenario,
        first_test_fails: f64,
        tool_s: Arc<ToolTimes>,
        rng: &mut impl Rng,
    ) -> Self {
        ShellState {
            scenario,
            first_test_fails: rng.gen_bool(first_test_fails.clamp(0.0, 1.0)),
            test_runs: 0,
            client_times: Arc::default(),
            tool_s,
        }
    }

    /// The client's time for a tool call of `kind`, seconds: a measured
    /// sample when there are some for the kind, else a draw from the
    /// class.
    pub fn tool_time(&self, kind: ClientTimeKind, rng: &mut impl Rng) -> f64 {
        if let Some(measured) = self.client_times.draw(kind, rng) {
            return measured.as_secs_f64();
        }
        let class = match kind {
            ClientTimeKind::FileTool => &self.tool_s.file_tool,
            ClientTimeKind::AfterEdit => &self.tool_s.after_edit,
            ClientTimeKind::BuildTest => &self.tool_s.build_test,
            ClientTimeKind::Bash => &self.tool_s.bash,
            _ => &self.tool_s.other_tool,
        };
        class.sample(rng).max(0.0)
    }
}

/// What a command printed, its exit code and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellOutput {
    /// Standard output and error, interleaved.
    pub output: String,
    /// The exit code of the last command run.
    pub exit_code: i32,
    /// Simulated time the command took.
    pub elapsed: Duration,
    /// The command ran into its time limit.
    pub timed_out: bool,
}

/// Runs a command line in folder `workdir` (project-relative): `&&`, `||`,
/// `;` and pipes are honoured; a command that runs past `timeout` is cut off
/// there (exit code 124).
pub fn run(
    ws: &mut Workspace,
    state: &mut ShellState,
    rng: &mut impl Rng,
    command: &str,
    workdir: &str,
    timeout: Duration,
) -> ShellOutput {
    let mut out = String::new();
    let mut code = 0;
    let mut elapsed = 0.0f64;
    let mut cwd = workdir.to_string();
    let limit = timeout.as_secs_f64();
    for (segment, joiner) in split_top(command, &["&&", "||", ";"]) {
        let stages = split_top(&segment, &["|"]);
        let mut stdin: Option<String> = None;
        for (stage, _) in stages {
            let words = words(&stage);
            let (text, c, secs) = run_one(ws, state, rng, &words, &mut cwd, stdin.as_deref());
            elapsed += secs;
            code = c;
            if elapsed > limit {
                out.push_str(&text);
                out.push_str(&format!(
                    "\n\nbash tool terminated command after exceeding timeout {} ms\n",
                    timeout.as_millis()
                ));
                return ShellOutput {
                    output: out,
                    exit_code: 124,
                    elapsed: timeout,
                    timed_out: true,
                };
            }
            stdin = Some(text);
        }
        out.push_str(stdin.as_deref().unwrap_or(""));
        match joiner.as_str() {
            "&&" if code != 0 => break,
            "||" if code == 0 => break,
            _ => {}
        }
    }
    ShellOutput {
        output: out,
        exit_code: code,
        elapsed: Duration::from_secs_f64(elapsed),
        timed_out: false,
    }
}

fn run_one(
    ws: &mut Workspace,
    state: &mut ShellState,
    rng: &mut impl Rng,
    words: &[String],
    cwd: &mut String,
    stdin: Option<&str>,
) -> (String, i32, f64) {
    let Some(first) = words.first() else {
        return (String::new(), 0, 0.0);
    };
    let kind = classify(words);
    let secs = match kind {
        Some(Kind::Test | Kind::Build) => state.tool_time(ClientTimeKind::BuildTest, rng),
        _ => 0.0,
    };
    let quiet = words[1..].iter().any(|w| w == "-q" || w == "--quiet");
    match kind {
        Some(Kind::Test) => {
            state.test_runs += 1;
            let fail = state.test_runs == 1 && state.first_test_fails;
            let pick = rng.gen_range(0..1000);
            let mut log = test_log(ws, state.scenario, secs, fail, pick);
            if quiet {
                log = buildlog::quiet(state.scenario, &log);
            }
            return (log, i32::from(fail), secs);
        }
        Some(Kind::Build) => {
            let log = if quiet {
                String::new()
            } else {
                build_log(state.scenario, secs)
            };
            return (log, 0, secs);
        }
        Some(Kind::Hang(banner)) => return (banner.to_string(), 0, f64::INFINITY),
        None => {}
    }
    let (text, code) = super::shell_files::file_command(ws, words, cwd, stdin);
    let text = match text {
        Some(t) => t,
        None => format!("bash: {first}: command not found\n"),
    };
    let code = if code == 0 && text.ends_with("command not found\n") {
        127
    } else {
        code
    };
    let simple = state.tool_time(ClientTimeKind::Bash, rng);
    (text, code, simple)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn setup(fails: bool) -> (Workspace, ShellState, ChaCha8Rng) {
        let rng = ChaCha8Rng::seed_from_u64(7);
        let state = ShellState {
            scenario: Scenario::Java,
            first_test_fails: fails,
            test_runs: 0,
            client_times: Arc::default(),
            tool_s: Arc::new(codendum_core::class::Class::lab().agent.tool_s.clone()),
        };
        (Workspace::new(Scenario::Java), state, rng)
    }

    #[test]
    fn first_test_run_fails_then_passes_and_takes_build_time() {
        let (mut ws, mut st, mut rng) = setup(true);
        let t = Duration::from_secs(120);
        let a = run(&mut ws, &mut st, &mut rng, "mvn -q test", "", t);
        assert_eq!(a.exit_code, 1);
        assert!(a.output.contains("There are test failures"), "{}", a.output);
        assert!(!a.output.contains("[INFO]"), "-q keeps only errors");
        let secs = a.elapsed.as_secs_f64();
        assert!((3.0..=12.0).contains(&secs), "{secs}");
        let b = run(&mut ws, &mut st, &mut rng, "mvn test", "", t);
        assert_eq!(b.exit_code, 0);
        assert!(b.output.contains("BUILD SUCCESS"));
    }

    #[test]
    fn chains_pipes_unknown_commands_and_timeouts() {
        let (mut ws, mut st, mut rng) = setup(false);
        let t = Duration::from_secs(120);
        let o = run(
            &mut ws,
            &mut st,
            &mut rng,
            "ls src && cat pom.xml | wc -l",
            "",
            t,
        );
        assert_eq!(o.exit_code, 0);
        assert!(o.output.starts_with("main\ntest\n"), "{}", o.output);
        assert!(o.output.trim_end().ends_with("36"), "{}", o.output);
        let o = run(&mut ws, &mut st, &mut rng, "frobnicate --all", "", t);
        assert_eq!(o.exit_code, 127);
        assert!(o.output.contains("frobnicate: command not found"));
        let o = run(
            &mut ws,
            &mut st,
            &mut rng,
            "false || echo 'fallback ok'",
            "",
            t,
        );
        assert_eq!(o.output, "fallback ok\n");
        let short = Duration::from_secs(2);
        let o = run(
            &mut ws,
            &mut st,
            &mut rng,
            "java -cp target/classes chat.ChatServer",
            "",
            short,
        );
        assert!(o.timed_out);
        assert_eq!(o.elapsed, short);
        assert!(o.output.contains("exceeding timeout 2000 ms"));
    }

    #[test]
    fn quoting_keeps_separators_inside_strings() {
        assert_eq!(
            words("grep -n 'a && b' x.txt"),
            vec!["grep", "-n", "a && b", "x.txt"]
        );
        let parts = split_top("echo 'a;b' ; ls", &["&&", "||", ";"]);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].0, "echo 'a;b'");
    }
}
