//! Command-line definitions (clap). Only this file and `main.rs` know clap;
//! everything here is turned into the library's validated, typed configs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// Fit the twin's step-time model to bench runs of your server and write a profile.
    Calibrate(CalibrateArgs),
    /// Record OpenCode's calls through a reverse proxy: per-call records, client times, the prompt.
    Capture(CaptureArgs),
    /// Send a capture, a classroom run or a Mooncake-style trace again, with its sizes,
    /// prefix sharing and timing.
    Replay(ReplayArgs),
    /// Write a capture or a classroom run as a Mooncake-style or AIPerf trace (no text, no key).
    ExportTrace(ExportTraceArgs),
}

/// `codendum replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A capture folder, a classroom or replay results folder, or a trace file
    /// (Mooncake-style JSONL: timestamp ms, input_length, output_length, hash_ids;
    /// AIPerf's session_id and delay too).
    #[arg(value_name = "CAPTURE_DIR|TRACE_FILE")]
    pub source: PathBuf,
    /// Compress the recorded timeline: 2 sends twice as fast.
    #[arg(long, default_value_t = 1.0, value_name = "X")]
    pub speed: f64,
    /// Replay this many root sessions: the first N, or all repeated until N.
    #[arg(long, value_name = "N")]
    pub sessions: Option<usize>,
    /// Tokens per block of the trace's hash_ids (Mooncake's public traces: 512).
    #[arg(long, default_value_t = codendum_core::trace::DEFAULT_BLOCK_SIZE, value_name = "TOKENS")]
    pub block_size: u32,
    /// OpenAI endpoint.
    #[arg(long, value_enum, default_value = "chat")]
    pub endpoint: EndpointArg,
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
    /// A capture folder, a classroom or replay results folder (or a trace file).
    #[arg(value_name = "CAPTURE_DIR|RUN_DIR")]
    pub source: PathBuf,
    /// The format to write.
    #[arg(long, value_enum, default_value = "mooncake")]
    pub format: TraceFormatArg,
    /// The file to write (`-`: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
    /// Tokens per block of the hash_ids written (the server's KV block size).
    #[arg(long, default_value_t = codendum_core::trace::DEFAULT_BLOCK_SIZE, value_name = "TOKENS")]
    pub block_size: u32,
}

/// Where the server is. Flags win over the environment, the environment over `.env`.
#[derive(Debug, Args, Clone)]
pub struct TargetArgs {
    /// OpenAI base URL ending in /v1 (e.g. https://llm.lab.example:8443/v1).
    /// Empty: the embedded twin.
    #[arg(long, env = "CODENDUM_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,
    /// API key sent as a bearer token (never printed or written).
    #[arg(
        long,
        env = "CODENDUM_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    /// PEM bundle of the private CA; replaces the system roots, as curl's --cacert.
    #[arg(long, env = "CODENDUM_CACERT", value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// vLLM /metrics URL(s), comma-separated for replicas [default: <base origin>/metrics].
    #[arg(long, env = "CODENDUM_METRICS_URL", value_name = "URL[,URL...]")]
    pub metrics_url: Option<String>,
    /// Read the server figures through this Prometheus (its HTTP API, a range
    /// query over the run, step 1 s) instead of scraping /metrics; the
    /// replicas are the host:port of each --metrics-url.
    #[arg(long, env = "CODENDUM_PROMETHEUS_URL", value_name = "URL")]
    pub prometheus_url: Option<String>,
    /// With --prometheus-url: a PromQL label filter picking the replicas
    /// (e.g. job="vllm") instead of the --metrics-url instances.
    #[arg(long, value_name = "FILTER", requires = "prometheus_url")]
    pub prometheus_selector: Option<String>,
    /// The router's own Prometheus page (the vLLM Router's
    /// --prometheus-port, e.g. http://router:29000/metrics): its requests
    /// per worker, retries and errors, read at the start and the end.
    #[arg(long, env = "CODENDUM_ROUTER_METRICS_URL", value_name = "URL")]
    pub router_metrics_url: Option<String>,
    /// Model to request [default: the first id of /v1/models].
    #[arg(long, env = "CODENDUM_MODEL")]
    pub model: Option<String>,
    /// Per-request time limit, seconds.
    #[arg(long, default_value_t = 900.0, value_name = "SECONDS")]
    pub timeout: f64,
}

