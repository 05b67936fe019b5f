//! What the suite needs of the command line's run lifecycle: a bench run,
//! a classroom run and a capacity search, each as `codendum bench`,
//! `classroom` and `capacity` make them (connect, check the server, sample
//! `/metrics`, write the folder), never asking; and Ctrl-C turned into a
//! stop. The lifecycle lives above the suite (`crate::app`), which hands
//! it in ([`crate::app::AppLifecycle`]), so the suite never reaches
//! up into it.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use tokio::sync::watch;

use crate::bench::BenchConfig;
use crate::capacity::settings::CapacitySettings;
use crate::classroom::ClassroomConfig;
use crate::events::Events;
use crate::settings::{RunSettings, Server};
use codendum_core::error::Error;
use codendum_core::results::capacity::TierAnswer;
use codendum_core::results::{BenchSummary, ClassroomRunSummary};

/// A run under way, on the caller's runtime.
pub type Running<'a, T> = Pin<Box<dyn Future<Output = Result<T, Error>> + 'a>>;

/// Where a run tells what it does, and when it stops.
#[derive(Clone)]
pub struct RunVoice {
    /// Where the run tells its plan, progress and tables.
    pub events: Events,
    /// Becomes `true` on Ctrl-C / SIGTERM.
    pub stop: watch::Receiver<bool>,
}

/// The command line's run lifecycle as the suite uses it.
pub trait Lifecycle: Send + Sync {
    /// `codendum bench`'s run of `config` against `at` (the server and
    /// the run's settings): its folder and summary.
    fn bench<'a>(
        &'a self,
        at: (&'a Server, &'a RunSettings),
        config: &'a BenchConfig,
        voice: RunVoice,
    ) -> Running<'a, (PathBuf, BenchSummary)>;

    /// `codendum classroom`'s run of `class`: its folder and summary.
    fn classroom<'a>(
        &'a self,
        at: (&'a Server, &'a RunSettings),
        class: ClassroomConfig,
        voice: RunVoice,
    ) -> Running<'a, (PathBuf, ClassroomRunSummary)>;

    /// `codendum capacity`'s search of `search`: its folder and each
    /// tier's answer.
    fn capacity<'a>(
        &'a self,
        at: (&'a Server, &'a RunSettings),
        search: &'a CapacitySettings,
        voice: RunVoice,
    ) -> Running<'a, (PathBuf, Vec<TierAnswer>)>;

    /// A stop that turns true on Ctrl-C or SIGTERM, said through `events`.
    fn stop_on_signal(&self, events: Events) -> watch::Receiver<bool>;
}
