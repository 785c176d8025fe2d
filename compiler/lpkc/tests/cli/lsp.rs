//! `lpkc lsp` driven as an editor drives it: the real binary over stdio,
//! JSON-RPC with `Content-Length` framing, a session from `initialize` to
//! `exit`, with the responses snapshotted; malformed input, positions past
//! the end, a 16 MiB document and a client that dies.

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The longest any one answer may take before the test fails (the server
/// answers in milliseconds; this only keeps a broken server from hanging
/// the suite).
const PATIENCE: Duration = Duration::from_secs(60);

/// A client: the server process, its stdin, and what it has sent.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: Receiver<Value>,
    /// Notifications received while waiting for something else.
    pending: VecDeque<Value>,
    next_id: i64,
}

impl Client {
    /// Starts `lpkc lsp` and initializes it.
    fn start() -> Client {
        let mut client = Client::spawn();
        let init = client.request("initialize", json!({ "capabilities": {} }));
        assert_eq!(init["result"]["serverInfo"]["name"], "lpkc lsp", "{init}");
        client.notify("initialized", json!({}));
        client
    }

    /// Starts `lpkc lsp` without initializing it.
    fn spawn() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lpkc"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("lpkc lsp starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(body) = read_frame(&mut reader) {
                let value: Value = serde_json::from_slice(&body).expect("the server sends JSON");
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        Client {
            stdin: child.stdin.take(),
            child,
            messages: rx,
            pending: VecDeque::new(),
            next_id: 1,
        }
    }

    fn write_raw(&mut self, body: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let header = format!("Content-Length: {}\r\n\r\n", body.len());
        stdin.write_all(header.as_bytes()).expect("write header");
        stdin.write_all(body).expect("write body");
        stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str, params: Value) {
        let message = json!({ "jsonrpc": "2.0", "method": method, "params": params });
        self.write_raw(message.to_string().as_bytes());
    }

    /// Sends a request and returns its whole response.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.write_raw(message.to_string().as_bytes());
        self.response(&json!(id))
    }

    /// Waits for the response with this id, keeping notifications.
    fn response(&mut self, id: &Value) -> Value {
        loop {
            let m = self.receive();
            if m.get("method").is_none() && m["id"] == *id {
                return m;
            }
            self.pending.push_back(m);
        }
    }

    fn receive(&mut self) -> Value {
        match self.messages.recv_timeout(PATIENCE) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => panic!("no message from the server in {PATIENCE:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output"),
        }
    }

    /// Waits for a notification `method` whose params satisfy `pred`,
    /// dropping the others.
    fn notification(&mut self, method: &str, pred: impl Fn(&Value) -> bool) -> Value {
        while let Some(m) = self.pending.pop_front() {
            if m["method"] == method && pred(&m["params"]) {
                return m["params"].clone();
            }
        }
        loop {
            let m = self.receive();
            if m["method"] == method && pred(&m["params"]) {
                return m["params"].clone();
            }
        }
    }

    /// The diagnostics of the check of `version`.
    fn diagnostics(&mut self, uri: &str, version: i64) -> Value {
        self.notification("textDocument/publishDiagnostics", |p| {
            p["uri"] == uri && p["version"] == version
        })
    }

    /// Waits until the lint of `version` has been published; the
    /// diagnostics published last before the server said so.
    fn linted(&mut self, uri: &str, version: i64) -> Value {
        let mark = format!("lint of {uri} (version {version}) took");
        let mut last = None;
        loop {
            let m = match self.pending.pop_front() {
                Some(m) => m,
                None => self.receive(),
            };
            let p = &m["params"];
            if m["method"] == "textDocument/publishDiagnostics"
                && p["uri"] == uri
                && p["version"] == version
            {
                last = Some(p.clone());
            }
            if m["method"] == "window/logMessage"
                && p["message"].as_str().is_some_and(|t| t.starts_with(&mark))
            {
                return last.expect("the lint's diagnostics come before its log line");
            }
        }
    }

    fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "lpk", "version": 1, "text": text } }),
        );
    }

    fn change(&mut self, uri: &str, version: i64, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({
                "textDocument": { "uri": uri, "version": version },
                "contentChanges": [{ "text": text }],
            }),
        );
    }

    /// A request at a position (0-based line and UTF-16 column).
    fn at(&mut self, method: &str, uri: &str, line: u32, character: u32) -> Value {
        let mut params = json!({
            "textDocument": { "uri": uri },
            "position": { "line": line, "character": character },
        });
        if method == "textDocument/references" {
            params["context"] = json!({ "includeDeclaration": true });
        }
        self.request(method, params)
    }

    /// The code actions at a position (an empty range).
    fn code_actions(&mut self, uri: &str, (line, character): (u32, u32)) -> Value {
        let at = json!({ "line": line, "character": character });
        self.request(
            "textDocument/codeAction",
            json!({
                "textDocument": { "uri": uri },
                "range": { "start": at, "end": at },
                "context": { "diagnostics": [] },
            }),
        )
    }

    /// `shutdown` then `exit`; the exit status.
    fn shutdown(mut self) -> i32 {
        let r = self.request("shutdown", Value::Null);
        assert_eq!(r["result"], Value::Null, "{r}");
        self.notify("exit", Value::Null);
        self.wait()
    }

    /// Waits for the process to end, within a few seconds.
    fn wait(&mut self) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status.code().unwrap_or(-1);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("lpkc lsp did not exit within 5 s");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One framed message from the server.