/// Provenance recorded in results (and the profile of the embedded twin).
#[derive(Debug, Args, Clone)]
pub struct ProvenanceArgs {
    /// Server profile: the embedded twin's profile (a name in profiles/ or a .toml
    /// path), or the live server's profile recorded as provenance.
    /// Default for the twin: classroom-64k; for a live server none is recorded
    /// unless given.
    #[arg(long, env = "CODENDUM_PROFILE")]
    pub profile: Option<String>,
    /// vLLM image digest (provenance).
    #[arg(long, env = "CODENDUM_IMAGE_DIGEST")]
    pub image_digest: Option<String>,
    /// Model revision (provenance).
    #[arg(long, env = "CODENDUM_MODEL_REVISION")]
    pub model_revision: Option<String>,
    /// DGX OS version (provenance).
    #[arg(long, env = "CODENDUM_DGX_OS_VERSION")]
    pub dgx_os_version: Option<String>,
    /// NVIDIA driver version (provenance).
    #[arg(long, env = "CODENDUM_DRIVER_VERSION")]
    pub driver_version: Option<String>,
}

impl ProvenanceArgs {
    /// The profile the embedded twin runs: the one given, else
    /// `classroom-64k`.
    pub fn twin_profile(&self) -> &str {
        self.profile
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .unwrap_or("classroom-64k")
    }
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
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Folder under which the run's folder is created.
    #[arg(long, default_value = "bench-results", value_name = "DIR")]
    pub results_dir: PathBuf,
    /// Do not write report.md / report.html at the end.
    #[arg(long)]
    pub no_report: bool,
    /// The share of calls that may fail (a fraction, 0 to 1) before the run
    /// exits 1 although it completed; a run that failed (the server stopped
    /// answering, a level with no success, no coding request completed)
    /// exits 1 whatever this says.
    #[arg(long, default_value_t = codendum_core::results::verdict::DEFAULT_MAX_ERROR_RATE, value_name = "FRACTION")]
    pub max_error_rate: f64,
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
    #[arg(long, value_name = "N")]
    pub time_scale: Option<f64>,
    /// Replicas and router of the embedded twin.
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// The embedded twin as a fleet (`serve`, `bench`, `classroom`).
#[derive(Debug, Args, Clone, Default)]
pub struct FleetArgs {
    /// Embedded twin only: N replicas (each its own engine, KV blocks and prefix
    /// cache) behind one endpoint. [default: the profile's [fleet] replicas, else 1]
    #[arg(long, value_name = "N")]
    pub replicas: Option<u32>,
    /// Embedded twin only: the router in front of the replicas (the policy
    /// names come from the router's own list).
    #[arg(long, value_name = "POLICY", help = router_help(
        "Embedded twin only: the router in front of the replicas",
        "[default: the profile's [fleet] router, else round-robin]",
    ))]
    pub router: Option<String>,
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
    #[arg(long, value_name = "N,N,...")]
    pub concurrency: Option<String>,
    /// Run the calibration workload for `codendum calibrate` instead of the
    /// levels × shapes grid: a decode ladder up to the seats, contexts of
    /// 4K to 32K tokens (clamped to max_model_len) at 1, a quarter, half and
    /// all of the seats, cold prompts (--shapes and --requests-per-level are
    /// not used).
    #[arg(long)]
    pub calibration: bool,
    /// Prompt shapes: short (~512 input tokens), long (~16,384), comma-separated.
    #[arg(long, default_value = "short,long", value_name = "SHAPE,...")]
    pub shapes: String,
    /// Requests started per level [default: max(16, 4 × concurrency)].
    #[arg(long, value_name = "N")]
    pub requests_per_level: Option<u64>,
    /// Stop starting requests in a level after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub level_duration: Option<f64>,
    /// Output tokens per request (max_tokens = min_tokens, ignore_eos)
    /// [default: 256; with --calibration 128].
    #[arg(long)]
    pub output_tokens: Option<u32>,
    /// OpenAI endpoint.
    #[arg(long, value_enum, default_value = "chat")]
    pub endpoint: EndpointArg,
    /// Open-loop levels: requests started at these rates (requests per
    /// second, comma-separated) whatever the server does; TTFT and E2E count
    /// from each request's scheduled start. Not with --concurrency.
    #[arg(long, value_name = "R,R,...")]
    pub rate: Option<String>,
    /// How rate levels' requests arrive: constant (evenly spaced), poisson,
    /// or gamma (with --burstiness, as vllm bench serve).
    #[arg(long, default_value = "poisson", value_name = "ARRIVAL")]
    pub arrival: String,
    /// The gamma arrival's shape: 1 is Poisson, below 1 burstier, above 1
    /// steadier (the gaps' coefficient of variation is 1/sqrt(B)).
    #[arg(long, value_name = "B")]
    pub burstiness: Option<f64>,
    /// Most requests a rate level keeps in flight; a due request waits for a
    /// slot, and its latency still counts from when it was due [default: no cap].
    #[arg(long, value_name = "N")]
    pub max_concurrency: Option<u32>,
    /// Sweep: one request at a time, then the closed-loop maximum (the largest
    /// --concurrency), then N rates spread evenly between their throughputs.
    #[arg(long, value_name = "N")]
    pub sweep: Option<u32>,
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
    #[arg(long, value_name = "KEY=VALUE,...")]
    pub slo: Option<String>,
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
    #[arg(long, default_value_t = 40)]
    pub users: u32,
    /// Project and tools the students work with.
    #[arg(long, value_enum, default_value = "java")]
    pub scenario: ScenarioArg,
    /// Window for new coding requests, seconds (in-flight ones then finish).
    #[arg(long, default_value_t = 900.0, value_name = "SECONDS")]
    pub duration: f64,
    /// Students start within this many seconds.
    #[arg(long, default_value_t = 120.0, value_name = "SECONDS")]
    pub ramp_up: f64,
    /// Follow-up requests after the lab exercise, per student (0 to 3).
    #[arg(long, default_value_t = 3)]
    pub follow_ups: u32,
    /// Shortest pause between a student's requests, seconds.
    #[arg(long, default_value_t = 20.0, value_name = "SECONDS")]
    pub pause_min: f64,
    /// Longest pause between a student's requests, seconds.
    #[arg(long, default_value_t = 90.0, value_name = "SECONDS")]
    pub pause_max: f64,
    /// One API key per student (CSV or one key a line); keys are never printed.
    #[arg(long, env = "CODENDUM_API_KEYS_FILE", value_name = "FILE")]
    pub api_keys_file: Option<PathBuf>,
    /// A captured system prompt and tools (OpenCode request body JSON, or {system, tools}).
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// Measured client times per tool kind (a capture's client-times.json, or its folder)
    /// instead of the built-in ones.
    #[arg(long, value_name = "FILE")]
    pub client_times: Option<PathBuf>,
    /// Client context limit, tokens [default: the server's max_model_len].
    #[arg(long, value_name = "TOKENS")]
    pub context_limit: Option<u64>,
    /// Client output limit (max_tokens of every step), tokens.
    #[arg(long, default_value_t = 8192, value_name = "TOKENS")]
    pub output_limit: u32,
    /// A server timeline recorded on the host (codendum metrics --watch 5 --json) to fold in.
    #[arg(long, value_name = "FILE")]
    pub server_timeline: Option<PathBuf>,
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

