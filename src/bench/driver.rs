//! The closed-loop driver: for each shape, for each level N, exactly N
//! requests in flight; a new one starts the moment one ends, until the
//! level's requests have all started or its time cap passed. Requests still
//! in flight then finish and count. Every finished request is appended to
//! `requests.jsonl` at once.

use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::watch;

use super::arrival::schedule;
use super::config::BenchConfig;
use super::level::{client_cpu_share, process_cpu_s, record_from_outcome};
use super::prompt::{load_session_id, request_body, LevelLoad, ShapePrompt};
use super::seams::{ServerInfo, ServerMetrics};
use crate::events::{Event, Events};
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::openai::{CallOutcome, CallRequest, Transport};
use codendum_core::results::level::{summarize_level, LevelFrame};
use codendum_core::results::{JsonlFile, LevelEnd, LevelSummary, RateFigures, RequestRecord};

/// Resolves when `stop` holds `true`; never when its sender is gone.
pub(crate) async fn stopped(mut stop: watch::Receiver<bool>) {
    loop {
        if *stop.borrow_and_update() {
            return;
        }
        if stop.changed().await.is_err() {
            futures::future::pending::<()>().await;
        }
    }
}

/// What one level needs from the run.
pub(crate) struct LevelContext<'a> {
    pub config: &'a BenchConfig,
    /// The run's cells and the shapes that fit.
    pub plan: &'a super::BenchPlan,
    /// The key every request carries.
    pub api_key: Option<codendum_core::access::Secret>,
    pub transport: &'a dyn Transport,
    /// `/tokenize`, for streams that carry no usage.
    pub info: &'a dyn ServerInfo,
    pub metrics: Option<&'a dyn ServerMetrics>,
    pub clock: &'a Clock,
    pub stop: watch::Receiver<bool>,
    pub model: &'a str,
    pub run_id: &'a str,
    /// Clock seconds at which the run started (records are relative to it).
    pub run_t0: f64,
    /// Where the level's progress is told.
    pub events: Events,
    /// Whether the client's CPU is measured ([`super::BenchDeps`]).
    pub measure_client_cpu: bool,
}

/// A finished request: its index, when it started (when it was due, on a
/// rate level), how late it was sent (rate levels only), and its outcome.
type Finished = (u64, f64, Option<f64>, CallOutcome);
type InFlight<'a> = FuturesUnordered<BoxFuture<'a, Finished>>;

/// Where a level's finished requests go: `requests.jsonl` at once, the
/// server timeline now and then, the progress line and the level's records.
struct LevelSink<'s> {
    ctx: &'s LevelContext<'s>,
    shape: &'s str,
    n: u32,
    requests: &'s mut JsonlFile<RequestRecord>,
    timeline: Option<&'s mut JsonlFile<serde_json::Value>>,
    timeline_written: f64,
    records: Vec<RequestRecord>,
    errors: u64,
}

impl LevelSink<'_> {
    fn finish(&mut self, done: Finished) -> Result<(), Error> {
        let (index, started_at, lag, outcome) = done;
        let mut record = record_from_outcome(self.shape, self.n, index, started_at, &outcome);
        if let Some(lag) = lag {
            record.scheduled_at = Some(started_at);
            record.send_lag_s = Some(lag);
        }
        self.requests.append(&record)?;
        // The /metrics samples go to server-timeline.jsonl as the run goes
        // (at most once a simulated second), so a killed run keeps them too.
        let now = self.ctx.clock.now_secs();
        if now - self.timeline_written >= 1.0 {
            super::drain_timeline(self.ctx.metrics, self.timeline.as_deref_mut())?;
            self.timeline_written = now;
        }
        if !record.ok {
            self.errors += 1;
        }
        self.ctx.events.emit(Event::RequestFinished {
            errors: self.errors,
        });
        self.records.push(record);
        Ok(())
    }
}

