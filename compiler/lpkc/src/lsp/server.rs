//! The message loop: the protocol's life cycle (initialize, shutdown,
//! exit), the documents, and one handler per method. Check results are
//! computed on the loop itself, at once on every open and change (full
//! document sync); the plans and the lint come from the background
//! [`Worker`] and are published when they arrive for the current version.
//! Requests are answered on the loop from the latest analysis, so a hover
//! never waits for a lint.

use crate::lsp::analysis::Analysis;
use crate::lsp::background::{Job, Outcome, Worker};
use crate::lsp::transport::{Outgoing, Transport};
use crate::lsp::{diagnostics, edit, hover, inlay, navigate, tokens};
use lsp_server::{ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{self as notif, Notification as _};
use lsp_types::request::{self as req, Request as _};
use lsp_types::{
    CodeActionProviderCapability, HoverProviderCapability, ImplementationProviderCapability,
    InitializeResult, OneOf, Position, SemanticTokensFullOptions, SemanticTokensOptions,
    SemanticTokensServerCapabilities, ServerCapabilities, ServerInfo, TextDocumentSyncCapability,
    TextDocumentSyncKind, Uri,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How the loop ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// `exit` after `shutdown`, as the protocol asks.
    Clean,
    /// `exit` without `shutdown`.
    ExitWithoutShutdown,
    /// The input closed without `exit` (the client died).
    ClientGone,
}

/// One open document.
struct Document {
    uri: Uri,
    analysis: Analysis,
}

/// The server's state.
struct Server {
    out: crossbeam_channel::Sender<Outgoing>,
    worker: Worker,
    docs: HashMap<String, Document>,
    initialized: bool,
    shutdown: bool,
    /// Whether the client takes `workspace/inlayHint/refresh` (sent when
    /// the plans of a document arrive, so its task counts appear).
    inlay_refresh: bool,
    /// Requests this server sent, for their ids.
    sent: i32,
}

/// Runs the server until `exit` or until the client goes away.
pub(crate) fn run(transport: Transport, lint_budget: Duration) -> std::io::Result<End> {
    let mut server = Server {
        out: transport.outgoing,
        worker: Worker::start(lint_budget)?,
        docs: HashMap::new(),
        initialized: false,
        shutdown: false,
        inlay_refresh: false,
        sent: 0,
    };
    let incoming = transport.incoming;
    loop {
        crossbeam_channel::select! {
            recv(incoming) -> message => {
                let Ok(message) = message else {
                    return Ok(End::ClientGone);
                };
                if let Some(end) = server.handle(message) {
                    return Ok(end);
                }
            }
            recv(server.worker.outcomes) -> outcome => {
                if let Ok(outcome) = outcome {
                    server.outcome(outcome);
                }
            }
        }
    }
}

impl Server {
    fn send(&self, message: impl Into<Message>) {
        // A closed channel means the writer has stopped: the client is gone
        // and the reader will end the loop.
        let _ = self.out.send(Outgoing::Message(message.into()));
    }

    fn handle(&mut self, message: Message) -> Option<End> {
        match message {
            Message::Request(r) => self.request(r),
            Message::Notification(n) => return self.notification(n),
            Message::Response(_) => {}
        }
        None
    }

    /// Why the server refuses any request but `initialize` now: it is not
    /// initialized yet, or it is shutting down.
    fn refusal(&self) -> Option<(ErrorCode, &'static str)> {
        if !self.initialized {
            Some((
                ErrorCode::ServerNotInitialized,
                "the server is not initialized",
            ))
        } else if self.shutdown {
            Some((ErrorCode::InvalidRequest, "the server is shutting down"))
        } else {
            None
        }
    }

    fn request(&mut self, r: Request) {
        if r.method == req::Initialize::METHOD {
            self.initialized = true;
            let p = serde_json::from_value::<lsp_types::InitializeParams>(r.params.clone()).ok();
            self.inlay_refresh = p
                .and_then(|p| p.capabilities.workspace?.inlay_hint?.refresh_support)
                .unwrap_or(false);
            self.send(Response::new_ok(r.id, initialize_result()));
            return;
        }
        if let Some((code, message)) = self.refusal() {
            self.send(error(r.id, code, message));
            return;
        }
        if r.method == req::Shutdown::METHOD {
            self.shutdown = true;
            self.send(Response::new_ok(r.id, ()));
            return;
        }
        let id = r.id.clone();
        let response = match self.answer(r) {
            Ok(value) => Response::new_ok(id, value),
            Err((code, message)) => error(id, code, &message),
        };
        self.send(response);
    }

    fn notification(&mut self, n: Notification) -> Option<End> {
        if n.method == notif::Exit::METHOD {
            return Some(if self.shutdown {
                End::Clean
            } else {
                End::ExitWithoutShutdown
            });
        }
        // A notification the server is in no state for has no one to be
        // told why, so it is dropped where a request would be refused.
        if self.refusal().is_some() {
            return None;
        }
        match n.method.as_str() {
            notif::DidOpenTextDocument::METHOD => {
                if let Ok(p) =
                    serde_json::from_value::<lsp_types::DidOpenTextDocumentParams>(n.params)
                {
                    let d = p.text_document;
                    self.update(d.uri, d.version, d.text);
                }
            }
            notif::DidChangeTextDocument::METHOD => {
                if let Ok(p) =
                    serde_json::from_value::<lsp_types::DidChangeTextDocumentParams>(n.params)
                {
                    // Full sync: the last change holds the whole text.
                    if let Some(change) = p.content_changes.into_iter().last() {
                        self.update(p.text_document.uri, p.text_document.version, change.text);
                    }
                }
            }
            notif::DidCloseTextDocument::METHOD => {
                if let Ok(p) =
                    serde_json::from_value::<lsp_types::DidCloseTextDocumentParams>(n.params)
                {
                    let key = p.text_document.uri.as_str().to_string();
                    self.worker.forget(&key);
                    if self.docs.remove(&key).is_some() {
                        self.publish_empty(p.text_document.uri);
                    }
                }
            }
            _ => {}
        }
        None
    }

    /// A new version of a document: check it, publish, queue the worker.
    fn update(&mut self, uri: Uri, version: i32, text: String) {
        let key = uri.as_str().to_string();
        let name = document_name(&uri);
        let text: Arc<str> = Arc::from(text);
        let analysis = Analysis::new(&name, version, Arc::clone(&text));
        let has_errors = analysis.checked.has_errors();
        let doc = Document { uri, analysis };
        self.publish(&doc);
        self.docs.insert(key.clone(), doc);
        if !has_errors {
            self.worker.submit(Job {
                uri: key,
                name,
                version,
                text,
            });
        } else {
            self.worker.forget(&key);
        }
    }

    fn publish(&self, doc: &Document) {
        let params = lsp_types::PublishDiagnosticsParams {
            uri: doc.uri.clone(),
            diagnostics: diagnostics::all(&doc.analysis, &doc.uri),
            version: Some(doc.analysis.version),
        };
        self.send(Notification::new(
            notif::PublishDiagnostics::METHOD.into(),
            params,
        ));
    }

    fn publish_empty(&self, uri: Uri) {
        let params = lsp_types::PublishDiagnosticsParams {
            uri,
            diagnostics: Vec::new(),
            version: None,
        };
        self.send(Notification::new(
            notif::PublishDiagnostics::METHOD.into(),
            params,
        ));
    }

    /// A result from the worker, kept when it is of the current version.
    fn outcome(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Plans {
                uri,
                version,
                plans,
            } => {
                let mut hinted = false;
                if let Some(doc) = self.current(&uri, version) {
                    doc.analysis.plans = Some(plans);
                    hinted = !doc.analysis.instance_params().is_empty();
                }
                if hinted && self.inlay_refresh {
                    self.sent += 1;
                    let id = RequestId::from(format!("lpkc-{}", self.sent));
                    self.send(Request::new(
                        id,
                        req::InlayHintRefreshRequest::METHOD.into(),
                        (),
                    ));
                }
            }
            Outcome::Lint {
                uri,
                version,
                diagnostics,
                elapsed,
            } => {
                if let Some(doc) = self.current(&uri, version) {
                    doc.analysis.lint = Some(diagnostics);
                }
                if let Some(doc) = self
                    .docs
                    .get(&uri)
                    .filter(|d| d.analysis.version == version)
                {
                    self.publish(doc);
                    self.log(&format!(
                        "lint of {uri} (version {version}) took {} ms",
                        elapsed.as_millis()
                    ));
                }
            }
            Outcome::LintTimedOut {
                uri,
                version,
                budget,
            } => {
                if self
                    .docs
                    .get(&uri)
                    .is_some_and(|d| d.analysis.version == version)
                {
                    self.log(&format!(
                        "the lint of {uri} (version {version}) did not finish within {} s; \
                         its result will be dropped (run `lpkc lint` in a terminal)",
                        budget.as_secs_f64()
                    ));
                }
            }
        }
    }

    fn current(&mut self, uri: &str, version: i32) -> Option<&mut Document> {
        self.docs
            .get_mut(uri)
            .filter(|d| d.analysis.version == version)
    }

    fn log(&self, message: &str) {
        let params = lsp_types::LogMessageParams {
            typ: lsp_types::MessageType::LOG,
            message: message.to_string(),
        };
        self.send(Notification::new(notif::LogMessage::METHOD.into(), params));
    }

    /// The answer to a request other than the life cycle's.
    fn answer(&self, r: Request) -> Result<serde_json::Value, (ErrorCode, String)> {
        let value = match r.method.as_str() {
            req::HoverRequest::METHOD => {
                let p: lsp_types::HoverParams = params(r)?;
                let (doc, offset) = self.at(&p.text_document_position_params)?;
                let a = &doc.analysis;
                json(
                    hover::hover(a, offset, &a.instance_params()).map(|text| lsp_types::Hover {
                        contents: lsp_types::HoverContents::Markup(lsp_types::MarkupContent {
                            kind: lsp_types::MarkupKind::Markdown,
                            value: text,
                        }),
                        range: a.occurrence_at(offset).map(|o| a.range(o.start, o.end)),
                    }),
                )
            }
            req::GotoDefinition::METHOD | req::GotoImplementation::METHOD => {
                let definition = r.method == req::GotoDefinition::METHOD;
                let p: lsp_types::GotoDefinitionParams = params(r)?;
                let (doc, offset) = self.at(&p.text_document_position_params)?;
                let (a, uri) = (&doc.analysis, &doc.uri);
                if definition {
                    json(navigate::definition(a, uri, offset))
                } else {
                    json(navigate::partners(a, uri, offset))
                }
            }
            req::References::METHOD => {
                let p: lsp_types::ReferenceParams = params(r)?;
                let (doc, offset) = self.at(&p.text_document_position)?;
                json(navigate::references(
                    &doc.analysis,
                    &doc.uri,
                    offset,
                    p.context.include_declaration,
                ))
            }
            req::DocumentSymbolRequest::METHOD => {
                let p: lsp_types::DocumentSymbolParams = params(r)?;
                let doc = self.doc(&p.text_document.uri)?;
                json(navigate::symbols(&doc.analysis))
            }
            req::Formatting::METHOD => {
                let p: lsp_types::DocumentFormattingParams = params(r)?;
                let doc = self.doc(&p.text_document.uri)?;
                json(edit::format(&doc.analysis))
            }
            req::CodeActionRequest::METHOD => {
                let p: lsp_types::CodeActionParams = params(r)?;
                let (doc, start, end) = self.within(&p.text_document.uri, p.range)?;
                json(edit::code_actions(&doc.analysis, &doc.uri, start, end))
            }
            req::InlayHintRequest::METHOD => {
                let p: lsp_types::InlayHintParams = params(r)?;
                let (doc, start, end) = self.within(&p.text_document.uri, p.range)?;
                json(inlay::hints(&doc.analysis, start, end))
            }
            req::SemanticTokensFullRequest::METHOD => {
                let p: lsp_types::SemanticTokensParams = params(r)?;
                let doc = self.doc(&p.text_document.uri)?;
                json(lsp_types::SemanticTokens {
                    result_id: None,
                    data: tokens::tokens(&doc.analysis),
                })
            }
            other => {
                return Err((
                    ErrorCode::MethodNotFound,
                    format!("lpkc lsp does not handle `{other}`"),
                ))
            }
        };
        Ok(value)
    }

    fn doc(&self, uri: &Uri) -> Result<&Document, (ErrorCode, String)> {
        self.docs.get(uri.as_str()).ok_or_else(|| {
            (
                ErrorCode::InvalidParams,
                format!(
                    "{} is not open (send textDocument/didOpen first)",
                    uri.as_str()
                ),
            )
        })
    }

    fn at(
        &self,
        p: &lsp_types::TextDocumentPositionParams,
    ) -> Result<(&Document, usize), (ErrorCode, String)> {
        let doc = self.doc(&p.text_document.uri)?;
        let offset = offset(&doc.analysis, p.position)?;
        Ok((doc, offset))
    }

    /// The open document at `uri`, with `range`'s ends as byte offsets.
    fn within(
        &self,
        uri: &Uri,
        range: lsp_types::Range,
    ) -> Result<(&Document, usize, usize), (ErrorCode, String)> {
        let doc = self.doc(uri)?;
        let start = offset(&doc.analysis, range.start)?;
        let end = offset(&doc.analysis, range.end)?;
        Ok((doc, start, end))
    }
}

