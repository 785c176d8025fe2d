//! Hover: what the name under the cursor is, from the HIR, and what the
//! plans say about the statement or access it stands in. A kernel shows
//! its signature and, for a standard kernel, its line of `docs/kernels.md`;
//! a matrix its declaration and role; a loop variable its range and trip
//! count; a call its task name, domain, task count and the statements it
//! reads from and feeds; a tile access the accesses it may read from or
//! feed. A diagnostic under the cursor adds its code's page, the text
//! `lpkc explain CODE` prints.

use crate::lsp::analysis::{Analysis, Symbol, Use};
use crate::lsp::plans;
use lpk_compiler::front::hir::{ExprId, ExprKind, ProgramDef, StmtKind, VarKind};
use lpk_grammar::ast::Role;
use lpk_model::program::Program;
use std::fmt::Write as _;

/// The table of `docs/kernels.md`, whose rows give each standard kernel's
/// meaning.
const KERNELS_DOC: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/kernels.md"
));

/// The hover text at byte `offset`, Markdown, or `None` over nothing.
pub(crate) fn hover(a: &Analysis, offset: usize, params: &[(String, i64)]) -> Option<String> {
    let mut sections = Vec::new();
    if let Some(o) = a.occurrence_at(offset) {
        let text = match o.symbol {
            Symbol::Kernel(k) => {
                let mut s = kernel(a, k.index());
                if o.role == Use::Mention {
                    if let Some(st) = statement(a, offset, params) {
                        s = format!("{st}\n\n---\n\n{s}");
                    }
                }
                s
            }
            Symbol::Program(p) => program(a, p),
            Symbol::Matrix(p, m) => {
                let mut s = matrix(a, p, m.index());
                if let Some(acc) = access(a, offset) {
                    s.push_str("\n\n");
                    s.push_str(&acc);
                }
                s
            }
            Symbol::Var(p, v) => var(a, p, v.index()),
        };
        sections.push(text);
    }
    for d in crate::lsp::diagnostics::at(a, offset) {
        let info = d.code.info();
        sections.push(format!(
            "**{}**: {} (`lpkc explain {}`)\n\n{}",
            info.code,
            info.summary,
            info.code,
            info.doc.trim_end()
        ));
    }
    (!sections.is_empty()).then(|| sections.join("\n\n---\n\n"))
}

fn code_block(text: &str) -> String {
    format!("```lpk\n{text}\n```")
}

/// A kernel's declaration, and its meaning if it is a standard kernel.
fn kernel(a: &Analysis, k: usize) -> String {
    let Some(kernel) = a.checked.module.kernels.get(k) else {
        return String::new();
    };
    let mut s = code_block(a.slice(kernel.span.start, kernel.span.end));
    let row_start = format!("| `{}(", kernel.name);
    if let Some(row) = KERNELS_DOC.lines().find(|l| l.starts_with(&row_start)) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        if let Some(meaning) = cells.get(3) {
            let _ = write!(s, "\n\nStandard kernel: {meaning} (docs/kernels.md).");
        }
    }
    s
}

/// A program's header: its parameters and requirements.
fn program(a: &Analysis, p: usize) -> String {
    let Some(def) = a.program(p) else {
        return String::new();
    };
    let params: Vec<&str> = def
        .params
        .iter()
        .map(|x| a.slice(x.span.start, x.span.end))
        .collect();
    let mut s = code_block(&format!("program {}({})", def.name, params.join(", ")));
    let calls = def.calls().len();
    let _ = write!(
        s,
        "\n\n{} matri{}, {calls} kernel call{}.",
        def.matrices.len(),
        if def.matrices.len() == 1 { "x" } else { "ces" },
        if calls == 1 { "" } else { "s" }
    );
    for r in &def.requires {
        let e = def.expr(*r);
        let _ = write!(s, "\n\n`require {};`", a.slice(e.span.start, e.span.end));
    }
    s
}

/// A matrix's declaration and role.
fn matrix(a: &Analysis, p: usize, m: usize) -> String {
    let Some(def) = a.program(p) else {
        return String::new();
    };
    let Some(matrix) = def.matrices.get(m) else {
        return String::new();
    };
    let role = match (matrix.role, matrix.zero) {
        (Role::Input, _) => "an input: read-only, its tiles come from the caller",
        (Role::Output, _) => "an output: kept after the run",
        (Role::Temporary, false) => "an intermediate: its tiles may be freed after their last read",
        (Role::Temporary, true) => {
            "an intermediate zero matrix: a tile no task writes reads as a zero tile"
        }
    };
    let extents: Vec<String> = matrix
        .extents
        .iter()
        .map(|&e| expr_text(a, def, e))
        .collect();
    format!(
        "{}\n\n`{}` is {role}; {} dimension{}, extents in tiles `[{}]`.",
        code_block(a.slice(matrix.span.start, matrix.span.end)),
        matrix.name,
        extents.len(),
        if extents.len() == 1 { "" } else { "s" },
        extents.join(", ")
    )
}

/// An expression as written (a synthesized bound as its value).
fn expr_text(a: &Analysis, def: &ProgramDef, e: ExprId) -> String {
    let expr = def.expr(e);
    match expr.kind {
        ExprKind::Int(v) => v.to_string(),
        _ => a.slice(expr.span.start, expr.span.end).to_string(),
    }
}

