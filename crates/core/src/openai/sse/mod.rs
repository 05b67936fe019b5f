//! An incremental Server-Sent-Events decoder.
//!
//! Feed it the body in whatever pieces the network delivers
//! ([`SseDecoder::push`]), then pull complete events
//! ([`SseDecoder::next_event`]); at the end of the body call
//! [`SseDecoder::finish`]. The events are the same however the byte stream
//! is split.
//!
//! What it understands (the parts of the SSE format an OpenAI-compatible
//! server uses): line ends `\r\n`, `\n` or `\r`; `:` comment lines; `data:`
//! with or without one space after the colon; several `data:` lines of one
//! event joined with `\n`; `event:`, `id:`, `retry:` and unknown fields
//! ignored; a leading UTF-8 byte-order mark skipped; a last event that is
//! not followed by a blank line still delivered by `finish`. An event whose
//! data is `[DONE]` becomes [`SseEvent::Done`].
//!
//! The decoder keeps one buffer for unconsumed input and one for the data of
//! the event being assembled; both are reused, so decoding allocates nothing
//! per byte or per event once the buffers have grown to the longest line.
//!
//! One event (or one line still waiting for its end) may hold at most
//! [`MAX_EVENT_BYTES`]: past that the decoder gives [`SseEvent::Oversized`]
//! once and then nothing more, so a server that never ends a line cannot
//! grow the client's memory without bound.

/// One decoded event. `Data` borrows from the decoder until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseEvent<'a> {
    /// The joined `data:` lines of one event (without the trailing newline).
    Data(&'a [u8]),
    /// The `data: [DONE]` sentinel that ends an OpenAI stream.
    Done,
    /// An event or a line grew past the decoder's limit: the stream cannot
    /// be read further (the decoder yields nothing after this).
    Oversized {
        /// The limit that was passed, bytes.
        limit: usize,
    },
}

/// The largest event the decoder takes, bytes (4 MiB). vLLM's largest
/// chunks are tool calls whose arguments come in one delta: a `write` of a
/// whole file at the 32,768-token output cap is about 130 KB of text, twice
/// that JSON-escaped; this leaves more than ten times that room.
pub const MAX_EVENT_BYTES: usize = 4 << 20;

impl SseEvent<'_> {
    /// An owned copy, for collecting events (tests, tools).
    pub fn to_owned_event(&self) -> OwnedSseEvent {
        match self {
            SseEvent::Data(d) => OwnedSseEvent::Data(d.to_vec()),
            SseEvent::Done => OwnedSseEvent::Done,
            SseEvent::Oversized { limit } => OwnedSseEvent::Oversized { limit: *limit },
        }
    }
}

/// An owned [`SseEvent`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedSseEvent {
    /// The joined `data:` lines of one event.
    Data(Vec<u8>),
    /// `data: [DONE]`.
    Done,
    /// See [`SseEvent::Oversized`].
    Oversized {
        /// The limit that was passed, bytes.
        limit: usize,
    },
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The incremental decoder. See the module documentation.
#[derive(Debug)]
pub struct SseDecoder {
    /// The most bytes one event or one unfinished line may hold.
    limit: usize,
    /// The limit was passed: [`SseEvent::Oversized`] is due (`Some(false)`)
    /// or was given (`Some(true)`).
    oversized: Option<bool>,
    /// Unconsumed input; `buf[pos..]` is what is left to scan.
    buf: Vec<u8>,
    pos: usize,
    /// Where the search for the next line end resumes: `buf[pos..scan]` is
    /// known to hold none (so a long line fed in small pieces is scanned once).
    scan: usize,
    /// Data lines of the event being assembled, joined with `\n`.
    data: Vec<u8>,
    /// Whether a `data:` field was seen for the current event.
    has_data: bool,
    /// The previous line ended with `\r` at the end of the input seen so
    /// far: a `\n` that starts the next input belongs to it.
    skip_lf: bool,
    /// The data of the last returned event must be cleared on the next call.
    dispatched: bool,
    /// Past the first bytes of the stream (the BOM check is done).
    started: bool,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::with_limit(MAX_EVENT_BYTES)
    }
}

impl SseDecoder {
    /// A fresh decoder with the [`MAX_EVENT_BYTES`] limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh decoder whose events and lines may hold at most `limit`
    /// bytes.
    pub fn with_limit(limit: usize) -> Self {
        SseDecoder {
            limit,
            oversized: None,
            buf: Vec::new(),
            pos: 0,
            scan: 0,
            data: Vec::new(),
            has_data: false,
            skip_lf: false,
            dispatched: false,
            started: false,
        }
    }

