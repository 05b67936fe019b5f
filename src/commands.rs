//! Each command's one `resolve` step, from the parsed (already typed)
//! flags to the library's settings, then the run. The checks here are the
//! ones that need several flags at once (a mode's flags, the twin-only
//! flags against a live server); single values were checked while parsed.

use std::path::PathBuf;
use std::sync::Arc;

use codendum::app::run::exit_status;
use codendum::app::signals::stop_on_signal;
use codendum::app::workload::RunIo;
use codendum::bench::arrival::Arrival;
use codendum::bench::config::{OpenLoop, DEFAULT_OUTPUT_TOKENS};
use codendum::bench::{BenchConfig, Load};
use codendum::connect::{BENCH_TIME_SCALE, CLASSROOM_TIME_SCALE};
use codendum::events::Events;
use codendum::scrape::PrometheusOptions;
use codendum::settings::env;
use codendum::settings::{
    twin_fleet, LiveServer, RunSettings, Server, TwinSettings, DEFAULT_PROFILE,
};
use codendum_core::access::{ClientSettings, Provenance, Secret, Target};
use codendum_core::error::{ConfigError, Error};
use codendum_core::profile::Profile;

use crate::cli::{
    ArrivalArg, BenchArgs, CapacityArgs, CaptureArgs, CheckArgs, ClassroomArgs, Cli, Command,
    CompareArgs, EndpointArg, ExportTraceArgs, LearnClassArgs, MetricsArgs, PlanArgs,
    ProvenanceArgs, ReplayArgs, ReportArgs, RunArgs, ScenarioArg, ServeArgs, TargetArgs,
    TraceFormatArg, TwinArgs,
};
use crate::terminal::{self, Terminal};

/// Runs one command, telling its events on the terminal.
pub async fn run(cli: Cli) -> Result<(), Error> {
    let events = Terminal::events();
    match cli.command {
        Command::Metrics(args) => metrics(args, events).await,
        Command::Serve(args) => serve(args, events).await,
        Command::Bench(args) => bench(args, events).await,
        Command::Classroom(args) => classroom(args, events).await,
        Command::Report(args) => report(args, &events),
        Command::Compare(args) => compare(args),
        Command::Plan(args) => plan(args, events).await,
        Command::Capacity(args) => capacity(*args, events).await,
        Command::Calibrate(args) => calibrate(args, &events),
        Command::Capture(args) => capture(args, events).await,
        Command::Replay(args) => replay(args, events).await,
        Command::ExportTrace(args) => export_trace(args, &events),
        Command::Check(args) => check(args, events).await,
        Command::CliReference => print_stdout(&crate::cli_reference::page()),
        Command::LearnClass(args) => learn_class(args),
    }
}

/// What every run of a workload is given besides its settings.
fn io(events: Events) -> RunIo<'static> {
    RunIo {
        stop: stop_on_signal(events.clone()),
        events,
        confirm: &terminal::confirm,
    }
}

/// `bench`, `classroom` and `replay`'s shared flags as the run's server and
/// settings. `default_scale`: the twin's speed-up unless `--time-scale`.
fn resolve_run(
    (target, provenance, twin, run): (&TargetArgs, &ProvenanceArgs, &TwinArgs, &RunArgs),
    default_scale: f64,
    events: &Events,
) -> Result<(Server, RunSettings), Error> {
    let client = ClientSettings {
        api_key: env::value(target.api_key.clone()).map(Secret::new),
        model: env::value(target.model.clone()),
        request_timeout: target.timeout.0,
    };
    let (server, fleet_note) = resolve_server(target, provenance, twin, (run.seed, default_scale))?;
    if let Some(note) = fleet_note {
        events.note(note);
    }
    if let Some(live) = server.live() {
        if client.sends_key_in_clear(&live.target.base_url) {
            events.warn(format!(
                "the API key goes in clear text over http:// to {}; use https://",
                live.target.display_url()
            ));
        }
    }
    let settings = RunSettings {
        client,
        provenance: resolve_provenance(provenance),
        results_dir: run.results_dir.clone(),
        allow_busy: run.allow_busy,
        yes: run.yes,
        write_report: !run.no_report,
        max_error_rate: run.max_error_rate.0,
        strict: run.strict,
        repeat: 1,
    };
    Ok((server, settings))
}

