//! Who the search's class is: the simulated students (the default, or a
//! learned class file) or recorded sessions replayed as users
//! (`--replay SOURCE`). Either runs as one class that holds the size each
//! step sets, against the live server or the twin, and writes the same
//! records, so a step is judged the same way whoever the students are.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use crate::classroom::{run_continuous_class, ClassSize, ClassroomConfig, LiveStatus, RecordSink};
use crate::replay::summary::too_long_notes;
use crate::replay::{run_continuous_replay, template_tokens, ReplayConfig, Schedule, Template};
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::openai::{Endpoint, Transport};
use codendum_core::trace::Trace;

/// Recorded sessions replayed as the class's students.
#[derive(Debug, Clone)]
pub struct ReplayedSessions {
    /// Where they were read from, as given.
    pub source: PathBuf,
    /// The sessions (sizes, kinds, timing and prefix blocks; never text).
    pub trace: Trace,
    /// How their recorded waits are kept (`--max-think`, `--max-wait`).
    pub schedule: Schedule,
}

impl ReplayedSessions {
    /// Root sessions (a session with its subagents).
    pub fn sessions(&self) -> usize {
        crate::replay::driver::root_count(&self.trace)
    }

    /// How the sessions are sent to `model` on a server of `max_model_len`,
    /// their text salted with `seed` (the server's chat template is
    /// measured when the class starts, [`spawn_class`]).
    pub fn config(
        &self,
        (model, max_model_len): (&str, Option<u64>),
        seed: u64,
        api_key: Option<codendum_core::access::Secret>,
    ) -> ReplayConfig {
        let mut config = ReplayConfig::new(model, Template::default());
        config.salt = seed;
        config.schedule = self.schedule;
        config.max_model_len = max_model_len;
        config.api_key = api_key;
        config
    }
}

/// The class a search runs.
pub enum Students {
    /// Simulated students.
    Simulated(ClassroomConfig),
    /// Recorded sessions, sent as `config` says once the server's chat
    /// template is measured.
    Replayed(Arc<ReplayedSessions>, ReplayConfig),
}

/// Starts the class of `students` against `transport` on `clock`, holding
/// the size `control` says until its sender is dropped or `stop` turns
/// true; records go to `sink`, what is under way to `status`. The class
/// ends with what it has to tell the user (calls of recorded sessions the
/// server's context could not hold).
pub fn spawn_class(
    students: Students,
    (transport, clock): (Arc<dyn Transport>, Clock),
    (sink, status): (Arc<dyn RecordSink>, Arc<LiveStatus>),
    control: watch::Receiver<ClassSize>,
    stop: Option<watch::Receiver<bool>>,
) -> tokio::task::JoinHandle<Result<Vec<String>, Error>> {
    tokio::spawn(async move {
        match students {
            Students::Simulated(class) => {
                run_continuous_class(&class, transport, clock, (sink, status), control, stop)
                    .await
                    .map(|_| Vec::new())
            }
            Students::Replayed(sessions, mut config) => {
                config.template =
                    template_tokens(transport.as_ref(), Endpoint::Chat, &config.model).await;
                let done = run_continuous_replay(
                    &sessions.trace,
                    &config,
                    (transport, clock),
                    (sink, status),
                    control,
                    stop,
                )
                .await;
                match done.panicked {
                    0 => Ok(too_long_notes(&config, done.too_long)),
                    n => Err(Error::Failed(format!(
                        "{n} replayed students stopped unexpectedly"
                    ))),
                }
            }
        }
    })
}
