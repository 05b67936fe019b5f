//! The capture's records: `calls.jsonl` (one flushed line per finished
//! call), the client time of each session, and the files derived from them
//! (`prompt.json`, `client-times.json`), rewritten as samples arrive.

use crate::events::Events;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::classify::{after_answer, After, CaptureKind, RequestInfo};
use super::files;
use super::observe::{tool_lines, Answer, ToolCallLine};
use crate::classroom::client_times::{ClientTimeKind, ClientTimes};
use codendum_core::error::Error;
use codendum_core::kinds::TokenSource;
use codendum_core::results::{JsonlFile, RunFolder};

/// The file of per-call records in a capture folder.
pub const CALLS_FILE: &str = "calls.jsonl";

/// One line of `calls.jsonl`. Times are seconds; nothing of the request or
/// answer text is kept beyond tool names (and never a key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallLine {
    /// 1, 2, … in the order requests arrived.
    pub seq: u64,
    /// When the request arrived, seconds since the capture started.
    pub started_at_s: f64,
    /// When the request arrived, UTC.
    pub started_utc: DateTime<Utc>,
    /// HTTP method.
    pub method: String,
    /// Request path (without the query).
    pub path: String,
    /// What the request said of itself: session and parent session, kind,
    /// and the body's `stream`, `model`, `max_tokens`, tools and messages
    /// (flattened: one level of fields in `calls.jsonl`).
    #[serde(flatten)]
    pub request: RequestInfo,
    /// Request body, bytes.
    pub request_bytes: usize,
    /// The upstream's status (502: the upstream could not be reached).
    pub status: u16,
    /// Prompt tokens, from the usage.
    pub prompt_tokens: Option<u64>,
    /// Output tokens: the usage's, else the chunks carrying text.
    pub output_tokens: Option<u64>,
    /// Who counted `output_tokens`: `server` (usage) or `client` (chunks).
    pub tokens_counted_by: Option<TokenSource>,
    /// Request arrived → first chunk carrying generated text, seconds.
    pub ttft_s: Option<f64>,
    /// Request arrived → last byte of the answer passed on, seconds.
    pub duration_s: f64,
    /// `finish_reason` of choice 0.
    pub finish_reason: Option<String>,
    /// The answer's tool calls: names and argument sizes.
    pub tool_calls: Vec<ToolCallLine>,
    /// End of this session's previous answer → this request, seconds.
    pub client_time_s: Option<f64>,
    /// What the client did in that time (a client-time kind, `task` or
    /// `retry`).
    pub client_time_kind: Option<String>,
    /// Response body passed on, bytes.
    pub response_bytes: u64,
    /// What went wrong, if anything (upstream unreachable, stream cut, …).
    pub error: Option<String>,
}

/// A call whose answer is still passing through.
#[derive(Debug)]
pub struct OpenCall {
    line: CallLine,
    received: Instant,
    sampled: bool,
}

impl OpenCall {
    /// Whether the request gave its session a client-time sample:
    /// [`Store::write_samples`] is then due (it is left to the caller so
    /// that the file system is not touched on an async worker).
    pub fn took_sample(&self) -> bool {
        self.sampled
    }
}

#[derive(Debug, Default)]
struct Session {
    in_flight: u32,
    last: Option<(Instant, After)>,
}

struct Inner {
    calls: Option<JsonlFile<CallLine>>,
    seq: u64,
    sessions: HashMap<String, Session>,
    samples: BTreeMap<ClientTimeKind, Vec<f64>>,
    /// Samples taken so far (the generation of `samples`).
    samples_taken: u64,
    prompt_written: bool,
    write_failed: bool,
}

/// The capture's state, shared by every request.
pub struct Store {
    folder: PathBuf,
    source: String,
    origin: Instant,
    inner: Mutex<Inner>,
    /// Held while `client-times.json` is written: the `samples_taken` it
    /// holds. The file is written outside `inner`, so that no other call
    /// waits on the file system for its record.
    times_written: Mutex<u64>,
    /// Where a failed write is told (once).
    events: Events,
}

impl Store {
    /// Opens `calls.jsonl` in `folder` (which must exist); `source` names
    /// the upstream in `client-times.json`.
    pub fn open(folder: &Path, source: String) -> Result<Self, Error> {
        Self::open_keeping(folder, source, true)
    }

    /// [`Store::open`] that writes `prompt.json` only when `keep_text`
    /// (`capture --no-text` keeps no message text at all).
    pub fn open_keeping(folder: &Path, source: String, keep_text: bool) -> Result<Self, Error> {
        let calls = RunFolder::at(folder).appender::<CallLine>(CALLS_FILE)?;
        Ok(Store {
            folder: folder.to_path_buf(),
            source,
            origin: Instant::now(),
            inner: Mutex::new(Inner {
                calls: Some(calls),
                seq: 0,
                sessions: HashMap::new(),
                samples: BTreeMap::new(),
                samples_taken: 0,
                // Without text the prompt is never written.
                prompt_written: !keep_text,
                write_failed: false,
            }),
            times_written: Mutex::new(0),
            events: Events::silent(),
        })
    }

