//! The capture's records: a line per finished call, the client time of
//! each session, each key's student ordinal, and the files derived from
//! them (`prompt.json`, `client-times.json`, rewritten as samples arrive).
//! The store keeps them in memory and hands every write to its
//! [`Recorder`], so no call waits on the disk.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::Value;

use super::classify::{after_answer, After};
use super::notice::Notifier;
use super::observe::{tool_lines, Answer};
use super::recorder::{CaptureDisk, ClientTimesSource, FolderDisk, Losses, Recorder};
use crate::classroom::client_times::{ClientTimeKind, ClientTimes};
use codendum_core::capture::{CaptureKind, RequestInfo};
use codendum_core::error::Error;
use codendum_core::openai::TokenSource;

use codendum_core::capture::{CallLine, PROMPT_FILE};

/// A call whose answer is still passing through.
#[derive(Debug)]
pub struct OpenCall {
    line: CallLine,
    received: Instant,
}

#[derive(Debug, Default)]
struct Session {
    in_flight: u32,
    last: Option<(Instant, After)>,
}

type Samples = BTreeMap<ClientTimeKind, Vec<f64>>;

struct Inner {
    seq: u64,
    sessions: HashMap<String, Session>,
    /// Each key's student ordinal, by a hash of the key made with this
    /// capture's own random state (the key itself is never kept).
    students: HashMap<u64, u32>,
    prompt_written: bool,
}

/// The capture's state, shared by every request. It holds memory only:
/// every file is written by its [`Recorder`], off the calls' path.
pub struct Store {
    origin: Instant,
    inner: Mutex<Inner>,
    samples: Arc<Mutex<Samples>>,
    key_hasher: RandomState,
    recorder: Recorder,
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
        let disk = FolderDisk::open(folder)
            .map_err(|e| Error::io(format!("cannot write into {}", folder.display()), e))?;
        let notifier = Notifier::default();
        Self::with_disk(
            Box::new(disk),
            StoreOptions {
                folder: folder.display().to_string(),
                source,
                keep_text,
                queue: super::recorder::DEFAULT_QUEUE,
            },
            notifier,
        )
    }

    /// A store writing to `disk` through a writer thread.
    pub fn with_disk(
        disk: Box<dyn CaptureDisk>,
        options: StoreOptions,
        notices: Notifier,
    ) -> Result<Self, Error> {
        let samples: Arc<Mutex<Samples>> = Arc::default();
        let times: ClientTimesSource = {
            let (samples, source) = (samples.clone(), options.source.clone());
            Box::new(move || {
                let samples = samples.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let file = ClientTimes::from_samples(samples).to_file(&source);
                pretty(&file)
            })
        };
        let recorder = Recorder::start(disk, options.queue, times, options.folder, notices)
            .map_err(|e| Error::io("cannot start the capture's writer", e))?;
        Ok(Store {
            origin: Instant::now(),
            inner: Mutex::new(Inner {
                seq: 0,
                sessions: HashMap::new(),
                students: HashMap::new(),
                // Without text the prompt is never written.
                prompt_written: !options.keep_text,
            }),
            samples,
            key_hasher: RandomState::new(),
            recorder,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The student a request's API key (the `Authorization` header's
    /// value) stands for: 1 for the first key seen, 2 for the next, …;
    /// `None` without a key.
    pub fn student(&self, key: Option<&[u8]>) -> Option<u32> {
        let hash = self.key_hasher.hash_one(key?);
        let mut inner = self.lock();
        let next = inner.students.len() as u32 + 1;
        Some(*inner.students.entry(hash).or_insert(next))
    }

    /// A request of `student` arrived at `received`: numbers it, measures
    /// its session's client time, and keeps the first agent request's
    /// prompt. Files are queued for the writer, never written here.
    pub fn begin(
        &self,
        (method, path): (&str, &str),
        (info, student): (&RequestInfo, Option<u32>),
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
            student,
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
                            self.samples
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .entry(k)
                                .or_default()
                                .push(secs);
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
        let mut prompt = None;
        if info.kind == CaptureKind::Agent && !inner.prompt_written {
            prompt = body.and_then(super::classify::prompt_of);
            inner.prompt_written = prompt.is_some();
        }
        drop(inner);
        if let Some(bytes) = prompt.as_ref().and_then(pretty) {
            self.recorder.file(PROMPT_FILE, bytes);
        }
        if sampled {
            self.recorder.client_times_due();
        }
        OpenCall { line, received }
    }

    /// The answer of `call` ended at `end` with `status` (`error`: what
    /// went wrong): queues its line and notes what follows for its session.
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
        let ok = line.is_ok();
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
        drop(inner);
        self.recorder.call(line);
    }

    /// The samples measured so far, as the classroom reads them.
    pub fn client_times(&self) -> ClientTimes {
        ClientTimes::from_samples(
            self.samples
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }

    /// Calls seen so far (recorded or not).
    pub fn calls(&self) -> u64 {
        self.lock().seq
    }

    /// Students (distinct API keys) seen so far.
    pub fn students(&self) -> usize {
        self.lock().students.len()
    }

    /// Queues `client-times.json` (also at the end of the capture) and
    /// waits up to `within` for everything queued to reach the disk;
    /// whether it did.
    pub async fn flush(&self, within: Duration) -> bool {
        self.recorder.client_times_due();
        self.recorder.settle(within).await
    }

    /// Waits up to `within` for everything queued so far to reach the disk
    /// (or fail); whether it did.
    pub async fn settle(&self, within: Duration) -> bool {
        self.recorder.settle(within).await
    }

    /// Queues a whole file of the folder (the header at the end).
    pub fn write_file(&self, name: &'static str, bytes: Vec<u8>) {
        self.recorder.file(name, bytes);
    }

    /// What could not be recorded so far.
    pub fn losses(&self) -> Losses {
        self.recorder.losses()
    }
}

/// What a [`Store`] is opened with.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// The folder, as said in notices.
    pub folder: String,
    /// Names the upstream in `client-times.json`.
    pub source: String,
    /// Write `prompt.json` (not with `--no-text`).
    pub keep_text: bool,
    /// Records that may wait for the disk.
    pub queue: usize,
}

/// Pretty JSON with a trailing newline, as every whole file of a folder.
pub fn pretty<T: serde::Serialize + ?Sized>(value: &T) -> Option<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value).ok()?;
    bytes.push(b'\n');
    Some(bytes)
}

/// Whether calls of this kind take part in their session's client time
/// (titles run beside the first step; `other` is not a model call).
fn tracks_session(kind: CaptureKind) -> bool {
    !matches!(kind, CaptureKind::Title | CaptureKind::Other)
}
