//! `lpkc lsp`: the language server over stdio (docs/editors.md). The
//! protocol owns stdout, through the server's transport; nothing else of
//! this command writes there.

use crate::args::GlobalOpts;
use crate::error::CliError;
use crate::lsp::{serve, End};
use std::time::Duration;

/// Arguments of `lpkc lsp`.
#[derive(clap::Args, Debug)]
pub(crate) struct LspArgs {
    /// How long the lint of one version may run before it is cancelled and
    /// the editor told it did not finish, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub(crate) lint_budget: u64,
    /// Accepted for editors that pass it (VS Code's client does); stdio
    /// is the only transport.
    #[arg(long, hide = true)]
    pub(crate) stdio: bool,
}

/// Runs `lpkc lsp`.
pub(crate) fn run(args: &LspArgs, _global: &GlobalOpts) -> Result<(), CliError> {
    match serve(Duration::from_millis(args.lint_budget)) {
        Ok(End::Clean) => Ok(()),
        Ok(End::ExitWithoutShutdown) => Err(CliError::Input(
            "the client sent `exit` without `shutdown`".into(),
        )),
        Ok(End::ClientGone) => Err(CliError::Input(
            "the client closed the connection without `exit`".into(),
        )),
        Err(e) => Err(CliError::Usage(format!(
            "cannot start the language server: {e}"
        ))),
    }
}
