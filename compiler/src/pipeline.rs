//! The front-end pipeline as one call: parse → resolve → type-check, with
//! every phase's errors turned into diagnostics. Later phases (lowering,
//! plans, lint) start from a [`Checked`] module that has no errors.

use crate::diag::{Diagnostic, IntoDiagnostic, Severity, SourceMap};
use crate::front::hir::Module;
use crate::plan::lower::LowerError;
use lpk_grammar::ast::FileId;

/// The result of checking one source file.
pub struct Checked {
    /// The file's id in the source map.
    pub file: FileId,
    /// The resolved, typed module (complete only when `has_errors()` is
    /// false).
    pub module: Module,
    /// Every diagnostic, in phase order and, within a phase, source order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Checked {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// Parses, resolves and type-checks `text` as file `name`.
///
/// Resolution does not run when there are syntax errors (a partial tree
/// would only produce follow-on errors); the type checker runs after
/// resolution even when it reported errors, because it sees only the
/// well-formed statements.
pub fn check_source(sources: &mut SourceMap, name: &str, text: &str) -> Checked {
    let file = sources.add(name, text);
    let parsed = lpk_grammar::parse(text, file);
    if !parsed.errors.is_empty() {
        return Checked {
            file,
            module: Module::default(),
            diagnostics: parsed.errors.iter().map(|e| e.to_diagnostic()).collect(),
        };
    }
    let (mut module, resolve_errors) = crate::front::resolve::resolve(&parsed.file, sources);
    let type_errors = crate::front::typeck::typeck(&mut module);
    let mut diagnostics: Vec<Diagnostic> =
        resolve_errors.iter().map(|e| e.to_diagnostic()).collect();
    diagnostics.extend(type_errors.iter().map(|e| e.to_diagnostic()));
    sort_by_position(&mut diagnostics);
    Checked {
        file,
        module,
        diagnostics,
    }
}

pub use crate::diag::sort_by_position;

/// Why a program could not be selected from a module.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// The file has no program.
    #[error("the file declares no program")]
    NoProgram,
    /// Several programs and none chosen.
    #[error("the file declares several programs ({0}); choose one with --program NAME")]
    Ambiguous(String),
    /// The chosen program does not exist.
    #[error("no program named `{name}` (the file declares: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The programs there are.
        known: String,
    },
}

/// Picks the program named `name`, or the only one.
pub(crate) fn select_program<'m>(
    module: &'m crate::front::hir::Module,
    name: Option<&str>,
) -> Result<&'m crate::front::hir::ProgramDef, SelectError> {
    let known = || {
        module
            .programs
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match name {
        Some(n) => module.program_named(n).ok_or_else(|| SelectError::Unknown {
            name: n.to_string(),
            known: known(),
        }),
        None => match module.programs.as_slice() {
            [] => Err(SelectError::NoProgram),
            [one] => Ok(one),
            _ => Err(SelectError::Ambiguous(known())),
        },
    }
}

/// Lowers a checked program, solves its dependence plans and validates
/// the result as the artifact loader does (so every program lpk runs is one
/// it could also load); a broken invariant of the checked HIR is an
/// internal error.
pub fn try_compile_program(
    module: &crate::front::hir::Module,
    program: &crate::front::hir::ProgramDef,
    sources: &SourceMap,
) -> Result<lpk_model::program::Program, LowerError> {
    let lowered = crate::plan::lower::lower(module, program, sources)?;
    let parts = crate::plan::solve::solve(lowered);
    Ok(lpk_model::program::Program::validate(
        parts,
        &lpk_model::artifact::Limits::default(),
    )?)
}

/// Why [`compile_source`] produced no program. Its text is one line for
/// callers that do not render the diagnostics themselves.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CompileError {
    /// The source (or, with the lint gate, the program) has errors: every
    /// diagnostic, warnings included, in source order.
    #[error("the source has {} error(s); `lpkc check` shows them", .0.iter().filter(|d| d.severity == Severity::Error).count())]
    Diagnostics(Vec<Diagnostic>),
    /// The file has no program, several and none chosen, or not the one
    /// asked for (a usage error).
    #[error("{0}")]
    Select(SelectError),
    /// Lowering met a broken invariant of the checked program: a compiler
    /// bug, not the user's fault.
    #[error("{0}")]
    Internal(LowerError),
}