/// A live server when `--base-url` names one (the twin-only flags are then
/// refused), else the embedded twin running `--profile` (a fleet with
/// `--replicas`), with the note for a router that has no effect.
fn resolve_server(
    target: &TargetArgs,
    provenance: &ProvenanceArgs,
    twin: &TwinArgs,
    (seed, default_scale): (u64, f64),
) -> Result<(Server, Option<String>), Error> {
    let Some(base_url) = target.base_url.clone() else {
        if target.prometheus_url.is_some() {
            return Err(ConfigError::invalid(
                "--prometheus-url",
                "reads a live fleet's figures: give --base-url too (the embedded twin is in no Prometheus)",
            )
            .into());
        }
        let name = env::value(provenance.profile.clone());
        let profile = Profile::load(name.as_deref().unwrap_or(DEFAULT_PROFILE))?;
        let (fleet, note) = twin_fleet(
            &profile,
            twin.fleet.replicas.map(|r| r.get_u32()),
            twin.fleet.router.map(|r| r.0),
        );
        let settings = TwinSettings {
            profile,
            time_scale: twin.time_scale.map_or(default_scale, |t| t.0),
            seed,
        };
        return Ok((Server::embedded(settings, fleet), note));
    };
    for (flag, given) in [
        ("--replicas", twin.fleet.replicas.is_some()),
        ("--router", twin.fleet.router.is_some()),
    ] {
        if given {
            return Err(ConfigError::invalid(
                flag,
                "applies to the embedded twin only: a live fleet is routed by its own router",
            )
            .into());
        }
    }
    let mut t = Target::at(base_url);
    t.cacert = target.cacert.clone().map(|c| c.0);
    if let Some(urls) = &target.metrics_url {
        t.metrics_urls = urls.0.clone();
    }
    t.router_metrics_url = target.router_metrics_url.clone().map(|u| u.0);
    let prometheus = target.prometheus_url.as_ref().map(|url| PrometheusOptions {
        url: url.0.clone(),
        selector: target.prometheus_selector.clone().map(|s| s.0),
    });
    let live = LiveServer {
        target: t,
        prometheus,
    };
    Ok((Server::Live(live), None))
}

/// Only what the user stated: a live server's profile is unknown unless
/// given (the embedded twin records the one it runs).
fn resolve_provenance(args: &ProvenanceArgs) -> Provenance {
    Provenance {
        profile: env::value(args.profile.clone()),
        image_digest: env::value(args.image_digest.clone()),
        model_revision: env::value(args.model_revision.clone()),
        dgx_os_version: env::value(args.dgx_os_version.clone()),
        driver_version: env::value(args.driver_version.clone()),
    }
}

async fn bench(args: BenchArgs, events: Events) -> Result<(), Error> {
    let (server, settings) = resolve_run(
        (&args.target, &args.provenance, &args.twin, &args.run),
        BENCH_TIME_SCALE,
        &events,
    )?;
    let settings = RunSettings {
        repeat: args.repeat.get_u32(),
        ..settings
    };
    let config = resolve_bench(&args)?;
    let outcome =
        codendum::app::bench::run_as_asked(&server, &settings, &config, io(events)).await?;
    exit_status(&outcome, &settings)
}

/// The bench's flags as its config: one mode (closed loop, calibration,
/// rates, sweep, rate search), the flags that shape only open loops refused
/// without one.
fn resolve_bench(args: &BenchArgs) -> Result<BenchConfig, ConfigError> {
    let mut config = BenchConfig {
        load: resolve_load(args)?,
        shapes: args.shapes.0.clone(),
        requests_per_level: args.requests_per_level.map(|n| n.0),
        level_duration: args.level_duration.map(|d| d.0),
        output_tokens: args.output_tokens.map_or(
            if args.calibration {
                codendum::bench::calibration::CALIBRATION_OUTPUT_TOKENS
            } else {
                DEFAULT_OUTPUT_TOKENS
            },
            |n| n.get_u32(),
        ),
        endpoint: endpoint(args.endpoint),
        seed: args.run.seed,
        slo: args.slo.map(|s| s.0),
        ..BenchConfig::default()
    };
    if let Some(levels) = &args.concurrency {
        config.concurrency = levels.0.clone();
    }
    Ok(config)
}

