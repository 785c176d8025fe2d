//! `lpkc lsp`: a language server over stdio. The editor gets what `lpkc
//! check`, `lint`, `fmt`, `dot` and `query` compute, from the same
//! library calls: diagnostics as the text changes, hover with the plans,
//! navigation by the HIR's ids and the plans' relations, formatting, quick
//! fixes, semantic tokens and inlay hints (task counts).
//!
//! Modules form a DAG: `server` (the loop and the protocol) uses the
//! feature modules `hover`, `navigate`, `edit`, `tokens`, `inlay` and
//! `diagnostics`, which use `analysis` (one analysed version of a
//! document) and `plans` (what the compiled program says about a
//! statement); `analysis` uses `position` (bytes and UTF-16 positions);
//! `background` (the worker for plans and lint) and `transport` (stdio
//! framing) use none of them.

mod analysis;
mod background;
mod diagnostics;
mod edit;
mod hover;
mod inlay;
mod navigate;
mod plans;
mod polynomial;
mod position;
mod server;
mod tokens;
mod transport;

pub(crate) use server::End;

/// Serves one client on stdin and stdout until it exits or goes away.
pub(crate) fn serve(lint_budget: std::time::Duration) -> std::io::Result<End> {
    let transport = transport::stdio()?;
    server::run(transport, lint_budget)
}
