//! `/metrics` in vLLM 0.30's Prometheus exposition (text format 0.0.4):
//! the families, HELP/TYPE lines, label sets and order of a real server,
//! with the twin's live values.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::engine_stats::{EngineStats, Histogram};
use codendum_core::profile::Profile;

/// Formats a float as Python's prometheus client does (`16.0`,
/// `8.8373e+06`, `1.79600646692e+09`, `+Inf`, `NaN`).
pub fn go_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let s = format!("{v:?}");
    if let Some(dot) = s.find('.') {
        if v > 0.0 && dot > 6 && !s.contains('e') {
            let mantissa = format!("{}.{}{}", &s[..1], &s[1..dot], &s[dot + 1..]);
            let mantissa = mantissa.trim_end_matches(['0', '.']);
            return format!("{mantissa}e+0{}", dot - 1);
        }
    }
    s
}

/// What `/metrics` reports besides the engine statistics.
#[derive(Debug, Clone)]
pub struct MetricsContext<'a> {
    /// The profile (model path label, cache config).
    pub profile: &'a Profile,
    /// Unix seconds the twin started (the `_created` values).
    pub started_unix: f64,
    /// HTTP requests by (handler, method, status class).
    pub http_requests: &'a BTreeMap<(String, String, String), u64>,
}

struct Out<'a> {
    s: String,
    engine: String,
    labels: String,
    ctx: &'a MetricsContext<'a>,
}

impl Out<'_> {
    fn head(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.s, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, extra: &[(&str, &str)], v: f64) {
        let mut labels: Vec<(String, String)> = vec![
            ("engine".into(), self.engine.clone()),
            ("model_name".into(), self.labels.clone()),
        ];
        labels.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        labels.sort();
        let body: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        let _ = writeln!(self.s, "{name}{{{}}} {}", body.join(","), go_float(v));
    }

    fn gauge(&mut self, name: &str, help: &str, values: &[(&[(&str, &str)], f64)]) {
        self.head(name, "gauge", help);
        for (labels, v) in values {
            self.sample(name, labels, *v);
        }
    }

    fn counter(&mut self, base: &str, help: &str, values: &[(&[(&str, &str)], f64)]) {
        let total = format!("{base}_total");
        self.head(&total, "counter", help);
        for (labels, v) in values {
            self.sample(&total, labels, *v);
        }
        let created = format!("{base}_created");
        self.head(&created, "gauge", help);
        let t = self.ctx.started_unix;
        for (labels, _) in values {
            self.sample(&created, labels, t);
        }
    }

    fn histogram(&mut self, name: &str, help: &str, h: &Histogram) {
        self.head(name, "histogram", help);
        let bucket = format!("{name}_bucket");
        for (i, c) in h.cumulative().into_iter().enumerate() {
            let le = h.bounds.get(i).map_or("+Inf".to_string(), |b| go_float(*b));
            self.sample(&bucket, &[("le", &le)], c as f64);
        }
        self.sample(&format!("{name}_count"), &[], h.count as f64);
        self.sample(&format!("{name}_sum"), &[], h.sum);
        let created = format!("{name}_created");
        self.head(&created, "gauge", help);
        let t = self.ctx.started_unix;
        self.sample(&created, &[], t);
    }
}

const NONE: &[(&str, &str)] = &[];

/// Renders the whole `/metrics` page (one engine, `engine="0"`).
pub fn render(st: &EngineStats, ctx: &MetricsContext<'_>) -> String {
    let mut s = String::with_capacity(48 * 1024);
    process_families(&mut s, ctx.started_unix);
    s.push_str(&render_engine(st, ctx, 0));
    http_families(&mut s, ctx);
    s
}