/// `codendum metrics`.
#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// vLLM /metrics URL(s), comma-separated for replicas [default: from --base-url].
    #[arg(long, env = "CODENDUM_METRICS_URL", value_name = "URL[,URL...]")]
    pub metrics_url: Option<String>,
    /// OpenAI base URL; /metrics is taken at its origin.
    #[arg(long, env = "CODENDUM_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,
    /// PEM bundle of the private CA.
    #[arg(long, env = "CODENDUM_CACERT", value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Print a line every SECONDS with rates over the interval.
    #[arg(long, value_name = "SECONDS")]
    pub watch: Option<f64>,
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
    #[arg(long, env = "CODENDUM_PROFILE", default_value = "classroom-64k")]
    pub profile: String,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to bind (0: any free port, printed on stderr).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Run this many times faster than real time.
    #[arg(long, default_value_t = 1.0, value_name = "N")]
    pub time_scale: f64,
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
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
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
    #[arg(long, env = "CODENDUM_CACERT", value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Keep no message text at all: no prompt.json (only sizes, times, kinds, sessions and
    /// tool names, which is all replay and export-trace need).
    #[arg(long)]
    pub no_text: bool,
}

/// `codendum report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results folder (bench-results/<timestamp>/ or classroom-<timestamp>/).
    pub folder: PathBuf,
    /// A server timeline recorded on the host, folded into the report.
    #[arg(long, value_name = "FILE")]
    pub server_timeline: Option<PathBuf>,
}

