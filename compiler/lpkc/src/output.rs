//! The only module of `lpkc` that writes to stdout: answers, JSON and
//! listings go through here so the rest of the code cannot print by
//! accident.
//!
//! One-shot output ([`out`], [`line`], [`json`]) locks and flushes per
//! call. A command that writes many answers (`lpkc query`, a batch REPL)
//! holds one [`Stream`] instead: a buffered writer on locked stdout for
//! the whole invocation, flushed when the command is about to wait for
//! input and at the end.
#![allow(clippy::print_stdout)]

use std::io::{BufWriter, StdoutLock, Write};

/// Writes text to stdout, ignoring a closed pipe (`lpkc ... | head`).
pub(crate) fn out(text: &str) {
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let _ = lock.write_all(text.as_bytes());
    let _ = lock.flush();
}

/// Writes one line to stdout.
pub(crate) fn line(text: &str) {
    out(&format!("{text}\n"));
}

/// Writes a JSON value as one line.
pub(crate) fn json(value: &serde_json::Value) {
    line(&value.to_string());
}

/// Buffered stdout for a whole command: bytes go out when the buffer
/// fills, on [`flush`](Stream::flush), and when the stream is dropped. A
/// closed pipe is ignored, as by [`out`]: the writes after it are
/// dropped.
pub(crate) struct Stream {
    inner: BufWriter<StdoutLock<'static>>,
    closed: bool,
}

impl Stream {
    /// Locks stdout for the life of the stream.
    pub(crate) fn new() -> Stream {
        Stream {
            inner: BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
            closed: false,
        }
    }

    /// Writes bytes (dropped once stdout is closed).
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        if !self.closed && self.inner.write_all(bytes).is_err() {
            self.closed = true;
        }
    }

    /// Sends what is buffered, e.g. before waiting for the next command
    /// or writing to stderr, so that answers and errors keep their order.
    pub(crate) fn flush(&mut self) {
        if !self.closed && self.inner.flush().is_err() {
            self.closed = true;
        }
    }
}

impl Default for Stream {
    fn default() -> Stream {
        Stream::new()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.flush();
    }
}