/// The bench's mode. `--rate`, `--sweep` and `--find-rate` exclude each
/// other, `--concurrency` and `--calibration`.
fn resolve_load(args: &BenchArgs) -> Result<Load, ConfigError> {
    let modes = [
        ("--rate", args.rate.is_some()),
        ("--sweep", args.sweep.is_some()),
        ("--find-rate", args.find_rate),
    ];
    let given: Vec<&str> = modes.iter().filter(|m| m.1).map(|m| m.0).collect();
    if given.is_empty() {
        for (flag, given) in [
            ("--max-concurrency", args.max_concurrency.is_some()),
            ("--burstiness", args.burstiness.is_some()),
            ("--stop-when-saturated", args.stop_when_saturated),
        ] {
            if given {
                return Err(ConfigError::invalid(
                    flag,
                    "applies to rate levels: give --rate, --sweep or --find-rate",
                ));
            }
        }
        return Ok(if args.calibration {
            Load::Calibration {
                ladder_given: args.concurrency.is_some(),
            }
        } else {
            Load::Closed
        });
    }
    if given.len() > 1 {
        return Err(ConfigError::invalid(
            given[0],
            format!(
                "give one of --rate, --sweep and --find-rate, not {}",
                given.join(" and ")
            ),
        ));
    }
    if args.rate.is_some() && args.concurrency.is_some() {
        return Err(ConfigError::invalid(
            "--rate",
            "a rate level starts requests at a rate, not N in flight: give --rate or --concurrency, not both",
        ));
    }
    if args.calibration {
        return Err(ConfigError::invalid(
            "--calibration",
            "runs closed-loop cells only: not with --rate, --sweep or --find-rate",
        ));
    }
    if args.find_rate && args.slo.is_none() {
        return Err(ConfigError::invalid(
            "--find-rate",
            "needs --slo (what the highest rate must meet)",
        ));
    }
    let arrival = match (args.arrival, args.burstiness) {
        (ArrivalArg::Constant, None) => Arrival::Constant,
        (ArrivalArg::Poisson, None) => Arrival::Poisson,
        (ArrivalArg::Gamma, b) => Arrival::Gamma {
            burstiness: b.map_or(1.0, |b| b.0),
        },
        (ArrivalArg::Constant | ArrivalArg::Poisson, Some(_)) => {
            return Err(ConfigError::invalid(
                "--burstiness",
                "applies to --arrival gamma only",
            ))
        }
    };
    let open = OpenLoop {
        arrival,
        max_concurrency: args.max_concurrency.map(|c| c.get_u32()),
    };
    Ok(match (&args.rate, args.sweep) {
        (Some(rates), _) => Load::Rates {
            rates: rates.0.clone(),
            closed_first: false,
            open,
        },
        (None, Some(n)) => Load::Sweep {
            rates: n.get_u32(),
            stop_when_saturated: args.stop_when_saturated,
            open,
        },
        (None, None) => Load::FindRate { open },
    })
}

fn endpoint(arg: EndpointArg) -> codendum_core::openai::Endpoint {
    match arg {
        EndpointArg::Chat => codendum_core::openai::Endpoint::Chat,
        EndpointArg::Completions => codendum_core::openai::Endpoint::Completions,
    }
}

fn scenario(arg: ScenarioArg) -> codendum::classroom::Scenario {
    match arg {
        ScenarioArg::Java => codendum::classroom::Scenario::Java,
        ScenarioArg::Python => codendum::classroom::Scenario::Python,
    }
}

async fn classroom(args: ClassroomArgs, events: Events) -> Result<(), Error> {
    let (server, settings) = resolve_run(
        (&args.target, &args.provenance, &args.twin, &args.run),
        CLASSROOM_TIME_SCALE,
        &events,
    )?;
    let settings = RunSettings {
        repeat: args.repeat.get_u32(),
        ..settings
    };
    let class = resolve_classroom(&args, &settings.client)?;
    let result =
        codendum::app::classroom::run_as_asked(&server, &settings, &class, io(events)).await?;
    exit_status(&result, &settings)
}

