//! One instance of a program: binding the `-p` values to its parameters,
//! and naming the bound parameters in titles and messages.

use crate::args::InstanceArgs;
use crate::error::CliError;
use model::program::{BindError, Instance, Program};

/// Binds the parameters of `-p`: unknown or missing names are usage
/// errors, unmet `require`s are errors of the input.
pub fn bind<'p>(program: &'p Program, args: &InstanceArgs) -> Result<Instance<'p>, CliError> {
    program.bind(&args.params).map_err(|e| match e {
        BindError::Unknown { .. } | BindError::Missing(_) => CliError::Usage(e.to_string()),
        other => CliError::Input(other.to_string()),
    })
}

/// `N=4, M=2`: the bound parameters, for titles.
pub fn params_text(inst: &Instance<'_>) -> String {
    inst.program
        .params
        .iter()
        .zip(&inst.params)
        .map(|(d, v)| format!("{}={v}", d.name))
        .collect::<Vec<_>>()
        .join(", ")
}
