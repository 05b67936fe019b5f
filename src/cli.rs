//! Command-line definitions (clap). Only this file and `main.rs` know clap.
//! Every value is typed while it is parsed ([`typed`] runs the value's own
//! `FromStr` from [`codendum::settings::values`]), the environment names
//! come from the one registry ([`codendum::settings::env`]), and
//! `commands.rs` resolves the result into settings once.

use std::ffi::OsStr;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::str::FromStr;

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};

use codendum::acceptance::Mode;
use codendum::classroom::config as class_defaults;
use codendum::settings::env;
use codendum::settings::values::{
    AtLeastOne, CaFile, Count, Fraction, HttpUrl, HttpUrls, Levels, Names, OneShape, Positive,
    Rates, Router, Routers, Seconds, SecondsOrZero, Selector, SessionFormat, Shapes, SloValue,
    Speed, TimeScale, WholeNumbers,
};
use codendum::settings::values::{ClassSloValue, TiersValue};
use codendum::settings::DEFAULT_SEED;
use codendum_core::access::BaseUrl;
use codendum_core::profile::fleet::MAX_REPLICAS;

/// clap's parser for a typed value: the type's own `FromStr`, its error on
/// one line naming the flag (`invalid --concurrency: 0 is outside
/// 1..=4096`) and never repeating the text given (it may hold a key).
#[derive(Clone)]
pub struct Typed<T>(PhantomData<fn() -> T>);

/// The [`Typed`] parser of `T`.
pub fn typed<T>() -> Typed<T> {
    Typed(PhantomData)
}

impl<T> TypedValueParser for Typed<T>
where
    T: FromStr<Err = String> + Clone + Send + Sync + 'static,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let name = arg
            .map(|a| match a.get_long() {
                Some(long) => format!("--{long}"),
                None => a.get_id().to_string(),
            })
            .unwrap_or_default();
        let invalid = |reason: String| {
            let mut e = clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid {name}: {reason}\n"),
            );
            e = e.with_cmd(cmd);
            e
        };
        let text = value
            .to_str()
            .ok_or_else(|| invalid("is not UTF-8".into()))?;
        T::from_str(text).map_err(invalid)
    }
}

/// Most replicas of the embedded twin.
type Replicas = Count<1, { MAX_REPLICAS as u64 }>;

/// codendum: can this vLLM server carry a class?
#[derive(Debug, Parser)]
#[command(name = "codendum", version, about, long_about = None)]
#[command(
    after_help = "With no --base-url (and no CODENDUM_BASE_URL in the environment or .env), \
bench, classroom and plan run against the embedded twin: vLLM on a GB10 in software."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Closed-loop capacity benchmark: concurrency levels × prompt shapes, cache-cold.
    Bench(BenchArgs),
    /// Simulated students working with an OpenCode-like agent against the server.
    Classroom(ClassroomArgs),
    /// Read the server's vLLM /metrics once, or every --watch seconds.
    Metrics(MetricsArgs),
    /// Run the embedded twin: an OpenAI-compatible server behaving like vLLM on a GB10.
    Serve(ServeArgs),
    /// Write report.md and report.html into a results folder.
    Report(ReportArgs),
    /// Compare two or more results folders side by side.
    Compare(CompareArgs),
    /// Plan a class without the hardware: the classroom against the twin in virtual time.
    Plan(PlanArgs),
    /// How many students the server carries, per service tier: the twin predicts, then one
    /// class on the server is grown and shrunk step by step around the prediction.
    Capacity(Box<CapacityArgs>),
    /// Fit the twin's step-time model to bench runs of your server and write a profile.
    Calibrate(CalibrateArgs),
    /// Record OpenCode's calls through a reverse proxy: per-call records, client times, the prompt.
    Capture(CaptureArgs),
    /// Send recorded sessions again (a capture, a classroom run, OpenCode's store, Claude
    /// Code conversations, TraceLab rows, a Mooncake-style trace), with their sizes,
    /// prefix sharing and timing, at their offsets or as N users.
    Replay(ReplayArgs),
    /// Write any source replay reads as a Mooncake-style or AIPerf trace (no text, no key).
    ExportTrace(ExportTraceArgs),
    /// The capacity acceptance suite: each target of the profiles judged against the live
    /// server or the twin (the trials of `cargo test --test capacity`).
    Check(CheckArgs),
    /// Learn a class file (the distributions a simulated class draws from) from recorded sessions.
    LearnClass(LearnClassArgs),
    /// Print docs/cli-reference.md: every command, flag and variable, generated from these
    /// definitions.
    #[command(hide = true)]
    CliReference,
}

