//! One module per subcommand, each with its arguments (`XArgs`, a clap
//! `Args` struct) and `run(&XArgs, &GlobalOpts) -> Result<(), CliError>`.
//! Commands build on the shared modules (`args`, `load`, `instance`,
//! `report`, `output`) and the libraries, never on each other.

pub mod bench;
pub mod calibrate;
pub mod check;
pub mod collect;
pub mod compile;
pub mod dag;
pub mod dot;
pub mod explain;
pub mod fmt;
pub mod inspect;
pub mod lint;
pub mod lsp;
pub mod plans;
pub mod provision;
pub mod query;
pub mod repl;
pub mod resume;
pub mod run;
pub mod simulate;
pub mod stats;
pub mod status;
pub mod submit;
pub mod trace;
pub mod worker;
