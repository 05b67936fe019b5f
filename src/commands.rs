//! Turns parsed arguments into the library's typed configs and runs them.

use std::time::Duration;

use codendum::app::signals::stop_on_signal;
use codendum::connect::ConnectOptions;
use codendum::connect::{BENCH_TIME_SCALE, CLASSROOM_TIME_SCALE};
use codendum::events::Events;
use codendum_core::error::{ConfigError, Error};
use codendum_core::target::{Provenance, Target};

use crate::terminal::{self, Terminal};

use crate::cli::{
    BenchArgs, CaptureArgs, ClassroomArgs, Cli, Command, CompareArgs, EndpointArg, ExportTraceArgs,
    MetricsArgs, PlanArgs, ProvenanceArgs, ReplayArgs, ReportArgs, ScenarioArg, ServeArgs,
    TargetArgs, TraceFormatArg,
};

/// Runs one command, telling its events on the terminal.
pub async fn run(cli: Cli) -> Result<(), Error> {
    let events = Terminal::events();
    match cli.command {
        Command::Metrics(args) => metrics(args, events).await,
        Command::Serve(args) => serve(args, events).await,
        Command::Bench(args) => bench(args, events).await,
        Command::Classroom(args) => classroom(args, events).await,
        Command::Report(args) => report(args),
        Command::Compare(args) => compare(args),
        Command::Plan(args) => plan(args, events).await,
        Command::Calibrate(args) => calibrate(args, &events),
        Command::Capture(args) => capture(args, events).await,
        Command::Replay(args) => replay(args, events).await,
        Command::ExportTrace(args) => export_trace(args, &events),
    }
}

fn positive_seconds(flag: &str, value: f64) -> Result<Duration, ConfigError> {
    if value.is_finite() && value > 0.0 && value < 1.0e7 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(ConfigError::invalid(
            flag,
            format!("{value} is not a positive number of seconds"),
        ))
    }
}

async fn metrics(args: MetricsArgs, events: Events) -> Result<(), Error> {
    use codendum::app::metrics::{MetricsOptions, MetricsRun};
    let options = MetricsOptions {
        urls: metrics_urls(&args)?,
        watch: args
            .watch
            .map(|w| positive_seconds("--watch", w))
            .transpose()?,
        json: args.json,
        count: args.count,
    };
    let run = MetricsRun {
        options,
        cacert: args.cacert.clone(),
        stop: stop_on_signal(events.clone()),
    };
    let mut out = std::io::stdout();
    codendum::app::metrics::run(run, &mut out, &events).await
}

/// `--metrics-url` (comma-separated), else the one next to `--base-url`.
fn metrics_urls(args: &MetricsArgs) -> Result<Vec<String>, Error> {
    match (&args.metrics_url, &args.base_url) {
        (Some(m), _) if !m.trim().is_empty() => Ok(codendum_core::flags::list(m)
            .map(|u| u.trim_end_matches('/').to_string())
            .collect()),
        (_, Some(b)) if !b.trim().is_empty() => {
            Ok(vec![codendum_core::target::default_metrics_url(
                &codendum_core::target::normalize_base_url(b)?,
            )])
        }
        _ => Err(ConfigError::invalid(
            "--metrics-url",
            "no server named: give --metrics-url or --base-url (or set CODENDUM_METRICS_URL)",
        )
        .into()),
    }
}

async fn serve(args: ServeArgs, events: Events) -> Result<(), Error> {
    use codendum::app::serve::{ProxyLimits, ServeConfig};
    let profile = codendum_core::profile::Profile::load(&args.profile)?;
    let (fleet, note) = codendum::connect::resolve_fleet(
        &profile,
        args.fleet.replicas,
        args.fleet.router.as_deref(),
    )?;
    if let Some(note) = note {
        events.note(note);
    }
    if !(args.time_scale.is_finite() && args.time_scale > 0.0) {
        return Err(ConfigError::invalid("--time-scale", "must be a positive number").into());
    }
    let mut keys = Vec::new();
    if let Some(k) = args
        .api_key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        keys.push(codendum_core::target::Secret::new(k));
    }
    if let Some(path) = &args.api_keys_file {
        keys.extend(codendum_core::target::read_api_keys(path)?);
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
        time_scale: args.time_scale,
        keys,
        proxy,
        addr,
        seed: args.seed,
        faults,
        stop: stop_on_signal(events.clone()),
        fleet,
        events,
    };
    codendum::app::serve::run(config).await
}