/// `codendum check`: the settings of `cargo test --test capacity`, each flag
/// read from the same variable when not given.
#[derive(Debug, Args)]
#[command(mut_arg("profile", |a| a.help(
    "The profile the live server runs (a name in profiles/ or a .toml path): only its \
trials run, the other profiles' are listed as ignored. Needed with --base-url; without it, \
the one profile judged against its twin."
)))]
pub struct CheckArgs {
    /// Run only the trials whose name contains one of these (with --exact: is one of these).
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// The filters are whole trial names.
    #[arg(long)]
    pub exact: bool,
    /// Print the trials' names on stdout, one a line, without running them
    /// (nothing is sent to the server).
    #[arg(long)]
    pub list: bool,
    /// Also run the trials listed as ignored.
    #[arg(long)]
    pub include_ignored: bool,
    /// Quick workloads (minutes) or full ones (a class of 40 for 15 minutes and
    /// five levels of two shapes); docs/profile.md says what each costs.
    #[arg(long, env = env::CAPACITY, default_value = "quick", value_name = "quick|full", value_parser = typed::<Mode>())]
    pub mode: Mode,
    /// The profiles whose trials are listed (names in profiles/ or .toml paths),
    /// comma-separated [default: the shipped profiles].
    #[arg(long, env = env::CAPACITY_PROFILES, value_name = "NAME,...", value_parser = typed::<Names>())]
    pub profiles: Option<Names>,
    /// OpenAI base URL ending in /v1 (e.g. https://llm.lab.example:8443/v1).
    /// Empty: each profile (or the one --profile names) is judged against an
    /// embedded twin running it.
    #[arg(long, env = env::BASE_URL, value_name = "URL", value_parser = typed::<BaseUrl>())]
    pub base_url: Option<BaseUrl>,
    /// API key sent as a bearer token (never printed or written).
    #[arg(long, env = env::API_KEY, value_name = "KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// One API key per student of the class (CSV or one key a line); keys are never printed.
    #[arg(long, env = env::API_KEYS_FILE, value_name = "FILE")]
    pub api_keys_file: Option<PathBuf>,
    /// PEM bundle of the private CA; replaces the system roots, as curl's --cacert.
    #[arg(long, env = env::CACERT, value_name = "FILE", value_parser = typed::<CaFile>())]
    pub cacert: Option<CaFile>,
    /// vLLM /metrics URL(s), comma-separated for replicas [default: <base origin>/metrics].
    #[arg(long, env = env::METRICS_URL, value_name = "URL[,URL...]", value_parser = typed::<HttpUrls>())]
    pub metrics_url: Option<HttpUrls>,
    /// Model to request [default: the first id of /v1/models].
    #[arg(long, env = env::MODEL)]
    pub model: Option<String>,
    /// Start a workload although /metrics shows requests running or waiting
    /// (the suite never asks; without it a busy server's workloads are refused).
    #[arg(long, env = env::ALLOW_BUSY, value_parser = env::switch)]
    pub allow_busy: bool,
    /// Folder under which the workloads' folders are created.
    #[arg(long, env = env::RESULTS_DIR, default_value = codendum_core::results::DEFAULT_RESULTS_ROOT, value_name = "DIR")]
    pub results_dir: PathBuf,
    /// Judge a finished run of the same workload younger than this many seconds
    /// again instead of measuring anew (e.g. after editing a target) [default: 0, never].
    #[arg(long, env = env::CAPACITY_REUSE_S, value_name = "SECONDS")]
    pub reuse_s: Option<u64>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub provenance: ProvenanceArgs,
}

/// `codendum replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// What to replay: a capture folder, a classroom or replay results folder,
    /// OpenCode's session store (~/.local/share/opencode, or its opencode.db),
    /// Claude Code conversations (a WEKA/AgentX .json, or a folder of them),
    /// TraceLab rows (.jsonl, .jsonl.gz) or a Mooncake-style trace (AIPerf's
    /// session lines too).
    #[arg(value_name = "SOURCE")]
    pub source: PathBuf,
    /// The source's format, when not detected: capture, classroom, replay,
    /// opencode, claude-code, tracelab, mooncake (aiperf).
    #[arg(long, alias = "source-format", value_name = "FORMAT", value_parser = typed::<SessionFormat>())]
    pub format: Option<SessionFormat>,
    /// Keep N sessions running at once: each that finishes is replaced by the
    /// source's next (--sessions bounds the total) [default: every session at
    /// its recorded offset].
    #[arg(long, value_name = "N", value_parser = typed::<AtLeastOne>())]
    pub users: Option<AtLeastOne>,
    /// When a call that waited for another goes out: after-answer (the
    /// recorded wait after the replayed answer) or original (the recorded
    /// timestamps, whatever the server does).
    #[arg(long, value_enum, default_value = "after-answer")]
    pub timing: TimingArg,
    /// Cap a person's recorded wait before their next message, seconds
    /// (tools' waits are kept).
    #[arg(long, value_name = "S", value_parser = typed::<SecondsOrZero>())]
    pub max_think: Option<SecondsOrZero>,
    /// Cap every recorded wait before a call, seconds: a person's, and a tool's
    /// too (a recorded tool wait of hours is often a person approving it).
    #[arg(long, value_name = "S", value_parser = typed::<SecondsOrZero>())]
    pub max_wait: Option<SecondsOrZero>,
    /// With --users: the first N sessions start part-way through their calls
    /// (the i-th at i/N of them), so the server reaches its steady state at once.
    #[arg(long, requires = "users")]
    pub start_part_way: bool,
    /// Calls whose prompt and output exceed the server's max_model_len:
    /// skip them, or shorten them from the front.
    #[arg(long, value_enum, default_value = "skip")]
    pub too_long: TooLongArg,
    /// Compress the recorded timeline: 2 sends twice as fast.
    #[arg(long, default_value = "1", value_name = "X", value_parser = typed::<Speed>())]
    pub speed: Speed,
    /// Replay this many root sessions: the first N, or all repeated until N.
    #[arg(long, value_name = "N", value_parser = typed::<AtLeastOne>())]
    pub sessions: Option<AtLeastOne>,
    /// Tokens per block of the trace's hash_ids (Mooncake's public traces: 512).
    #[arg(long, default_value_t = Count(u64::from(codendum_core::trace::DEFAULT_BLOCK_SIZE)), value_name = "TOKENS", value_parser = typed::<BlockSize>())]
    pub block_size: BlockSize,
    /// OpenAI endpoint.
    #[arg(long, value_enum, default_value = "chat")]
    pub endpoint: EndpointArg,
    /// Run the same workload N times against the same server (run i with --seed + i − 1; the
    /// server let drain between runs) and report each figure's mean, spread and coefficient of
    /// variation across runs beside the figure pooled over every run with its 95 % interval.
    #[arg(long, default_value_t = Count(1), value_name = "N", value_parser = typed::<Repeats>())]
    pub repeat: Repeats,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub run: RunArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub target: TargetArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub provenance: ProvenanceArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub twin: TwinArgs,
}