/// The classroom's flags as its settings: the students, their keys, the
/// captured prompt and client times, a host timeline.
fn resolve_classroom(
    args: &ClassroomArgs,
    client: &ClientSettings,
) -> Result<codendum::app::classroom::ClassroomSettings, Error> {
    let mut config = resolve_students(&args.students, args.run.seed, client)?;
    config.users = args.users.get_usize();
    config.duration = args.duration.0;
    config.ramp_up = args.ramp_up.0;
    if let Some(path) = &args.server_timeline {
        if !path.is_file() {
            return Err(ConfigError::invalid(
                "--server-timeline",
                format!("{} is not a readable file", path.display()),
            )
            .into());
        }
    }
    if config.ramp_up > config.duration {
        return Err(ConfigError::invalid("--ramp-up", "must not be longer than --duration").into());
    }
    Ok(codendum::app::classroom::ClassroomSettings {
        config,
        server_timeline: args.server_timeline.clone(),
        prompt_file: args
            .students
            .prompt_file
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned()),
    })
}

async fn capacity(args: CapacityArgs, events: Events) -> Result<(), Error> {
    let (server, settings) = resolve_run(
        (&args.target, &args.provenance, &args.twin, &args.run),
        CLASSROOM_TIME_SCALE,
        &events,
    )?;
    let search = resolve_capacity(&args, &settings.client, server.live().is_some(), &events)?;
    let result = codendum::app::capacity::run(&server, &settings, &search, io(events)).await?;
    exit_status(&result, &settings)
}

/// The search's flags as its settings: the tiers (`--tiers`, `--slo`, else
/// the profile's classroom targets), the profile the twin predicts with,
/// the steps' timing and the students.
fn resolve_capacity(
    args: &CapacityArgs,
    client: &ClientSettings,
    live: bool,
    events: &Events,
) -> Result<codendum::app::capacity::CapacitySettings, Error> {
    use codendum::app::capacity::{CapacitySettings, TiersFrom};
    use codendum_core::targets::Tier;
    let named = env::value(args.provenance.profile.clone());
    if live && named.is_none() {
        events.note(format!(
            "the twin predicts with profile {DEFAULT_PROFILE} (the lab's GB10); name your server's profile with --profile (one written by codendum calibrate) for a closer prediction"
        ));
    }
    let profile = Profile::load(named.as_deref().unwrap_or(DEFAULT_PROFILE))?;
    let hold = args.hold.0;
    let mut left_out = Vec::new();
    let (tiers, from) = match (&args.tiers, &args.slo) {
        (Some(t), _) => (t.0.clone(), TiersFrom::Tiers),
        (None, Some(slo)) => (
            vec![Tier {
                name: "slo".into(),
                targets: slo.0.clone(),
            }],
            TiersFrom::Slo,
        ),
        (None, None) => {
            let targets = codendum::plan::classroom_targets(&profile.name, &profile.targets)?;
            let limit = targets.coding_request_p50_s.unwrap_or_default();
            let (targets, why) = codendum::capacity::settings::judgeable_in_window(targets, hold);
            left_out.extend(why.map(|why| {
                format!(
                    "{why} (give it with --slo coding_request_p50={limit:.0}s --hold {:.0} to judge it)",
                    2.0 * limit
                )
            }));
            if targets.is_empty() {
                return Err(ConfigError::invalid(
                    "--profile",
                    format!(
                        "{} has no [targets.classroom] to search against; give --slo or --tiers",
                        profile.name
                    ),
                )
                .into());
            }
            let name = "profile".to_string();
            (vec![Tier { name, targets }], TiersFrom::Profile)
        }
    };
    let class = resolve_students(&args.students, args.run.seed, client)?;
    let replay = match &args.replay {
        Some(source) => {
            let block = codendum_core::trace::DEFAULT_BLOCK_SIZE;
            let trace = codendum::app::replay::read_trace(source, None, block, None, events)?;
            let schedule = codendum::replay::Schedule {
                max_think_s: args.max_think.map(|s| s.0.as_secs_f64()),
                max_wait_s: args.max_wait.map(|s| s.0.as_secs_f64()),
                ..Default::default()
            };
            Some(Arc::new(codendum::capacity::students::ReplayedSessions {
                source: source.clone(),
                trace,
                schedule,
            }))
        }
        None => None,
    };
    Ok(CapacitySettings {
        class,
        replay,
        tiers,
        tiers_from: from,
        left_out,
        profile,
        max_users: args.max_users.get_u32(),
        hold,
        join_over: args.join_over.0,
        settle: args.settle.map(|s| s.0),
        resolution: args.resolution.map(|r| r.get_u32()),
        budget: args.budget.map(|b| b.0),
    })
}

