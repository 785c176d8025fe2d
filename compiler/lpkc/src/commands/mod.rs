//! One module per subcommand, each with its arguments (`XArgs`, a clap
//! `Args` struct) and `run(&XArgs, &GlobalOpts) -> Result<(), CliError>`.
//! Commands build on the shared modules (`args`, `load`, `instance`,
//! `report`, `output`) and the libraries, never on each other.

pub(crate) mod bench;
pub(crate) mod calibrate;
pub(crate) mod check;
pub(crate) mod collect;
pub(crate) mod compile;
pub(crate) mod dag;
pub(crate) mod dot;
pub(crate) mod explain;
pub(crate) mod fmt;
pub(crate) mod inspect;
pub(crate) mod lint;
pub(crate) mod lsp;
pub(crate) mod plans;
pub(crate) mod provision;
pub(crate) mod query;
pub(crate) mod repl;
pub(crate) mod resume;
pub(crate) mod run;
pub(crate) mod simulate;
pub(crate) mod stats;
pub(crate) mod status;
pub(crate) mod submit;
pub(crate) mod trace;
pub(crate) mod worker;