/// When a replayed call that waited for another goes out.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TimingArg {
    /// The recorded wait after the replayed answer it waited for.
    AfterAnswer,
    /// At its recorded offset from its session's start.
    Original,
}

/// What replay does with calls beyond the server's context.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TooLongArg {
    /// Not sent (counted, and said in the verdict).
    Skip,
    /// Sent shortened from the front (counted, and said in the verdict).
    Shorten,
}

/// The trace formats of `export-trace`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TraceFormatArg {
    /// Mooncake-style, open loop: a line per call with its timestamp.
    Mooncake,
    /// AIPerf's mooncake_trace sessions: session_id, the first turn's timestamp, later turns' delay.
    Aiperf,
}

/// `codendum export-trace`.
#[derive(Debug, Args)]
pub struct ExportTraceArgs {
    /// Any source `replay` reads: a capture or results folder, OpenCode's
    /// store, Claude Code conversations, TraceLab rows or a Mooncake-style trace.
    #[arg(value_name = "SOURCE")]
    pub source: PathBuf,
    /// The source's format, when not detected: capture, classroom, replay,
    /// opencode, claude-code, tracelab, mooncake (aiperf).
    #[arg(long, value_name = "FORMAT", value_parser = typed::<SessionFormat>())]
    pub source_format: Option<SessionFormat>,
    /// The format to write.
    #[arg(long, value_enum, default_value = "mooncake")]
    pub format: TraceFormatArg,
    /// The file to write (`-`: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
    /// Tokens per block of the hash_ids written (the server's KV block size).
    #[arg(long, default_value_t = Count(u64::from(codendum_core::trace::DEFAULT_BLOCK_SIZE)), value_name = "TOKENS", value_parser = typed::<BlockSize>())]
    pub block_size: BlockSize,
}

/// `codendum learn-class`.
#[derive(Debug, Args)]
pub struct LearnClassArgs {
    /// Recorded sessions: capture folders, classroom or replay results folders, trace files.
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// The class file to write (docs/class-file.md).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
    /// The class's name [default: the file's stem].
    #[arg(long)]
    pub name: Option<String>,
    /// What the sources cannot tell is kept from this class (a name or a class file).
    #[arg(long, default_value = "lab", value_name = "NAME|FILE")]
    pub defaults: String,
    /// Tokens per block of a trace file's hash_ids.
    #[arg(long, default_value_t = Count(u64::from(codendum_core::trace::DEFAULT_BLOCK_SIZE)), value_name = "TOKENS", value_parser = typed::<BlockSize>())]
    pub block_size: BlockSize,
}

/// Where the server is. Flags win over the environment, the environment over `.env`.
#[derive(Debug, Args, Clone)]
pub struct TargetArgs {
    /// OpenAI base URL ending in /v1 (e.g. https://llm.lab.example:8443/v1).
    /// Empty: the embedded twin.
    #[arg(long, env = env::BASE_URL, value_name = "URL", value_parser = typed::<BaseUrl>())]
    pub base_url: Option<BaseUrl>,
    /// API key sent as a bearer token (never printed or written).
    #[arg(long, env = env::API_KEY, value_name = "KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// PEM bundle of the private CA; replaces the system roots, as curl's --cacert.
    #[arg(long, env = env::CACERT, value_name = "FILE", value_parser = typed::<CaFile>())]
    pub cacert: Option<CaFile>,
    /// vLLM /metrics URL(s), comma-separated for replicas [default: <base origin>/metrics].
    #[arg(long, env = env::METRICS_URL, value_name = "URL[,URL...]", value_parser = typed::<HttpUrls>())]
    pub metrics_url: Option<HttpUrls>,
    /// Read the server figures through this Prometheus (its HTTP API, a range
    /// query over the run, step 1 s) instead of scraping /metrics; the
    /// replicas are the host:port of each --metrics-url.
    #[arg(long, env = env::PROMETHEUS_URL, value_name = "URL", value_parser = typed::<HttpUrl>())]
    pub prometheus_url: Option<HttpUrl>,
    /// With --prometheus-url: a PromQL label filter picking the replicas
    /// (e.g. job="vllm") instead of the --metrics-url instances.
    #[arg(long, value_name = "FILTER", requires = "prometheus_url", value_parser = typed::<Selector>())]
    pub prometheus_selector: Option<Selector>,
    /// The router's own Prometheus page (the vLLM Router's
    /// --prometheus-port, e.g. http://router:29000/metrics): its requests
    /// per worker, retries and errors, read at the start and the end.
    #[arg(long, env = env::ROUTER_METRICS_URL, value_name = "URL", value_parser = typed::<HttpUrl>())]
    pub router_metrics_url: Option<HttpUrl>,
    /// Model to request [default: the first id of /v1/models].
    #[arg(long, env = env::MODEL)]
    pub model: Option<String>,
    /// Per-request time limit, seconds.
    #[arg(long, default_value = "900", value_name = "SECONDS", value_parser = typed::<Seconds>())]
    pub timeout: Seconds,
}