/// `--prometheus-url` and `--prometheus-selector`, checked.
fn prometheus(
    args: &TargetArgs,
) -> Result<Option<codendum::scrape::PrometheusOptions>, ConfigError> {
    args.prometheus_url
        .as_deref()
        .map(|u| codendum::scrape::PrometheusOptions::new(u, args.prometheus_selector.as_deref()))
        .transpose()
}

fn target(args: &TargetArgs, events: &Events) -> Result<Target, ConfigError> {
    let t = Target::new(
        args.base_url.as_deref(),
        args.api_key.as_deref(),
        args.cacert.as_deref(),
        args.metrics_url.as_deref(),
        args.model.as_deref(),
        positive_seconds("--timeout", args.timeout)?,
    )?
    .with_router_metrics(args.router_metrics_url.as_deref())?;
    if t.sends_key_in_clear() {
        events.warn(format!(
            "the API key goes in clear text over http:// to {}; use https://",
            t.display_url()
        ));
    }
    Ok(t)
}

fn provenance(args: &ProvenanceArgs) -> Provenance {
    let clean = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    Provenance {
        // Only what the user stated: a live server's profile is unknown
        // unless given (the embedded twin records the one it runs).
        profile: clean(&args.profile),
        image_digest: clean(&args.image_digest),
        model_revision: clean(&args.model_revision),
        dgx_os_version: clean(&args.dgx_os_version),
        driver_version: clean(&args.driver_version),
    }
}

fn time_scale(value: Option<f64>, default: f64) -> Result<f64, ConfigError> {
    let v = value.unwrap_or(default);
    if v.is_finite() && v > 0.0 && v <= 10_000.0 {
        Ok(v)
    } else {
        Err(ConfigError::invalid(
            "--time-scale",
            format!("{v} is not a speed-up between 0 and 10000"),
        ))
    }
}

fn seconds_or_zero(flag: &str, value: f64) -> Result<Duration, ConfigError> {
    if value == 0.0 {
        Ok(Duration::ZERO)
    } else {
        positive_seconds(flag, value)
    }
}

