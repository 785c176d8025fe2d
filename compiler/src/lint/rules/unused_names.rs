//! W0503–W0507, unused names: a kernel no program of the file calls
//! (W0503), an `input` or `matrix` no call reads or writes (W0504), an
//! unused parameter (W0505), loop variable (W0506) or `let` (W0507).
//! Names starting with `_` are exempt. One syntactic walk of the HIR,
//! where names still exist, finds them all, so the five codes share this
//! module. No oracle violation.

use crate::diag::{Code, Diagnostic};
use crate::front::hir::{self, ExprKind, StmtKind, VarKind};
use lpk_grammar::ast::Span;

/// Diagnostics for unused names of one program of a module. A name that
/// starts with `_` is never reported.
pub(crate) fn unused_names(module: &hir::Module, program: &hir::ProgramDef) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut used_vars = vec![false; program.vars.len()];
    for e in &program.exprs {
        if let ExprKind::Var(v) = e.kind {
            if let Some(u) = used_vars.get_mut(v.index()) {
                *u = true;
            }
        }
    }
    let mut used_matrices = vec![false; program.matrices.len()];
    for s in &program.stmts {
        if let StmtKind::Call(c) = &s.kind {
            for a in c.outputs.iter().chain(c.reads()) {
                if let Some(u) = used_matrices.get_mut(a.matrix.index()) {
                    *u = true;
                }
            }
        }
    }
    let mut used_kernels = vec![false; module.kernels.len()];
    for p in &module.programs {
        for s in &p.stmts {
            if let StmtKind::Call(c) = &s.kind {
                if let Some(u) = used_kernels.get_mut(c.kernel.index()) {
                    *u = true;
                }
            }
        }
    }
    // Kernels belong to the file: report them with its first program only.
    let first = module
        .programs
        .first()
        .is_some_and(|p| p.name == program.name);
    if first {
        for (k, used) in module.kernels.iter().zip(&used_kernels) {
            if !used && !k.name.starts_with('_') {
                let message = format!("kernel `{}` is never called", k.name);
                let help = "remove the declaration, or call the kernel";
                out.push(unused_declaration(Code::W0503, message, k.name_span, help));
            }
        }
    }
    // An output with no access at all is reported as never written (W0508).
    for (m, used) in program.matrices.iter().zip(&used_matrices) {
        if !used && !m.name.starts_with('_') && m.role != lpk_grammar::ast::Role::Output {
            let message = format!("matrix `{}` is never read or written", m.name);
            let help = "remove the declaration";
            out.push(unused_declaration(Code::W0504, message, m.name_span, help));
        }
    }
    for (v, used) in program.vars.iter().zip(&used_vars) {
        if *used || v.name.starts_with('_') {
            continue;
        }
        let (code, what, help) = match v.kind {
            VarKind::Param(_) => (
                Code::W0505,
                "parameter",
                "remove the parameter, or name it `_name` if callers must still pass it",
            ),
            VarKind::Loop(_) => (
                Code::W0506,
                "loop variable",
                "name it `_` or `_name` if the loop only repeats its body",
            ),
            VarKind::Let(_) => (Code::W0507, "`let`", "remove the `let`"),
        };
        out.push(unused(
            code,
            format!("{what} `{}` is never used", v.name),
            (v.span, "bound here"),
            help,
        ));
    }
    out
}

/// The warning of an unused declaration, at its name.
fn unused_declaration(code: Code, message: String, name_span: Span, help: &str) -> Diagnostic {
    unused(code, message, (name_span, "declared here"), help)
}

/// The warning of an unused name: `message`, the name's span with its
/// label, and the help.
fn unused(code: Code, message: String, at: (Span, &str), help: &str) -> Diagnostic {
    Diagnostic::warning(code, message, at.0)
        .with_primary_message(at.1)
        .with_help(help)
}