/// Provenance recorded in results (and the profile of the embedded twin).
#[derive(Debug, Args, Clone)]
pub struct ProvenanceArgs {
    /// Server profile: the embedded twin's profile (a name in profiles/ or a .toml
    /// path), or the live server's profile recorded as provenance.
    /// Default for the twin: classroom-64k; for a live server none is recorded
    /// unless given.
    #[arg(long, env = env::PROFILE)]
    pub profile: Option<String>,
    /// vLLM image digest (provenance).
    #[arg(long, env = env::IMAGE_DIGEST)]
    pub image_digest: Option<String>,
    /// Model revision (provenance).
    #[arg(long, env = env::MODEL_REVISION)]
    pub model_revision: Option<String>,
    /// DGX OS version (provenance).
    #[arg(long, env = env::DGX_OS_VERSION)]
    pub dgx_os_version: Option<String>,
    /// NVIDIA driver version (provenance).
    #[arg(long, env = env::DRIVER_VERSION)]
    pub driver_version: Option<String>,
}

/// How a bench or classroom run starts and where it writes.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Start even if /metrics shows requests running or waiting. When
    /// /metrics cannot be read (usual from a workstation behind the lab's
    /// proxy) the run goes on anyway, unchecked and without server figures,
    /// saying how to get them (--metrics-url http://<gpu-host>:8000/metrics,
    /// or a host recording passed with --server-timeline); this flag then
    /// shortens that warning.
    #[arg(long)]
    pub allow_busy: bool,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Seed of every random choice (bench: prompt text, which stays cache-cold
    /// through unique tags; classroom: the students). The same seed repeats a run.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Folder under which the run's folder is created.
    #[arg(long, default_value = codendum_core::results::DEFAULT_RESULTS_ROOT, value_name = "DIR")]
    pub results_dir: PathBuf,
    /// Do not write report.md / report.html at the end.
    #[arg(long)]
    pub no_report: bool,
    /// The share of calls that may fail (a fraction, 0 to 1) before the run
    /// exits 1 although it completed; a run that failed (the server stopped
    /// answering, a level with no success, no coding request completed)
    /// exits 1 whatever this says.
    #[arg(long, default_value_t = Fraction(codendum_core::results::verdict::DEFAULT_MAX_ERROR_RATE), value_name = "FRACTION", value_parser = typed::<Fraction>())]
    pub max_error_rate: Fraction,
    /// Exit 1 also when the run completed but its figures are not valid as a
    /// capacity figure (the client fell behind, calls beyond the model's
    /// context, a steady window too short to judge); the verdict says why
    /// either way.
    #[arg(long)]
    pub strict: bool,
}

/// Options for runs against the embedded twin.
#[derive(Debug, Args, Clone)]
pub struct TwinArgs {
    /// Embedded twin only: run this many times faster than real time. Figures are
    /// reported in simulated (real-run) seconds. [default: 4 for bench, 25 for classroom]
    #[arg(long, value_name = "N", value_parser = typed::<TimeScale>())]
    pub time_scale: Option<TimeScale>,
    /// Replicas and router of the embedded twin.
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// The embedded twin as a fleet (`serve`, `bench`, `classroom`).
#[derive(Debug, Args, Clone, Default)]
pub struct FleetArgs {
    /// Embedded twin only: N replicas (each its own engine, KV blocks and prefix
    /// cache) behind one endpoint. [default: the profile's [fleet] replicas, else 1]
    #[arg(long, value_name = "N", value_parser = typed::<Replicas>())]
    pub replicas: Option<Replicas>,
    /// Embedded twin only: the router in front of the replicas (the policy
    /// names come from the router's own list).
    #[arg(long, value_name = "POLICY", value_parser = typed::<Router>(), help = router_help(
        "Embedded twin only: the router in front of the replicas",
        "[default: the profile's [fleet] router, else round-robin]",
    ))]
    pub router: Option<Router>,
}

/// The endpoint a benchmark request goes to.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum EndpointArg {
    /// POST /v1/chat/completions
    Chat,
    /// POST /v1/completions
    Completions,
}