/// The open-loop flags as one setting; `None` without `--rate`, `--sweep`
/// or `--find-rate` (the flags that only shape open loops are then refused).
fn open_loop(args: &BenchArgs) -> Result<Option<codendum::bench::config::OpenLoop>, ConfigError> {
    use codendum::bench::arrival::Arrival;
    let open = args.rate.is_some() || args.sweep.is_some() || args.find_rate;
    if !open {
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
        return Ok(None);
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
    let rates = match &args.rate {
        Some(raw) => codendum_core::flags::parse_list("--rate", raw, |item| {
            item.parse::<f64>()
                .map_err(|_| format!("{item:?} is not a number (requests per second)"))
        })?,
        None => Vec::new(),
    };
    if args.rate.is_some() && rates.is_empty() {
        return Err(ConfigError::invalid("--rate", "no rate given"));
    }
    Ok(Some(codendum::bench::config::OpenLoop {
        rates,
        arrival: Arrival::parse(&args.arrival, args.burstiness)?,
        max_concurrency: args.max_concurrency,
        sweep: args.sweep,
        find_rate: args.find_rate,
        stop_when_saturated: args.stop_when_saturated,
        closed_levels_first: false,
    }))
}

async fn bench(args: BenchArgs, events: Events) -> Result<(), Error> {
    use codendum::bench::{parse_concurrency, parse_shapes, BenchConfig};
    let target = target(&args.target, &events)?;
    let mut config = BenchConfig::new(target);
    config.provenance = provenance(&args.provenance);
    if let Some(levels) = &args.concurrency {
        config.concurrency = parse_concurrency(levels)?;
    }
    if args.calibration {
        let ladder = args
            .concurrency
            .as_ref()
            .map(|_| config.concurrency.clone());
        config.calibration = Some(ladder.unwrap_or_default());
    }
    config.shapes = parse_shapes(&args.shapes)?;
    config.requests_per_level = args.requests_per_level;
    config.level_duration = args
        .level_duration
        .map(|d| positive_seconds("--level-duration", d))
        .transpose()?;
    config.output_tokens = args.output_tokens.unwrap_or(if args.calibration {
        codendum::bench::calibration::CALIBRATION_OUTPUT_TOKENS
    } else {
        codendum::bench::config::DEFAULT_OUTPUT_TOKENS
    });
    config.endpoint = match args.endpoint {
        EndpointArg::Chat => codendum_core::openai::Endpoint::Chat,
        EndpointArg::Completions => codendum_core::openai::Endpoint::Completions,
    };
    config.seed = args.run.seed;
    config.results_dir = args.run.results_dir.clone();
    config.allow_busy = args.run.allow_busy;
    config.yes = args.run.yes;
    config.max_error_rate = args.run.max_error_rate;
    config.slo = args
        .slo
        .as_deref()
        .map(|raw| codendum_core::results::slo::Slo::parse("--slo", raw))
        .transpose()?;
    config.open_loop = open_loop(&args)?;
    let config = codendum_core::error::Checked::new(config)?;
    let connect = connect_options(
        &args.provenance,
        &args.twin,
        &args.target,
        (args.run.seed, BENCH_TIME_SCALE),
        &events,
    )?;
    let run = codendum::app::bench::BenchRun {
        config,
        connect,
        confirm: &terminal::confirm,
        stop: stop_on_signal(events.clone()),
        events,
        write_report: !args.run.no_report,
    };
    let outcome = codendum::app::bench::run(run).await?;
    codendum::app::bench::check_outcome(&outcome)?;
    strict_check(
        args.run.strict,
        outcome.summary.verdict.as_ref(),
        &outcome.folder,
    )
}

/// `--strict`: a run whose figures are not valid as a capacity figure is
/// the command's error (exit 1), naming why and where the results are.
fn strict_check(
    strict: bool,
    verdict: Option<&codendum_core::results::Verdict>,
    folder: &std::path::Path,
) -> Result<(), Error> {
    match verdict {
        Some(v) if strict && v.strict_exit_code() != 0 => Err(Error::Failed(format!(
            "not valid as a capacity figure (--strict): {}; results in {}",
            v.not_valid.join("; "),
            folder.display()
        ))),
        _ => Ok(()),
    }
}

async fn classroom(args: ClassroomArgs, events: Events) -> Result<(), Error> {
    use codendum::classroom::{ClassroomConfig, PromptSet, Scenario};
    let target = target(&args.target, &events)?;
    let mut config = ClassroomConfig::new(String::new(), args.context_limit);
    config.users = args.users as usize;
    config.scenario = match args.scenario {
        ScenarioArg::Java => Scenario::Java,
        ScenarioArg::Python => Scenario::Python,
    };
    config.duration = positive_seconds("--duration", args.duration)?;
    config.ramp_up = seconds_or_zero("--ramp-up", args.ramp_up)?;
    config.pause_min = seconds_or_zero("--pause-min", args.pause_min)?;
    config.pause_max = seconds_or_zero("--pause-max", args.pause_max)?;
    config.follow_ups = args.follow_ups as usize;
    config.output_limit = u64::from(args.output_limit);
    config.seed = args.run.seed;
    if let Some(path) = &args.api_keys_file {
        config.api_keys = codendum_core::target::read_api_keys(path)?;
    } else if let Some(k) = &target.api_key {
        config.api_keys = vec![k.clone()];
    }
    if let Some(path) = &args.prompt_file {
        config.prompt = PromptSet::from_file(path)?;
    }
    if let Some(path) = &args.client_times {
        config.client_times =
            std::sync::Arc::new(codendum::classroom::ClientTimes::from_path(path)?);
    }
    if let Some(model) = &target.model {
        config.model = model.clone();
    }
    if let Some(path) = &args.server_timeline {
        if !path.is_file() {
            return Err(ConfigError::invalid(
                "--server-timeline",
                format!("{} is not a readable file", path.display()),
            )
            .into());
        }
    }
    let connect = connect_options(
        &args.provenance,
        &args.twin,
        &args.target,
        (args.run.seed, CLASSROOM_TIME_SCALE),
        &events,
    )?;
    let run = codendum::app::classroom::ClassroomRun {
        config,
        target,
        provenance: provenance(&args.provenance),
        connect,
        context_limit_given: args.context_limit.is_some(),
        server_timeline: args.server_timeline.clone(),
        prompt_file: args
            .prompt_file
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned()),
        results_dir: args.run.results_dir.clone(),
        allow_busy: args.run.allow_busy,
        max_error_rate: {
            codendum_core::results::verdict::check_max_error_rate(args.run.max_error_rate)?;
            args.run.max_error_rate
        },
        yes: args.run.yes,
        confirm: &terminal::confirm,
        stop: stop_on_signal(events.clone()),
        events,
        write_report: !args.run.no_report,
    };
    let result = codendum::app::classroom::run(run).await?;
    codendum::app::classroom::check_result(&result)?;
    strict_check(
        args.run.strict,
        result.summary.verdict.as_ref(),
        &result.folder,
    )
}