/// The byte offset of a position, or the error of one past the end.
fn offset(a: &Analysis, pos: Position) -> Result<usize, (ErrorCode, String)> {
    a.lines.offset(&a.text, pos).ok_or_else(|| {
        (
            ErrorCode::InvalidParams,
            format!(
                "position {}:{} is past the end of the document ({} lines)",
                pos.line,
                pos.character,
                a.lines.lines()
            ),
        )
    })
}

fn params<P: serde::de::DeserializeOwned>(r: Request) -> Result<P, (ErrorCode, String)> {
    serde_json::from_value(r.params).map_err(|e| {
        (
            ErrorCode::InvalidParams,
            format!("invalid parameters of `{}`: {e}", r.method),
        )
    })
}

fn json(value: impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}

fn error(id: RequestId, code: ErrorCode, message: &str) -> Response {
    Response::new_err(id, code as i32, message.to_string())
}

/// The name diagnostics use for a document: its path for a `file:` URI.
fn document_name(uri: &Uri) -> String {
    let s = uri.as_str();
    s.strip_prefix("file://").unwrap_or(s).to_string()
}

fn initialize_result() -> InitializeResult {
    InitializeResult {
        capabilities: ServerCapabilities {
            text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
            hover_provider: Some(HoverProviderCapability::Simple(true)),
            definition_provider: Some(OneOf::Left(true)),
            references_provider: Some(OneOf::Left(true)),
            implementation_provider: Some(ImplementationProviderCapability::Simple(true)),
            document_symbol_provider: Some(OneOf::Left(true)),
            document_formatting_provider: Some(OneOf::Left(true)),
            code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
            inlay_hint_provider: Some(OneOf::Left(true)),
            semantic_tokens_provider: Some(
                SemanticTokensServerCapabilities::SemanticTokensOptions(SemanticTokensOptions {
                    legend: tokens::legend(),
                    full: Some(SemanticTokensFullOptions::Bool(true)),
                    range: None,
                    work_done_progress_options: Default::default(),
                }),
            ),
            ..ServerCapabilities::default()
        },
        server_info: Some(ServerInfo {
            name: "lpkc lsp".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
    }
}