/// `codendum bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Concurrency levels: requests kept in flight, comma-separated
    /// [default: 1,8,16,24,40; with --calibration: the decode ladder, default
    /// powers of two up to the twin's seats, else 1,2,4,8,16].
    #[arg(long, value_name = "N,N,...", value_parser = typed::<Levels>())]
    pub concurrency: Option<Levels>,
    /// Run the calibration workload for `codendum calibrate` instead of the
    /// levels × shapes grid: a decode ladder up to the seats, contexts of
    /// 4K to 32K tokens (clamped to max_model_len) at 1, a quarter, half and
    /// all of the seats, cold prompts (--shapes and --requests-per-level are
    /// not used).
    #[arg(long)]
    pub calibration: bool,
    /// Prompt shapes: short (~512 input tokens), long (~16,384), comma-separated.
    #[arg(long, default_value = "short,long", value_name = "SHAPE,...", value_parser = typed::<Shapes>())]
    pub shapes: Shapes,
    /// Requests started per level [default: max(16, 4 × concurrency)].
    #[arg(long, value_name = "N", value_parser = typed::<AtLeastOne>())]
    pub requests_per_level: Option<AtLeastOne>,
    /// Stop starting requests in a level after this many seconds.
    #[arg(long, value_name = "SECONDS", value_parser = typed::<Seconds>())]
    pub level_duration: Option<Seconds>,
    /// Output tokens per request (max_tokens = min_tokens, ignore_eos)
    /// [default: 256; with --calibration 128].
    #[arg(long, value_parser = typed::<Tokens>())]
    pub output_tokens: Option<Tokens>,
    /// OpenAI endpoint.
    #[arg(long, value_enum, default_value = "chat")]
    pub endpoint: EndpointArg,
    /// Open-loop levels: requests started at these rates (requests per
    /// second, comma-separated) whatever the server does; TTFT and E2E count
    /// from each request's scheduled start. Not with --concurrency.
    #[arg(long, value_name = "R,R,...", value_parser = typed::<Rates>())]
    pub rate: Option<Rates>,
    /// How rate levels' requests arrive: constant (evenly spaced), poisson,
    /// or gamma (with --burstiness, as vllm bench serve).
    #[arg(long, value_enum, default_value = "poisson", value_name = "ARRIVAL")]
    pub arrival: ArrivalArg,
    /// The gamma arrival's shape: 1 is Poisson, below 1 burstier, above 1
    /// steadier (the gaps' coefficient of variation is 1/sqrt(B)).
    #[arg(long, value_name = "B", value_parser = typed::<Positive>())]
    pub burstiness: Option<Positive>,
    /// Most requests a rate level keeps in flight; a due request waits for a
    /// slot, and its latency still counts from when it was due [default: no cap].
    #[arg(long, value_name = "N", value_parser = typed::<InFlight>())]
    pub max_concurrency: Option<InFlight>,
    /// Sweep: one request at a time, then the closed-loop maximum (the largest
    /// --concurrency), then N rates spread evenly between their throughputs.
    #[arg(long, value_name = "N", value_parser = typed::<SweepRates>())]
    pub sweep: Option<SweepRates>,
    /// Search the highest rate whose level meets --slo, by bisection between
    /// one request at a time and the closed-loop maximum.
    #[arg(long)]
    pub find_rate: bool,
    /// End a sweep at its first saturated level (the backlog grew throughout
    /// while fewer requests finished than arrived).
    #[arg(long)]
    pub stop_when_saturated: bool,
    /// Per-request objectives, comma-separated: ttft=2s, tpot=100ms, e2e=60s;
    /// a key may carry a percentile (ttft_p95=2s: 95 % of a level's requests
    /// must meet every objective; default 95 %). Each level reports its SLO
    /// share and goodput (requests meeting the SLO per second).
    #[arg(long, value_name = "KEY=VALUE,...", value_parser = typed::<SloValue>())]
    pub slo: Option<SloValue>,
    /// Run the same workload N times against the same server (run i with --seed + i − 1; the
    /// server let drain between runs) and report each figure's mean, spread and coefficient of
    /// variation across runs beside the figure pooled over every run with its 95 % interval.
    #[arg(long, default_value_t = Count(1), value_name = "N", value_parser = typed::<Repeats>())]
    pub repeat: Repeats,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub run: RunArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub target: TargetArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub provenance: ProvenanceArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub twin: TwinArgs,
}

/// How rate levels' requests arrive.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ArrivalArg {
    /// Evenly spaced.
    Constant,
    /// Exponential gaps (a Poisson process).
    Poisson,
    /// Gamma gaps of shape --burstiness.
    Gamma,
}

/// Output tokens per request.
pub type Tokens = Count<1, { u32::MAX as u64 }>;
/// Requests in flight.
pub type InFlight = Count<1, { codendum_core::flags::MAX_CONCURRENCY as u64 }>;
/// Rates of a sweep.
pub type SweepRates = Count<1, 50>;
/// Tokens per block of a trace.
pub type BlockSize = Count<1, 1_048_576>;
/// Simulated students.
pub type Students = Count<1, 10_000>;
/// Seeds of a plan's search.
pub type Seeds = Count<1, { codendum::plan::config::MAX_SEEDS as u64 }>;
/// Runs of `--repeat`.
pub type Repeats = Count<1, 1000>;

/// The classroom scenario.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ScenarioArg {
    /// Java chat project with Maven and JUnit.
    Java,
    /// Python chat project with pytest.
    Python,
}

/// `codendum classroom`.
#[derive(Debug, Args)]
pub struct ClassroomArgs {
    /// Simulated students.
    #[arg(long, default_value_t = Count(class_defaults::DEFAULT_USERS as u64), value_parser = typed::<Students>())]
    pub users: Students,
    /// Window for new coding requests, seconds (in-flight ones then finish).
    #[arg(long, default_value_t = Seconds(class_defaults::DEFAULT_DURATION), value_name = "SECONDS", value_parser = typed::<Seconds>())]
    pub duration: Seconds,
    /// Students start within this many seconds.
    #[arg(long, default_value_t = SecondsOrZero(class_defaults::DEFAULT_RAMP_UP), value_name = "SECONDS", value_parser = typed::<SecondsOrZero>())]
    pub ramp_up: SecondsOrZero,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub students: StudentArgs,
    /// A server timeline recorded on the host (codendum metrics --watch 5 --json) to fold in.
    #[arg(long, value_name = "FILE")]
    pub server_timeline: Option<PathBuf>,
    /// Run the same workload N times against the same server (run i with --seed + i − 1; the
    /// server let drain between runs) and report each figure's mean, spread and coefficient of
    /// variation across runs beside the figure pooled over every run with its 95 % interval.
    #[arg(long, default_value_t = Count(1), value_name = "N", value_parser = typed::<Repeats>())]
    pub repeat: Repeats,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub run: RunArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub target: TargetArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub provenance: ProvenanceArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub twin: TwinArgs,
}