fn report(args: ReportArgs) -> Result<(), Error> {
    let run = codendum::app::report::ReportRun {
        folder: args.folder,
        server_timeline: args.server_timeline,
    };
    print_paths(&codendum::app::report::report(&run)?);
    Ok(())
}

/// The files written, one a line on stdout (data for scripts).
fn print_paths(paths: &[std::path::PathBuf]) {
    for p in paths {
        println!("{}", p.display());
    }
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
    print_paths(&codendum::app::report::compare(&run)?);
    Ok(())
}

fn number_list(flag: &str, raw: &str) -> Result<Vec<u32>, ConfigError> {
    codendum_core::flags::whole_numbers(flag, raw)
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
    let slo = codendum_core::results::slo::Slo::parse("--slo", args.slo.as_deref().unwrap_or(""))?;
    let shape = codendum_core::kinds::Shape::from_name(&args.shape).ok_or_else(|| {
        ConfigError::invalid(
            "--shape",
            format!(
                "unknown shape {:?} (known: short, long, or input tokens)",
                args.shape
            ),
        )
    })?;
    let plan = codendum::plan::rate::RatePlan {
        profiles: codendum_core::flags::names(&args.profile),
        slo,
        shape,
        output_tokens: args.output_tokens,
        requests_per_level: args.requests_per_level,
        seed: args.seed,
        results_dir: args.results_dir.clone(),
    };
    codendum::plan::rate::check(&plan)?;
    for answer in codendum::plan::rate::plan_rate(&plan)? {
        events.line(format!("{}: {}", answer.profile, answer.search.line()));
        println!("{}", answer.folder.display());
    }
    Ok(())
}