/// Runs one level × shape and returns its summary.
pub(crate) async fn run_level(
    ctx: &LevelContext<'_>,
    prompt: &ShapePrompt,
    n: u32,
    planned: u64,
    requests: &mut JsonlFile<RequestRecord>,
    timeline: Option<&mut JsonlFile<serde_json::Value>>,
) -> Result<LevelSummary, Error> {
    let shape_name = prompt.shape.name();
    let shape: &str = &shape_name;
    let level_t0 = ctx.clock.now_secs();
    let cpu_t0 = own_cpu(ctx);
    if let Some(m) = ctx.metrics {
        m.sample_now().await;
    }
    ctx.events.emit(Event::LevelStarted {
        shape: shape.to_string(),
        concurrency: n,
        planned,
    });
    let mut sink = LevelSink {
        ctx,
        shape,
        n,
        requests,
        timeline,
        timeline_written: level_t0,
        records: Vec::new(),
        errors: 0,
    };
    let mut in_flight: InFlight<'_> = FuturesUnordered::new();
    let ended_by = keep_level_full(ctx, prompt, n, planned, &mut in_flight, &mut sink).await?;
    let (ended_by, abandoned) =
        let_in_flight_finish(ctx, ended_by, &mut in_flight, &mut sink).await?;
    drop(in_flight);
    ctx.events.emit(Event::LevelFinished);
    if let Some(m) = ctx.metrics {
        m.sample_now().await;
    }
    let level_t1 = ctx.clock.now_secs();
    let window = ctx.metrics.map(|m| m.window(level_t0, level_t1));
    let frame = LevelFrame {
        shape,
        concurrency: n,
        ended_by,
        started_at_s: level_t0 - ctx.run_t0,
        wall_time_s: level_t1 - level_t0,
        abandoned,
        rate: None,
        slo: ctx.config.slo.as_ref(),
    };
    let mut level = summarize_level(frame, &sink.records, window);
    level.client_cpu = client_cpu_share(cpu_t0, level_t1 - level_t0);
    Ok(level)
}

/// The process's CPU time at a level's start, against a live server only:
/// the embedded twin runs in this process, so its CPU is not the client's.
fn own_cpu(ctx: &LevelContext<'_>) -> Option<f64> {
    ctx.measure_client_cpu.then(process_cpu_s).flatten()
}

/// Runs one rate level × shape: `planned` requests started at their due
/// instants (the open loop's schedule), whatever the server does; at most
/// `--max-concurrency` in flight, a due request otherwise waiting for a
/// slot. TTFT and E2E count from when a request was due, and how late it
/// was sent is recorded. Returns the level's summary.
pub(crate) async fn run_rate_level(
    ctx: &LevelContext<'_>,
    prompt: &ShapePrompt,
    rate: f64,
    planned: u64,
    requests: &mut JsonlFile<RequestRecord>,
    timeline: Option<&mut JsonlFile<serde_json::Value>>,
) -> Result<LevelSummary, Error> {
    let open = ctx
        .config
        .load
        .open_loop()
        .ok_or_else(|| Error::Failed("a rate level without open-loop settings".into()))?;
    let shape_name = prompt.shape.name();
    let shape: &str = &shape_name;
    let cap = open.max_concurrency;
    let n = cap.unwrap_or(0);
    // One schedule per (seed, rate): the same flags repeat the arrivals.
    let due = schedule(
        open.arrival,
        rate,
        planned,
        ctx.config.seed ^ rate.to_bits(),
    );
    let level_t0 = ctx.clock.now_secs();
    let cpu_t0 = own_cpu(ctx);
    if let Some(m) = ctx.metrics {
        m.sample_now().await;
    }
    ctx.events.emit(Event::LevelStarted {
        shape: shape.to_string(),
        concurrency: n,
        planned,
    });
    let mut sink = LevelSink {
        ctx,
        shape,
        n,
        requests,
        timeline,
        timeline_written: level_t0,
        records: Vec::new(),
        errors: 0,
    };
    let mut in_flight: InFlight<'_> = FuturesUnordered::new();
    let deadline = ctx
        .config
        .level_duration
        .map(|d| level_t0 + d.as_secs_f64());
    let load = LevelLoad::Rate(rate);
    let mut sent = Vec::with_capacity(due.len());
    let mut ended_by = LevelEnd::Requests;
    'arrivals: for (index, offset) in due.iter().enumerate() {
        let at = level_t0 + offset;
        if deadline.is_some_and(|d| at > d) {
            ended_by = LevelEnd::Duration;
            break;
        }
        // Finish what ends before this request is due, then wait for a
        // free slot if the client's cap is reached.
        // Due and now compare as the clock's own durations, so a wait never
        // ends a nanosecond short of its instant (a spin on a paused clock).
        let due_at = Duration::from_secs_f64(at.max(0.0));
        loop {
            let full = cap.is_some_and(|c| in_flight.len() >= c as usize);
            let waiting = ctx.clock.now() < due_at;
            if !waiting && !full {
                break;
            }
            tokio::select! {
                // In order: a run in virtual time is the same every time.
                biased;
                done = in_flight.next(), if !in_flight.is_empty() => {
                    if let Some(done) = done {
                        sink.finish(done)?;
                    }
                }
                _ = ctx.clock.sleep_until(due_at), if waiting => {}
                _ = stopped(ctx.stop.clone()) => {
                    ended_by = LevelEnd::Interrupted;
                    break 'arrivals;
                }
            }
        }
        sent.push(ctx.clock.now_secs() - level_t0);
        in_flight.push(start_request_at(
            ctx,
            prompt,
            &load,
            n,
            index as u64,
            at - ctx.run_t0,
        ));
    }
    let (ended_by, abandoned) =
        let_in_flight_finish(ctx, ended_by, &mut in_flight, &mut sink).await?;
    drop(in_flight);
    ctx.events.emit(Event::LevelFinished);
    if let Some(m) = ctx.metrics {
        m.sample_now().await;
    }
    let level_t1 = ctx.clock.now_secs();
    let window = ctx.metrics.map(|m| m.window(level_t0, level_t1));
    let due_sent = &due[..sent.len()];
    let rate_figures = RateFigures {
        rate_per_s: rate,
        arrival: open.arrival.name(),
        max_concurrency: cap,
        offered_rate_per_s: span_rate(due_sent),
        achieved_rate_per_s: span_rate(&sent),
        saturated: saturated(&backlog_at_arrivals(
            due_sent,
            &sink.records,
            level_t0 - ctx.run_t0,
        )),
        ..RateFigures::default()
    };
    let frame = LevelFrame {
        shape,
        concurrency: n,
        ended_by,
        started_at_s: level_t0 - ctx.run_t0,
        wall_time_s: level_t1 - level_t0,
        abandoned,
        rate: Some(rate_figures),
        slo: ctx.config.slo.as_ref(),
    };
    let mut level = summarize_level(frame, &sink.records, window);
    level.client_cpu = client_cpu_share(cpu_t0, level_t1 - level_t0);
    Ok(level)
}

