//! Turns parsed arguments into the library's typed configs and runs them.

use std::time::Duration;

use codendum::error::{ConfigError, Error};

use crate::cli::{Cli, Command, MetricsArgs, ServeArgs};

/// Runs one command.
pub async fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Metrics(args) => metrics(args).await,
        Command::Serve(args) => serve(args).await,
        Command::Bench(_) | Command::Classroom(_) | Command::Report(_) | Command::Compare(_) => {
            Err(Error::Failed(
                "this command is being wired in this build".into(),
            ))
        }
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

async fn metrics(args: MetricsArgs) -> Result<(), Error> {
    use codendum::prom::{run_metrics, MetricsOptions, Scraper};
    let urls: Vec<String> =
        match (&args.metrics_url, &args.base_url) {
            (Some(m), _) if !m.trim().is_empty() => m
                .split(',')
                .map(|u| u.trim().trim_end_matches('/').to_string())
                .filter(|u| !u.is_empty())
                .collect(),
            (_, Some(b)) if !b.trim().is_empty() => {
                vec![codendum::target::default_metrics_url(
                    &codendum::target::normalize_base_url(b)?,
                )]
            }
            _ => return Err(ConfigError::invalid(
                "--metrics-url",
                "no server named: give --metrics-url or --base-url (or set CODENDUM_METRICS_URL)",
            )
            .into()),
        };
    for u in &urls {
        if !(u.starts_with("http://") || u.starts_with("https://")) {
            return Err(ConfigError::invalid(
                "--metrics-url",
                format!("{u} is not an http(s) URL"),
            )
            .into());
        }
    }
    let watch = args
        .watch
        .map(|w| positive_seconds("--watch", w))
        .transpose()?;
    let client = codendum::openai::client::build_http_client(args.cacert.as_deref(), 4)?;
    let scraper = Scraper::new(client, urls.clone());
    let opts = MetricsOptions {
        urls,
        watch,
        json: args.json,
        count: args.count,
    };
    let clock = codendum::clock::Clock::real();
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    tokio::select! {
        r = run_metrics(&opts, &scraper, &clock, &mut out, &mut err) => r,
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}

async fn serve(args: ServeArgs) -> Result<(), Error> {
    use codendum::twin::{
        self, persona::AgentPersona, profile::Profile, proxy::ProxyConfig, TwinOptions,
    };
    use std::sync::Arc;
    let profile = Profile::load(&args.profile)?;
    if !(args.time_scale.is_finite() && args.time_scale > 0.0) {
        return Err(ConfigError::invalid("--time-scale", "must be a positive number").into());
    }
    let clock = codendum::clock::Clock::scaled(args.time_scale);
    let mut keys = Vec::new();
    if let Some(k) = args
        .api_key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        keys.push(codendum::target::Secret::new(k));
    }
    if let Some(path) = &args.api_keys_file {
        keys.extend(codendum::target::read_api_keys(path)?);
    }
    let proxy = if args.proxy {
        if keys.is_empty() {
            return Err(
                ConfigError::invalid("--proxy", "needs --api-keys-file or --api-key").into(),
            );
        }
        Some(ProxyConfig {
            keys: keys.clone(),
            per_key_in_flight: args.per_key_in_flight,
            per_key_per_minute: args.per_key_per_minute,
            global_in_flight: args.global_in_flight,
        })
    } else {
        None
    };
    let addr: std::net::SocketAddr =
        format!("{}:{}", args.host, args.port)
            .parse()
            .map_err(|_| {
                ConfigError::invalid("--host", format!("{} is not an IP address", args.host))
            })?;
    let profile_name = profile.name.clone();
    let mut opts = TwinOptions::new(profile);
    opts.clock = clock;
    opts.responder = Arc::new(AgentPersona::new(args.seed));
    opts.api_keys = if proxy.is_some() { Vec::new() } else { keys };
    opts.seed = args.seed;
    opts.proxy = proxy;
    let handle = twin::start(opts, addr)
        .await
        .map_err(|e| Error::Failed(e.to_string()))?;
    eprintln!(
        "codendum serve: twin of vLLM 0.30 on a GB10, profile {profile_name}, {}x real time, listening on {} (Ctrl-C stops)",
        args.time_scale,
        handle.base_url()
    );
    let _ = tokio::signal::ctrl_c().await;
    handle.shutdown().await;
    Ok(())
}