/// A parameter, loop variable or `let`.
fn var(a: &Analysis, p: usize, v: usize) -> String {
    let Some(def) = a.program(p) else {
        return String::new();
    };
    let Some(var) = def.vars.get(v) else {
        return String::new();
    };
    match var.kind {
        VarKind::Param(i) => {
            let decl = def
                .params
                .get(i)
                .map_or("", |x| a.slice(x.span.start, x.span.end));
            format!(
                "{}\n\nParameter {} of program `{}`.",
                code_block(decl),
                i + 1,
                def.name
            )
        }
        VarKind::Let(stmt) => {
            let s = def
                .stmts
                .get(stmt.index())
                .map_or("", |s| a.slice(s.span.start, s.span.end));
            format!("{}\n\nA `let` of type `{}`.", code_block(s), var.ty)
        }
        VarKind::Loop(stmt) => {
            let Some(StmtKind::For(f)) = def.stmts.get(stmt.index()).map(|s| &s.kind) else {
                return String::new();
            };
            let (lo, hi, step) = (
                expr_text(a, def, f.lo),
                expr_text(a, def, f.hi),
                expr_text(a, def, f.step),
            );
            let s = def
                .stmts
                .get(stmt.index())
                .map_or("", |s| a.slice(s.span.start, s.span.end));
            let header = s.split('{').next().unwrap_or(s).trim_end();
            format!(
                "{}\n\nTrip count: `{}`.",
                code_block(header),
                trip_count(&lo, &hi, &step)
            )
        }
    }
}

/// `range(lo, hi, step)`'s number of iterations as a formula.
fn trip_count(lo: &str, hi: &str, step: &str) -> String {
    let group = |t: &str| {
        if t.contains([' ', '+', '-', '*', '/', '%']) {
            format!("({t})")
        } else {
            t.to_string()
        }
    };
    let span = if lo == "0" {
        hi.to_string()
    } else {
        format!("{hi} - {}", group(lo))
    };
    if step == "1" {
        format!("max(0, {span})")
    } else {
        format!("max(0, ceil(({span}) / {step}))")
    }
}

/// The compiled program around `offset` and its HIR index.
fn compiled(a: &Analysis, offset: usize) -> Option<&Program> {
    a.compiled(a.program_at(offset)?)
}

/// A call statement: task name, domain, counts and relations.
fn statement(a: &Analysis, offset: usize, params: &[(String, i64)]) -> Option<String> {
    let Some(p) = compiled(a, offset) else {
        return Some("*The plans are being computed.*".into());
    };
    let stmt = plans::statement_at(p, offset)?;
    let mut s = format!(
        "**`{}`** — tasks = `{}`",
        plans::name(p, stmt),
        plans::count_set(p, stmt)
    );
    if let Some((poly, lo, hi)) = plans::count_polynomial(p, stmt) {
        let vars: Vec<&str> = p.params.iter().map(|x| x.name.as_str()).collect();
        let each = if vars.len() > 1 { " each" } else { "" };
        let _ = write!(
            s,
            "\n\n= `{poly}` (fitted to the counts at {} = {lo}..{hi}{each}, degree at most the loop depth)",
            vars.join(", ")
        );
    }
    if let Some(n) = plans::count_at(p, stmt, params) {
        let at: Vec<String> = instance_text(p, params);
        let _ = write!(
            s,
            "\n\nAt {}: {n} task{}.",
            at.join(", "),
            if n == 1 { "" } else { "s" }
        );
    }
    let st = p.get_statement(stmt)?;
    let reads_from = partner_lines(p, stmt, false, st.reads.len());
    let feeds = partner_lines(p, stmt, true, st.writes.len());
    list(&mut s, "Reads from", &reads_from);
    list(&mut s, "Feeds", &feeds);
    Some(s)
}

/// The parameter values of an instance, `N = 8`, defaults included.
fn instance_text(p: &Program, params: &[(String, i64)]) -> Vec<String> {
    match p.bind(params) {
        Ok(inst) => p
            .params
            .iter()
            .zip(&inst.params)
            .map(|(d, v)| format!("{} = {v}", d.name))
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn list(s: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        let _ = write!(s, "\n\n{title}: no statement.");
    } else {
        let _ = write!(s, "\n\n{title}:\n{}", items.join("\n"));
    }
}

/// A tile access: the accesses it may read from or feed.
fn access(a: &Analysis, offset: usize) -> Option<String> {
    let p = compiled(a, offset)?;
    let at = plans::access_at(p, offset)?;
    let items: Vec<String> = plans::partners(p, at)
        .into_iter()
        .map(|o| {
            format!(
                "- `{}`: {}",
                plans::name(p, o.stmt),
                plans::relation(p, at, o)
            )
        })
        .collect();
    let mut s = String::new();
    let title = if at.write {
        "This write may feed"
    } else {
        "This read may come from"
    };
    list(&mut s, title, &items);
    Some(s.trim_start().to_string())
}

/// One line per (access, partner) of the `count` reads (or writes) of
/// `stmt`: the partner statement and the plans' relation between them.
fn partner_lines(p: &Program, stmt: lpk_model::StmtId, write: bool, count: usize) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..count {
        let at = plans::AccessAt {
            stmt,
            write,
            index: i as u32,
        };
        for q in plans::partners(p, at) {
            out.push(format!(
                "- `{}`: {}",
                plans::name(p, q.stmt),
                plans::relation(p, at, q)
            ));
        }
    }
    out
}