async fn plan(args: PlanArgs, events: Events) -> Result<(), Error> {
    if args.rate {
        return tokio::task::spawn_blocking(move || plan_rate(&args, &events))
            .await
            .map_err(|e| Error::Failed(format!("the plan stopped: {e}")))?;
    }
    use codendum::classroom::Scenario;
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
        (Some(raw), None) => config.users = number_list("--users", raw)?,
        (None, max) => {
            config.users = Vec::new();
            config.max_users = Some(max.unwrap_or(codendum::plan::config::DEFAULT_MAX_USERS));
        }
    }
    config.profiles = codendum_core::flags::names(&args.profile);
    config.max_num_seqs = match &args.max_num_seqs {
        Some(raw) => number_list("--max-num-seqs", raw)?,
        None => Vec::new(),
    };
    config.scenario = match args.scenario {
        ScenarioArg::Java => Scenario::Java,
        ScenarioArg::Python => Scenario::Python,
    };
    config.duration = positive_seconds("--duration", args.duration)?;
    config.seed = args.seed;
    config.seeds = args.seeds;
    if let Some(j) = args.jobs {
        config.jobs = j;
    }
    config.results_dir = args.results_dir.clone();
    if let Some(raw) = &args.replicas {
        config.replicas = number_list("--replicas", raw)?;
    }
    if let Some(raw) = &args.router {
        config.routers = codendum::plan::fleet::parse_routers(raw)?;
    }
    let (_, folder) = codendum::app::plan::run(config, events).await?;
    println!("{}", folder.join("plan.md").display());
    Ok(())
}

/// How a run reaches its server or starts the twin: the twin's profile,
/// speed-up (`default_scale` unless `--time-scale`), seed, fleet and
/// Prometheus.
fn connect_options(
    provenance: &ProvenanceArgs,
    twin: &crate::cli::TwinArgs,
    target: &TargetArgs,
    (seed, default_scale): (u64, f64),
    events: &Events,
) -> Result<ConnectOptions, Error> {
    let mut connect = ConnectOptions::new(
        provenance.twin_profile().to_string(),
        time_scale(twin.time_scale, default_scale)?,
    );
    connect.seed = seed;
    connect.replicas = twin.fleet.replicas;
    connect.router = twin.fleet.router.clone();
    connect.prometheus = prometheus(target)?;
    connect.events = events.clone();
    Ok(connect)
}

fn block_size(value: u32) -> Result<u32, ConfigError> {
    if (1..=1_048_576).contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError::invalid(
            "--block-size",
            format!("{value} is not a block size between 1 and 1048576 tokens"),
        ))
    }
}

async fn replay(args: ReplayArgs, events: Events) -> Result<(), Error> {
    if !(args.speed.is_finite() && args.speed > 0.0 && args.speed <= 1.0e6) {
        return Err(ConfigError::invalid(
            "--speed",
            format!("{} is not a speed-up above 0", args.speed),
        )
        .into());
    }
    if args.sessions == Some(0) {
        return Err(ConfigError::invalid("--sessions", "must be at least 1").into());
    }
    codendum_core::results::verdict::check_max_error_rate(args.run.max_error_rate)?;
    let target = target(&args.target, &events)?;
    let connect = connect_options(
        &args.provenance,
        &args.twin,
        &args.target,
        (args.run.seed, CLASSROOM_TIME_SCALE),
        &events,
    )?;
    let run = codendum::app::replay::ReplayRun {
        source: args.source.clone(),
        block_size: block_size(args.block_size)?,
        speed: args.speed,
        sessions: args.sessions,
        endpoint: match args.endpoint {
            EndpointArg::Chat => codendum_core::openai::Endpoint::Chat,
            EndpointArg::Completions => codendum_core::openai::Endpoint::Completions,
        },
        target,
        provenance: provenance(&args.provenance),
        connect,
        results_dir: args.run.results_dir.clone(),
        seed: args.run.seed,
        allow_busy: args.run.allow_busy,
        max_error_rate: args.run.max_error_rate,
        yes: args.run.yes,
        confirm: &terminal::confirm,
        stop: stop_on_signal(events.clone()),
        write_report: !args.run.no_report,
        events,
    };
    let result = codendum::app::replay::run(run).await?;
    codendum::app::replay::check_result(&result)?;
    strict_check(
        args.run.strict,
        result.summary.verdict.as_ref(),
        &result.folder,
    )
}