fn read_frame(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            length = v.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

fn example(name: &str) -> String {
    let path = lpk_test_support::workspace_root()
        .join("examples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The 0-based line and UTF-16 column of the `nth` occurrence of `needle`
/// in `text`, plus `shift` characters.
fn find(text: &str, needle: &str, nth: usize, shift: u32) -> (u32, u32) {
    let at = text
        .match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("`{needle}` #{nth} is in the text"))
        .0;
    let before = &text[..at];
    let line = before.matches('\n').count() as u32;
    let column = before
        .rsplit('\n')
        .next()
        .unwrap_or("")
        .encode_utf16()
        .count() as u32;
    (line, column + shift)
}

/// A range as `line:col-line:col`, 0-based as LSP counts.
fn range(r: &Value) -> String {
    format!(
        "{}:{}-{}:{}",
        r["start"]["line"], r["start"]["character"], r["end"]["line"], r["end"]["character"]
    )
}

/// Locations (one, or a list) as ranges, with the text they cover.
fn locations(v: &Value, text: &str) -> Value {
    let one = |l: &Value| {
        let r = &l["range"];
        let line = text
            .lines()
            .nth(r["start"]["line"].as_u64().unwrap_or(0) as usize)
            .unwrap_or("");
        let (from, to) = (
            r["start"]["character"].as_u64().unwrap_or(0) as usize,
            r["end"]["character"].as_u64().unwrap_or(0) as usize,
        );
        let covered: String = if r["start"]["line"] == r["end"]["line"] {
            line.chars()
                .skip(from)
                .take(to.saturating_sub(from))
                .collect()
        } else {
            format!("{}...", line.chars().skip(from).collect::<String>())
        };
        Value::String(format!("{} `{covered}`", range(r)))
    };
    match v {
        Value::Array(items) => Value::Array(items.iter().map(one).collect()),
        Value::Null => Value::Null,
        other => one(other),
    }
}

/// Document symbols as an indented outline.
fn outline(symbols: &Value, depth: usize, out: &mut String) {
    for s in symbols.as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{}{} (kind {}) {} [{}]\n",
            "  ".repeat(depth),
            s["name"].as_str().unwrap_or("?"),
            s["kind"],
            s["detail"].as_str().unwrap_or(""),
            range(&s["selectionRange"])
        ));
        outline(&s["children"], depth + 1, out);
    }
}

/// Diagnostics one a line: range, severity, code, source and message,
/// then the related information indented.
fn diagnostic_lines(diagnostics: &Value) -> String {
    let mut out = String::new();
    for d in diagnostics.as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  {} severity {} {} ({}): {}\n",
            range(&d["range"]),
            d["severity"],
            d["code"].as_str().unwrap_or(""),
            d["source"].as_str().unwrap_or(""),
            d["message"]
                .as_str()
                .unwrap_or("")
                .replace('\n', "\n      ")
        ));
        for r in d["relatedInformation"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "    related {}: {}\n",
                range(&r["location"]["range"]),
                r["message"].as_str().unwrap_or("")
            ));
        }
        if let Some(tags) = d.get("tags") {
            out.push_str(&format!("    tags {tags}\n"));
        }
    }
    out
}

