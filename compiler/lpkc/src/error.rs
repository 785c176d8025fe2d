//! [`CliError`]: why a command failed. Commands return it instead of exit
//! codes; `main` reports it (text on stderr, or the diagnostics object of
//! docs/cli.md on stdout with `--format json`) and maps it to the exit code
//! in one place ([`CliError::exit_code`]).

use lpk_model::program::BindError;

/// Why a command failed.
#[derive(Debug)]
pub(crate) enum CliError {
    /// The command line is wrong: bad flags or flag values, a missing or
    /// unreadable file, a program that is not in the file. `main` reports
    /// the message; exit code 2.
    Usage(String),
    /// The input has an error that one message says (an instance over its
    /// task limit, a failed evaluation, a failed run). `main` reports the
    /// message; exit code 1.
    Input(String),
    /// The `-p` values do not make an instance of the program. `main`
    /// reports it as a diagnostic at the declaration it breaks (found again
    /// in the source, which the lowered program does not keep); exit code 2
    /// for an unknown or missing parameter, else 1.
    Bind(Box<BindFailure>),
    /// The input has errors and the command has reported them already
    /// (diagnostics in the chosen format, failed query lines, DAG rule
    /// violations). Exit code 1, nothing more printed.
    Reported,
}

/// A failed binding with what its report names: the program and the
/// value each parameter was given (or defaulted to).
#[derive(Debug)]
pub(crate) struct BindFailure {
    /// Why the binding failed.
    pub(crate) error: BindError,
    /// The program's name.
    pub(crate) program: String,
    /// Each parameter with its value, where it has one, in declaration
    /// order.
    pub(crate) values: Vec<(String, Option<i64>)>,
}

impl CliError {
    /// Exit code: the input has errors.
    pub(crate) const EXIT_INPUT: u8 = 1;
    /// Exit code: usage error.
    pub(crate) const EXIT_USAGE: u8 = 2;

    /// The process exit code of this failure.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => Self::EXIT_USAGE,
            CliError::Bind(b) if b.is_usage() => Self::EXIT_USAGE,
            CliError::Input(_) | CliError::Bind(_) | CliError::Reported => Self::EXIT_INPUT,
        }
    }
}

impl BindFailure {
    /// Whether the command line is at fault (an unknown or missing
    /// parameter) rather than the instance (an unmet `require`, a bad
    /// extent).
    pub(crate) fn is_usage(&self) -> bool {
        matches!(
            self.error,
            BindError::Unknown { .. } | BindError::Missing(_)
        )
    }
}

/// A failed binding of the given and inferred parameters, reported like
/// that of any command: at the `require` (or declaration) it breaks, with
/// the values each parameter got.
pub(crate) fn bind_failure(
    program: &lpk_model::program::Program,
    error: BindError,
    params: &[(String, i64)],
) -> CliError {
    let values = program
        .params
        .iter()
        .map(|p| {
            let bound = params.iter().rev().find(|(n, _)| *n == p.name);
            (p.name.clone(), bound.map(|(_, v)| *v).or(p.default))
        })
        .collect();
    CliError::Bind(Box::new(BindFailure {
        error,
        program: program.name.clone(),
        values,
    }))
}
