//! The engine loop: one tokio task owns the [`Engine`]. Requests arrive on a
//! channel; while there is work it runs a step, sleeps the modelled duration
//! on the [`Clock`] (until the step's end on the engine's own timeline, so
//! timer overshoot never accumulates) and then hands each request its tokens.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::engine::{Engine, EngineRequest, RequestId};
use super::engine_stats::{EngineStats, FinishReason};
use crate::clock::Clock;

/// What the HTTP layer sends the engine task.
#[derive(Debug)]
pub enum EngineCmd {
    /// Queue a request; its tokens go to `events`.
    Add {
        /// The request.
        request: EngineRequest,
        /// Where its tokens go.
        events: mpsc::UnboundedSender<EngineEvent>,
    },
    /// The client went away.
    Abort(RequestId),
}

/// What a request hears from the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineEvent {
    /// New output tokens, and the finish reason with the last ones.
    Tokens {
        /// How many (0 or 1 per step).
        count: u32,
        /// Set on the last event.
        finish: Option<FinishReason>,
    },
    /// The engine refused the request.
    Rejected(String),
}

/// The latest engine statistics, shared with `/metrics`.
pub type SharedStats = Arc<Mutex<EngineStats>>;

/// Sends an abort when dropped, unless disarmed: a stream or handler that is
/// dropped before the request finished means the client went away.
#[derive(Debug)]
pub struct AbortOnDrop {
    id: RequestId,
    tx: mpsc::UnboundedSender<EngineCmd>,
    armed: bool,
}

impl AbortOnDrop {
    /// Arms a guard for `id`.
    pub fn new(id: RequestId, tx: mpsc::UnboundedSender<EngineCmd>) -> Self {
        AbortOnDrop {
            id,
            tx,
            armed: true,
        }
    }

    /// The request finished: no abort on drop.
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.tx.send(EngineCmd::Abort(self.id));
        }
    }
}

/// Starts the engine task. It ends when every command sender is dropped.
pub fn spawn_engine(
    engine: Engine,
    clock: Clock,
    stats: SharedStats,
) -> (
    mpsc::UnboundedSender<EngineCmd>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let handle = tokio::spawn(run(engine, clock, rx, stats));
    (tx, handle)
}

fn publish(engine: &Engine, stats: &SharedStats) {
    if let Ok(mut s) = stats.lock() {
        s.clone_from(engine.stats());
    }
}

fn apply(
    engine: &mut Engine,
    cmd: EngineCmd,
    senders: &mut HashMap<RequestId, mpsc::UnboundedSender<EngineEvent>>,
) {
    match cmd {
        EngineCmd::Add { request, events } => {
            let id = request.id;
            match engine.add(request) {
                Ok(()) => {
                    senders.insert(id, events);
                }
                Err(e) => {
                    let _ = events.send(EngineEvent::Rejected(e.to_string()));
                }
            }
        }
        EngineCmd::Abort(id) => {
            if senders.remove(&id).is_some() {
                engine.abort(id);
            }
        }
    }
}

async fn run(
    mut engine: Engine,
    clock: Clock,
    mut rx: mpsc::UnboundedReceiver<EngineCmd>,
    stats: SharedStats,
) {
    let mut senders = HashMap::new();
    loop {
        if engine.is_idle() {
            publish(&engine, &stats);
            let Some(cmd) = rx.recv().await else {
                break;
            };
            engine.advance_to(clock.now());
            apply(&mut engine, cmd, &mut senders);
        }
        while let Ok(cmd) = rx.try_recv() {
            apply(&mut engine, cmd, &mut senders);
        }
        if engine.is_idle() {
            continue;
        }
        let report = engine.step();
        publish(&engine, &stats);
        clock.sleep_until(engine.now()).await;
        for t in report.tokens {
            let event = EngineEvent::Tokens {
                count: t.new_tokens,
                finish: t.finish,
            };
            let gone = match senders.get(&t.id) {
                Some(tx) => tx.send(event).is_err(),
                None => false,
            };
            if t.finish.is_some() {
                senders.remove(&t.id);
            } else if gone {
                senders.remove(&t.id);
                engine.abort(t.id);
            }
        }
    }
}
