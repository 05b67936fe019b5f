//! The one reporter that writes to the terminal: every event of a command
//! becomes text on stderr here, in one style (`codendum: warning: …`,
//! `codendum: note: …`), with one decision whether progress is drawn (a
//! level's bar, a class's status line: only when stderr is a terminal).
//! Standard output is left to data (`metrics --json`, the paths `report`
//! prints). The confirmation prompt lives here too, as it talks to the
//! terminal.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use codendum::events::{Event, Events, Reporter};

/// The program's name at the start of its own lines.
const NAME: &str = "codendum";

/// Writes a command's events on stderr.
pub struct Terminal {
    /// Whether stderr is a terminal: progress is drawn only then.
    progress: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The current bench level's bar.
    bar: Option<ProgressBar>,
    /// Whether a class's status line is on screen (it has no newline yet).
    status_shown: bool,
}

impl Terminal {
    /// The reporter for this process's stderr.
    pub fn new() -> Self {
        Terminal {
            progress: std::io::stderr().is_terminal(),
            state: Mutex::new(State::default()),
        }
    }

    /// Events reported by a new terminal reporter.
    pub fn events() -> Events {
        Events::to(Arc::new(Terminal::new()))
    }

    /// Prints one line on stderr, around the bar or status line on screen.
    fn print(&self, state: &mut State, line: &str) {
        if state.status_shown {
            eprint!("\r\x1b[2K");
            state.status_shown = false;
        }
        match &state.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    fn progress(&self, state: &mut State, event: &Event) {
        match event {
            Event::LevelStarted {
                shape,
                concurrency,
                planned,
            } => {
                let target = if self.progress {
                    ProgressDrawTarget::stderr()
                } else {
                    ProgressDrawTarget::hidden()
                };
                let bar = ProgressBar::with_draw_target(Some(*planned), target);
                let style = ProgressStyle::with_template(
                    "{prefix:>14} [{bar:30}] {pos}/{len} requests {msg}",
                )
                .map(|s| s.progress_chars("=> "))
                .unwrap_or_else(|_| ProgressStyle::default_bar());
                bar.set_style(style);
                bar.set_prefix(format!("{shape} N={concurrency}"));
                state.bar = Some(bar);
            }
            Event::RequestFinished { errors } => {
                if let Some(bar) = &state.bar {
                    bar.inc(1);
                    if *errors > 0 {
                        bar.set_message(format!("({errors} errors)"));
                    }
                }
            }
            Event::LevelFinished => {
                if let Some(bar) = state.bar.take() {
                    bar.finish();
                }
            }
            Event::Status(line) if self.progress => {
                eprint!("\r\x1b[2K{line}");
                let _ = std::io::stderr().flush();
                state.status_shown = true;
            }
            Event::StatusDone if state.status_shown => {
                eprintln!();
                state.status_shown = false;
            }
            _ => {}
        }
    }
}

impl Reporter for Terminal {
    fn report(&self, event: &Event) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match event.line(NAME) {
            Some(line) => self.print(&mut state, &line),
            None => self.progress(&mut state, event),
        }
    }
}

/// The error that ends the command, as its last line.
pub fn error(e: impl std::fmt::Display) {
    eprintln!("{NAME}: {e}");
}

/// Asks on the terminal whether to start the plan shown; without a
/// terminal, refuses (the caller then says to pass `--yes`).
pub fn confirm(_plan: &str) -> bool {
    use std::io::BufRead;
    if !std::io::stdin().is_terminal() {
        eprintln!("{NAME}: no terminal to confirm on; pass --yes");
        return false;
    }
    eprint!("Start? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
