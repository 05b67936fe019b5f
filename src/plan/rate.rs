//! `codendum plan --rate`: the highest request rate each profile carries
//! within an SLO, in virtual time. Each profile's twin runs in process on a
//! paused clock and `bench --find-rate` runs against it unchanged (one
//! request at a time, the closed-loop maximum at the profile's seats, then
//! the bisection over rate levels), so a fitted profile answers in seconds
//! what a live search answers in minutes. Each search writes an ordinary
//! bench folder.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::bench::arrival::Arrival;
use crate::bench::config::{Load, OpenLoop};
use crate::bench::{run_on_twin, BenchConfig, TwinFacts};
use crate::settings::RunSettings;
use codendum_core::access::ClientSettings;
use codendum_core::clock::Clock;
use codendum_core::error::{ConfigError, Error};
use codendum_core::profile::Profile;
use codendum_core::results::slo::Slo;
use codendum_core::results::RateSearch;
use codendum_core::shape::Shape;
use codendum_twin::inproc::InProcTransport;
use codendum_twin::TwinOptions;

/// What `plan --rate` searches.
#[derive(Debug, Clone)]
pub struct RatePlan {
    /// The profiles (names or `.toml` paths).
    pub profiles: Vec<String>,
    /// What the highest rate must meet.
    pub slo: Slo,
    /// The prompt shape of the requests.
    pub shape: Shape,
    /// Output tokens per request.
    pub output_tokens: u32,
    /// Requests per level (`None`: a minute of arrivals, at least 16).
    pub requests_per_level: Option<u64>,
    /// Seed of the prompts and arrivals.
    pub seed: u64,
    /// Where each search's bench folder goes.
    pub results_dir: PathBuf,
}

/// One profile's answer.
#[derive(Debug, Clone)]
pub struct RateAnswer {
    /// The profile's name.
    pub profile: String,
    /// The search (its steps and the highest rate).
    pub search: RateSearch,
    /// Its bench folder.
    pub folder: PathBuf,
}

/// Searches each profile in turn (each on its own paused runtime).
pub fn plan_rate(plan: &RatePlan) -> Result<Vec<RateAnswer>, Error> {
    let mut answers = Vec::new();
    for name in &plan.profiles {
        let profile = Profile::load(name)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .map_err(|e| Error::Failed(format!("cannot start a runtime: {e}")))?;
        let outcome = runtime.block_on(search_profile(plan, &profile))?;
        let search = outcome
            .summary
            .rate_search
            .first()
            .cloned()
            .ok_or_else(|| Error::Failed(format!("{}: the search did not run", profile.name)))?;
        answers.push(RateAnswer {
            profile: profile.name.clone(),
            search,
            folder: outcome.folder,
        });
    }
    Ok(answers)
}

async fn search_profile(
    plan: &RatePlan,
    profile: &Profile,
) -> Result<crate::bench::BenchOutcome, Error> {
    let clock = Clock::scaled(1.0);
    let mut opts = TwinOptions::new(profile.clone());
    opts.clock = clock.clone();
    opts.seed = plan.seed;
    let transport = Arc::new(InProcTransport::start(opts));
    let mut client = ClientSettings::new(Duration::from_secs(3_600));
    client.model = Some(profile.server.served_model_name.clone());
    let mut run = RunSettings::new(client);
    run.provenance.profile = Some(profile.name.clone());
    run.results_dir = plan.results_dir.clone();
    run.yes = true;
    let config = BenchConfig {
        load: Load::FindRate {
            open: OpenLoop {
                arrival: Arrival::Poisson,
                max_concurrency: None,
            },
        },
        shapes: vec![plan.shape],
        // The sweep's top: the profile's seats, every one busy.
        concurrency: vec![profile.server.max_num_seqs],
        output_tokens: plan.output_tokens,
        requests_per_level: plan.requests_per_level,
        seed: plan.seed,
        slo: Some(plan.slo),
        ..BenchConfig::default()
    };
    // The twin in process states its model and no `/tokenize`: prompts are
    // sized from a probe's usage, as against a server without `/tokenize`.
    let info = TwinFacts {
        model: profile.server.served_model_name.clone(),
        max_model_len: None,
        tokenize: false,
    };
    run_on_twin((&config, &run), &transport, &info, clock).await
}

/// Checks `plan --rate`'s own values.
pub fn check(plan: &RatePlan) -> Result<(), ConfigError> {
    if plan.profiles.is_empty() {
        return Err(ConfigError::invalid("--profile", "no profile given"));
    }
    if plan.output_tokens == 0 {
        return Err(ConfigError::invalid(
            "--output-tokens",
            "must be at least 1",
        ));
    }
    Ok(())
}
