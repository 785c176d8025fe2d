//! The only module of `lpkc` that writes to stdout: answers, JSON and
//! listings go through here so the rest of the code cannot print by
//! accident.
#![allow(clippy::print_stdout)]

use std::io::Write;

/// Writes text to stdout, ignoring a closed pipe (`lpkc ... | head`).
pub fn out(text: &str) {
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let _ = lock.write_all(text.as_bytes());
    let _ = lock.flush();
}

/// Writes one line to stdout.
pub fn line(text: &str) {
    out(&format!("{text}\n"));
}

/// Writes a JSON value as one line.
pub fn json(value: &serde_json::Value) {
    line(&value.to_string());
}
