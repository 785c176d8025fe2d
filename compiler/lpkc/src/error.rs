//! [`CliError`]: why a command failed. Commands return it instead of exit
//! codes; `main` prints its message and maps it to the exit code of
//! spec/cli.md in one place ([`CliError::exit_code`]).

/// Why a command failed.
#[derive(Debug)]
pub enum CliError {
    /// The command line is wrong: bad flags or flag values, a missing or
    /// unreadable file, an unknown `-p` name, a program that is not in the
    /// file. `main` prints `error: MESSAGE`; exit code 2.
    Usage(String),
    /// The input has an error that one message says (an unmet `require`,
    /// an instance over its task limit, a failed run). `main` prints
    /// `error: MESSAGE`; exit code 1.
    Input(String),
    /// The input has errors and the command has reported them already
    /// (diagnostics in the chosen format, failed query lines, DAG rule
    /// violations). Exit code 1, nothing more printed.
    Reported,
}

impl CliError {
    /// Exit code: the input has errors.
    pub const EXIT_INPUT: u8 = 1;
    /// Exit code: usage error.
    pub const EXIT_USAGE: u8 = 2;

    /// The process exit code of this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => Self::EXIT_USAGE,
            CliError::Input(_) | CliError::Reported => Self::EXIT_INPUT,
        }
    }

    /// The message `main` still has to print, if any.
    pub fn message(&self) -> Option<&str> {
        match self {
            CliError::Usage(m) | CliError::Input(m) => Some(m),
            CliError::Reported => None,
        }
    }
}
