//! `lpkc explain`: print the documentation page of a diagnostic code, or
//! list every code with its summary.

use crate::args::GlobalOpts;
use crate::error::CliError;
use crate::output;
use lpk_compiler::diag::codes;

/// Arguments of `lpkc explain`.
#[derive(clap::Args, Debug)]
pub(crate) struct ExplainArgs {
    /// The code; omit it with `--list` to list every code.
    pub(crate) code: Option<String>,
    /// List every code with its summary.
    #[arg(long)]
    pub(crate) list: bool,
}

/// Runs `lpkc explain`.
pub(crate) fn run(args: &ExplainArgs, _global: &GlobalOpts) -> Result<(), CliError> {
    let code = match (&args.code, args.list) {
        (Some(code), false) => code,
        _ => {
            for c in codes::CODES {
                output::line(&format!("{}  {}", c.code, c.summary));
            }
            return Ok(());
        }
    };
    let info = codes::lookup(code).ok_or_else(|| {
        CliError::Usage(format!(
            "unknown diagnostic code `{code}`; `lpkc explain --list` lists every code"
        ))
    })?;
    output::out(info.doc);
    Ok(())
}