/// The simulated students (their model and context limit come from the
/// server once it is known); the files are read first, each naming its
/// own problem.
fn resolve_students(
    args: &crate::cli::StudentArgs,
    seed: u64,
    client: &ClientSettings,
) -> Result<codendum::classroom::ClassroomConfig, Error> {
    use codendum::classroom::{ClassroomConfig, ClientTimes, PromptSet};
    let mut config = ClassroomConfig::new(String::new(), args.context_limit.map(|c| c.0));
    config.scenario = scenario(args.scenario);
    config.output_limit = args.output_limit.0;
    config.seed = seed;
    config.api_keys = match &args.api_keys_file {
        Some(path) => codendum_core::access::read_api_keys(path)?,
        None => client.api_key.iter().cloned().collect(),
    };
    if let Some(path) = &args.prompt_file {
        config.prompt = PromptSet::from_file(path)?;
    }
    if let Some(path) = &args.client_times {
        config.client_times = std::sync::Arc::new(ClientTimes::from_path(path)?);
    }
    if let Some(class) = &args.class {
        config.class = std::sync::Arc::new(codendum_core::class::Class::load(class)?);
    }
    // A pause flag replaces the class's pauses with a uniform range; the
    // other end comes from the class.
    if args.pause_min.is_some() || args.pause_max.is_some() {
        let pause = &config.class.person.pause_s;
        let min = args.pause_min.map_or(pause.min(), |p| p.0.as_secs_f64());
        let max = args.pause_max.map_or(pause.max(), |p| p.0.as_secs_f64());
        config.set_pauses(
            std::time::Duration::from_secs_f64(min),
            std::time::Duration::from_secs_f64(max),
        )?;
    }
    if let Some(n) = args.follow_ups {
        config.set_follow_ups(n);
    }
    Ok(config)
}

/// The session schedule of `replay`'s flags.
fn replay_schedule(args: &ReplayArgs) -> codendum::replay::Schedule {
    use codendum::replay::{Schedule, Timing, TooLong};
    Schedule {
        users: args.users.map(|u| u.get_usize()),
        timing: match args.timing {
            crate::cli::TimingArg::AfterAnswer => Timing::AfterAnswer,
            crate::cli::TimingArg::Original => Timing::Original,
        },
        max_think_s: args.max_think.map(|s| s.0.as_secs_f64()),
        max_wait_s: args.max_wait.map(|s| s.0.as_secs_f64()),
        start_part_way: args.start_part_way,
        too_long: match args.too_long {
            crate::cli::TooLongArg::Skip => TooLong::Skip,
            crate::cli::TooLongArg::Shorten => TooLong::Shorten,
        },
    }
}

async fn replay(args: ReplayArgs, events: Events) -> Result<(), Error> {
    let (server, settings) = resolve_run(
        (&args.target, &args.provenance, &args.twin, &args.run),
        CLASSROOM_TIME_SCALE,
        &events,
    )?;
    let settings = RunSettings {
        repeat: args.repeat.get_u32(),
        ..settings
    };
    let replay = codendum::app::replay::ReplaySettings {
        source: args.source.clone(),
        format: args.format.map(|f| f.0),
        schedule: replay_schedule(&args),
        block_size: args.block_size.get_u32(),
        speed: args.speed.0,
        sessions: args.sessions.map(|s| s.get_usize()),
        endpoint: endpoint(args.endpoint),
        seed: args.run.seed,
    };
    let result = codendum::app::replay::run(&server, &settings, &replay, io(events)).await?;
    exit_status(&result, &settings)
}