/// Code actions one a line: title, the diagnostic code, and the edits.
fn fix_lines(actions: &Value) -> String {
    let mut out = String::new();
    for a in actions.as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  fix \"{}\" ({}, for {})\n",
            a["title"].as_str().unwrap_or(""),
            a["kind"].as_str().unwrap_or(""),
            a["diagnostics"][0]["code"].as_str().unwrap_or("")
        ));
        for edits in a["edit"]["changes"]
            .as_object()
            .into_iter()
            .flat_map(|m| m.values())
        {
            for e in edits.as_array().into_iter().flatten() {
                out.push_str(&format!(
                    "    edit {} -> {:?}\n",
                    range(&e["range"]),
                    e["newText"].as_str().unwrap_or("")
                ));
            }
        }
    }
    out
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).expect("JSON prints")
}

/// Hover text only (the Markdown).
fn hover_text(v: &Value) -> String {
    v["result"]["contents"]["value"]
        .as_str()
        .unwrap_or("<no hover>")
        .to_string()
}

const CHOLESKY: &str = "file:///work/cholesky.lpk";

#[test]
fn lsp_a_session_on_cholesky() {
    let _guard = lpk_test_support::snapshot_settings("lsp").bind_to_scope();
    let text = format!("# params: N=6\n{}", example("cholesky.lpk"));
    let mut c = Client::start();
    c.open(CHOLESKY, &text);
    let check = c.diagnostics(CHOLESKY, 1);
    assert_eq!(check["diagnostics"], json!([]), "{check}");
    let linted = c.linted(CHOLESKY, 1);
    assert_eq!(linted["diagnostics"], json!([]), "{linted}");

    let (l, col) = find(&text, "trsm(L[k, k], A[i, k])", 0, 0);
    insta::assert_snapshot!(
        "hover_statement",
        hover_text(&c.at("textDocument/hover", CHOLESKY, l, col + 1))
    );
    insta::assert_snapshot!(
        "hover_read",
        hover_text(&c.at("textDocument/hover", CHOLESKY, l, col + 5))
    );
    let (l, col) = find(&text, "for i in range(j, N)", 0, 4);
    insta::assert_snapshot!(
        "hover_loop",
        hover_text(&c.at("textDocument/hover", CHOLESKY, l, col))
    );
    let (l, col) = find(&text, "matrix S", 0, 7);
    insta::assert_snapshot!(
        "hover_matrix",
        hover_text(&c.at("textDocument/hover", CHOLESKY, l, col))
    );
    let (l, col) = find(&text, "kernel syrk", 0, 7);
    insta::assert_snapshot!(
        "hover_kernel",
        hover_text(&c.at("textDocument/hover", CHOLESKY, l, col))
    );

    // The `L` read by trsm: its declaration, every mention, its writers.
    let (l, col) = find(&text, "trsm(L[k, k], A[i, k])", 0, 5);
    let definition = c.at("textDocument/definition", CHOLESKY, l, col);
    let references = c.at("textDocument/references", CHOLESKY, l, col);
    let writers = c.at("textDocument/implementation", CHOLESKY, l, col);
    let (l, col) = find(&text, "L[k, k] = chol(A[k, k])", 0, 0);
    let readers = c.at("textDocument/implementation", CHOLESKY, l, col);
    let (l, col) = find(&text, "range(N)", 0, 6);
    let param = c.at("textDocument/references", CHOLESKY, l, col);
    insta::assert_snapshot!(
        "navigation",
        pretty(&json!({
            "definition of L": locations(&definition["result"], &text),
            "references of L": locations(&references["result"], &text),
            "references of N": locations(&param["result"], &text),
            "writers of L[k, k] read by trsm": locations(&writers["result"], &text),
            "readers of L[k, k] written by chol (k = 0)": locations(&readers["result"], &text),
        }))
    );
    let symbols = c.request(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": CHOLESKY } }),
    );
    let mut tree = String::new();
    outline(&symbols["result"], 0, &mut tree);
    insta::assert_snapshot!("document_symbols", tree);

    // Inlay hints: each call's task count at N = 6 (`# params:`); they
    // add up to Cholesky's N (N + 1) (N + 2) / 6 = 56 tasks.
    let hints = inlay_hints(&mut c, CHOLESKY, &text);
    insta::assert_snapshot!("inlay_hints", hints.join("\n"));
    let total: u64 = hints
        .iter()
        .filter_map(|h| h.split(": ").nth(1)?.split(' ').next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(total, 56, "{hints:?}");
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn lsp_hover_fits_a_polynomial_of_several_parameters() {
    // M · (1 + 2 + ... + N) tasks: a polynomial in M and N, which hover
    // gives beside the count at the `# params:` values.
    let uri = "file:///work/tri.lpk";
    let text = "# params: M=3, N=4\n\
        kernel copy(a) -> (b);\n\
        program tri(M: int, N: int) {\n\
        \x20   require M >= 1;\n\
        \x20   require N >= 1;\n\
        \x20   input A[M, N, N];\n\
        \x20   output B[M, N, N];\n\
        \x20   for i in range(M) {\n\
        \x20       for j in range(N) {\n\
        \x20           for k in range(j + 1) {\n\
        \x20               B[i, j, k] = copy(A[i, j, k]);\n\
        \x20           }\n\
        \x20       }\n\
        \x20   }\n\
        }\n";
    let mut c = Client::start();
    c.open(uri, text);
    let linted = c.linted(uri, 1);
    assert_eq!(linted["diagnostics"], json!([]), "{linted}");
    let (l, col) = find(text, "B[i, j, k] = copy", 0, 0);
    let hover = hover_text(&c.at("textDocument/hover", uri, l, col + 13));
    assert!(
        hover.contains(
            "= `(M·N^2 + M·N) / 2` (fitted to the counts at M, N = 1..7 each, degree at most the loop depth)"
        ),
        "{hover}"
    );
    assert!(hover.contains("At M = 3, N = 4: 30 tasks."), "{hover}");
    assert_eq!(c.shutdown(), 0);
}

/// The inlay hints of the whole document, as `LINE:COL: LABEL (TOOLTIP)`,
/// each with the text of its line up to the hint.
fn inlay_hints(c: &mut Client, uri: &str, text: &str) -> Vec<String> {
    let lines = text.lines().count() as u32;
    let got = c.request(
        "textDocument/inlayHint",
        json!({
            "textDocument": { "uri": uri },
            "range": { "start": { "line": 0, "character": 0 }, "end": { "line": lines, "character": 0 } }
        }),
    );
    got["result"]
        .as_array()
        .unwrap_or_else(|| panic!("inlay hints: {got}"))
        .iter()
        .map(|h| {
            let (l, col) = (
                h["position"]["line"].as_u64().unwrap_or(0),
                h["position"]["character"].as_u64().unwrap_or(0),
            );
            let line = text.lines().nth(l as usize).unwrap_or("");
            let before: String = line.chars().take(col as usize).collect();
            format!(
                "{}:{col}: {} ({}) after `{}`",
                l + 1,
                h["label"].as_str().unwrap_or(""),
                h["tooltip"].as_str().unwrap_or(""),
                before.trim()
            )
        })
        .collect()
}

/// Without a `# params:` comment there are no hints; a client that takes
/// `workspace/inlayHint/refresh` is asked to refresh when a document's
/// plans arrive, so the counts appear without another edit.
#[test]
fn lsp_inlay_hints_need_a_params_comment_and_are_refreshed_when_the_plans_arrive() {
    let mut c = Client::spawn();
    let caps =
        json!({ "capabilities": { "workspace": { "inlayHint": { "refreshSupport": true } } } });
    let init = c.request("initialize", caps);
    assert_eq!(
        init["result"]["capabilities"]["inlayHintProvider"], true,
        "{init}"
    );
    c.notify("initialized", json!({}));
    let plain = example("cholesky.lpk");
    c.open(CHOLESKY, &plain);
    c.linted(CHOLESKY, 1);
    assert!(inlay_hints(&mut c, CHOLESKY, &plain).is_empty());
    let with = format!("# params: N=3\n{plain}");
    c.change(CHOLESKY, 2, &with);
    c.notification("workspace/inlayHint/refresh", |_| true);
    let hints = inlay_hints(&mut c, CHOLESKY, &with);
    assert!(
        hints.iter().any(|h| h.contains(": 2 tasks (`chol@40`")),
        "{hints:?}"
    );
    assert_eq!(c.shutdown(), 0);
}

const EDITED: &str = "file:///work/edited.lpk";

const BROKEN: &str = "kernel chol(a) -> (l);
kernel trsm(l, b) -> (x);

program panel(N: int) {
    require N >= 1;
    input A[N];
    output L[N];

    L[0] = chol(A[0])
    for i in range(1, N) {
        L[i] = trsm(L[0], A[i]);
    }
}
";

#[test]
fn lsp_diagnostics_follow_edits_and_fixes_apply() {
    let _guard = lpk_test_support::snapshot_settings("lsp").bind_to_scope();
    let mut c = Client::start();
    c.open(EDITED, BROKEN);
    let first = c.diagnostics(EDITED, 1);
    let semicolon = c.code_actions(EDITED, find(BROKEN, "chol(A[0])", 0, 10));
    // Fix it, misspell a matrix and add an unused `let`.
    let second_text = BROKEN
        .replace("chol(A[0])\n", "chol(A[0]);\n")
        .replace("trsm(L[0], A[i])", "trsn(L[0], A[i])")
        .replace("    for i", "    let unused = N + 1;\n    for i");
    c.change(EDITED, 2, &second_text);
    let second = c.diagnostics(EDITED, 2);
    let rename = c.code_actions(EDITED, find(&second_text, "trsn", 0, 0));
    let third_text = second_text.replace("trsn", "trsm");
    c.change(EDITED, 3, &third_text);
    let third = c.linted(EDITED, 3);
    let remove = c.code_actions(EDITED, find(&third_text, "unused", 0, 0));
    let mut report = String::new();
    for (title, diagnostics, fixes) in [
        ("version 1: a missing `;`", &first, &semicolon),
        ("version 2: a misspelt kernel", &second, &rename),
        ("version 3, linted: an unused `let`", &third, &remove),
    ] {
        report.push_str(&format!(
            "{title}\n{}{}\n",
            diagnostic_lines(&diagnostics["diagnostics"]),
            fix_lines(&fixes["result"])
        ));
    }
    insta::assert_snapshot!("edits", report);
    let messy = third_text.replace("L[0] = chol(A[0]);", "L[0]=chol( A[0], );  # first");
    c.change(EDITED, 4, &messy);
    c.diagnostics(EDITED, 4);
    let formatting = c.request(
        "textDocument/formatting",
        json!({ "textDocument": { "uri": EDITED }, "options": { "tabSize": 4, "insertSpaces": true } }),
    );
    let edits = &formatting["result"];
    assert_eq!(edits.as_array().map(Vec::len), Some(1), "{formatting}");
    assert_eq!(range(&edits[0]["range"]), "0:0-14:0");
    insta::assert_snapshot!("formatting", edits[0]["newText"].as_str().unwrap_or(""));
    let tokens = c.request(
        "textDocument/semanticTokens/full",
        json!({ "textDocument": { "uri": EDITED } }),
    );
    insta::assert_snapshot!(
        "semantic_tokens",
        decode_tokens(&messy, &tokens["result"]["data"])
    );
    assert_eq!(c.shutdown(), 0);
}

/// Semantic tokens as `line:col text type [modifiers]`, one a line, with
/// the legend the server announces.
fn decode_tokens(text: &str, data: &Value) -> String {
    let types = [
        "keyword",
        "function",
        "namespace",
        "variable",
        "parameter",
        "number",
        "comment",
        "operator",
        "type",
    ];
    let modifiers = ["declaration", "modification", "readonly", "defaultLibrary"];
    let lines: Vec<&str> = text.lines().collect();
    let data: Vec<u64> = data
        .as_array()
        .expect("token data")
        .iter()
        .map(|v| v.as_u64().expect("numbers"))
        .collect();
    let (mut line, mut col) = (0u64, 0u64);
    let mut out = String::new();
    for t in data.chunks(5) {
        if t[0] > 0 {
            col = 0;
        }
        line += t[0];
        col += t[1];
        let src: String = lines[line as usize]
            .chars()
            .skip(col as usize)
            .take(t[2] as usize)
            .collect();
        let mods: Vec<&str> = (0..4)
            .filter(|b| t[4] & (1 << b) != 0)
            .map(|b| modifiers[b])
            .collect();
        out.push_str(&format!(
            "{}:{} {src} {} {mods:?}\n",
            line + 1,
            col + 1,
            types[t[3] as usize]
        ));
    }
    out
}

#[test]
fn lsp_malformed_input_gets_errors_and_the_server_goes_on() {
    let _guard = lpk_test_support::snapshot_settings("lsp").bind_to_scope();
    let mut c = Client::spawn();
    let early = c.request("textDocument/hover", json!({}));
    let init = c.request("initialize", json!({ "capabilities": {} }));
    assert!(init["result"]["capabilities"].is_object(), "{init}");
    c.write_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1,");
    let bad_json = c.response(&Value::Null);
    c.write_raw(b"\xff\xfe{}");
    let not_utf8 = c.response(&Value::Null);
    c.write_raw(br#"{"jsonrpc": "2.0", "id": 77}"#);
    let not_a_message = c.response(&json!(77));
    let unknown = c.request("textDocument/inlineValue", json!({}));
    c.open(EDITED, BROKEN);
    c.diagnostics(EDITED, 1);
    let past_end = c.at("textDocument/hover", EDITED, 400, 0);
    let past_line_end = c.at("textDocument/definition", EDITED, 5, 400);
    let bad_params = c.request("textDocument/hover", json!({ "textDocument": 3 }));
    let not_open = c.at("textDocument/hover", "file:///nowhere.lpk", 0, 0);
    insta::assert_snapshot!(
        "malformed",
        pretty(&json!({
            "hover before initialize": early,
            "truncated JSON": bad_json,
            "a body that is not UTF-8": not_utf8,
            "JSON that is no message": not_a_message,
            "an unknown method": unknown,
            "a line past the end": past_end,
            "a column past the end of its line": past_line_end,
            "parameters of the wrong shape": bad_params,
            "a document that is not open": not_open,
        }))
    );
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn lsp_a_16_mib_document_is_refused_with_a_diagnostic() {
    let mut c = Client::start();
    let mut text = String::from("# padding\n");
    while text.len() <= 16 << 20 {
        text.push_str("# a comment line to make the file larger than the compiler accepts\n");
    }
    let started = Instant::now();
    c.open("file:///work/huge.lpk", &text);
    let d = c.diagnostics("file:///work/huge.lpk", 1);
    assert_eq!(d["diagnostics"][0]["code"], "E0008", "{d}");
    assert_eq!(d["diagnostics"][0]["message"], "source file is too large");
    let hover = c.at("textDocument/hover", "file:///work/huge.lpk", 3, 3);
    assert_eq!(hover["result"], Value::Null, "{hover}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(c.shutdown(), 0);
}

#[test]
fn lsp_the_server_exits_when_its_client_dies() {
    let mut c = Client::start();
    c.open(CHOLESKY, &example("cholesky.lpk"));
    c.diagnostics(CHOLESKY, 1);
    // Closing stdin is what the server sees when its editor is killed.
    drop(c.stdin.take());
    let started = Instant::now();
    assert_eq!(c.wait(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let mut stderr = String::new();
    if let Some(mut e) = c.child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    assert!(
        stderr.contains("closed the connection without `exit`"),
        "{stderr}"
    );
}

#[test]
fn lsp_exit_without_shutdown_is_exit_code_1() {
    let mut c = Client::start();
    c.notify("exit", Value::Null);
    assert_eq!(c.wait(), 1);
}
