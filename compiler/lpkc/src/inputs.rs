//! `--input NAME=SPEC`: the data of a program's input matrices, for the
//! commands that run a program (`run`, `submit`), checked against the
//! program (`args.rs` parses each `--input`).

use crate::error::CliError;
use lpk_model::program::Program;
use lpk_model::MatrixId;
use lpk_runtime::dense::InputSpec;
use lpk_runtime::pipeline;
use std::collections::BTreeMap;

/// Checks the `--input`s against the program: every `input` matrix needs
/// data, and every `--input` must name an input matrix, once. Returns the
/// specs by matrix index.
pub(crate) fn specs(
    program: &Program,
    given: &[(String, String)],
) -> Result<BTreeMap<MatrixId, InputSpec>, CliError> {
    let mut specs: BTreeMap<MatrixId, InputSpec> = BTreeMap::new();
    for (name, spec) in given {
        let m =
            pipeline::input_matrix(program, name).map_err(|e| CliError::Usage(e.to_string()))?;
        let spec = match InputSpec::parse(spec) {
            Ok(s) => s,
            Err(e) => return Err(CliError::Usage(e.to_string())),
        };
        if specs.insert(m, spec).is_some() {
            return Err(CliError::Usage(format!("--input {name} is given twice")));
        }
    }
    let missing = pipeline::missing_inputs(program, &specs);
    if let Some(first) = missing.first() {
        return Err(CliError::Usage(format!(
            "input matrix `{first}` needs data: --input {first}=FILE.npy (or random:ROWSxCOLS, spd:N, identity:N){}",
            if missing.len() > 1 {
                format!("; also missing: {}", missing[1..].join(", "))
            } else {
                String::new()
            }
        )));
    }
    Ok(specs)
}
