//! The JSON-RPC transport over stdio: `Content-Length` framing, one reader
//! thread and one writer thread, with lsp-server's message types.
//!
//! lsp-server's own stdio transport stops reading at the first malformed
//! message (bad JSON, a body that is not UTF-8) and allocates whatever a
//! `Content-Length` asks for, so this one is our own: a message over
//! [`MAX_MESSAGE_BYTES`] is skipped unread, and every message that is not
//! a JSON-RPC message gets the protocol's error response (`id: null`,
//! code -32700 or -32600) while the reader goes on with the next one. When
//! stdin closes (the client exited or died) the incoming channel closes,
//! and the server's loop ends.

use crossbeam_channel::{Receiver, Sender};
use lsp_server::{ErrorCode, Message};
use std::io::{BufRead, Read, Write};

/// The largest message read: a 16 MiB document, JSON-escaped, fits.
const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// The longest header line read.
const MAX_HEADER_BYTES: u64 = 8 << 10;

/// What the writer thread writes.
pub(crate) enum Outgoing {
    /// A request, response or notification.
    Message(Message),
    /// An error response to a message that could not be read, whose id
    /// may be `null` (lsp-server's `Response` cannot say that).
    Unreadable(serde_json::Value),
}

/// Both ends of the transport, as the server's loop sees them.
pub(crate) struct Transport {
    /// Messages from the client, until stdin closes.
    pub(crate) incoming: Receiver<Message>,
    /// Messages to the client.
    pub(crate) outgoing: Sender<Outgoing>,
}

/// Starts the reader and writer threads on stdin and stdout.
pub(crate) fn stdio() -> std::io::Result<Transport> {
    let (in_tx, in_rx) = crossbeam_channel::bounded::<Message>(16);
    let (out_tx, out_rx) = crossbeam_channel::unbounded::<Outgoing>();
    let errors = out_tx.clone();
    std::thread::Builder::new()
        .name("lsp-reader".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            read_messages(&mut stdin.lock(), &in_tx, &errors);
        })?;
    std::thread::Builder::new()
        .name("lsp-writer".into())
        .spawn(move || {
            let stdout = std::io::stdout();
            write_messages(&mut stdout.lock(), &out_rx);
        })?;
    Ok(Transport {
        incoming: in_rx,
        outgoing: out_tx,
    })
}

/// Reads framed messages until the input ends or the server stops
/// listening.
fn read_messages(input: &mut impl BufRead, messages: &Sender<Message>, errors: &Sender<Outgoing>) {
    loop {
        let body = match read_frame(input) {
            Frame::End => return,
            Frame::Body(body) => body,
            Frame::Bad(why) => {
                let error = unreadable(serde_json::Value::Null, ErrorCode::ParseError, why);
                let _ = errors.send(Outgoing::Unreadable(error));
                continue;
            }
        };
        match decode(&body) {
            Ok(message) => {
                if messages.send(message).is_err() {
                    return;
                }
            }
            Err(error) => {
                if errors.send(Outgoing::Unreadable(error)).is_err() {
                    return;
                }
            }
        }
    }
}

/// One framed message, or why there is none.
enum Frame {
    /// The input ended (or failed).
    End,
    /// A message body.
    Body(Vec<u8>),
    /// A frame that was consumed but holds no readable message.
    Bad(String),
}

/// Reads one frame: header lines up to an empty line, then the body.
fn read_frame(input: &mut impl BufRead) -> Frame {
    let mut length: Option<Result<usize, String>> = None;
    let mut saw_header = false;
    loop {
        let mut line = Vec::new();
        match input
            .by_ref()
            .take(MAX_HEADER_BYTES)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return Frame::End,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if saw_header {
                break;
            }
            continue;
        }
        saw_header = true;
        if let Some((name, value)) = text.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = Some(
                    value
                        .trim()
                        .parse::<usize>()
                        .map_err(|_| format!("bad Content-Length `{}`", value.trim())),
                );
            }
        }
    }
    let length = match length {
        None => return Frame::Bad("a message without a Content-Length header".into()),
        Some(Err(why)) => return Frame::Bad(why),
        Some(Ok(n)) => n,
    };
    if length > MAX_MESSAGE_BYTES {
        let skipped = std::io::copy(
            &mut input.by_ref().take(length as u64),
            &mut std::io::sink(),
        );
        return match skipped {
            Ok(n) if n == length as u64 => Frame::Bad(format!(
                "a message of {length} bytes, over the limit of {MAX_MESSAGE_BYTES}"
            )),
            _ => Frame::End,
        };
    }
    let mut body = vec![0; length];
    match input.read_exact(&mut body) {
        Ok(()) => Frame::Body(body),
        Err(_) => Frame::End,
    }
}

/// A message from a body, or the error response it gets.
fn decode(body: &[u8]) -> Result<Message, serde_json::Value> {
    let Ok(text) = std::str::from_utf8(body) else {
        return Err(unreadable(
            serde_json::Value::Null,
            ErrorCode::ParseError,
            "the message is not UTF-8".into(),
        ));
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        unreadable(
            serde_json::Value::Null,
            ErrorCode::ParseError,
            format!("the message is not JSON: {e}"),
        )
    })?;
    let id = value.get("id").cloned().unwrap_or(serde_json::Value::Null);
    serde_json::from_value::<Message>(value).map_err(|e| {
        unreadable(
            id,
            ErrorCode::InvalidRequest,
            format!("not a JSON-RPC request, response or notification: {e}"),
        )
    })
}

fn unreadable(id: serde_json::Value, code: ErrorCode, message: String) -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code as i32, "message": message },
    })
}

/// Writes messages until the channel closes or the output fails (the
/// client is gone).
fn write_messages(out: &mut impl Write, messages: &Receiver<Outgoing>) {
    for message in messages {
        let written = match message {
            Outgoing::Message(m) => m.write(out),
            Outgoing::Unreadable(value) => {
                let text = value.to_string();
                write!(out, "Content-Length: {}\r\n\r\n{text}", text.len())
                    .and_then(|()| out.flush())
            }
        };
        if written.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8]) -> Vec<String> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let (etx, erx) = crossbeam_channel::unbounded();
        read_messages(&mut std::io::Cursor::new(input.to_vec()), &tx, &etx);
        drop((tx, etx));
        let mut out: Vec<String> = rx
            .iter()
            .map(|m| match m {
                Message::Notification(n) => format!("notification {}", n.method),
                Message::Request(r) => format!("request {}", r.method),
                Message::Response(r) => format!("response {}", r.id),
            })
            .collect();
        out.extend(erx.iter().map(|e| match e {
            Outgoing::Unreadable(v) => format!("error {} {}", v["id"], v["error"]["code"]),
            Outgoing::Message(_) => "message".into(),
        }));
        out
    }

    #[test]
    fn bad_messages_get_errors_and_reading_goes_on() {
        let good = r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;
        let mut input = Vec::new();
        for body in [
            &b"{not json"[..],
            b"\xff\xfe",
            br#"{"id":7}"#,
            good.as_bytes(),
        ] {
            input.extend(format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes());
            input.extend(body);
        }
        input.extend(b"Content-Length: 99999999999\r\n\r\n");
        assert_eq!(
            frames(&input),
            [
                "notification initialized",
                "error null -32700",
                "error null -32700",
                "error 7 -32600"
            ]
        );
    }
}
