//! One instance of a program: binding the `-p` values to its parameters,
//! and naming the bound parameters in titles and messages.

use crate::args::InstanceArgs;
use crate::error::{bind_failure, CliError};
use lpk_model::program::{Instance, Program};

/// Binds the parameters of `-p`. A failure keeps the values each
/// parameter got, so that its report can say which values broke a
/// `require`; unknown or missing names are usage errors, unmet `require`s
/// errors of the input ([`CliError::Bind`]).
pub(crate) fn bind<'p>(
    program: &'p Program,
    args: &InstanceArgs,
) -> Result<Instance<'p>, CliError> {
    program
        .bind(&args.params)
        .map_err(|error| bind_failure(program, error, &args.params))
}

/// `N=4, M=2`: the bound parameters, for titles.
pub(crate) fn params_text(inst: &Instance<'_>) -> String {
    inst.program
        .params
        .iter()
        .zip(&inst.params)
        .map(|(d, v)| format!("{}={v}", d.name))
        .collect::<Vec<_>>()
        .join(", ")
}
