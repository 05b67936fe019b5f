//! codendum's shared vocabulary: what every other crate of the workspace
//! (the twin, the reports, the drivers, the capacity suite) speaks, and
//! depends on nothing of ours.
//!
//! - [`bound`]: the one judging rule of a figure with its interval against
//!   a limit (met, indeterminate, missed);
//! - [`capture`]: the files of a `codendum capture` folder (header, one
//!   line per call), one definition for every reader;
//! - [`class`]: class files, the distributions a simulated class draws from;
//! - [`clock`]: the one clock everything that waits or measures time asks;
//! - [`error`]: typed errors with a stable kind and exit code;
//! - [`flags`]: flag values as typed values (the one list parser, the
//!   largest concurrency);
//! - [`stats`]: percentiles (numpy's linear interpolation) and summaries;
//! - [`observed`]: a real class (a capture, imported sessions) as the
//!   classroom's records, and the server's side of it from a timeline;
//! - [`openai`]: the OpenAI-compatible wire: request bodies, SSE, stream
//!   events, call outcomes, the endpoint kind, the stable error kinds, who
//!   counted a token figure, and the [`openai::Transport`] drivers call;
//! - [`prom`]: the Prometheus text format and vLLM's figures in it;
//! - [`shape`]: a bench request's prompt shape (`short`, `long`, a size);
//! - [`access`]: where the server is and how to get in (base URL, keys, CA,
//!   `/metrics` URLs) and the provenance results record;
//! - [`profile`]: server profiles and hardware TOMLs;
//! - [`targets`]: what a profile must meet (`[targets]`), one definition;
//! - [`trace`]: recorded traffic as sizes, timing and prefix blocks (Mooncake
//!   and AIPerf traces, no text);
//! - [`server_figures`]: the server's figures over a window (peaks,
//!   increases, the time split, each replica's), computed by [`prom`] and
//!   kept by [`results`];
//! - [`results`]: results folders, records, the tables of figures and the
//!   summaries computed from the records.
//!
//! Imports point one way: `stats`, `bound`, `server_figures` → `prom` →
//! `results` (records, summaries, tables, and the targets as results files
//! list them, which a capacity search's answer keeps) → `targets` (which
//! judges summaries and lists its targets for the results files).

pub mod access;
pub mod bound;
pub mod capture;
pub mod class;
pub mod clock;
pub mod error;
pub mod flags;
pub mod observed;
pub mod openai;
pub mod profile;
pub mod prom;
pub mod results;
pub mod server_figures;
pub mod shape;
pub mod stats;
pub mod targets;
pub mod trace;