/// `codendum capacity`.
#[derive(Debug, Args)]
pub struct CapacityArgs {
    /// Service tiers, each answered in the one search: NAME:KEY=VALUE,... where a NAME: starts
    /// a tier (e.g. interactive:ttft_p95=10s,speed_p50=10,relaxed:ttft_p95=60s). Keys:
    /// ttft_p95, speed_p50, coding_request_p50, errors, server_output, preemptions,
    /// server_errors.
    #[arg(long, value_name = "NAME:KEY=VALUE,...", value_parser = typed::<TiersValue>(), conflicts_with = "slo")]
    pub tiers: Option<TiersValue>,
    /// One service level: KEY=VALUE,... as a tier of --tiers (e.g. ttft_p95=30s,errors=1%)
    /// [default: the profile's [targets.classroom]].
    #[arg(long, value_name = "KEY=VALUE,...", value_parser = typed::<ClassSloValue>())]
    pub slo: Option<ClassSloValue>,
    /// The largest class considered, students.
    #[arg(long, default_value_t = Count(u64::from(codendum::app::capacity::DEFAULT_MAX_USERS)), value_name = "N", value_parser = typed::<Students>())]
    pub max_users: Students,
    /// Each step's steady window, judged on its own, seconds.
    #[arg(long, default_value_t = Seconds(codendum::app::capacity::DEFAULT_HOLD), value_name = "SECONDS", value_parser = typed::<Seconds>())]
    pub hold: Seconds,
    /// New students join spread over this many seconds.
    #[arg(long, default_value_t = SecondsOrZero(codendum::app::capacity::DEFAULT_JOIN_OVER), value_name = "SECONDS", value_parser = typed::<SecondsOrZero>())]
    pub join_over: SecondsOrZero,
    /// Every step settles this many seconds before its window [default: the twin's time for
    /// the requests at the server to level off after the change, at least the join spread
    /// and 30 s].
    #[arg(long, value_name = "SECONDS", value_parser = typed::<SecondsOrZero>())]
    pub settle: Option<SecondsOrZero>,
    /// The widest gap left between a class met and one missed, students [default: 1 up to
    /// 20 students predicted, else a twentieth of the prediction].
    #[arg(long, value_name = "N", value_parser = typed::<Students>())]
    pub resolution: Option<Students>,
    /// The most server time the search may take, seconds; it stops before a step that would
    /// go past it and says what more time would buy.
    #[arg(long, value_name = "SECONDS", value_parser = typed::<Seconds>())]
    pub budget: Option<Seconds>,
    /// Recorded sessions as the students instead of the simulated class: any source `replay`
    /// reads (a capture or results folder, OpenCode's store, Claude Code conversations,
    /// TraceLab rows, a Mooncake-style trace). Each seat replays the next session; after the
    /// last, the trace starts again with fresh text.
    #[arg(long, value_name = "SOURCE", conflicts_with_all = ["class", "follow_ups", "pause_min", "pause_max", "prompt_file", "client_times"])]
    pub replay: Option<PathBuf>,
    /// With --replay: cap a person's recorded wait before their next message, seconds.
    #[arg(long, value_name = "S", value_parser = typed::<SecondsOrZero>(), requires = "replay")]
    pub max_think: Option<SecondsOrZero>,
    /// With --replay: cap every recorded wait before a call, seconds (a tool's too).
    #[arg(long, value_name = "S", value_parser = typed::<SecondsOrZero>(), requires = "replay")]
    pub max_wait: Option<SecondsOrZero>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub students: StudentArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub run: RunArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub target: TargetArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub provenance: ProvenanceArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub twin: TwinArgs,
}

/// The simulated students (`classroom`, `capacity`).
#[derive(Debug, Args)]
pub struct StudentArgs {
    /// Project and tools the students work with.
    #[arg(long, value_enum, default_value = "java")]
    pub scenario: ScenarioArg,
    /// What the students and their agent draw from: a class name (lab) or a class file
    /// (docs/class-file.md) [default: lab].
    #[arg(long, value_name = "NAME|FILE")]
    pub class: Option<String>,
    /// Follow-up requests after the lab exercise, per student, instead of the class's
    /// [default: from the class: 3].
    #[arg(long, value_name = "N")]
    pub follow_ups: Option<usize>,
    /// Shortest pause between a student's requests, seconds (uniform up to --pause-max),
    /// instead of the class's [default: from the class: 20].
    #[arg(long, value_name = "SECONDS", value_parser = typed::<SecondsOrZero>())]
    pub pause_min: Option<SecondsOrZero>,
    /// Longest pause between a student's requests, seconds, instead of the class's
    /// [default: from the class: 90].
    #[arg(long, value_name = "SECONDS", value_parser = typed::<SecondsOrZero>())]
    pub pause_max: Option<SecondsOrZero>,
    /// One API key per student (CSV or one key a line); keys are never printed.
    #[arg(long, env = env::API_KEYS_FILE, value_name = "FILE")]
    pub api_keys_file: Option<PathBuf>,
    /// A captured system prompt and tools (OpenCode request body JSON, or {system, tools}).
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// Measured client times per tool kind (a capture's client-times.json, or its folder)
    /// instead of the built-in ones.
    #[arg(long, value_name = "FILE")]
    pub client_times: Option<PathBuf>,
    /// Client context limit, tokens [default: the server's max_model_len].
    #[arg(long, value_name = "TOKENS", value_parser = typed::<AtLeastOne>())]
    pub context_limit: Option<AtLeastOne>,
    /// Client output limit (max_tokens of every step), tokens.
    #[arg(long, default_value_t = Count(class_defaults::DEFAULT_OUTPUT_LIMIT), value_name = "TOKENS", value_parser = typed::<AtLeastOne>())]
    pub output_limit: AtLeastOne,
}

