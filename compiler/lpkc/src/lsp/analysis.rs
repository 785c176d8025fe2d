//! One version of one document, analysed: the front end's result (through
//! `lpk_compiler::pipeline::check_source`, the same call `lpkc check` makes),
//! the line index, and every name occurrence with the symbol it denotes,
//! read off the HIR's ids and spans. The plans and the lint come later,
//! from the background worker, and are attached to the version they were
//! computed for.

use crate::lsp::position::LineIndex;
use lpk_compiler::diag::{Diagnostic, SourceMap};
use lpk_compiler::front::hir::{Arg, ExprKind, KernelId, MatrixId, ProgramDef, StmtKind, VarId};
use lpk_compiler::pipeline::{check_source, Checked};
use lpk_model::program::Program;
use std::sync::Arc;

/// What a name denotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Symbol {
    /// A kernel of the file.
    Kernel(KernelId),
    /// The `i`th program of the file.
    Program(usize),
    /// A matrix of a program.
    Matrix(usize, MatrixId),
    /// A parameter, loop variable or `let` of a program.
    Var(usize, VarId),
}

/// How an occurrence uses its symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    /// Where the symbol is declared.
    Definition,
    /// A tile written by a call.
    Write,
    /// A tile read by a call.
    Read,
    /// Any other mention (a kernel called, a variable in an expression).
    Mention,
}

/// One name in the text.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Occurrence {
    /// Byte offset of the name.
    pub(crate) start: usize,
    /// One past its last byte.
    pub(crate) end: usize,
    /// What it denotes.
    pub(crate) symbol: Symbol,
    /// How it is used.
    pub(crate) role: Use,
}

/// The compiled programs of one version, from the background worker: one
/// entry per program of the module, `None` where lowering failed.
pub(crate) type Plans = Arc<Vec<Option<Program>>>;

/// One analysed version of a document.
pub(crate) struct Analysis {
    /// The document's version.
    pub(crate) version: i32,
    /// Its text.
    pub(crate) text: Arc<str>,
    /// Its lines.
    pub(crate) lines: LineIndex,
    /// The front end's result.
    pub(crate) checked: Checked,
    /// Every name occurrence, by position.
    pub(crate) occurrences: Vec<Occurrence>,
    /// The plans, once the worker has them for this version.
    pub(crate) plans: Option<Plans>,
    /// The lint's diagnostics, once the worker has them for this version.
    pub(crate) lint: Option<Vec<Diagnostic>>,
}

impl Analysis {
    /// Runs the front end on `text`.
    pub(crate) fn new(name: &str, version: i32, text: Arc<str>) -> Analysis {
        let mut sources = SourceMap::new();
        let checked = check_source(&mut sources, name, &text);
        let mut occurrences = occurrences(&checked);
        occurrences.sort_by_key(|o| (o.start, o.end));
        Analysis {
            version,
            lines: LineIndex::new(&text),
            text,
            checked,
            occurrences,
            plans: None,
            lint: None,
        }
    }

    /// The occurrence under byte `offset` (a cursor just after a name is
    /// still on it).
    pub(crate) fn occurrence_at(&self, offset: usize) -> Option<&Occurrence> {
        let after = self.occurrences.partition_point(|o| o.start <= offset);
        self.occurrences[..after]
            .iter()
            .rev()
            .take(4)
            .find(|o| o.start <= offset && offset <= o.end)
    }

    /// Every occurrence of `symbol`, in text order.
    pub(crate) fn occurrences_of(&self, symbol: Symbol) -> impl Iterator<Item = &Occurrence> {
        self.occurrences.iter().filter(move |o| o.symbol == symbol)
    }

    /// Where `symbol` is declared.
    pub(crate) fn definition(&self, symbol: Symbol) -> Option<&Occurrence> {
        self.occurrences_of(symbol)
            .find(|o| o.role == Use::Definition)
    }

