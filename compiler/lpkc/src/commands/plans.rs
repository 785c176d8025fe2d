//! `lpkc plans`: print the dependence plans of a program, saying where
//! each enumerates.

use crate::args::{GlobalOpts, ProgramArg};
use crate::error::CliError;
use crate::{load, output};
use std::path::PathBuf;

/// Arguments of `lpkc plans`.
#[derive(clap::Args, Debug)]
pub(crate) struct PlansArgs {
    /// The `.lpk` source file.
    pub(crate) file: PathBuf,
    #[command(flatten)]
    pub(crate) program: ProgramArg,
}

/// Runs `lpkc plans`.
pub(crate) fn run(args: &PlansArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let (_, program) = load::program(&args.file, &args.program, global, load::Rules::Ignore)?;
    output::out(&lpk_compiler::explore::plans_text::plans_text(&program));
    Ok(())
}