async fn metrics(args: MetricsArgs, events: Events) -> Result<(), Error> {
    use codendum::app::metrics::{MetricsOptions, MetricsRun};
    let urls =
        match (&args.metrics_url, &args.base_url) {
            (Some(urls), _) => urls.0.clone(),
            (None, Some(base)) => vec![base.metrics_url()],
            (None, None) => return Err(ConfigError::invalid(
                "--metrics-url",
                "no server named: give --metrics-url or --base-url (or set CODENDUM_METRICS_URL)",
            )
            .into()),
        };
    let run = MetricsRun {
        options: MetricsOptions {
            urls,
            watch: args.watch.map(|w| w.0),
            json: args.json,
            count: args.count,
        },
        cacert: args.cacert.clone().map(|c| c.0),
        stop: stop_on_signal(events.clone()),
    };
    let mut out = std::io::stdout();
    codendum::app::metrics::run(run, &mut out, &events).await
}

async fn serve(args: ServeArgs, events: Events) -> Result<(), Error> {
    use codendum::app::serve::{ProxyLimits, ServeConfig};
    let profile = Profile::load(&args.profile)?;
    let (fleet, note) = twin_fleet(
        &profile,
        args.fleet.replicas.map(|r| r.get_u32()),
        args.fleet.router.map(|r| r.0),
    );
    if let Some(note) = note {
        events.note(note);
    }
    let mut keys = Vec::new();
    if let Some(k) = env::value(args.api_key.clone()) {
        keys.push(Secret::new(k));
    }
    if let Some(path) = &args.api_keys_file {
        keys.extend(codendum_core::access::read_api_keys(path)?);
    }
    if args.proxy && keys.is_empty() {
        return Err(ConfigError::invalid("--proxy", "needs --api-keys-file or --api-key").into());
    }
    let proxy = args.proxy.then_some(ProxyLimits {
        per_key_in_flight: args.per_key_in_flight,
        per_key_per_minute: args.per_key_per_minute,
        global_in_flight: args.global_in_flight,
    });
    let addr: std::net::SocketAddr =
        format!("{}:{}", args.host, args.port)
            .parse()
            .map_err(|_| {
                ConfigError::invalid("--host", format!("{} is not an IP address", args.host))
            })?;
    let faults = match &args.faults {
        Some(spec) => Some(codendum_twin::faults::FaultPlan::parse(spec)?.with_seed(args.seed)),
        None => None,
    };
    let config = ServeConfig {
        profile,
        time_scale: args.time_scale.0,
        keys,
        proxy,
        addr,
        seed: args.seed,
        agent: std::sync::Arc::new(match &args.class {
            Some(class) => codendum_core::class::Class::load(class)?.agent,
            None => codendum_core::class::Class::lab().agent.clone(),
        }),
        faults,
        stop: stop_on_signal(events.clone()),
        fleet,
        events,
    };
    codendum::app::serve::run(config).await
}

fn report(args: ReportArgs, events: &Events) -> Result<(), Error> {
    let run = codendum::app::report::ReportRun {
        folder: args.folder,
        server_timeline: args.server_timeline,
        out: args.out,
    };
    print_paths(&codendum::app::report::report(&run, events)?)
}

/// The files written, one a line on stdout (data for scripts); a reader
/// that stops early ends it quietly.
fn print_paths(paths: &[PathBuf]) -> Result<(), Error> {
    let text: String = paths.iter().map(|p| format!("{}\n", p.display())).collect();
    print_stdout(&text)
}

fn compare(args: CompareArgs) -> Result<(), Error> {
    let out = match &args.out {
        Some(o) => o.clone(),
        None => args.folders.last().cloned().unwrap_or_default(),
    };
    let run = codendum::app::report::CompareRun {
        folders: args.folders,
        force: args.force,
        out,
    };
    print_paths(&codendum::app::report::compare(&run)?)
}

/// `plan --rate`: each profile's highest rate within the SLO.
fn plan_rate(args: &PlanArgs, events: &Events) -> Result<(), Error> {
    if args.users.is_some() || args.max_users.is_some() {
        return Err(ConfigError::invalid(
            "--rate",
            "searches a request rate, not a class: not with --users or --max-users",
        )
        .into());
    }
    let slo = args
        .slo
        .ok_or_else(|| ConfigError::invalid("--slo", "is needed with --rate"))?;
    let plan = codendum::plan::rate::RatePlan {
        profiles: args.profile.0.clone(),
        slo: slo.0,
        shape: args.shape.0,
        output_tokens: args.output_tokens.get_u32(),
        requests_per_level: args.requests_per_level.map(|n| n.0),
        seed: args.seed,
        results_dir: args.results_dir.clone(),
    };
    codendum::plan::rate::check(&plan)?;
    for answer in codendum::plan::rate::plan_rate(&plan)? {
        events.line(format!("{}: {}", answer.profile, answer.search.line()));
        print_stdout(&format!("{}\n", answer.folder.display()))?;
    }
    Ok(())
}