    /// The store telling a failed write through `events`.
    pub fn with_events(mut self, events: Events) -> Self {
        self.events = events;
        self
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request arrived at `received`: numbers it, measures its session's
    /// client time, and keeps the first agent request's prompt. A new
    /// client-time sample is written by [`Store::write_samples`]
    /// ([`OpenCall::took_sample`]).
    pub fn begin(
        &self,
        (method, path): (&str, &str),
        info: &RequestInfo,
        body: Option<&Value>,
        request_bytes: usize,
        received: Instant,
    ) -> OpenCall {
        let mut inner = self.lock();
        let mut sampled = false;
        inner.seq += 1;
        let mut line = CallLine {
            seq: inner.seq,
            started_at_s: received
                .saturating_duration_since(self.origin)
                .as_secs_f64(),
            started_utc: Utc::now(),
            method: method.to_string(),
            path: path.to_string(),
            request: info.clone(),
            request_bytes,
            status: 0,
            prompt_tokens: None,
            output_tokens: None,
            tokens_counted_by: None,
            ttft_s: None,
            duration_s: 0.0,
            finish_reason: None,
            tool_calls: Vec::new(),
            client_time_s: None,
            client_time_kind: None,
            response_bytes: 0,
            error: None,
        };
        if tracks_session(info.kind) {
            if let Some(id) = &info.session {
                let s = inner.sessions.entry(id.clone()).or_default();
                if s.in_flight == 0 {
                    if let Some((end, after)) = s.last.take() {
                        let secs = received.saturating_duration_since(end).as_secs_f64();
                        line.client_time_s = Some(secs);
                        line.client_time_kind = Some(after.as_str().to_string());
                        if let After::Kind(k) = after {
                            inner.samples.entry(k).or_default().push(secs);
                            inner.samples_taken += 1;
                            sampled = true;
                        }
                    }
                } else {
                    // Another call of the session is still running: no pairing.
                    s.last = None;
                }
                if let Some(s) = inner.sessions.get_mut(id) {
                    s.in_flight += 1;
                }
            }
        }
        if info.kind == CaptureKind::Agent && !inner.prompt_written {
            if let Some(prompt) = body.and_then(super::classify::prompt_of) {
                inner.prompt_written = true;
                let result = files::write_json(&self.folder.join(files::PROMPT_FILE), &prompt);
                self.note(&mut inner, result);
            }
        }
        OpenCall {
            line,
            received,
            sampled,
        }
    }

    /// The answer of `call` ended at `end` with `status` (`error`: what
    /// went wrong): writes its line and what follows for its session.
    pub fn finish(
        &self,
        call: OpenCall,
        status: u16,
        answer: Answer,
        end: Instant,
        error: Option<String>,
    ) {
        let OpenCall {
            mut line, received, ..
        } = call;
        line.status = status;
        line.duration_s = end.saturating_duration_since(received).as_secs_f64();
        line.ttft_s = answer
            .first_token
            .map(|t| t.saturating_duration_since(received).as_secs_f64());
        line.prompt_tokens = answer.prompt_tokens;
        (line.output_tokens, line.tokens_counted_by) = match answer.completion_tokens {
            Some(n) => (Some(n), Some(TokenSource::Server)),
            None if line.request.stream == Some(true) => {
                (Some(answer.text_chunks), Some(TokenSource::Client))
            }
            None => (None, None),
        };
        line.finish_reason = answer.finish_reason.clone();
        line.tool_calls = tool_lines(&answer.tool_calls);
        line.response_bytes = answer.bytes;
        line.error = error;
        let ok = (200..300).contains(&status) && line.error.is_none();
        let mut inner = self.lock();
        if tracks_session(line.request.kind) {
            if let Some(s) = line
                .request
                .session
                .as_ref()
                .and_then(|id| inner.sessions.get_mut(id))
            {
                s.in_flight = s.in_flight.saturating_sub(1);
                s.last = after_answer(line.request.kind, ok, &answer.tool_calls).map(|a| (end, a));
            }
        }
        let result = match inner.calls.as_mut() {
            Some(w) => w.append(&line).map_err(Error::from),
            None => Ok(()),
        };
        self.note(&mut inner, result);
    }

    /// The samples measured so far, as the classroom reads them.
    pub fn client_times(&self) -> ClientTimes {
        ClientTimes::from_samples(self.lock().samples.clone())
    }

    /// Calls recorded so far.
    pub fn calls(&self) -> u64 {
        self.lock().seq
    }

    /// Rewrites `client-times.json` (also at the end of the capture).
    pub fn flush(&self) -> Result<(), Error> {
        self.write_client_times(true)
    }

    /// Rewrites `client-times.json` after [`Store::begin`] took a sample
    /// (blocking file-system work: the handler runs it on tokio's blocking
    /// pool); a write error is said once on stderr.
    pub fn write_samples(&self) {
        let result = self.write_client_times(false);
        self.note(&mut self.lock(), result);
    }

    /// Writes `client-times.json` with every sample taken so far, unless
    /// (`always` false) the file already holds them: a call that waited
    /// here while another wrote finds its sample written. Either way the
    /// file holds the caller's sample when this returns.
    fn write_client_times(&self, always: bool) -> Result<(), Error> {
        let mut written = self.times_written.lock().unwrap_or_else(|p| p.into_inner());
        let (taken, samples) = {
            let inner = self.lock();
            (inner.samples_taken, inner.samples.clone())
        };
        if !always && taken <= *written {
            return Ok(());
        }
        let file = ClientTimes::from_samples(samples).to_file(&self.source);
        files::write_json(&self.folder.join(files::CLIENT_TIMES_FILE), &file)?;
        *written = taken;
        Ok(())
    }

    /// Says a write error once; the capture keeps passing traffic.
    fn note(&self, inner: &mut Inner, result: Result<(), Error>) {
        if let Err(e) = result {
            if !inner.write_failed {
                inner.write_failed = true;
                self.events.warn(format!(
                    "capture: cannot write into {}: {e}",
                    self.folder.display()
                ));
            }
        }
    }
}

/// Whether calls of this kind take part in their session's client time
/// (titles run beside the first step; `other` is not a model call).
fn tracks_session(kind: CaptureKind) -> bool {
    !matches!(kind, CaptureKind::Title | CaptureKind::Other)
}