/// The vLLM families of one engine (no process or HTTP families), every
/// sample labelled `engine="<engine>"`: the part of a page a fleet repeats
/// per replica (`fleet::merge_families`).
pub fn render_engine(st: &EngineStats, ctx: &MetricsContext<'_>, engine: usize) -> String {
    let p = ctx.profile;
    let mut o = Out {
        s: String::with_capacity(40 * 1024),
        engine: engine.to_string(),
        labels: p.server.model.replace('\\', "\\\\").replace('"', "\\\""),
        ctx,
    };
    for (what, help) in [
        ("flops", "Estimated number of floating point operations per GPU (for Model Flops Utilization calculations)."),
        ("read_bytes", "Estimated number of bytes read from memory per GPU (for Model Flops Utilization calculations)."),
        ("write_bytes", "Estimated number of bytes written to memory per GPU (for Model Flops Utilization calculations)."),
    ] {
        o.counter(&format!("vllm:estimated_{what}_per_gpu"), help, &[(NONE, 0.0)]);
    }
    o.gauge(
        "vllm:num_requests_running",
        "Number of requests in model execution batches.",
        &[(NONE, st.running as f64)],
    );
    o.gauge(
        "vllm:num_requests_waiting",
        "Number of requests waiting to be processed.",
        &[(NONE, st.waiting as f64)],
    );
    o.gauge("vllm:num_requests_waiting_by_reason", "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
        &[(&[("reason", "capacity")], st.waiting as f64), (&[("reason", "deferred")], 0.0)]);
    o.gauge("vllm:engine_sleep_state", "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
        &[(&[("sleep_state", "awake")], 1.0), (&[("sleep_state", "weights_offloaded")], 0.0), (&[("sleep_state", "discard_all")], 0.0)]);
    o.gauge(
        "vllm:kv_cache_usage_perc",
        "KV-cache usage. 1 means 100 percent usage.",
        &[(NONE, st.kv_usage)],
    );
    o.counter(
        "vllm:prefix_cache_queries",
        "Prefix cache queries, in terms of number of queried tokens.",
        &[(NONE, st.prefix_queries as f64)],
    );
    o.counter(
        "vllm:prefix_cache_hits",
        "Prefix cache hits, in terms of number of cached tokens.",
        &[(NONE, st.prefix_hits as f64)],
    );
    o.counter("vllm:external_prefix_cache_queries", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", &[(NONE, 0.0)]);
    o.counter("vllm:external_prefix_cache_hits", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", &[(NONE, 0.0)]);
    o.counter(
        "vllm:mm_cache_queries",
        "Multi-modal cache queries, in terms of number of queried items.",
        &[(NONE, 0.0)],
    );
    o.counter(
        "vllm:mm_cache_hits",
        "Multi-modal cache hits, in terms of number of cached items.",
        &[(NONE, 0.0)],
    );
    o.counter(
        "vllm:num_preemptions",
        "Cumulative number of preemption from the engine.",
        &[(NONE, st.preemptions as f64)],
    );
    o.counter(
        "vllm:prompt_tokens",
        "Number of prefill tokens processed.",
        &[(NONE, st.prompt_tokens as f64)],
    );
    o.counter(
        "vllm:prompt_tokens_by_source",
        "Number of prompt tokens by source.",
        &[
            (
                &[("source", "local_compute")],
                st.prompt_tokens_computed as f64,
            ),
            (
                &[("source", "local_cache_hit")],
                st.prompt_tokens_cached as f64,
            ),
            (&[("source", "external_kv_transfer")], 0.0),
        ],
    );
    o.counter(
        "vllm:prompt_tokens_cached",
        "Number of cached prompt tokens (local + external).",
        &[(NONE, st.prompt_tokens_cached as f64)],
    );
    o.counter(
        "vllm:generation_tokens",
        "Number of generation tokens processed.",
        &[(NONE, st.generation_tokens as f64)],
    );
    o.counter(
        "vllm:request_success",
        "Count of successfully processed requests.",
        &[
            (&[("finished_reason", "stop")], st.finished_stop as f64),
            (&[("finished_reason", "length")], st.finished_length as f64),
            (&[("finished_reason", "abort")], st.finished_abort as f64),
            (&[("finished_reason", "error")], 0.0),
            (&[("finished_reason", "repetition")], 0.0),
        ],
    );
    o.histogram(
        "vllm:request_prompt_tokens",
        "Number of prefill tokens processed.",
        &st.request_prompt_tokens,
    );
    o.histogram(
        "vllm:request_generation_tokens",
        "Number of generation tokens processed.",
        &st.request_generation_tokens,
    );
    o.histogram(
        "vllm:iteration_tokens_total",
        "Histogram of number of tokens per engine_step.",
        &st.iteration_tokens,
    );
    o.histogram(
        "vllm:request_max_num_generation_tokens",
        "Histogram of maximum number of requested generation tokens.",
        &st.request_max_generation_tokens,
    );
    o.histogram(
        "vllm:request_params_n",
        "Histogram of the n request parameter.",
        &st.request_n,
    );
    o.histogram(
        "vllm:request_params_max_tokens",
        "Histogram of the max_tokens request parameter.",
        &st.request_max_tokens,
    );
    o.histogram(
        "vllm:time_to_first_token_seconds",
        "Histogram of time to first token in seconds.",
        &st.ttft,
    );
    o.histogram(
        "vllm:inter_token_latency_seconds",
        "Histogram of inter-token latency in seconds.",
        &st.itl,
    );
    o.histogram(
        "vllm:request_time_per_output_token_seconds",
        "Histogram of time_per_output_token_seconds per request.",
        &st.tpot,
    );
    o.histogram(
        "vllm:e2e_request_latency_seconds",
        "Histogram of e2e request latency in seconds.",
        &st.e2e,
    );
    o.histogram(
        "vllm:request_queue_time_seconds",
        "Histogram of time spent in WAITING phase for request.",
        &st.queue,
    );
    o.histogram(
        "vllm:request_inference_time_seconds",
        "Histogram of time spent in RUNNING phase for request.",
        &st.inference,
    );
    o.histogram(
        "vllm:request_prefill_time_seconds",
        "Histogram of time spent in PREFILL phase for request.",
        &st.prefill,
    );
    o.histogram(
        "vllm:request_decode_time_seconds",
        "Histogram of time spent in DECODE phase for request.",
        &st.decode,
    );
    o.histogram(
        "vllm:request_num_preemptions",
        "Histogram of the number of times a request was preempted.",
        &st.request_preemptions,
    );
    o.histogram(
        "vllm:request_prefill_kv_computed_tokens",
        "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
        &st.request_prefill_computed,
    );
    cache_config(&mut o.s, p, engine);
    o.s
}

/// The process families (`python_gc_*`, `python_info`,
/// `process_start_time_seconds`) a vLLM API server shows once.
pub fn process_families(s: &mut String, started: f64) {
    let _ = write!(
        s,
        "# HELP python_gc_objects_collected_total Objects collected during gc\n# TYPE python_gc_objects_collected_total counter\n"
    );
    for g in 0..3 {
        let _ = writeln!(
            s,
            "python_gc_objects_collected_total{{generation=\"{g}\"}} 0.0"
        );
    }
    let _ = write!(s, "# HELP python_gc_objects_uncollectable_total Uncollectable objects found during GC\n# TYPE python_gc_objects_uncollectable_total counter\n");
    for g in 0..3 {
        let _ = writeln!(
            s,
            "python_gc_objects_uncollectable_total{{generation=\"{g}\"}} 0.0"
        );
    }
    let _ = write!(s, "# HELP python_gc_collections_total Number of times this generation was collected\n# TYPE python_gc_collections_total counter\n");
    for g in 0..3 {
        let _ = writeln!(s, "python_gc_collections_total{{generation=\"{g}\"}} 0.0");
    }
    let _ = write!(s, "# HELP python_info Python platform information\n# TYPE python_info gauge\npython_info{{implementation=\"CPython\",major=\"3\",minor=\"12\",patchlevel=\"13\",version=\"3.12.13\"}} 1.0\n");
    let _ = write!(s, "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {}\n", go_float((started * 100.0).round() / 100.0));
}

fn cache_config(s: &mut String, p: &Profile, engine: usize) {
    let sv = &p.server;
    let concurrency = sv.kv_cache_tokens as f64 / f64::from(sv.max_model_len.max(1));
    let caching = if sv.enable_prefix_caching {
        "True"
    } else {
        "False"
    };
    let _ = write!(
        s,
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n\
vllm:cache_config_info{{_block_size_resolved=\"True\",block_size=\"{bs}\",cache_dtype=\"fp8\",enable_mamba_fine_grained_prefix_cache=\"False\",enable_prefix_caching=\"{caching}\",engine=\"{engine}\",gpu_memory_utilization=\"0.8\",is_attention_free=\"False\",kv_cache_dtype_skip_layers=\"[]\",kv_cache_layout=\"LBNHC\",kv_cache_max_concurrency=\"{concurrency:?}\",kv_cache_memory_bytes=\"None\",kv_cache_size_tokens=\"{tokens}\",kv_offloading_backend=\"native\",kv_offloading_size=\"None\",kv_sharing_fast_prefill=\"False\",mamba_block_size=\"None\",mamba_cache_dtype=\"auto\",mamba_cache_mode=\"none\",mamba_page_size_padded=\"None\",mamba_ssm_cache_dtype=\"auto\",num_cpu_blocks=\"None\",num_gpu_blocks=\"{blocks}\",num_gpu_blocks_override=\"None\",prefix_cache_retention_interval=\"0\",prefix_caching_hash_algo=\"sha256\",prefix_match_unit=\"{bs}\",replayssm_buffer_len=\"16\",skip_page_size_padded=\"None\",sliding_window=\"None\",use_kda_recoverssm=\"False\",use_replayssm=\"False\",user_specified_block_size=\"False\",user_specified_mamba_block_size=\"False\"}} 1.0\n",
        bs = sv.block_size,
        tokens = sv.kv_cache_tokens,
        blocks = p.num_gpu_blocks(),
    );
}

/// `http_requests_total` and `http_requests_created` of the API server.
pub fn http_families(s: &mut String, ctx: &MetricsContext<'_>) {
    let help = "Total number of requests by method, status and handler.";
    let _ = write!(
        s,
        "# HELP http_requests_total {help}\n# TYPE http_requests_total counter\n"
    );
    for ((handler, method, status), n) in ctx.http_requests {
        let _ = writeln!(s, "http_requests_total{{handler=\"{handler}\",method=\"{method}\",status=\"{status}\"}} {}", go_float(*n as f64));
    }
    let _ = write!(
        s,
        "# HELP http_requests_created {help}\n# TYPE http_requests_created gauge\n"
    );
    for (handler, method, status) in ctx.http_requests.keys() {
        let _ = writeln!(s, "http_requests_created{{handler=\"{handler}\",method=\"{method}\",status=\"{status}\"}} {}", go_float(ctx.started_unix));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_look_like_pythons() {
        assert_eq!(go_float(16.0), "16.0");
        assert_eq!(go_float(8_837_300.0), "8.8373e+06");
        assert_eq!(go_float(1_796_006_466.92), "1.79600646692e+09");
        assert_eq!(go_float(178_196.0), "178196.0");
        assert_eq!(go_float(1_000_000.0), "1e+06");
        assert_eq!(go_float(0.08517392142689442), "0.08517392142689442");
        assert_eq!(go_float(f64::INFINITY), "+Inf");
    }
}
