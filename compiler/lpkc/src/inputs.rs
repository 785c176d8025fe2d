//! `--input NAME=SPEC`: the data of a program's input matrices, for the
//! commands that run a program (`run`, `submit`).

use crate::error::CliError;
use lpk_model::program::{Program, Role};
use lpk_model::MatrixId;
use lpk_runtime::dense::InputSpec;
use std::collections::BTreeMap;

/// Parses one `--input NAME=SPEC` (the spec itself is checked later,
/// against the program's matrices).
pub(crate) fn parse_input(s: &str) -> Result<(String, String), String> {
    let (name, spec) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=SPEC (e.g. A=a.npy or A=spd:1024), found `{s}`"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("expected NAME=SPEC, found `{s}`"));
    }
    Ok((name.to_string(), spec.trim().to_string()))
}

/// Checks the `--input`s against the program: every `input` matrix needs
/// data, and every `--input` must name an input matrix, once. Returns the
/// specs by matrix index.
pub(crate) fn specs(
    program: &Program,
    given: &[(String, String)],
) -> Result<BTreeMap<MatrixId, InputSpec>, CliError> {
    // Inputs: every `input` matrix needs data; every --input must name one.
    let mut specs: BTreeMap<MatrixId, (String, InputSpec)> = BTreeMap::new();
    for (name, spec) in given {
        let Some((m, decl)) = program.matrix_ids().find(|(_, m)| m.name == *name) else {
            let known: Vec<&str> = program
                .matrices
                .iter()
                .filter(|m| m.role == Role::Input)
                .map(|m| m.name.as_str())
                .collect();
            return Err(CliError::Usage(format!(
                "`{name}` is not a matrix of program `{}` (its inputs: {})",
                program.name,
                known.join(", ")
            )));
        };
        if decl.role != Role::Input {
            return Err(CliError::Usage(format!(
                "`{name}` is not an input of program `{}`; only input matrices take data",
                program.name
            )));
        }
        let spec = match InputSpec::parse(spec) {
            Ok(s) => s,
            Err(e) => return Err(CliError::Usage(e.to_string())),
        };
        if specs.insert(m, (name.clone(), spec)).is_some() {
            return Err(CliError::Usage(format!("--input {name} is given twice")));
        }
    }
    let missing: Vec<&str> = program
        .matrix_ids()
        .filter(|(i, m)| m.role == Role::Input && !specs.contains_key(i))
        .map(|(_, m)| m.name.as_str())
        .collect();
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
    Ok(specs.into_iter().map(|(m, (_, s))| (m, s)).collect())
}