async fn plan(args: PlanArgs, events: Events) -> Result<(), Error> {
    if args.rate {
        return tokio::task::spawn_blocking(move || plan_rate(&args, &events))
            .await
            .map_err(|e| Error::Failed(format!("the plan stopped: {e}")))?;
    }
    use codendum::plan::PlanConfig;
    let mut config = PlanConfig::new();
    match (&args.users, args.max_users) {
        (Some(_), Some(_)) => {
            return Err(ConfigError::invalid(
                "--max-users",
                "bounds the search for the largest class; not with --users, which tries exactly the sizes given",
            )
            .into())
        }
        (Some(users), None) => config.users = users.0.clone(),
        (None, max) => {
            config.users = Vec::new();
            config.max_users = Some(max.unwrap_or(codendum::plan::config::DEFAULT_MAX_USERS));
        }
    }
    config.profiles = args.profile.0.clone();
    config.max_num_seqs = args.max_num_seqs.clone().map(|m| m.0).unwrap_or_default();
    config.scenario = scenario(args.scenario);
    config.duration = args.duration.0;
    config.seed = args.seed;
    config.seeds = args.seeds.get_u32();
    if let Some(class) = &args.class {
        config.class = std::sync::Arc::new(codendum_core::class::Class::load(class)?);
    }
    if let Some(j) = args.jobs {
        config.jobs = j;
    }
    config.results_dir = args.results_dir.clone();
    if let Some(replicas) = &args.replicas {
        config.replicas = replicas.0.clone();
    }
    if let Some(routers) = &args.router {
        config.routers = routers.0.clone();
    }
    let (_, folder) = codendum::app::plan::run(config, events).await?;
    print_stdout(&format!("{}\n", folder.join("plan.md").display()))?;
    Ok(())
}

fn learn_class(args: LearnClassArgs) -> Result<(), Error> {
    let config = codendum::class::LearnConfig {
        sources: args.sources,
        out: args.out,
        name: args.name,
        block_size: args.block_size.get_u32(),
        defaults: std::sync::Arc::new(codendum_core::class::Class::load(&args.defaults)?),
    };
    let learned = codendum::class::learn_class(&config)?;
    print_stdout(&codendum::class::render(&learned.report, &config.out))?;
    Ok(())
}

fn export_trace(args: ExportTraceArgs, events: &Events) -> Result<(), Error> {
    use codendum::app::replay::TraceFormat;
    let format = match args.format {
        TraceFormatArg::Mooncake => TraceFormat::Mooncake,
        TraceFormatArg::Aiperf => TraceFormat::Aiperf,
    };
    let calls = codendum::app::replay::export_trace(
        &args.source,
        args.source_format.map(|f| f.0),
        args.block_size.get_u32(),
        format,
        &args.out,
        &mut std::io::stdout(),
        events,
    )?;
    if args.out != std::path::Path::new("-") {
        events.line(format!("{calls} calls written to {}", args.out.display()));
    }
    Ok(())
}

async fn capture(args: CaptureArgs, events: Events) -> Result<(), Error> {
    let mut config =
        codendum::capture::CaptureConfig::new(&args.upstream, &args.listen, args.out.clone())?;
    config.cacert = args.cacert.clone().map(|c| c.0);
    config.keep_text = !args.no_text;
    if let (Some(cert), Some(key)) = (args.tls_cert.clone(), args.tls_key.clone()) {
        config.tls = Some(codendum::capture::TlsFiles { cert, key });
    }
    config.events = events.clone();
    codendum::app::capture::run(config, stop_on_signal(events))
        .await
        .map(|_| ())
}