/// `codendum metrics`.
#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// vLLM /metrics URL(s), comma-separated for replicas [default: from --base-url].
    #[arg(long, env = env::METRICS_URL, value_name = "URL[,URL...]", value_parser = typed::<HttpUrls>())]
    pub metrics_url: Option<HttpUrls>,
    /// OpenAI base URL; /metrics is taken at its origin.
    #[arg(long, env = env::BASE_URL, value_name = "URL", value_parser = typed::<BaseUrl>())]
    pub base_url: Option<BaseUrl>,
    /// PEM bundle of the private CA.
    #[arg(long, env = env::CACERT, value_name = "FILE", value_parser = typed::<CaFile>())]
    pub cacert: Option<CaFile>,
    /// Print a line every SECONDS with rates over the interval.
    #[arg(long, value_name = "SECONDS", value_parser = typed::<Seconds>())]
    pub watch: Option<Seconds>,
    /// One JSON object per sample on stdout (for a server-timeline.jsonl).
    #[arg(long)]
    pub json: bool,
    /// Stop after this many samples.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
}

/// `codendum serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Server profile (a name in profiles/ or a .toml path).
    #[arg(long, env = env::PROFILE, default_value = codendum::settings::DEFAULT_PROFILE)]
    pub profile: String,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to bind (0: any free port, printed on stderr).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Run this many times faster than real time.
    #[arg(long, default_value = "1", value_name = "N", value_parser = typed::<TimeScale>())]
    pub time_scale: TimeScale,
    /// Require this API key (as vLLM's --api-key).
    #[arg(long, value_name = "KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Accept any key of this file (CSV or one a line).
    #[arg(long, value_name = "FILE")]
    pub api_keys_file: Option<PathBuf>,
    /// Put the lab's proxy in front: per-key and global limits answered with 429.
    #[arg(long)]
    pub proxy: bool,
    /// Proxy: requests in flight per key.
    #[arg(long, value_name = "N")]
    pub per_key_in_flight: Option<u32>,
    /// Proxy: requests per minute per key.
    #[arg(long, value_name = "N")]
    pub per_key_per_minute: Option<u32>,
    /// Proxy: requests in flight over all keys.
    #[arg(long, value_name = "N")]
    pub global_in_flight: Option<u32>,
    /// Seed for the twin's text and agent persona.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// What the agent persona draws its calls and answer sizes from: a class name (lab) or a
    /// class file (docs/class-file.md) [default: lab].
    #[arg(long, value_name = "NAME|FILE")]
    pub class: Option<String>,
    /// Inject faults, e.g. `drop@0.05,status=503@every:10:retry-after=2,stall=30s@#5`
    /// (grammar in docs/twin.md, "Fault injection").
    #[arg(long, value_name = "SPEC")]
    pub faults: Option<String>,
    /// Replicas and router.
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// `codendum capture`.
#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// The lab's server: its OpenAI base URL (e.g. https://llm.lab.example:8443/v1).
    #[arg(long, value_name = "URL")]
    pub upstream: String,
    /// Address to listen on; give OpenCode http://ADDR/v1 as its base URL.
    #[arg(long, default_value = "127.0.0.1:8001", value_name = "IP:PORT")]
    pub listen: String,
    /// Folder to write calls.jsonl, prompt.json, client-times.json and capture.json into
    /// (created; must not hold a capture yet).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// PEM bundle of the upstream's private CA; replaces the system roots, as curl's --cacert.
    #[arg(long, env = env::CACERT, value_name = "FILE", value_parser = typed::<CaFile>())]
    pub cacert: Option<CaFile>,
    /// Keep no message text at all: no prompt.json (only sizes, times, kinds, sessions and
    /// tool names, which is all replay and export-trace need).
    #[arg(long)]
    pub no_text: bool,
    /// Listen with TLS: PEM certificate chain (a certificate of the lab's CA for this host);
    /// give OpenCode https://HOST:PORT/v1. Beyond loopback without it, keys cross the
    /// network unencrypted.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

