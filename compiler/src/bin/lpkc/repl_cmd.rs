//! placeholder
use std::path::{Path, PathBuf};
use std::process::ExitCode;
pub fn repl(
    _f: &Path,
    _i: &crate::InstanceArgs,
    _h: Option<PathBuf>,
    _n: bool,
    _c: bool,
) -> ExitCode {
    ExitCode::SUCCESS
}