/// Requests per second between the first and the last of `instants`
/// (seconds): `(n - 1) / span`; `None` for fewer than two.
fn span_rate(instants: &[f64]) -> Option<f64> {
    let (first, last) = (instants.first()?, instants.last()?);
    let span = last - first;
    (instants.len() >= 2 && span > 0.0).then(|| (instants.len() - 1) as f64 / span)
}

/// The client's backlog at each arrival: requests due so far that had not
/// finished (in flight on the server, or waiting for a client slot).
/// `due` are offsets from the level's start, `level_start` its start in
/// seconds since the run started; a record's end is when it was due plus
/// its latency (which counts from then).
pub fn backlog_at_arrivals(due: &[f64], records: &[RequestRecord], level_start: f64) -> Vec<usize> {
    let mut ends: Vec<f64> = records
        .iter()
        .map(|r| r.started_at - level_start + r.e2e_s)
        .collect();
    ends.sort_by(f64::total_cmp);
    due.iter()
        .enumerate()
        .map(|(i, d)| (i + 1).saturating_sub(ends.partition_point(|e| e <= d)))
        .collect()
}

/// Whether a rate level saturated: its backlog grew through the level. The
/// first quarter of the arrivals is the queue filling; from the second
/// quarter to the third and on to the last the mean backlog rises, by more
/// than 2 requests and 5 % of the level's requests in all. A stable queue,
/// however long, only fluctuates.
pub fn saturated(backlog: &[usize]) -> bool {
    if backlog.len() < 8 {
        return false;
    }
    let q = backlog.len() / 4;
    let mean = |s: &[usize]| s.iter().sum::<usize>() as f64 / s.len().max(1) as f64;
    let (q2, q3, q4) = (
        mean(&backlog[q..2 * q]),
        mean(&backlog[2 * q..3 * q]),
        mean(&backlog[3 * q..]),
    );
    let threshold = 2.0_f64.max(0.05 * backlog.len() as f64);
    q2 < q3 && q3 < q4 && q4 - q2 > threshold
}

/// Keeps `n` requests in flight, a new one starting the moment one ends,
/// until the level's requests have all started, its time cap passed or the
/// run was stopped; says which.
async fn keep_level_full<'a>(
    ctx: &'a LevelContext<'a>,
    prompt: &ShapePrompt,
    n: u32,
    planned: u64,
    in_flight: &mut InFlight<'a>,
    sink: &mut LevelSink<'_>,
) -> Result<LevelEnd, Error> {
    let deadline = ctx.config.level_duration.map(|d| ctx.clock.now() + d);
    let start = |index: u64| start_request(ctx, prompt, n, index);
    let mut started = 0u64;
    let mut ended_by = if *ctx.stop.borrow() {
        Some(LevelEnd::Interrupted)
    } else {
        None
    };
    if ended_by.is_none() {
        while started < planned.min(u64::from(n)) {
            in_flight.push(start(started));
            started += 1;
        }
        if started >= planned {
            ended_by = Some(LevelEnd::Requests);
        }
    }
    while ended_by.is_none() {
        tokio::select! {
            // In order: a run in virtual time is the same every time.
            biased;
            done = in_flight.next() => {
                let Some(done) = done else { break };
                sink.finish(done)?;
                in_flight.push(start(started));
                started += 1;
                if started >= planned {
                    ended_by = Some(LevelEnd::Requests);
                }
            }
            _ = sleep_until_opt(ctx.clock, deadline) => ended_by = Some(LevelEnd::Duration),
            _ = stopped(ctx.stop.clone()) => ended_by = Some(LevelEnd::Interrupted),
        }
    }
    Ok(ended_by.unwrap_or(LevelEnd::Requests))
}