/// A program compiled from source, with what the caller may still want:
/// the checked module (for lint and unused-name reports) and the warnings.
pub struct Compiled {
    /// The checked source (file id, resolved module, warnings).
    pub checked: Checked,
    /// The index of the chosen program in `checked.module.programs`.
    pub program_index: usize,
    /// The lowered program with its dependence plans.
    pub program: lpk_model::program::Program,
    /// With [`LintGate::DenyErrors`]: how each rule stood (no errors).
    pub lint: Option<lpk_model::artifact::LintRecord>,
}

impl Compiled {
    /// The chosen program in the HIR.
    pub fn hir(&self) -> &crate::front::hir::ProgramDef {
        &self.checked.module.programs[self.program_index]
    }
}

/// Whether [`compile_source`] also refuses programs with lint errors (as
/// `lpkc compile` does: an artifact never describes a program that breaks
/// the language's rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LintGate {
    /// Stop after the plans.
    Off,
    /// Run the default lint and refuse on any lint error; the lint errors
    /// join the returned diagnostics.
    DenyErrors,
}

/// The whole pipeline on one source text: parse, resolve, type-check,
/// select the program named `program` (or the only one), lower, solve
/// plans and, with [`LintGate::DenyErrors`], refuse lint errors.
pub fn compile_source(
    sources: &mut SourceMap,
    name: &str,
    text: &str,
    program: Option<&str>,
    gate: LintGate,
) -> Result<Compiled, CompileError> {
    let mut checked = check_source(sources, name, text);
    if checked.has_errors() {
        return Err(CompileError::Diagnostics(checked.diagnostics));
    }
    let hir = select_program(&checked.module, program).map_err(CompileError::Select)?;
    let program_index = checked
        .module
        .programs
        .iter()
        .position(|p| std::ptr::eq(p, hir))
        .expect("select_program returns one of the module's programs");
    let lowered =
        try_compile_program(&checked.module, hir, sources).map_err(CompileError::Internal)?;
    let mut lint = None;
    if gate == LintGate::DenyErrors {
        let rules = crate::lint::check_rules(&checked.module, hir, &lowered, checked.file);
        if !rules.errors.is_empty() {
            checked.diagnostics.extend(rules.errors);
            sort_by_position(&mut checked.diagnostics);
            return Err(CompileError::Diagnostics(checked.diagnostics));
        }
        lint = Some(rules.record);
    }
    Ok(Compiled {
        checked,
        program_index,
        program: lowered,
        lint,
    })
}

pub use crate::front::decls::{declaration_spans, DeclarationSpans};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::hir::{Builtin, ExprKind};
    use crate::plan::lower::InternalError;

    /// A checked program whose HIR is then broken (a built-in loses its
    /// arguments, which resolve never allows) lowers to an internal error
    /// pointing at the call, not to a program with a made-up operand.
    #[test]
    fn a_broken_invariant_is_an_internal_error() {
        let text = "kernel k(a) -> (b);\n\
                    program p(N: int) {\n\
                    \x20   input A[N];\n\
                    \x20   output B[N];\n\
                    \x20   for i in range(min(N, 3)) {\n\
                    \x20       B[i] = k(A[i]);\n\
                    \x20   }\n\
                    }\n";
        let mut sources = SourceMap::new();
        let mut checked = check_source(&mut sources, "broken.lpk", text);
        assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
        let program = &mut checked.module.programs[0];
        let call = program
            .exprs
            .iter_mut()
            .find(|e| matches!(e.kind, ExprKind::Call(Builtin::Min, _)))
            .expect("the source calls min");
        let span = call.span;
        call.kind = ExprKind::Call(Builtin::Min, Vec::new());
        let err = try_compile_program(&checked.module, &checked.module.programs[0], &sources)
            .expect_err("lowering must refuse the broken call");
        assert_eq!(
            err,
            LowerError::Internal(InternalError::BuiltinArity {
                builtin: Builtin::Min,
                found: 0,
                span,
            })
        );
        assert_eq!(
            err.to_string(),
            "internal compiler error while lowering: built-in `Min` called with 0 arguments"
        );
    }
}
