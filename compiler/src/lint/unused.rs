//! What is declared or written but never used: unused kernels, matrices,
//! parameters, loop variables and `let`s (from the HIR, where names still
//! exist), dead writes (an access to an intermediate matrix that no read
//! can ever meet, proved by integer feasibility), outputs that no running
//! statement writes, and kernel calls that share a line (and so a task
//! name).

use super::split::Split;
use crate::diag::{Code, Diagnostic};
use crate::front::hir::{self, ExprKind, StmtKind, VarKind};
use model::program::{Program, Role};

/// Diagnostics for unused names of one program of a module. A name that
/// starts with `_` is never reported.
pub(crate) fn unused_names(module: &hir::Module, program: &hir::Program) -> Vec<Diagnostic> {
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
                out.push(
                    Diagnostic::warning(
                        Code::W0503,
                        format!("kernel `{}` is never called", k.name),
                        k.name_span,
                    )
                    .with_primary_message("declared here")
                    .with_help("remove the declaration, or call the kernel"),
                );
            }
        }
    }
    // An output with no access at all is reported as never written (W0508).
    for (m, used) in program.matrices.iter().zip(&used_matrices) {
        if !used && !m.name.starts_with('_') && m.role != grammar::ast::Role::Output {
            out.push(
                Diagnostic::warning(
                    Code::W0504,
                    format!("matrix `{}` is never read or written", m.name),
                    m.name_span,
                )
                .with_primary_message("declared here")
                .with_help("remove the declaration"),
            );
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
        out.push(
            Diagnostic::warning(code, format!("{what} `{}` is never used", v.name), v.span)
                .with_primary_message("bound here")
                .with_help(help),
        );
    }
    out
}

/// Write accesses (statement, access) of intermediate matrices that no
/// read access can ever meet, for any parameter value (proved), among
/// statements that may run.
pub(crate) fn dead_writes(p: &Program, sp: &Split, never: &[bool]) -> Vec<(u32, u32)> {
    let pool = &sp.exprs;
    let mut out = Vec::new();
    for (s, st) in p.statements.iter().enumerate() {
        if never.get(s).copied().unwrap_or(false) {
            continue;
        }
        let Some(w_variants) = sp.variants.get(s) else {
            continue;
        };
        for (a, w) in st.writes.iter().enumerate() {
            let temporary = p
                .matrices
                .get(w.matrix as usize)
                .is_some_and(|m| m.role == Role::Temporary);
            if !temporary {
                continue;
            }
            let may_be_read = w_variants.iter().enumerate().any(|(wi, wv)| {
                sp.all().any(|(rs, ri, rv)| {
                    rv.st.reads.iter().any(|r| {
                        let Some(w) = wv.st.writes.get(a) else {
                            return true;
                        };
                        if r.matrix != w.matrix || super::assign::constant_clash(pool, w, r) {
                            return false;
                        }
                        let mut sys = sp.with_domain(s, wi, 0);
                        sp.add_domain(&mut sys, rs, ri, 1);
                        for (&x, &y) in w.indices.iter().zip(&r.indices) {
                            if let (Some(fx), Some(fy)) =
                                (sys.form(pool, 0, x), sys.form(pool, 1, y))
                            {
                                sys.eq(&fx, &fy);
                            }
                        }
                        sys.feasible()
                    })
                })
            });
            if !may_be_read {
                out.push((s as u32, a as u32));
            }
        }
    }
    out
}

/// Output matrices that no statement that may run writes.
pub(crate) fn unwritten_outputs(p: &Program, never: &[bool]) -> Vec<u32> {
    (0..p.matrices.len() as u32)
        .filter(|&m| {
            p.matrices
                .get(m as usize)
                .is_some_and(|d| d.role == Role::Output)
                && !p.statements.iter().enumerate().any(|(s, st)| {
                    !never.get(s).copied().unwrap_or(false)
                        && st.writes.iter().any(|w| w.matrix == m)
                })
        })
        .collect()
}