/// Lets what is in flight finish; an interruption (before or during this
/// wait) limits the wait to the grace period. Returns how the level ended
/// and how many requests were abandoned.
async fn let_in_flight_finish(
    ctx: &LevelContext<'_>,
    mut ended_by: LevelEnd,
    in_flight: &mut InFlight<'_>,
    sink: &mut LevelSink<'_>,
) -> Result<(LevelEnd, u64), Error> {
    if ended_by != LevelEnd::Interrupted {
        loop {
            tokio::select! {
                // In order: a run in virtual time is the same every time.
                biased;
                done = in_flight.next() => match done {
                    Some(done) => sink.finish(done)?,
                    None => break,
                },
                _ = stopped(ctx.stop.clone()) => {
                    ended_by = LevelEnd::Interrupted;
                    break;
                }
            }
        }
    }
    let mut abandoned = 0u64;
    if ended_by == LevelEnd::Interrupted {
        let drained = ctx
            .clock
            .timeout(ctx.config.cancel_grace, async {
                while let Some(done) = in_flight.next().await {
                    sink.finish(done)?;
                }
                Ok::<(), Error>(())
            })
            .await;
        match drained {
            Ok(result) => result?,
            Err(_) => abandoned = in_flight.len() as u64,
        }
    }
    Ok((ended_by, abandoned))
}

/// Starts one request of a closed-loop level.
fn start_request<'a>(
    ctx: &'a LevelContext<'a>,
    prompt: &ShapePrompt,
    n: u32,
    index: u64,
) -> BoxFuture<'a, Finished> {
    let now = ctx.clock.now_secs() - ctx.run_t0;
    start_request_at(ctx, prompt, &LevelLoad::Closed(n), n, index, now)
}

/// Starts one request of a level, due at `due` (seconds since the run
/// started; a closed-loop request is due when it starts): its tagged
/// prompt, its body, its clock. The outcome's times count from `due`.
fn start_request_at<'a>(
    ctx: &'a LevelContext<'a>,
    prompt: &ShapePrompt,
    load: &LevelLoad,
    n: u32,
    index: u64,
    due: f64,
) -> BoxFuture<'a, Finished> {
    let started_at = ctx.clock.now_secs() - ctx.run_t0;
    let lag = (started_at - due).max(0.0);
    let open = matches!(load, LevelLoad::Rate(_));
    let text = prompt.prompt_for(ctx.run_id, load, index);
    let request = CallRequest {
        endpoint: ctx.config.endpoint,
        body: request_body(
            ctx.config.endpoint,
            ctx.model,
            &text,
            ctx.config.output_tokens,
        )
        .into(),
        api_key: ctx.api_key.clone(),
        headers: vec![(
            "x-session-id".to_string(),
            load_session_id(prompt.shape, load, index),
        )],
        record_gaps: false,
        first_token: None,
    };
    let _ = n;
    Box::pin(async move {
        let mut outcome = ctx.transport.call(request).await;
        if outcome.is_ok() && outcome.usage.is_none() {
            recount(ctx, &text, &mut outcome).await;
        }
        if open {
            // Latency counts from when the request was due.
            outcome.ttft = outcome.ttft.map(|t| t + lag);
            outcome.e2e += lag;
            (index, due, Some(lag), outcome)
        } else {
            (index, started_at, None, outcome)
        }
    })
}

/// A stream without usage: asks the server's `/tokenize` for the output
/// received and the prompt sent, so the counts are the server's and not
/// chunks (a chunk can carry several tokens). Nothing changes when the
/// server has no `/tokenize` (llama.cpp): the chunk count stands, marked
/// as the client's. The slot's next request waits for this one round trip.
async fn recount(ctx: &LevelContext<'_>, prompt: &str, outcome: &mut CallOutcome) {
    let m = &outcome.message;
    let mut received = m.reasoning.clone();
    received.push_str(&m.content);
    if let Ok(Some(n)) = ctx.info.tokenize(ctx.model, &received).await {
        outcome.tokenized_output = Some(n);
        if let Ok(Some(p)) = ctx
            .info
            .tokenize_as_sent(ctx.config.endpoint, ctx.model, prompt)
            .await
        {
            outcome.tokenized_input = Some(p);
        }
    }
}

async fn sleep_until_opt(clock: &Clock, deadline: Option<Duration>) {
    match deadline {
        Some(t) => clock.sleep_until(t).await,
        None => futures::future::pending().await,
    }
}
