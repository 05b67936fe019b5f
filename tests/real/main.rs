//! Tests against real components we did not build: a real Prometheus
//! scraping twins, the real OpenCode client driving the twin, and the real
//! vLLM Router in front of two twins. The
//! harness (`codendum_testkit::real`) reports a test whose component is
//! missing as `ignored, <component> not installed`, and fails it when `CI`
//! is set; `.ci/run` installs them all.

mod aiperf;
mod capacity_router;
#[path = "../it/capture_support.rs"]
mod capture_support;
mod opencode;
mod prometheus_bad_input;
mod prometheus_bench;
#[path = "../replay_support/mod.rs"]
mod replay_support;
mod vllm_router;

use codendum_testkit::real::{run, trial, Component};

fn main() {
    use Component::{Aiperf, OpenCode, Prometheus, Ripgrep, VllmRouter};
    run(vec![
        trial(
            "aiperf::aiperf_replays_an_exported_trace_as_codendum_replay_does",
            &[Aiperf],
            aiperf::aiperf_replays_an_exported_trace_as_codendum_replay_does,
        ),
        trial(
            "opencode::real_opencode_reads_edits_writes_runs_and_answers",
            &[OpenCode, Ripgrep],
            opencode::real_opencode_reads_edits_writes_runs_and_answers,
        ),
        trial(
            "prometheus_bad_input::a_url_that_is_not_prometheus_says_what_answered",
            &[],
            prometheus_bad_input::a_url_that_is_not_prometheus_says_what_answered,
        ),
        trial(
            "prometheus_bad_input::an_unreachable_prometheus_is_exit_1_and_other_misuse_exit_2",
            &[],
            prometheus_bad_input::an_unreachable_prometheus_is_exit_1_and_other_misuse_exit_2,
        ),
        trial(
            "prometheus_bad_input::a_filter_without_series_names_the_metric_and_the_filter",
            &[Prometheus],
            prometheus_bad_input::a_filter_without_series_names_the_metric_and_the_filter,
        ),
        trial(
            "prometheus_bench::bench_through_prometheus_gives_the_direct_figures",
            &[Prometheus],
            prometheus_bench::bench_through_prometheus_gives_the_direct_figures,
        ),
        trial(
            "capacity_router::capacity_through_the_real_router",
            &[VllmRouter],
            capacity_router::capacity_through_the_real_router,
        ),
        trial(
            "vllm_router::real_router_in_front_of_two_twins",
            &[VllmRouter],
            vllm_router::real_router_in_front_of_two_twins,
        ),
    ]);
}
