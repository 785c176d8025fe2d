//! The front-end pipeline as one call: parse → resolve → type-check, with
//! every phase's errors turned into diagnostics. Later phases (lowering,
//! plans, lint) start from a [`Checked`] module that has no errors.

use crate::diag::{Diagnostic, IntoDiagnostic, Severity, SourceMap};
use crate::hir::Module;
use grammar::ast::FileId;

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
    let parsed = grammar::parse(text, file);
    if !parsed.errors.is_empty() {
        return Checked {
            file,
            module: Module::default(),
            diagnostics: parsed.errors.iter().map(|e| e.to_diagnostic()).collect(),
        };
    }
    let (mut module, resolve_errors) = crate::resolve::resolve(&parsed.file, sources);
    let type_errors = crate::typeck::typeck(&mut module);
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

/// Orders diagnostics by their primary position (stable, so diagnostics at
/// one position keep their phase order).
pub fn sort_by_position(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by_key(|d| d.primary_span().map(|s| (s.file, s.start)));
}

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
pub fn select_program<'m>(
    module: &'m crate::hir::Module,
    name: Option<&str>,
) -> Result<&'m crate::hir::Program, SelectError> {
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

/// Lowers a checked program and solves its dependence plans.
pub fn compile_program(
    module: &crate::hir::Module,
    program: &crate::hir::Program,
    sources: &SourceMap,
) -> model::program::Program {
    let mut lowered = crate::lower::lower(module, program, sources);
    crate::solve::solve(&mut lowered);
    lowered
}