/// `calibrate --check PROFILE RUN_DIR…`: the backtest table, exit 1 when a
/// figure is beyond the tolerance.
fn calibrate_check(
    profile: &str,
    args: &crate::cli::CalibrateArgs,
    events: &Events,
) -> Result<(), Error> {
    let profile = Profile::load(profile).map_err(|e| match e {
        ConfigError::Invalid { reason, .. } => ConfigError::invalid("--check", reason),
        other => other,
    })?;
    let tolerance = args.tolerance.0 / 100.0;
    let checks = codendum::calibrate::check::check_runs(&profile, &args.runs, tolerance)?;
    events.table(codendum::calibrate::check::check_text(&checks, tolerance));
    let beyond = checks
        .iter()
        .filter(|c| c.outcome == codendum_core::bound::Outcome::Missed)
        .count();
    if beyond > 0 {
        return Err(Error::Failed(format!(
            "{beyond} figures beyond {:.0} %: the profile does not predict these runs",
            args.tolerance.0
        )));
    }
    Ok(())
}

fn calibrate(args: crate::cli::CalibrateArgs, events: &Events) -> Result<(), Error> {
    use codendum::calibrate::{CalibrateOptions, FactOverrides, FitOptions};
    if let Some(profile) = args.check.clone() {
        return calibrate_check(&profile, &args, events);
    }
    let targets_from = args
        .targets_from
        .as_deref()
        .map(Profile::load)
        .transpose()?;
    let options = CalibrateOptions {
        runs: args.runs,
        name: args.name.unwrap_or_default(),
        overrides: FactOverrides {
            max_num_seqs: args.max_num_seqs.map(|n| n.get_u32()),
            max_num_batched_tokens: args.max_num_batched_tokens.map(|n| n.get_u32()),
            kv_cache_tokens: args.kv_cache_tokens.map(|n| n.0),
        },
        fit: FitOptions {
            bootstrap_rounds: args.bootstrap,
            seed: args.seed,
        },
        memory_bandwidth_gb_s: args.memory_bandwidth_gb_s.0,
        targets_from,
    };
    let (calibration, written) = codendum::app::calibrate::run(&options, args.out.as_deref())?;
    events.table(codendum::calibrate::write::summary_text(&calibration));
    events.line(format!("Profile:  {}", written.profile.display()));
    events.line(format!("Hardware: {}", written.hardware.display()));
    events.line(format!("Fit:      {}", written.report.display()));
    Ok(())
}

/// `codendum check`: the flags (each read from the suite's variable when
/// not given) as the suite's settings, then the listing or the trials.
async fn check(args: CheckArgs, events: Events) -> Result<(), Error> {
    use codendum::acceptance::settings::{Given, Settings};
    use codendum::app::check::{self, Selection};

    let selection = Selection {
        filters: args.filters,
        exact: args.exact,
        include_ignored: args.include_ignored,
    };
    let provenance = resolve_provenance(&args.provenance);
    let settings = Settings::resolve(Given {
        base_url: args.base_url,
        cacert: args.cacert,
        metrics_url: args.metrics_url,
        api_key: env::value(args.api_key),
        api_keys_file: args.api_keys_file,
        model: env::value(args.model),
        profile: provenance.profile.clone(),
        profiles: args.profiles,
        mode: Some(args.mode),
        allow_busy: args.allow_busy,
        results_dir: Some(args.results_dir.clone()),
        reuse_window_s: args.reuse_s,
        provenance,
    })?;
    let suite = codendum::app::suite(settings, check::cache_dir(&args.results_dir))
        .with_events(events.clone())
        .with_workload_events(events.clone());
    if args.list {
        check::check_configuration(&suite)?;
        let mut text = String::new();
        for trial in check::list(&suite, &selection) {
            text.push_str(&trial.name);
            text.push_str(if trial.ignored { " (ignored)\n" } else { "\n" });
        }
        return print_stdout(&text);
    }
    let told = events.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        check::run(&suite, &selection, args.results_dir, &told)
    })
    .await
    .map_err(|e| Error::Failed(format!("the suite's thread ended: {e}")))??;
    outcome.conclude(&events)
}

/// Writes a listing to stdout. A reader that stops early (`| head`) closes
/// the pipe; the listing then ends quietly, as other Unix tools' do, instead
/// of panicking in `println!`.
fn print_stdout(text: &str) -> Result<(), Error> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Io {
            context: "cannot write to stdout".into(),
            source: e,
        }),
        _ => Ok(()),
    }
}
