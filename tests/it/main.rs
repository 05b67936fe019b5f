//! Every integration test in one binary (one link of the crate instead of
//! one per file). Each module is one area; the support modules are shared.
//! The capacity suite (its own harness) and the timing checks in
//! `tests/perf/` stay separate binaries.

// The harness self-tests in it are used by tests/capacity.rs only.
#[allow(dead_code)]
#[path = "../capacity_support/mod.rs"]
mod capacity_support;
mod capture_support;
mod classroom_support;
mod cli_support;
mod client_support;
mod fleet_live_support;
mod fleet_support;
mod persona_support;
mod report_support;
#[path = "../servers/mod.rs"]
mod servers;

mod bench_driver;
mod bench_results;
mod bench_stats;
mod calibrate_inputs;
mod calibrate_twin;
mod capacity_checks;
mod capacity_lock;
mod capture_cli;
mod capture_proxy;
mod capture_roundtrip;
mod capture_sessions;
mod capture_tls;
mod classroom_agent;
mod classroom_class;
mod classroom_compaction;
mod cli_bad_input;
mod cli_busy_guard;
mod client_chunk;
mod client_connections;
mod client_http;
mod client_sse;
mod client_stream;
mod client_tls;
mod e2e_bench;
mod e2e_interrupt;
mod e2e_secrets;
mod faults_bench;
mod faults_classroom;
mod fleet_cli;
mod fleet_http;
mod fleet_live_bench;
mod fleet_routing;
mod fleet_same;
mod fuzz_props;
mod keys_file;
mod llama_cpp;
mod metrics_reach;
mod opencode_real;
mod persona_conversations;
mod persona_http;
mod persona_opencode;
mod persona_sessions;
mod plan_fleet;
mod plan_inproc;
mod plan_run;
mod plan_search;
mod plan_targets;
mod prom_http;
mod prom_parse;
mod prom_window;
mod prometheus_bad_input;
mod prometheus_bench;
mod proxy_http;
mod report_compare;
mod report_documents;
mod report_svg;
mod server_match;
mod targets_shared;
mod time_split;
mod twin_http;
mod twin_throughput;
mod vllm_032;
