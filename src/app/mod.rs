//! What the commands do, end to end. The CLI and the capacity suite both
//! call these functions, so a workload is implemented once.
//!
//! - [`run`]: the one run lifecycle of `bench`, `classroom` and `replay`
//!   (connect, what the server says of itself, the busy guard and the
//!   stated profile, plan and confirmation, the report, the verdict as the
//!   exit code); [`mod@bench`], [`classroom`] and [`replay`] plug their
//!   workload into it ([`workload`]: what one is given and returns) and
//!   import no sibling command; [`repeated`] runs one N times;
//! - shared by those: [`sampling`] (how a run reads its server),
//!   [`class_side`] (a class-like run's server figures and summary),
//!   [`fleet`] and [`fleet_bench`] (a live fleet's figures, Prometheus),
//!   [`guard`] (the busy guard), [`router_watch`] (the router's own page),
//!   [`seams`] (the HTTP client and the sampler as the drivers'
//!   interfaces), [`signals`] (Ctrl-C and SIGTERM);
//! - the other commands: [`metrics`], [`serve`], [`plan`], [`capacity`],
//!   [`calibrate`], [`capture`], [`report`] (`report` and `compare`),
//!   [`check`] (the capacity acceptance suite, whose workloads run through
//!   the commands' own runs: [`AppLifecycle`], composed here from them).
//!
//! Each takes typed settings ([`crate::settings`]); the binary's
//! `commands.rs` only resolves flags into them. The embedded twin is wired
//! in one place: [`crate::connect::Connection::open`].

pub mod bench;
pub mod calibrate;
pub mod capacity;
pub mod capture;
pub mod check;
pub mod class_side;
pub mod classroom;
pub mod fleet;
pub mod fleet_bench;
pub mod guard;
pub mod metrics;
pub mod plan;
pub mod repeated;
pub mod replay;
pub mod report;
pub mod router_watch;
pub mod run;
pub mod sampling;
pub mod seams;
pub mod serve;
pub mod signals;
pub mod workload;

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use crate::acceptance::lifecycle::{Lifecycle, RunVoice, Running};
use crate::acceptance::Suite;
use crate::bench::BenchConfig;
use crate::capacity::settings::CapacitySettings;
use crate::classroom::ClassroomConfig;
use crate::events::Events;
use crate::settings::{RunSettings, Server};
use codendum_core::results::capacity::TierAnswer;
use codendum_core::results::{BenchSummary, ClassroomRunSummary};

/// The suite of `settings` as `codendum check` runs it: its workloads run
/// through the command line's own lifecycle ([`AppLifecycle`]); runs are
/// shared between processes in `cache_dir`.
pub fn suite(settings: crate::acceptance::Settings, cache_dir: PathBuf) -> Suite {
    Suite::new(settings, cache_dir, Arc::new(AppLifecycle))
}

/// The suite the environment describes ([`Suite::from_env`]), its
/// workloads run through the command line's own lifecycle.
pub fn suite_from_env(cache_dir: PathBuf) -> Suite {
    Suite::from_env(cache_dir, Arc::new(AppLifecycle))
}

/// The command line's run lifecycle as the suite runs its workloads:
/// `bench`, `classroom` and `capacity`'s own runs, never asking.
pub struct AppLifecycle;

/// A run that never asks and stops with `voice`'s stop.
fn quiet(voice: RunVoice) -> workload::RunIo<'static> {
    workload::RunIo {
        events: voice.events,
        confirm: &|_| true,
        stop: voice.stop,
    }
}

impl Lifecycle for AppLifecycle {
    fn bench<'a>(
        &'a self,
        (server, run): (&'a Server, &'a RunSettings),
        config: &'a BenchConfig,
        voice: RunVoice,
    ) -> Running<'a, (PathBuf, BenchSummary)> {
        Box::pin(async move {
            let outcome = bench::run(server, run, config, quiet(voice)).await?;
            Ok((outcome.folder, outcome.summary))
        })
    }

    fn classroom<'a>(
        &'a self,
        (server, run): (&'a Server, &'a RunSettings),
        class: ClassroomConfig,
        voice: RunVoice,
    ) -> Running<'a, (PathBuf, ClassroomRunSummary)> {
        Box::pin(async move {
            let class = classroom::ClassroomSettings {
                config: class,
                server_timeline: None,
                prompt_file: None,
            };
            let result = classroom::run(server, run, &class, quiet(voice)).await?;
            Ok((result.folder, result.summary))
        })
    }

    fn capacity<'a>(
        &'a self,
        (server, run): (&'a Server, &'a RunSettings),
        search: &'a CapacitySettings,
        voice: RunVoice,
    ) -> Running<'a, (PathBuf, Vec<TierAnswer>)> {
        Box::pin(async move {
            let result = capacity::run(server, run, search, quiet(voice)).await?;
            Ok((result.folder, result.results.answers))
        })
    }

    fn stop_on_signal(&self, events: Events) -> watch::Receiver<bool> {
        signals::stop_on_signal(events)
    }
}