    /// The `i`th program of the module.
    pub(crate) fn program(&self, i: usize) -> Option<&ProgramDef> {
        self.checked.module.programs.get(i)
    }

    /// The index of the program whose text holds `offset`.
    pub(crate) fn program_at(&self, offset: usize) -> Option<usize> {
        self.checked
            .module
            .programs
            .iter()
            .position(|p| p.span.start as usize <= offset && offset <= p.span.end as usize)
    }

    /// The compiled `i`th program, when the worker has delivered it.
    pub(crate) fn compiled(&self, i: usize) -> Option<&Program> {
        self.plans.as_ref()?.get(i)?.as_ref()
    }

    /// The source text of a span (empty if it is not in the text).
    pub(crate) fn slice(&self, start: u32, end: u32) -> &str {
        self.text.get(start as usize..end as usize).unwrap_or("")
    }

    /// The LSP range of a byte span.
    pub(crate) fn range(&self, start: usize, end: usize) -> lsp_types::Range {
        self.lines.range(&self.text, start, end)
    }

    /// The LSP range of a span of the document.
    pub(crate) fn span_range(&self, span: lpk_grammar::ast::Span) -> lsp_types::Range {
        self.range(span.start as usize, span.end as usize)
    }
}

/// Every name occurrence of a checked module, unsorted.
fn occurrences(checked: &Checked) -> Vec<Occurrence> {
    let module = &checked.module;
    let mut out = Vec::new();
    let mut push = |span: lpk_grammar::ast::Span, symbol: Symbol, role: Use| {
        out.push(Occurrence {
            start: span.start as usize,
            end: span.end as usize,
            symbol,
            role,
        });
    };
    for (k, kernel) in module.kernels.iter().enumerate() {
        push(
            kernel.name_span,
            Symbol::Kernel(KernelId::from_index(k)),
            Use::Definition,
        );
    }
    for (p, program) in module.programs.iter().enumerate() {
        push(program.name_span, Symbol::Program(p), Use::Definition);
        for (m, matrix) in program.matrices.iter().enumerate() {
            push(
                matrix.name_span,
                Symbol::Matrix(p, MatrixId::from_index(m)),
                Use::Definition,
            );
        }
        for (v, var) in program.vars.iter().enumerate() {
            push(
                var.span,
                Symbol::Var(p, VarId::from_index(v)),
                Use::Definition,
            );
        }
        for expr in &program.exprs {
            if let ExprKind::Var(v) = expr.kind {
                push(expr.span, Symbol::Var(p, v), Use::Mention);
            }
        }
        for stmt in &program.stmts {
            let StmtKind::Call(call) = &stmt.kind else {
                continue;
            };
            push(call.kernel_span, Symbol::Kernel(call.kernel), Use::Mention);
            let name_span = |access: &lpk_compiler::front::hir::Access| {
                let len = program
                    .matrices
                    .get(access.matrix.index())
                    .map_or(0, |m| m.name.len());
                lpk_grammar::ast::Span {
                    end: access.span.start.saturating_add(len as u32),
                    ..access.span
                }
            };
            for access in &call.outputs {
                push(
                    name_span(access),
                    Symbol::Matrix(p, access.matrix),
                    Use::Write,
                );
            }
            for arg in &call.args {
                if let Arg::Tile(access) = arg {
                    push(
                        name_span(access),
                        Symbol::Matrix(p, access.matrix),
                        Use::Read,
                    );
                }
            }
        }
    }
    out
}

impl Analysis {
    /// The parameter values of a `# params: N=8, M=4` comment, the first
    /// such line of the document (empty without one: hover then uses the
    /// defaults).
    pub(crate) fn instance_params(&self) -> Vec<(String, i64)> {
        let Some(line) = self
            .text
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("# params:"))
        else {
            return Vec::new();
        };
        line.split([',', ' '])
            .filter_map(|pair| {
                let (name, value) = pair.split_once('=')?;
                Some((name.trim().to_string(), value.trim().parse().ok()?))
            })
            .collect()
    }
}
