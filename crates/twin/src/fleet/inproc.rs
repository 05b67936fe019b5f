//! The fleet without sockets: [`FleetTransport`] routes each call to one of
//! N [`InProcTransport`]s (each its own engine task on the current tokio
//! runtime, so a paused runtime runs the whole fleet in virtual time), and
//! [`FleetSampler`] samples the fleet and every replica on the clock.
//!
//! For `plan` (one cell of R replicas under a router), in place of
//! `InProcTransport::start` and `StatsSampler::spawn` (as `codendum::plan`
//! does it):
//!
//! ```text
//! # async fn cell(opts: codendum_twin::TwinOptions) {
//! use std::sync::Arc;
//! use codendum_core::profile::fleet::{FleetSpec, RouterPolicy};
//! use codendum_twin::fleet::{FleetSampler, FleetTransport};
//! let spec = FleetSpec { replicas: 4, router: RouterPolicy::Session };
//! let fleet = Arc::new(FleetTransport::start(opts, spec));
//! let sampler = FleetSampler::spawn(fleet.clone(), std::time::Duration::from_secs(1));
//! // run_classroom(&config, fleet.clone(), clock, sink, status).await ...
//! let timeline = sampler.finish(); // .fleet: summed; .replicas[i]: replica i
//! let served = fleet.served(); // requests per replica
//! let imbalance = codendum_twin::fleet::imbalance(&served); // max / mean
//! fleet.stop();
//! # }
//! ```

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;

use super::{FleetCore, FleetSpec};
use crate::inproc::InProcTransport;
use crate::request_body::generation_body_from_value;
use crate::TwinOptions;
use codendum_core::clock::Clock;
use codendum_core::openai::{CallOutcome, CallRequest, Endpoint, Transport};
use codendum_core::prom::{ServerSnapshot, TimelineSample};

/// N in-process twins behind a router.
#[derive(Debug)]
pub struct FleetTransport {
    core: Arc<FleetCore>,
    replicas: Vec<InProcTransport>,
}

impl FleetTransport {
    /// Starts `spec.replicas` engines of `opts` (same profile, clock,
    /// responder, keys and seed each) on the current tokio runtime. Per-call
    /// limit: [`crate::inproc::DEFAULT_TIMEOUT`].
    ///
    /// # Panics
    /// When called outside a tokio runtime (as `tokio::spawn`).
    pub fn start(opts: TwinOptions, spec: FleetSpec) -> Self {
        let core = Arc::new(FleetCore::new(spec, &opts.profile, opts.seed));
        let replicas = (0..spec.replicas.max(1))
            .map(|_| InProcTransport::start_shared(opts.clone(), Some(core.ids.clone())))
            .collect();
        FleetTransport { core, replicas }
    }

    /// Sets every replica's per-call limit (simulated time; `None`: none).
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.replicas = self
            .replicas
            .into_iter()
            .map(|r| r.with_timeout(timeout))
            .collect();
        self
    }

    /// The replicas.
    pub fn replicas(&self) -> &[InProcTransport] {
        &self.replicas
    }

    /// The router and the loads.
    pub fn core(&self) -> &Arc<FleetCore> {
        &self.core
    }

    /// The clock the fleet measures on.
    pub fn clock(&self) -> &Clock {
        self.replicas[0].clock()
    }

    /// Requests routed to each replica so far.
    pub fn served(&self) -> Vec<u64> {
        self.core.served()
    }

    /// Each replica's figures as its `/metrics` page would give them.
    pub fn replica_snapshots(&self) -> Vec<ServerSnapshot> {
        self.replicas
            .iter()
            .map(InProcTransport::snapshot)
            .collect()
    }

    /// The fleet's figures: the replicas' summed as codendum sums engines
    /// ([`ServerSnapshot::sum`]); one replica's own figures unchanged.
    pub fn snapshot(&self) -> ServerSnapshot {
        let mut all = self.replica_snapshots();
        if all.len() == 1 {
            return all.remove(0);
        }
        ServerSnapshot::sum(&all)
    }

    /// One timeline sample of the fleet and one per replica, at the clock's
    /// current time.
    pub fn samples(&self) -> (TimelineSample, Vec<TimelineSample>) {
        let clock = self.clock();
        let now = clock.now();
        let at = |snapshot| TimelineSample {
            utc: clock.utc_at(now),
            t: now.as_secs_f64(),
            snapshot: Some(snapshot),
            error: None,
        };
        let parts = self.replica_snapshots();
        let fleet = if parts.len() == 1 {
            parts[0].clone()
        } else {
            ServerSnapshot::sum(&parts)
        };
        (at(fleet), parts.into_iter().map(at).collect())
    }

    /// Stops every engine task (calls still in flight fail).
    pub fn stop(&self) {
        self.replicas.iter().for_each(InProcTransport::stop);
    }

    async fn call_routed(&self, request: CallRequest) -> CallOutcome {
        let prompt = self.core.wants_prompt().then(|| {
            let s = &self.replicas[0].state().profile.server;
            let chat = request.endpoint == Endpoint::Chat;
            generation_body_from_value(
                request.body.clone(),
                chat,
                &s.served_model_name,
                s.max_model_len,
            )
            .map(|b| b.prompt_ids)
            .unwrap_or_default()
        });
        let guard = {
            let session = request
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("x-session-id"))
                .map(|(_, v)| v.as_str());
            let key = request.api_key.as_ref().map(|k| k.expose());
            self.core.route(session, key, prompt.as_deref())
        };
        let outcome = self.replicas[guard.replica()].call_direct(request).await;
        drop(guard);
        outcome
    }
}