fn export_trace(args: ExportTraceArgs, events: &Events) -> Result<(), Error> {
    use codendum::app::replay::TraceFormat;
    let format = match args.format {
        TraceFormatArg::Mooncake => TraceFormat::Mooncake,
        TraceFormatArg::Aiperf => TraceFormat::Aiperf,
    };
    let calls = codendum::app::replay::export_trace(
        &args.source,
        block_size(args.block_size)?,
        format,
        &args.out,
        &mut std::io::stdout(),
    )?;
    if args.out != std::path::Path::new("-") {
        events.line(format!("{calls} calls written to {}", args.out.display()));
    }
    Ok(())
}

async fn capture(args: CaptureArgs, events: Events) -> Result<(), Error> {
    let mut config =
        codendum::capture::CaptureConfig::new(&args.upstream, &args.listen, args.out.clone())?;
    config.cacert = args.cacert.clone();
    config.keep_text = !args.no_text;
    config.events = events.clone();
    codendum::app::capture::run(config, stop_on_signal(events))
        .await
        .map(|_| ())
}

/// `calibrate --check PROFILE RUN_DIR…`: the backtest table on stderr,
/// exit 1 when a figure is beyond the tolerance.
fn calibrate_check(
    profile: &str,
    args: &crate::cli::CalibrateArgs,
    events: &Events,
) -> Result<(), Error> {
    if !(args.tolerance.is_finite() && args.tolerance > 0.0) {
        return Err(ConfigError::invalid("--tolerance", "must be a positive percent").into());
    }
    let profile = codendum_core::profile::Profile::load(profile).map_err(|e| match e {
        ConfigError::Invalid { reason, .. } => ConfigError::invalid("--check", reason),
        other => other,
    })?;
    let tolerance = args.tolerance / 100.0;
    let checks = codendum::calibrate::check::check_runs(&profile, &args.runs, tolerance)?;
    events.table(codendum::calibrate::check::check_text(&checks, tolerance));
    let beyond = checks
        .iter()
        .filter(|c| c.outcome == codendum_core::targets::Outcome::Missed)
        .count();
    if beyond > 0 {
        return Err(Error::Failed(format!(
            "{beyond} figures beyond {:.0} %: the profile does not predict these runs",
            args.tolerance
        )));
    }
    Ok(())
}

fn calibrate(args: crate::cli::CalibrateArgs, events: &Events) -> Result<(), Error> {
    use codendum::calibrate::{CalibrateOptions, FactOverrides, FitOptions};
    if let Some(profile) = args.check.clone() {
        return calibrate_check(&profile, &args, events);
    }
    if !(args.memory_bandwidth_gb_s.is_finite() && args.memory_bandwidth_gb_s > 0.0) {
        return Err(
            ConfigError::invalid("--memory-bandwidth-gb-s", "must be a positive number").into(),
        );
    }
    if args.max_num_seqs == Some(0) || args.max_num_batched_tokens == Some(0) {
        return Err(ConfigError::invalid(
            "--max-num-seqs / --max-num-batched-tokens",
            "must be at least 1",
        )
        .into());
    }
    let targets_from = args
        .targets_from
        .as_deref()
        .map(codendum_core::profile::Profile::load)
        .transpose()?;
    let options = CalibrateOptions {
        runs: args.runs,
        name: args.name.unwrap_or_default(),
        overrides: FactOverrides {
            max_num_seqs: args.max_num_seqs,
            max_num_batched_tokens: args.max_num_batched_tokens,
        },
        fit: FitOptions {
            bootstrap_rounds: args.bootstrap,
            seed: args.seed,
        },
        memory_bandwidth_gb_s: args.memory_bandwidth_gb_s,
        targets_from,
    };
    let (calibration, written) = codendum::app::calibrate::run(&options, args.out.as_deref())?;
    events.table(codendum::calibrate::write::summary_text(&calibration));
    events.line(format!("Profile:  {}", written.profile.display()));
    events.line(format!("Hardware: {}", written.hardware.display()));
    events.line(format!("Fit:      {}", written.report.display()));
    Ok(())
}