/// `codendum compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more results folders; the first is the baseline.
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
    #[arg(long, value_name = "N,N,...")]
    pub users: Option<String>,
    /// Upper end of the search for the largest class, students [default: 200].
    #[arg(long, value_name = "N")]
    pub max_users: Option<u32>,
    /// Server profiles to try (names in profiles/ or .toml paths), comma-separated.
    #[arg(
        long,
        default_value = "classroom-64k,classroom-64k-high-concurrency",
        value_name = "NAME,..."
    )]
    pub profile: String,
    /// Also try these max_num_seqs values for every profile, comma-separated.
    #[arg(long, value_name = "N,N,...")]
    pub max_num_seqs: Option<String>,
    /// Project and tools the students work with.
    #[arg(long, value_enum, default_value = "java")]
    pub scenario: ScenarioArg,
    /// Window for new coding requests, seconds.
    #[arg(long, default_value_t = 900.0, value_name = "SECONDS")]
    pub duration: f64,
    /// Seed of every random choice (the same seed gives identical results).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seeds a search runs (--seed, --seed + 1, …): the largest class is
    /// answered as the range the seeds give and how many of them each class
    /// meets the targets in. --users plans use --seed only.
    #[arg(long, default_value_t = codendum::plan::config::DEFAULT_SEEDS, value_name = "N")]
    pub seeds: u32,
    /// Threads to run cells on [default: the machine's cores].
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Fleet sizes to try, comma-separated: N replicas of each profile (each its
    /// own engine, KV blocks and prefix cache). [default: the profile's [fleet]
    /// replicas, else 1]
    #[arg(long, value_name = "N,N,...")]
    pub replicas: Option<String>,
    /// Routers to try in front of fleets, comma-separated (the policy names
    /// come from the router's own list).
    #[arg(long, value_name = "POLICY,...", help = router_help(
        "Routers to try in front of fleets, comma-separated",
        "[default: the profile's [fleet] router]",
    ))]
    pub router: Option<String>,
    /// Folder under which the plan's folder is created.
    #[arg(long, default_value = "bench-results", value_name = "DIR")]
    pub results_dir: PathBuf,
    /// Search the highest request rate each profile carries within --slo
    /// instead of the largest class (bench --find-rate against the profile's
    /// twin, in virtual time).
    #[arg(long, requires = "slo")]
    pub rate: bool,
    /// With --rate: the per-request objectives (as bench --slo).
    #[arg(long, value_name = "KEY=VALUE,...")]
    pub slo: Option<String>,
    /// With --rate: the prompt shape of the requests.
    #[arg(long, default_value = "short", value_name = "SHAPE")]
    pub shape: String,
    /// With --rate: output tokens per request.
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub output_tokens: u32,
    /// With --rate: requests per level [default: a minute of arrivals, at least 16].
    #[arg(long, value_name = "N")]
    pub requests_per_level: Option<u64>,
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
    #[arg(long, value_name = "N")]
    pub max_num_seqs: Option<u32>,
    /// The server's --max-num-batched-tokens [default: the twin's, else 8192].
    #[arg(long, value_name = "TOKENS")]
    pub max_num_batched_tokens: Option<u32>,
    /// Copy [targets] from this profile (a name or a .toml path).
    #[arg(long, value_name = "PROFILE")]
    pub targets_from: Option<String>,
    /// Bandwidth that turns fitted seconds into the hardware TOML's bytes, GB/s
    /// (a normalisation; the fit measures time).
    #[arg(long, default_value_t = 1000.0, value_name = "GB_S")]
    pub memory_bandwidth_gb_s: f64,
    /// Bootstrap resamples for the uncertainties.
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub bootstrap: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Backtest instead of fitting: replay each RUN_DIR (bench runs) on the
    /// embedded twin with this profile and print predicted against measured
    /// per level; exit 1 when a figure is beyond --tolerance.
    #[arg(long, value_name = "PROFILE")]
    pub check: Option<String>,
    /// With --check: the largest error allowed, percent.
    #[arg(
        long,
        default_value_t = 10.0,
        value_name = "PERCENT",
        requires = "check"
    )]
    pub tolerance: f64,
}

/// The help of a router flag: what it does, the policies (from the router's
/// own list of names), that one replica ignores it, and its default.
fn router_help(what: &str, default: &str) -> String {
    format!(
        "{what}: {}. With one replica it has no effect (a note says so). {default}",
        codendum_core::profile::fleet::RouterPolicy::names()
    )
}