/// `codendum report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results folder (bench-results/<timestamp>/ or classroom-<timestamp>/), a capture
    /// folder of a class (codendum capture --out), a host timeline file (metrics --json
    /// lines: its report goes beside it as <stem>-report.md/.html), or sessions recorded by
    /// the students' tools (OpenCode's store, Claude Code conversations, TraceLab rows).
    #[arg(value_name = "FOLDER|TIMELINE|SESSIONS")]
    pub folder: PathBuf,
    /// A server timeline recorded on the GPU host during the run or class
    /// (codendum metrics --watch 5 --json > tl.jsonl), folded into the report.
    #[arg(long, value_name = "FILE")]
    pub server_timeline: Option<PathBuf>,
    /// Where the report of recorded sessions goes [default: report-<source name> in the
    /// working directory]; a results or capture folder's report is written into it.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `codendum compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more results or capture folders; the first is the baseline.
    #[arg(required = true, num_args = 2..)]
    pub folders: Vec<PathBuf>,
    /// Compare even if the workloads differ.
    #[arg(long)]
    pub force: bool,
    /// Where to write compare.md and compare.html [default: the last folder].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `codendum plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Class sizes to try, comma-separated. Without it, plan searches the
    /// largest class meeting each profile's [targets.classroom].
    #[arg(long, value_name = "N,N,...", value_parser = typed::<WholeNumbers>())]
    pub users: Option<WholeNumbers>,
    /// Upper end of the search for the largest class, students [default: 200].
    #[arg(long, value_name = "N")]
    pub max_users: Option<u32>,
    /// Server profiles to try (names in profiles/ or .toml paths), comma-separated.
    #[arg(
        long,
        default_value = "classroom-64k,classroom-64k-high-concurrency",
        value_name = "NAME,...",
        value_parser = typed::<Names>()
    )]
    pub profile: Names,
    /// Also try these max_num_seqs values for every profile, comma-separated.
    #[arg(long, value_name = "N,N,...", value_parser = typed::<WholeNumbers>())]
    pub max_num_seqs: Option<WholeNumbers>,
    /// Project and tools the students work with.
    #[arg(long, value_enum, default_value = "java")]
    pub scenario: ScenarioArg,
    /// What the students and the twin's persona draw from: a class name (lab) or a class
    /// file (docs/class-file.md) [default: lab].
    #[arg(long, value_name = "NAME|FILE")]
    pub class: Option<String>,
    /// Window for new coding requests, seconds.
    #[arg(long, default_value_t = Seconds(class_defaults::DEFAULT_DURATION), value_name = "SECONDS", value_parser = typed::<Seconds>())]
    pub duration: Seconds,
    /// Seed of every random choice (the same seed gives identical results).
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Seeds a search runs (--seed, --seed + 1, …): the largest class is
    /// answered as the range the seeds give and how many of them each class
    /// meets the targets in. --users plans use --seed only.
    #[arg(long, default_value_t = Count(u64::from(codendum::plan::config::DEFAULT_SEEDS)), value_name = "N", value_parser = typed::<Seeds>())]
    pub seeds: Seeds,
    /// Threads to run cells on [default: the machine's cores].
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Fleet sizes to try, comma-separated: N replicas of each profile (each its
    /// own engine, KV blocks and prefix cache). [default: the profile's [fleet]
    /// replicas, else 1]
    #[arg(long, value_name = "N,N,...", value_parser = typed::<WholeNumbers>())]
    pub replicas: Option<WholeNumbers>,
    /// Routers to try in front of fleets, comma-separated (the policy names
    /// come from the router's own list).
    #[arg(long, value_name = "POLICY,...", value_parser = typed::<Routers>(), help = router_help(
        "Routers to try in front of fleets, comma-separated",
        "[default: the profile's [fleet] router]",
    ))]
    pub router: Option<Routers>,
    /// Folder under which the plan's folder is created.
    #[arg(long, default_value = codendum_core::results::DEFAULT_RESULTS_ROOT, value_name = "DIR")]
    pub results_dir: PathBuf,
    /// Search the highest request rate each profile carries within --slo
    /// instead of the largest class (bench --find-rate against the profile's
    /// twin, in virtual time).
    #[arg(long, requires = "slo")]
    pub rate: bool,
    /// With --rate: the per-request objectives (as bench --slo).
    #[arg(long, value_name = "KEY=VALUE,...", value_parser = typed::<SloValue>())]
    pub slo: Option<SloValue>,
    /// With --rate: the prompt shape of the requests.
    #[arg(long, default_value = "short", value_name = "SHAPE", value_parser = typed::<OneShape>())]
    pub shape: OneShape,
    /// With --rate: output tokens per request.
    #[arg(long, default_value_t = Count(u64::from(codendum::bench::config::DEFAULT_OUTPUT_TOKENS)), value_name = "N", value_parser = typed::<Tokens>())]
    pub output_tokens: Tokens,
    /// With --rate: requests per level [default: a minute of arrivals, at least 16].
    #[arg(long, value_name = "N", value_parser = typed::<AtLeastOne>())]
    pub requests_per_level: Option<AtLeastOne>,
}

/// `codendum calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Bench results folders of one server and model (a `bench --calibration`
    /// run separates the model's terms best).
    #[arg(required = true, value_name = "RUN_DIR")]
    pub runs: Vec<PathBuf>,
    /// The profile to write; its hardware TOML goes to `hardware/<name>.toml`
    /// beside it, the fit report to `<name>-fit.json` [default: ./<name>.toml].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Profile and hardware name [default: the --out file's stem, else
    /// calibrated-<served model name>].
    #[arg(long)]
    pub name: Option<String>,
    /// The server's --max-num-seqs, when the runs cannot tell it.
    #[arg(long, value_name = "N", value_parser = typed::<Tokens>())]
    pub max_num_seqs: Option<Tokens>,
    /// The server's KV-cache capacity, tokens, when the runs did not read /metrics
    /// (`codendum metrics` on the GPU host shows it).
    #[arg(long, value_name = "TOKENS", value_parser = typed::<AtLeastOne>())]
    pub kv_cache_tokens: Option<AtLeastOne>,
    /// The server's --max-num-batched-tokens [default: the twin's, else 8192].
    #[arg(long, value_name = "TOKENS", value_parser = typed::<Tokens>())]
    pub max_num_batched_tokens: Option<Tokens>,
    /// Copy [targets] from this profile (a name or a .toml path).
    #[arg(long, value_name = "PROFILE")]
    pub targets_from: Option<String>,
    /// Bandwidth that turns fitted seconds into the hardware TOML's bytes, GB/s
    /// (a normalisation; the fit measures time).
    #[arg(long, default_value = "1000", value_name = "GB_S", value_parser = typed::<Positive>())]
    pub memory_bandwidth_gb_s: Positive,
    /// Bootstrap resamples for the uncertainties.
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub bootstrap: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Backtest instead of fitting: replay each RUN_DIR (bench runs) on the
    /// embedded twin with this profile and print predicted against measured
    /// per level; exit 1 when a figure is beyond --tolerance.
    #[arg(long, value_name = "PROFILE")]
    pub check: Option<String>,
    /// With --check: the largest error allowed, percent.
    #[arg(
        long,
        default_value = "10",
        value_name = "PERCENT",
        requires = "check",
        value_parser = typed::<Positive>()
    )]
    pub tolerance: Positive,
}

/// The help of a router flag: what it does, the policies (from the router's
/// own list of names), that one replica ignores it, and its default.
fn router_help(what: &str, default: &str) -> String {
    format!(
        "{what}: {}. With one replica it has no effect (a note says so). {default}",
        codendum_core::profile::fleet::RouterPolicy::names()
    )
}
