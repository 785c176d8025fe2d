//! A run's kernels against the worker's registry, when it loads the run:
//! the called kernels it does not have (it leaves the run to workers that
//! have them, and takes none of its tasks), and the called kernels
//! outside the standard registry, which `submit` could not check: their
//! signatures against the program's declarations, and their shape rules
//! against the run's input shapes. A kernel that does not fit fails the
//! run, naming the kernel and the line that calls it, before any of its
//! tasks runs.

use crate::error::ClusterError;
use crate::record::RunRecord;
use lpk_model::program::{Instance, KernelDecl, Program};
use lpk_runtime::kernels::Registry;
use std::collections::BTreeMap;

/// Each kernel the program's statements call, with the line of its first
/// call, in the order of the statements.
fn called(program: &Program) -> Vec<(&KernelDecl, u32)> {
    let mut out: Vec<(&KernelDecl, u32)> = Vec::new();
    for st in &program.statements {
        if let Some(k) = program.get_kernel(st.kernel) {
            if !out.iter().any(|(d, _)| d.name == k.name) {
                out.push((k, st.line));
            }
        }
    }
    out
}

/// Checks that `own` has every kernel the run calls, and that those of
/// them outside the standard registry fit the program and its inputs.
pub(super) fn check(
    rec: &RunRecord,
    inst: &Instance<'_>,
    own: &Registry,
) -> Result<(), ClusterError> {
    let calls = called(inst.program);
    let lacking: Vec<String> = calls
        .iter()
        .filter(|(k, _)| own.get(&k.name).is_none())
        .map(|(k, line)| format!("`{}` (line {line})", k.name))
        .collect();
    if !lacking.is_empty() {
        return Err(ClusterError::LacksKernels {
            run: rec.id.clone(),
            kernels: lacking,
        });
    }
    let standard = Registry::standard();
    let users: Vec<_> = calls
        .iter()
        .filter(|(k, _)| standard.get(&k.name).is_none())
        .collect();
    for (decl, line) in &users {
        if let Some(Err(why)) = own.get(&decl.name).map(|k| k.fits(decl)) {
            return Err(ClusterError::Refused(format!(
                "run {}: kernel `{}` (line {line}) is declared `{};`, but this worker's {why}",
                rec.id,
                decl.name,
                decl.declaration(),
            )));
        }
    }
    if users.is_empty() || rec.input_shapes.is_empty() {
        return Ok(());
    }
    let mut shapes = BTreeMap::new();
    for (name, shape) in &rec.input_shapes {
        let Some(m) = inst.program.matrix_named(name) else {
            return Err(ClusterError::BadRecord {
                run: rec.id.clone(),
                field: "shapes",
                why: format!("the program has no matrix `{name}`"),
            });
        };
        shapes.insert(m, *shape);
    }
    lpk_runtime::shapes::check(inst, own, &shapes, rec.block)
        .map_err(|d| ClusterError::Refused(format!("run {}: {d}", rec.id)))
}
