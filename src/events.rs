//! What a command tells its user, as events: the drivers and the app emit
//! them, one reporter turns them into text. The library never writes to
//! the terminal itself; the binary installs the terminal reporter, the
//! capacity suite and `plan`'s inner runs pass [`Events::silent`], and
//! tests read what was said through [`Events::recording`].

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// One thing a run has to say.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// What the run measures: the embedded twin's description, shown
    /// before a run against it (no plan is asked for there).
    Target(String),
    /// The plan shown before a live run, for confirmation (several lines).
    Plan(String),
    /// Something the user may act on; the run goes on as asked.
    Note(String),
    /// Something that makes the results weaker or that needs attention;
    /// the run goes on.
    Warning(String),
    /// A line of a run's own progress (a calibration cell's estimate, a
    /// plan cell, a search probe, a command's banner), shown as it is.
    Line(String),
    /// A table at the end of a run or a level (shown as it is).
    Table(String),
    /// A bench level starts: `planned` requests at `concurrency` in flight
    /// (0: an open-loop level without a cap).
    LevelStarted {
        /// The prompt shape's name.
        shape: String,
        /// Requests kept in flight.
        concurrency: u32,
        /// Requests the level starts.
        planned: u64,
    },
    /// A request of the current level finished; `errors` is the level's
    /// error count so far.
    RequestFinished {
        /// Failed requests of the level so far.
        errors: u64,
    },
    /// The current level is over.
    LevelFinished,
    /// The live status of a class (replaced every second on a terminal).
    Status(String),
    /// The class is over: the status line is done.
    StatusDone,
    /// A file or folder was written.
    Written {
        /// What it is.
        what: Written,
        /// Where.
        path: PathBuf,
    },
    /// The run's verdict line, when it does not fail the run (a failing
    /// verdict is the command's error).
    Verdict(String),
    /// A run of `--repeat` starts: run `run` of `of` (from 1), with `seed`.
    RepeatRun {
        /// Its number, from 1.
        run: u32,
        /// Runs asked for.
        of: u32,
        /// The random seed it runs with.
        seed: u64,
    },
    /// The first Ctrl-C or SIGTERM: the command is stopping.
    Stopping,
    /// The command ends at once (`why`: a second interrupt, or too long
    /// after the first).
    EndingNow(String),
}

impl Event {
    /// The event as a line of text from `program` (`codendum`): the one
    /// style of every reporter (`codendum: warning: …`, `codendum: note:
    /// …`, `Results in …`). `None` for the progress events, which a
    /// reporter draws (or not) instead.
    pub fn line(&self, program: &str) -> Option<String> {
        Some(match self {
            Event::Target(label) => format!("Target: {label}"),
            Event::Plan(text) => text.trim_end().to_string(),
            Event::Note(text) => format!("{program}: note: {text}"),
            Event::Warning(text) => format!("{program}: warning: {text}"),
            Event::Line(text) => text.clone(),
            Event::Table(text) => text.trim_end_matches('\n').to_string(),
            Event::Written { what, path } => match what {
                Written::Results => format!("Results in {}", path.display()),
                Written::Report => format!("Report: {}", path.display()),
                Written::Plan => format!("Plan in {}", path.display()),
            },
            Event::Verdict(line) => format!("{program}: {line}"),
            Event::RepeatRun { run, of, seed } => format!("\nRun {run}/{of} (seed {seed})"),
            Event::Stopping => format!(
                "\n{program}: stopping: no new requests; writing what was measured (Ctrl-C again ends at once)"
            ),
            Event::EndingNow(why) => format!("{program}: {why}: ending now"),
            Event::LevelStarted { .. }
            | Event::RequestFinished { .. }
            | Event::LevelFinished
            | Event::Status(_)
            | Event::StatusDone => return None,
        })
    }
}

/// The kinds of thing a run writes, as the reporter names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// A run's results folder.
    Results,
    /// A report or comparison file.
    Report,
    /// A plan's folder.
    Plan,
}

/// Receives a command's events: the terminal reporter, a recorder, or
/// nothing.
pub trait Reporter: Send + Sync {
    /// Takes one event, in the order they happen.
    fn report(&self, event: &Event);
}

/// The handle the library emits events through; cheap to clone.
#[derive(Clone, Default)]
pub struct Events {
    reporter: Option<Arc<dyn Reporter>>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.reporter.is_some() {
            "Events(reported)"
        } else {
            "Events(silent)"
        })
    }
}

impl Events {
    /// Events given to `reporter`.
    pub fn to(reporter: Arc<dyn Reporter>) -> Self {
        Events {
            reporter: Some(reporter),
        }
    }

    /// Events nobody hears (the capacity suite's workloads, `plan`'s cells).
    pub fn silent() -> Self {
        Events::default()
    }

    /// Events kept in memory, for a test to read.
    pub fn recording() -> (Self, Arc<Recorder>) {
        let recorder = Arc::new(Recorder::default());
        (Events::to(recorder.clone()), recorder)
    }

    /// Emits one event.
    pub fn emit(&self, event: Event) {
        if let Some(r) = &self.reporter {
            r.report(&event);
        }
    }

    /// Emits a [`Event::Note`].
    pub fn note(&self, text: impl Into<String>) {
        self.emit(Event::Note(text.into()));
    }

    /// Emits a [`Event::Warning`].
    pub fn warn(&self, text: impl Into<String>) {
        self.emit(Event::Warning(text.into()));
    }

    /// Emits a [`Event::Line`].
    pub fn line(&self, text: impl Into<String>) {
        self.emit(Event::Line(text.into()));
    }

    /// Emits a [`Event::Table`].
    pub fn table(&self, text: impl Into<String>) {
        self.emit(Event::Table(text.into()));
    }

    /// Emits a [`Event::Written`].
    pub fn written(&self, what: Written, path: impl Into<PathBuf>) {
        self.emit(Event::Written {
            what,
            path: path.into(),
        });
    }
}

/// Keeps every event, for tests.
#[derive(Debug, Default)]
pub struct Recorder {
    events: Mutex<Vec<Event>>,
}

impl Recorder {
    /// The events so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The text of every warning so far.
    pub fn warnings(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Warning(w) => Some(w),
                _ => None,
            })
            .collect()
    }
}

impl Reporter for Recorder {
    fn report(&self, event: &Event) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_events_go_nowhere_and_recorded_ones_keep_their_order() {
        Events::silent().warn("nobody hears this");
        let (events, recorder) = Events::recording();
        events.note("first");
        events.warn("second");
        events.written(Written::Results, "results/x");
        assert_eq!(
            recorder.events(),
            vec![
                Event::Note("first".into()),
                Event::Warning("second".into()),
                Event::Written {
                    what: Written::Results,
                    path: PathBuf::from("results/x")
                },
            ]
        );
        assert_eq!(recorder.warnings(), vec!["second".to_string()]);
    }

    #[test]
    fn one_style_for_every_line() {
        let line = |e: Event| e.line("codendum").unwrap_or_default();
        assert_eq!(line(Event::Warning("w".into())), "codendum: warning: w");
        assert_eq!(line(Event::Note("n".into())), "codendum: note: n");
        assert_eq!(
            line(Event::Verdict("completed cleanly".into())),
            "codendum: completed cleanly"
        );
        assert_eq!(
            line(Event::Written {
                what: Written::Report,
                path: "r/report.md".into()
            }),
            "Report: r/report.md"
        );
        assert_eq!(line(Event::Table("a\nb\n".into())), "a\nb");
        assert!(Event::LevelFinished.line("codendum").is_none());
        assert!(Event::Status("x".into()).line("codendum").is_none());
    }
}