    /// Gives up on the stream: frees the buffers and reports the limit once.
    fn overflow(&mut self) -> Option<SseEvent<'_>> {
        match self.oversized {
            Some(true) => None,
            _ => {
                self.oversized = Some(true);
                self.buf = Vec::new();
                self.data = Vec::new();
                self.pos = 0;
                self.scan = 0;
                Some(SseEvent::Oversized { limit: self.limit })
            }
        }
    }

    /// Appends a piece of the body. Call [`Self::next_event`] until it
    /// returns `None` before pushing the next piece (events not pulled stay
    /// buffered, so nothing is lost if you don't).
    pub fn push(&mut self, input: &[u8]) {
        if self.oversized.is_some() {
            return;
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.scan = self.scan.saturating_sub(self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(input);
    }

    /// The next complete event, or `None` when more input is needed.
    pub fn next_event(&mut self) -> Option<SseEvent<'_>> {
        if self.oversized.is_some() {
            return self.overflow();
        }
        if self.dispatched {
            self.dispatched = false;
            self.data.clear();
            self.has_data = false;
        }
        if !self.skip_bom(false) {
            return None;
        }
        loop {
            if self.skip_lf {
                match self.buf.get(self.pos) {
                    None => return None,
                    Some(b'\n') => {
                        self.pos += 1;
                        self.skip_lf = false;
                    }
                    Some(_) => self.skip_lf = false,
                }
            }
            let line_start = self.pos;
            let from = self.scan.max(line_start);
            let Some(found) = self.buf[from..]
                .iter()
                .position(|&b| b == b'\n' || b == b'\r')
            else {
                self.scan = self.buf.len();
                if self.buf.len() - line_start > self.limit {
                    return self.overflow();
                }
                return None;
            };
            let line_end = from + found;
            let term = self.buf[line_end];
            self.pos = line_end + 1;
            if term == b'\r' {
                match self.buf.get(self.pos) {
                    Some(b'\n') => self.pos += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            if line_start == line_end {
                if self.dispatch_ready() {
                    return Some(self.current_event());
                }
            } else {
                self.process_line(line_start, line_end);
                if self.oversized.is_some() {
                    return self.overflow();
                }
            }
        }
    }

    /// Ends the body: a last line without a line end is taken as a line, and
    /// an event not followed by a blank line is delivered. Returns at most
    /// one event; call it after [`Self::next_event`] has returned `None`.
    pub fn finish(&mut self) -> Option<SseEvent<'_>> {
        if self.oversized.is_some() {
            return self.overflow();
        }
        if self.dispatched {
            self.dispatched = false;
            self.data.clear();
            self.has_data = false;
        }
        self.skip_bom(true);
        if self.pos < self.buf.len() {
            let (start, end) = (self.pos, self.buf.len());
            self.process_line(start, end);
            self.pos = end;
            if self.oversized.is_some() {
                return self.overflow();
            }
        }
        self.scan = self.pos;
        self.skip_lf = false;
        if self.dispatch_ready() {
            return Some(self.current_event());
        }
        None
    }

    /// Skips a byte-order mark at the very start. Returns false while the
    /// first bytes could still be the start of one (need more input).
    fn skip_bom(&mut self, at_end: bool) -> bool {
        if self.started {
            return true;
        }
        let rest = &self.buf[self.pos..];
        if rest.len() < BOM.len() && BOM.starts_with(rest) && !at_end {
            return false;
        }
        if rest.starts_with(BOM) {
            self.pos += BOM.len();
        }
        self.started = true;
        true
    }

    /// Handles one non-empty line `buf[start..end]`.
    fn process_line(&mut self, start: usize, end: usize) {
        let line = &self.buf[start..end];
        if line.first() == Some(&b':') {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &line[line.len()..]),
        };
        if field == b"data" {
            if self.data.len() + value.len() + 1 > self.limit {
                self.oversized = Some(false);
                return;
            }
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
    }

    /// Whether a blank line (or the end) completes a non-empty event; resets
    /// an empty one.
    fn dispatch_ready(&mut self) -> bool {
        if self.has_data && !self.data.is_empty() {
            self.dispatched = true;
            true
        } else {
            self.has_data = false;
            self.data.clear();
            false
        }
    }

    fn current_event(&self) -> SseEvent<'_> {
        if self.data.trim_ascii() == b"[DONE]" {
            SseEvent::Done
        } else {
            SseEvent::Data(&self.data)
        }
    }
}

/// Decodes a whole body at once (a convenience for tests and tools).
pub fn decode_all(body: &[u8]) -> Vec<OwnedSseEvent> {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    decoder.push(body);
    while let Some(ev) = decoder.next_event() {
        out.push(ev.to_owned_event());
    }
    if let Some(ev) = decoder.finish() {
        out.push(ev.to_owned_event());
    }
    out
}

#[cfg(test)]
mod tests;