impl Transport for FleetTransport {
    fn call(&self, request: CallRequest) -> BoxFuture<'_, CallOutcome> {
        Box::pin(self.call_routed(request))
    }
}

/// The sampled timelines of a fleet: the fleet's (summed) and each replica's.
#[derive(Debug, Clone, Default)]
pub struct FleetTimeline {
    /// The fleet, replicas summed.
    pub fleet: Vec<TimelineSample>,
    /// Replica i's own samples, at the same times.
    pub replicas: Vec<Vec<TimelineSample>>,
}

/// Samples a [`FleetTransport`] every `interval` of simulated time, as the
/// `/metrics` sampler does in a live run.
#[derive(Debug)]
pub struct FleetSampler {
    fleet: Arc<FleetTransport>,
    timeline: Arc<Mutex<FleetTimeline>>,
    task: tokio::task::JoinHandle<()>,
}

fn push(timeline: &Mutex<FleetTimeline>, (fleet, parts): (TimelineSample, Vec<TimelineSample>)) {
    if let Ok(mut tl) = timeline.lock() {
        tl.fleet.push(fleet);
        tl.replicas.resize_with(parts.len(), Vec::new);
        for (line, s) in tl.replicas.iter_mut().zip(parts) {
            line.push(s);
        }
    }
}

impl FleetSampler {
    /// Takes a first sample now, then one every `interval` (at least 1 ms)
    /// on the fleet's clock, on the current tokio runtime.
    pub fn spawn(fleet: Arc<FleetTransport>, interval: Duration) -> Self {
        let interval = interval.max(Duration::from_millis(1));
        let timeline = Arc::new(Mutex::new(FleetTimeline::default()));
        push(&timeline, fleet.samples());
        let (f, tl) = (Arc::clone(&fleet), Arc::clone(&timeline));
        let task = tokio::spawn(async move {
            let clock = f.clock().clone();
            let mut next = clock.now() + interval;
            loop {
                clock.sleep_until(next).await;
                push(&tl, f.samples());
                next += interval;
            }
        });
        FleetSampler {
            fleet,
            timeline,
            task,
        }
    }

    /// The fleet's (summed) samples so far, sampling going on.
    pub fn fleet_so_far(&self) -> Vec<TimelineSample> {
        self.timeline
            .lock()
            .map(|tl| tl.fleet.clone())
            .unwrap_or_default()
    }

    /// Stops sampling, takes a last sample now and returns the timelines.
    pub fn finish(self) -> FleetTimeline {
        self.task.abort();
        let last = self.fleet.samples();
        let newer = self
            .timeline
            .lock()
            .map(|tl| tl.fleet.last().is_none_or(|s| s.t < last.0.t))
            .unwrap_or(true);
        if newer {
            push(&self.timeline, last);
        }
        self.timeline
            .lock()
            .map(|mut tl| std::mem::take(&mut *tl))
            .unwrap_or_default()
    }
}

impl Drop for FleetSampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}
