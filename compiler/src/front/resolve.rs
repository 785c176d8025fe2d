//! Name resolution: turns the AST into the [`hir`](crate::front::hir), resolving
//! every name to an id, checking the program's structure (where `require`s
//! and declarations may stand, kernel call arity, tile versus scalar
//! arguments, matrix rank) and the one-namespace, no-shadowing rule.
//!
//! It assumes nothing of the AST beyond what the grammar guarantees and
//! returns every error it finds, not only the first; statements with errors
//! are left out of the HIR so later phases only see well-formed ones.

use crate::diag::{Code, Diagnostic, IntoDiagnostic, SourceMap};
use crate::front::hir::*;
use crate::front::kernels::standard_signature;
use lpk_grammar::ast::{self, Role, ScalarType, Span};
use std::collections::HashMap;
use thiserror::Error;

/// A name-resolution or structure error.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ResolveError {
    /// A name that is not in scope.
    #[error("cannot find `{name}` in this scope")]
    UndefinedName {
        /// The use.
        span: Span,
        /// The name.
        name: String,
        /// A similar name in scope.
        suggestion: Option<String>,
    },
    /// A call of an undeclared kernel.
    #[error("kernel `{name}` is not declared")]
    UndefinedKernel {
        /// The kernel name at the call.
        span: Span,
        /// The name.
        name: String,
        /// A similar declared kernel.
        suggestion: Option<String>,
        /// The standard declaration, when the name is a standard kernel.
        standard: Option<String>,
    },
    /// A tile reference to an undeclared matrix.
    #[error("cannot find matrix `{name}`")]
    UndefinedMatrix {
        /// The reference's matrix name.
        span: Span,
        /// The name.
        name: String,
        /// A similar matrix.
        suggestion: Option<String>,
    },
    /// A kernel declared twice.
    #[error("kernel `{name}` is declared twice")]
    DuplicateKernel {
        /// The second declaration's name.
        span: Span,
        /// The name.
        name: String,
        /// The first declaration's name.
        previous: Span,
    },
    /// A program declared twice.
    #[error("program `{name}` is declared twice")]
    DuplicateProgram {
        /// The second program's name.
        span: Span,
        /// The name.
        name: String,
        /// The first program's name.
        previous: Span,
    },
    /// A name bound while the same name is in scope.
    #[error("`{name}` is already defined")]
    DuplicateName {
        /// The new binding.
        span: Span,
        /// The name.
        name: String,
        /// The binding in scope.
        previous: Span,
        /// What the binding in scope is ("parameter", "matrix", ...).
        previous_kind: &'static str,
    },
    /// Two kernel parameters or results with one name.
    #[error("kernel `{kernel}` has two parameters or results named `{name}`")]
    DuplicateKernelParam {
        /// The second one.
        span: Span,
        /// The kernel.
        kernel: String,
        /// The name.
        name: String,
        /// The first one.
        previous: Span,
    },
    /// A `require` after the first statement.
    #[error("`require` must come before the program's first statement")]
    MisplacedRequire {
        /// The `require`.
        span: Span,
        /// The first statement, when in the same program body.
        first_stmt: Option<Span>,
    },
    /// A matrix declaration after the first statement or inside a block.
    #[error("matrix declarations must come before the program's first statement")]
    MisplacedDecl {
        /// The declaration.
        span: Span,
        /// The first statement.
        first_stmt: Option<Span>,
    },
    /// A call of something that is not a built-in function.
    #[error("unknown function `{name}`")]
    UnknownFunction {
        /// The function name.
        span: Span,
        /// The name.
        name: String,
        /// A similar built-in.
        suggestion: Option<String>,
        /// Whether the name is a declared kernel.
        is_kernel: bool,
    },
    /// `range` with no or more than three arguments.
    #[error("`range` takes 1 to 3 arguments, found {found}")]
    RangeArity {
        /// The `range(...)`.
        span: Span,
        /// How many were given.
        found: usize,
    },
    /// A built-in called with the wrong number of arguments.
    #[error("`{name}` takes {expected}, found {found}")]
    BuiltinArity {
        /// The call.
        span: Span,
        /// The function.
        name: &'static str,
        /// "1 argument" or "2 or more arguments".
        expected: &'static str,
        /// How many were given.
        found: usize,
    },
    /// A matrix used as a number.
    #[error("matrix `{name}` cannot be used as a value")]
    MatrixAsValue {
        /// The use.
        span: Span,
        /// The matrix.
        name: String,
        /// Its declaration.
        decl: Span,
    },
    /// `x[...]` where `x` is not a matrix.
    #[error("`{name}` is a {kind}, not a matrix")]
    IndexNotMatrix {
        /// The reference.
        span: Span,
        /// The name.
        name: String,
        /// What it is.
        kind: &'static str,
        /// Its binding.
        decl: Span,
    },
    /// A parameter default that is not an integer literal.
    #[error("a parameter default must be an integer literal")]
    BadDefault {
        /// The default.
        span: Span,
    },
    /// A program parameter that is not `int`.
    #[error("program parameters must be `int`")]
    ParamNotInt {
        /// The type annotation.
        span: Span,
    },
    /// A kernel call with the wrong number of arguments.
    #[error("kernel `{kernel}` takes {expected} argument{}, found {found}", plural(*expected))]
    CallArity {
        /// The call's arguments (or the kernel name when there are none).
        span: Span,
        /// The kernel.
        kernel: String,
        /// Its parameter count.
        expected: usize,
        /// The argument count.
        found: usize,
        /// The kernel's declaration.
        decl: Span,
    },
    /// A kernel call assigning the wrong number of tiles.
    #[error("kernel `{kernel}` returns {expected} tile{}, but {found} {} assigned", plural(*expected), if *found == 1 { "is" } else { "are" })]
    ResultCount {
        /// The left-hand side.
        span: Span,
        /// The kernel.
        kernel: String,
        /// Its result count.
        expected: usize,
        /// The number of tiles on the left.
        found: usize,
        /// The kernel's declaration.
        decl: Span,
    },
    /// A scalar expression passed for a tile parameter.
    #[error("kernel `{kernel}` expects a tile for `{param}`, found a scalar expression")]
    ExpectedTile {
        /// The argument.
        span: Span,
        /// The kernel.
        kernel: String,
        /// The parameter.
        param: String,
    },
    /// A tile reference where a number is needed.
    #[error("a tile reference cannot be used as a value")]
    TileAsValue {
        /// The reference.
        span: Span,
        /// What was expected, e.g. "the scalar parameter `alpha`".
        context: String,
    },
    /// A tile reference with the wrong number of indices.
    #[error("matrix `{matrix}` has {rank} dimension{}, but {found} ind{} given", plural(*rank), if *found == 1 { "ex is" } else { "ices are" })]
    RankMismatch {
        /// The reference.
        span: Span,
        /// The matrix.
        matrix: String,
        /// Its rank.
        rank: usize,
        /// Indices given.
        found: usize,
        /// Its declaration.
        decl: Span,
    },
    /// `= 0` on an `input` or `output` declaration.
    #[error("{} `{name}` cannot be declared `= 0`: only a `matrix` can", article_role(*role))]
    ZeroNotIntermediate {
        /// The initialiser.
        span: Span,
        /// The matrix.
        name: String,
        /// Its role (input or output).
        role: Role,
        /// The role keyword.
        keyword: Span,
    },
    /// An initialiser other than the literal `0` on a `matrix`.
    #[error("a matrix initialiser must be `0`")]
    BadInit {
        /// The initialiser.
        span: Span,
        /// The matrix.
        name: String,
    },
}

/// "an input", "an output", "a matrix".
fn article_role(role: Role) -> &'static str {
    match role {
        Role::Input => "an input",
        Role::Output => "an output",
        Role::Temporary => "a matrix",
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl ResolveError {
    /// The stable diagnostic code.
    pub fn code(&self) -> Code {
        match self {
            ResolveError::UndefinedName { .. } => Code::E0101,
            ResolveError::UndefinedKernel { .. } => Code::E0102,
            ResolveError::UndefinedMatrix { .. } => Code::E0103,
            ResolveError::DuplicateKernel { .. } => Code::E0104,
            ResolveError::DuplicateProgram { .. } => Code::E0105,
            ResolveError::DuplicateName { .. } => Code::E0106,
            ResolveError::DuplicateKernelParam { .. } => Code::E0107,
            ResolveError::MisplacedRequire { .. } => Code::E0108,
            ResolveError::MisplacedDecl { .. } => Code::E0109,
            ResolveError::UnknownFunction { .. } => Code::E0110,
            ResolveError::RangeArity { .. } => Code::E0111,
            ResolveError::BuiltinArity { .. } => Code::E0112,
            ResolveError::MatrixAsValue { .. } => Code::E0113,
            ResolveError::IndexNotMatrix { .. } => Code::E0114,
            ResolveError::BadDefault { .. } => Code::E0115,
            ResolveError::ParamNotInt { .. } => Code::E0116,
            ResolveError::CallArity { .. } => Code::E0117,
            ResolveError::ResultCount { .. } => Code::E0118,
            ResolveError::ExpectedTile { .. } => Code::E0119,
            ResolveError::TileAsValue { .. } => Code::E0120,
            ResolveError::RankMismatch { .. } => Code::E0121,
            ResolveError::ZeroNotIntermediate { .. } => Code::E0122,
            ResolveError::BadInit { .. } => Code::E0123,
        }
    }
}

impl IntoDiagnostic for ResolveError {
    fn to_diagnostic(&self) -> Diagnostic {
        let msg = self.to_string();
        let code = self.code();
        match self {
            ResolveError::UndefinedName {
                span, suggestion, ..
            } => with_suggestion(
                Diagnostic::error(code, msg, *span).with_primary_message("not found in this scope"),
                suggestion,
            ),
            ResolveError::UndefinedKernel {
                span,
                suggestion,
                standard,
                ..
            } => undefined_kernel(code, msg, *span, suggestion, standard),
            ResolveError::UndefinedMatrix {
                span, suggestion, ..
            } => with_suggestion(
                Diagnostic::error(code, msg, *span).with_primary_message("no matrix with this name is declared"),
                suggestion,
            ),
            ResolveError::DuplicateKernel { span, previous, .. }
            | ResolveError::DuplicateProgram { span, previous, .. } => {
                Diagnostic::error(code, msg, *span)
                    .with_primary_message("declared again here")
                    .with_label(*previous, "first declared here")
            }
            ResolveError::DuplicateName {
                span,
                previous,
                previous_kind,
                ..
            } => duplicate_name(code, msg, *span, *previous, previous_kind),
            ResolveError::DuplicateKernelParam { span, previous, .. } => {
                Diagnostic::error(code, msg, *span)
                    .with_primary_message("used again here")
                    .with_label(*previous, "first used here")
            }
            ResolveError::MisplacedRequire { span, first_stmt }
            | ResolveError::MisplacedDecl { span, first_stmt } => {
                misplaced(code, msg, *span, *first_stmt)
            }
            ResolveError::UnknownFunction {
                span,
                suggestion,
                is_kernel,
                name,
            } => unknown_function(code, msg, *span, name, suggestion, *is_kernel),
            ResolveError::RangeArity { span, .. } => Diagnostic::error(code, msg, *span)
                .with_help("write `range(hi)`, `range(lo, hi)` or `range(lo, hi, step)`"),
            ResolveError::BuiltinArity { span, .. } => Diagnostic::error(code, msg, *span),
            ResolveError::MatrixAsValue { span, decl, .. } => Diagnostic::error(code, msg, *span)
                .with_primary_message("a matrix, not a number")
                .with_label(*decl, "declared as a matrix here")
                .with_help("index it to name a tile (`M[i, j]`), and pass tiles only as kernel arguments"),
            ResolveError::IndexNotMatrix { span, decl, .. } => Diagnostic::error(code, msg, *span)
                .with_primary_message("indexed here")
                .with_label(*decl, "defined here"),
            ResolveError::BadDefault { span } => Diagnostic::error(code, msg, *span)
                .with_primary_message("not an integer literal")
                .with_help("write a literal such as `= 0` or `= -1`"),
            ResolveError::ParamNotInt { span } => Diagnostic::error(code, msg, *span)
                .with_primary_message("expected `int`"),
            ResolveError::CallArity { span, decl, .. }
            | ResolveError::ResultCount { span, decl, .. } => Diagnostic::error(code, msg, *span)
                .with_label(*decl, "kernel declared here"),
            ResolveError::ExpectedTile { span, .. } => Diagnostic::error(code, msg, *span)
                .with_primary_message("expected a tile reference such as `M[i, j]`"),
            ResolveError::TileAsValue { span, context } => Diagnostic::error(code, msg, *span)
                .with_primary_message(format!("{context} needs a number")),
            ResolveError::RankMismatch { span, decl, rank, .. } => Diagnostic::error(code, msg, *span)
                .with_label(*decl, format!("declared with {rank} dimension{} here", plural(*rank))),
            ResolveError::ZeroNotIntermediate { span, name, role, keyword } => {
                zero_not_intermediate(code, msg, *span, name, *role, *keyword)
            }
            ResolveError::BadInit { span, name } => Diagnostic::error(code, msg, *span)
                .with_primary_message("not `0`")
                .with_help(format!("write `matrix {name}[..] = 0;` for a matrix whose unwritten tiles read as zeros, or drop the initialiser")),
        }
    }
}

/// The diagnostic of a call to an undeclared kernel, with help to declare
/// a standard kernel or a similar name.
fn undefined_kernel(
    code: Code,
    msg: String,
    span: Span,
    suggestion: &Option<String>,
    standard: &Option<String>,
) -> Diagnostic {
    let mut d =
        Diagnostic::error(code, msg, span).with_primary_message("called here but never declared");
    if let Some(decl) = standard {
        d = d.with_help(format!("it is a standard kernel; declare it: `{decl}`"));
    } else if let Some(s) = suggestion {
        d = d.with_help(format!("a kernel with a similar name exists: `{s}`"));
    } else {
        d = d.with_note("every kernel a program calls must be declared in the same file with `kernel NAME(params) -> (results);`");
    }
    d
}

/// The diagnostic of a `require` or declaration after the first statement
/// (at `first_stmt`).
fn misplaced(code: Code, msg: String, span: Span, first_stmt: Option<Span>) -> Diagnostic {
    let mut d = Diagnostic::error(code, msg, span).with_primary_message("not allowed here");
    if let Some(first) = first_stmt {
        d = d.with_label(first, "the first statement is here");
    }
    d.with_help(
        "move it to the top of the program body, before any `for`, `if`, `let` or kernel call",
    )
}

/// The diagnostic of a name bound again while `previous` is in scope.
fn duplicate_name(
    code: Code,
    msg: String,
    span: Span,
    previous: Span,
    previous_kind: &str,
) -> Diagnostic {
    Diagnostic::error(code, msg, span)
        .with_primary_message("defined again here")
        .with_label(previous, format!("the {previous_kind} is defined here and still in scope"))
        .with_note("parameters, matrices, loop variables and `let`s share one namespace, and a name may not be rebound while it is in scope")
        .with_help("choose a different name")
}

/// The diagnostic of a call to `name`, no built-in function (perhaps a
/// kernel called in an expression).
fn unknown_function(
    code: Code,
    msg: String,
    span: Span,
    name: &str,
    suggestion: &Option<String>,
    is_kernel: bool,
) -> Diagnostic {
    let d = Diagnostic::error(code, msg, span).with_primary_message("not a built-in function");
    let d = if is_kernel {
        d.with_note(format!(
            "`{name}` is a kernel; kernels are called only as statements: `T[i] = {name}(...);`"
        ))
    } else {
        d
    };
    with_suggestion(d, suggestion)
        .with_note("the built-in functions are ceil, floor, log2, log, min, max and abs")
}

/// The diagnostic of `= 0` on matrix `name` declared `role` at `keyword`,
/// which is no intermediate.
fn zero_not_intermediate(
    code: Code,
    msg: String,
    span: Span,
    name: &str,
    role: Role,
    keyword: Span,
) -> Diagnostic {
    let help = match role {
        Role::Input => format!("an input's tiles come from the caller; drop `= 0`, or declare an intermediate `matrix {name}[..] = 0;` if its tiles are to read as zeros"),
        _ => format!("drop `= 0`, or declare an intermediate `matrix {name}[..] = 0;` and write the output's tiles from it"),
    };
    Diagnostic::error(code, msg, span)
        .with_primary_message("only an intermediate `matrix` may read as zeros")
        .with_label(keyword, format!("declared `{}` here", role.keyword()))
        .with_note("`= 0` makes a zero matrix: its tiles that no task writes read as zero tiles")
        .with_help(help)
}

fn with_suggestion(d: Diagnostic, suggestion: &Option<String>) -> Diagnostic {
    match suggestion {
        Some(s) => d.with_help(format!("a similar name exists: `{s}`")),
        None => d,
    }
}

/// The closest candidate to `name`, if any is close enough.
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        if c == name {
            continue;
        }
        let score = strsim::jaro_winkler(name, c);
        // Very short names are all one edit apart; suggest for them only a
        // difference of case.
        let close = name.eq_ignore_ascii_case(c)
            || (name.len() > 2
                && (score > 0.85 || strsim::levenshtein(name, c) <= (name.len() / 3).max(1)));
        if close && best.is_none_or(|(b, _)| score > b) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c.to_string())
}

/// Resolves a parsed file. Returns the module (holding only well-formed
/// items) and every error found.
pub fn resolve(file: &ast::SourceFile, sources: &SourceMap) -> (Module, Vec<ResolveError>) {
    let mut errors = Vec::new();
    let mut module = Module::default();
    let mut kernel_names: Vec<(String, Span)> = Vec::new();
    for item in &file.items {
        if let ast::Item::Kernel(k) = item {
            if let Some((_, prev)) = kernel_names.iter().find(|(n, _)| *n == k.name.name) {
                errors.push(ResolveError::DuplicateKernel {
                    span: k.name.span,
                    name: k.name.name.clone(),
                    previous: *prev,
                });
                continue;
            }
            kernel_names.push((k.name.name.clone(), k.name.span));
            module.kernels.push(resolve_kernel(k, &mut errors));
        }
    }
    let mut program_names: Vec<(String, Span)> = Vec::new();
    for item in &file.items {
        if let ast::Item::Program(p) = item {
            if let Some((_, prev)) = program_names.iter().find(|(n, _)| *n == p.name.name) {
                errors.push(ResolveError::DuplicateProgram {
                    span: p.name.span,
                    name: p.name.name.clone(),
                    previous: *prev,
                });
                continue;
            }
            program_names.push((p.name.name.clone(), p.name.span));
            let program = ProgramResolver::new(&module.kernels, sources, &mut errors).program(p);
            module.programs.push(program);
        }
    }
    (module, errors)
}

fn resolve_kernel(k: &ast::KernelDecl, errors: &mut Vec<ResolveError>) -> Kernel {
    let mut seen: Vec<(&str, Span)> = Vec::new();
    let names = k.params.iter().map(|p| &p.name).chain(k.results.iter());
    for n in names {
        if let Some((_, prev)) = seen.iter().find(|(s, _)| *s == n.name) {
            errors.push(ResolveError::DuplicateKernelParam {
                span: n.span,
                kernel: k.name.name.clone(),
                name: n.name.clone(),
                previous: *prev,
            });
        } else {
            seen.push((&n.name, n.span));
        }
    }
    Kernel {
        name: k.name.name.clone(),
        params: k
            .params
            .iter()
            .map(|p| KernelParam {
                name: p.name.name.clone(),
                kind: match p.ty {
                    None => ParamKind::Tile,
                    Some(t) => ParamKind::Scalar(t.kind),
                },
            })
            .collect(),
        results: k.results.iter().map(|r| r.name.clone()).collect(),
        span: k.span,
        name_span: k.name.span,
    }
}

/// What a name in the program namespace refers to.
#[derive(Clone, Copy)]
enum Binding {
    Var(VarId),
    Matrix(MatrixId),
}

struct ProgramResolver<'a> {
    kernels: &'a [Kernel],
    sources: &'a SourceMap,
    errors: &'a mut Vec<ResolveError>,
    program: ProgramDef,
    /// Innermost scope last; each holds the names bound in one block.
    scopes: Vec<Vec<(String, Binding)>>,
    /// Every name in scope (names never shadow, so one binding each), for
    /// constant-time lookups.
    in_scope: HashMap<String, Binding>,
}

impl<'a> ProgramResolver<'a> {
    fn new(
        kernels: &'a [Kernel],
        sources: &'a SourceMap,
        errors: &'a mut Vec<ResolveError>,
    ) -> Self {
        ProgramResolver {
            kernels,
            sources,
            errors,
            program: ProgramDef {
                name: String::new(),
                span: Span::default(),
                name_span: Span::default(),
                params: Vec::new(),
                param_vars: Vec::new(),
                requires: Vec::new(),
                matrices: Vec::new(),
                vars: Vec::new(),
                exprs: Vec::new(),
                stmts: Vec::new(),
                body: Vec::new(),
            },
            scopes: vec![Vec::new()],
            in_scope: HashMap::new(),
        }
    }

    fn program(mut self, p: &ast::ProgramDecl) -> ProgramDef {
        self.program.name = p.name.name.clone();
        self.program.span = p.span;
        self.program.name_span = p.name.span;
        for (i, param) in p.params.iter().enumerate() {
            if param.ty.kind != ScalarType::Int {
                self.errors.push(ResolveError::ParamNotInt {
                    span: param.ty.span,
                });
            }
            let default = param.default.as_ref().and_then(|d| match literal_int(d) {
                Some(v) => Some(v),
                None => {
                    self.errors.push(ResolveError::BadDefault { span: d.span });
                    None
                }
            });
            self.program.params.push(Param {
                name: param.name.name.clone(),
                default,
                span: param.span,
            });
            if let Some(var) = self.bind_var(&param.name, VarKind::Param(i), Ty::Int) {
                self.program.param_vars.push(var);
            } else {
                // A duplicate parameter still needs a variable so indices line up.
                let id = VarId::from_index(self.program.vars.len());
                self.program.vars.push(Var {
                    name: param.name.name.clone(),
                    kind: VarKind::Param(i),
                    span: param.name.span,
                    ty: Ty::Int,
                });
                self.program.param_vars.push(id);
            }
        }
        let mut first_stmt: Option<Span> = None;
        for stmt in &p.body.stmts {
            match &stmt.kind {
                ast::StmtKind::Require(cond) => {
                    if first_stmt.is_some() {
                        self.errors.push(ResolveError::MisplacedRequire {
                            span: stmt.span,
                            first_stmt,
                        });
                    } else if let Some(e) = self.expr(cond) {
                        self.program.requires.push(e);
                    }
                }
                ast::StmtKind::Decl(decl) => {
                    if first_stmt.is_some() {
                        self.errors.push(ResolveError::MisplacedDecl {
                            span: stmt.span,
                            first_stmt,
                        });
                    }
                    // Declared even when misplaced, so its uses do not
                    // cascade into "cannot find matrix" errors.
                    self.declare(decl, stmt.span);
                }
                ast::StmtKind::Error => {}
                _ => {
                    first_stmt.get_or_insert(stmt.span);
                    if let Some(id) = self.stmt(stmt) {
                        self.program.body.push(id);
                    }
                }
            }
        }
        self.program
    }

    fn declare(&mut self, decl: &ast::MatrixDecl, span: Span) {
        // An extent with an error (already reported) becomes a placeholder
        // `0` with the extent's span, so the matrix keeps its rank and later
        // references to it resolve without cascading errors.
        let extents: Vec<ExprId> = decl
            .extents
            .iter()
            .map(|e| match self.expr(e) {
                Some(id) => id,
                None => self.push_expr(ExprKind::Int(0), e.span),
            })
            .collect();
        let zero = decl.init.as_ref().is_some_and(|init| {
            if decl.role != Role::Temporary {
                self.errors.push(ResolveError::ZeroNotIntermediate {
                    span: init.span,
                    name: decl.name.name.clone(),
                    role: decl.role,
                    keyword: Span {
                        end: span.start.saturating_add(decl.role.keyword().len() as u32),
                        ..span
                    },
                });
                false
            } else if literal_int(init) != Some(0) {
                self.errors.push(ResolveError::BadInit {
                    span: init.span,
                    name: decl.name.name.clone(),
                });
                false
            } else {
                true
            }
        });
        let id = MatrixId::from_index(self.program.matrices.len());
        if !self.bind(&decl.name, Binding::Matrix(id)) {
            return;
        }
        self.program.matrices.push(Matrix {
            name: decl.name.name.clone(),
            role: decl.role,
            extents,
            zero,
            span,
            name_span: decl.name.span,
        });
    }

    fn lookup(&self, name: &str) -> Option<Binding> {
        self.in_scope.get(name).copied()
    }

    fn push_scope(&mut self) {
        self.scopes.push(Vec::new());
    }

    fn pop_scope(&mut self) {
        if let Some(scope) = self.scopes.pop() {
            for (name, _) in scope {
                self.in_scope.remove(&name);
            }
        }
    }

    fn names_in_scope(&self) -> Vec<String> {
        self.scopes
            .iter()
            .flat_map(|s| s.iter().map(|(n, _)| n.clone()))
            .collect()
    }

    fn binding_span_kind(&self, b: Binding) -> (Span, &'static str) {
        match b {
            Binding::Matrix(m) => (self.program.matrices[m.index()].name_span, "matrix"),
            Binding::Var(v) => {
                let var = &self.program.vars[v.index()];
                let kind = match var.kind {
                    VarKind::Param(_) => "parameter",
                    VarKind::Loop(_) => "loop variable",
                    VarKind::Let(_) => "`let` binding",
                };
                (var.span, kind)
            }
        }
    }

    /// Binds a name in the innermost scope; reports and refuses a name that
    /// is already in scope.
    fn bind(&mut self, name: &ast::Ident, binding: Binding) -> bool {
        if let Some(prev) = self.lookup(&name.name) {
            let (previous, previous_kind) = self.binding_span_kind(prev);
            self.errors.push(ResolveError::DuplicateName {
                span: name.span,
                name: name.name.clone(),
                previous,
                previous_kind,
            });
            return false;
        }
        if let Some(scope) = self.scopes.last_mut() {
            scope.push((name.name.clone(), binding));
            self.in_scope.insert(name.name.clone(), binding);
        }
        true
    }

    fn bind_var(&mut self, name: &ast::Ident, kind: VarKind, ty: Ty) -> Option<VarId> {
        let id = VarId::from_index(self.program.vars.len());
        if !self.bind(name, Binding::Var(id)) {
            return None;
        }
        self.program.vars.push(Var {
            name: name.name.clone(),
            kind,
            span: name.span,
            ty,
        });
        Some(id)
    }

    fn push_expr(&mut self, kind: ExprKind, span: Span) -> ExprId {
        let id = ExprId::from_index(self.program.exprs.len());
        self.program.exprs.push(Expr {
            kind,
            span,
            ty: Ty::Error,
        });
        id
    }

    fn push_stmt(&mut self, kind: StmtKind, span: Span) -> StmtId {
        let id = StmtId::from_index(self.program.stmts.len());
        self.program.stmts.push(Stmt { kind, span });
        id
    }

    /// Resolves a scalar expression; `None` when it has errors (reported).
    fn expr(&mut self, e: &ast::Expr) -> Option<ExprId> {
        let e = e.peel();
        let kind = match &e.kind {
            ast::ExprKind::Int(v) => ExprKind::Int(*v),
            ast::ExprKind::Real(v) => ExprKind::Real(*v),
            ast::ExprKind::Bool(v) => ExprKind::Bool(*v),
            ast::ExprKind::Name(n) => match self.lookup(&n.name) {
                Some(Binding::Var(v)) => ExprKind::Var(v),
                Some(Binding::Matrix(m)) => {
                    self.errors.push(ResolveError::MatrixAsValue {
                        span: n.span,
                        name: n.name.clone(),
                        decl: self.program.matrices[m.index()].name_span,
                    });
                    return None;
                }
                None => {
                    let names = self.names_in_scope();
                    self.errors.push(ResolveError::UndefinedName {
                        span: n.span,
                        name: n.name.clone(),
                        suggestion: did_you_mean(&n.name, names.iter().map(String::as_str)),
                    });
                    return None;
                }
            },
            ast::ExprKind::Index(name, indices) => {
                // Check what we can, then report the misuse.
                let _ = self.access(name, indices, e.span);
                self.errors.push(ResolveError::TileAsValue {
                    span: e.span,
                    context: "this position".to_string(),
                });
                return None;
            }
            ast::ExprKind::Call(f, args) => {
                let resolved: Vec<Option<ExprId>> = args.iter().map(|a| self.expr(a)).collect();
                let Some(builtin) = Builtin::from_name(&f.name) else {
                    self.errors.push(ResolveError::UnknownFunction {
                        span: f.span,
                        name: f.name.clone(),
                        suggestion: did_you_mean(&f.name, Builtin::ALL.iter().map(|b| b.name())),
                        is_kernel: self.kernels.iter().any(|k| k.name == f.name),
                    });
                    return None;
                };
                let (min, max) = builtin.arity();
                if args.len() < min || max.is_some_and(|m| args.len() > m) {
                    self.errors.push(ResolveError::BuiltinArity {
                        span: e.span,
                        name: builtin.name(),
                        expected: if max.is_some() {
                            "1 argument"
                        } else {
                            "2 or more arguments"
                        },
                        found: args.len(),
                    });
                    return None;
                }
                let resolved: Option<Vec<ExprId>> = resolved.into_iter().collect();
                ExprKind::Call(builtin, resolved?)
            }
            ast::ExprKind::Unary(op, inner) => {
                let inner = self.expr(inner)?;
                ExprKind::Unary(*op, inner)
            }
            ast::ExprKind::Binary(op, a, b) => {
                let a = self.expr(a);
                let b = self.expr(b);
                ExprKind::Binary(*op, a?, b?)
            }
            ast::ExprKind::Paren(_) => return None, // peeled above
        };
        Some(self.push_expr(kind, e.span))
    }

    /// Resolves a tile reference `name[indices]`.
    fn access(&mut self, name: &ast::Ident, indices: &[ast::Expr], span: Span) -> Option<Access> {
        let resolved: Vec<Option<ExprId>> = indices.iter().map(|i| self.expr(i)).collect();
        let matrix = match self.lookup(&name.name) {
            Some(Binding::Matrix(m)) => m,
            Some(b @ Binding::Var(_)) => {
                let (decl, kind) = self.binding_span_kind(b);
                self.errors.push(ResolveError::IndexNotMatrix {
                    span: name.span,
                    name: name.name.clone(),
                    kind,
                    decl,
                });
                return None;
            }
            None => {
                let names: Vec<&str> = self
                    .program
                    .matrices
                    .iter()
                    .map(|m| m.name.as_str())
                    .collect();
                let suggestion = did_you_mean(&name.name, names);
                self.errors.push(ResolveError::UndefinedMatrix {
                    span: name.span,
                    name: name.name.clone(),
                    suggestion,
                });
                return None;
            }
        };
        let m = &self.program.matrices[matrix.index()];
        if m.extents.len() != indices.len() {
            self.errors.push(ResolveError::RankMismatch {
                span,
                matrix: m.name.clone(),
                rank: m.extents.len(),
                found: indices.len(),
                decl: m.name_span,
            });
            return None;
        }
        let indices: Option<Vec<ExprId>> = resolved.into_iter().collect();
        Some(Access {
            matrix,
            indices: indices?,
            span,
        })
    }

    fn block(&mut self, stmts: &[ast::Stmt]) -> Vec<StmtId> {
        self.push_scope();
        let mut out = Vec::new();
        for s in stmts {
            match &s.kind {
                ast::StmtKind::Require(_) => self.errors.push(ResolveError::MisplacedRequire {
                    span: s.span,
                    first_stmt: None,
                }),
                ast::StmtKind::Decl(decl) => {
                    self.errors.push(ResolveError::MisplacedDecl {
                        span: s.span,
                        first_stmt: None,
                    });
                    self.declare(decl, s.span);
                }
                ast::StmtKind::Error => {}
                _ => {
                    if let Some(id) = self.stmt(s) {
                        out.push(id);
                    }
                }
            }
        }
        self.pop_scope();
        out
    }

    fn stmt(&mut self, s: &ast::Stmt) -> Option<StmtId> {
        match &s.kind {
            ast::StmtKind::Call(call) => self.call(call, s.span),
            ast::StmtKind::For(f) => {
                let args: Vec<Option<ExprId>> = f.range_args.iter().map(|a| self.expr(a)).collect();
                let arity_ok = (1..=3).contains(&args.len());
                if !arity_ok {
                    self.errors.push(ResolveError::RangeArity {
                        span: f.range_span,
                        found: args.len(),
                    });
                }
                let stmt_id = StmtId::from_index(self.program.stmts.len());
                // Reserve the statement slot so the variable can name it.
                self.program.stmts.push(Stmt {
                    kind: StmtKind::Let(Let {
                        var: VarId(0),
                        value: ExprId(0),
                    }),
                    span: s.span,
                });
                self.push_scope();
                let var = self.bind_var(&f.var, VarKind::Loop(stmt_id), Ty::Int);
                let body = self.block(&f.body.stmts);
                self.pop_scope();
                let args: Option<Vec<ExprId>> = args.into_iter().collect();
                let (Some(var), Some(args), true) = (var, args, arity_ok) else {
                    return None;
                };
                let (lo, hi, step) = match args.as_slice() {
                    [hi] => (
                        self.push_expr(ExprKind::Int(0), f.range_span),
                        *hi,
                        self.push_expr(ExprKind::Int(1), f.range_span),
                    ),
                    [lo, hi] => (*lo, *hi, self.push_expr(ExprKind::Int(1), f.range_span)),
                    [lo, hi, step] => (*lo, *hi, *step),
                    _ => return None,
                };
                self.program.stmts[stmt_id.index()].kind = StmtKind::For(For {
                    var,
                    lo,
                    hi,
                    step,
                    body,
                });
                Some(stmt_id)
            }
            ast::StmtKind::If(i) => {
                let mut branches = Vec::new();
                let mut ok = true;
                for (cond, block) in &i.branches {
                    let c = self.expr(cond);
                    let body = self.block(&block.stmts);
                    match c {
                        Some(c) => branches.push((c, body)),
                        None => ok = false,
                    }
                }
                let else_body = i.else_block.as_ref().map(|b| self.block(&b.stmts));
                ok.then(|| {
                    self.push_stmt(
                        StmtKind::If(If {
                            branches,
                            else_body,
                        }),
                        s.span,
                    )
                })
            }
            ast::StmtKind::Let(l) => {
                let value = self.expr(&l.value);
                // The name is bound even when the value has errors, so its
                // uses do not cascade into "cannot find" errors; its type
                // stays `Error`, which silences type errors too.
                let stmt_id = StmtId::from_index(self.program.stmts.len());
                let var = self.bind_var(&l.name, VarKind::Let(stmt_id), Ty::Error);
                let (Some(var), Some(value)) = (var, value) else {
                    return None;
                };
                Some(self.push_stmt(StmtKind::Let(Let { var, value }), s.span))
            }
            ast::StmtKind::Require(_) | ast::StmtKind::Decl(_) | ast::StmtKind::Error => None,
        }
    }

    fn call(&mut self, call: &ast::Call, span: Span) -> Option<StmtId> {
        let kernel_pos = self.kernels.iter().position(|k| k.name == call.kernel.name);
        let Some(kpos) = kernel_pos else {
            self.undefined_call(call);
            return None;
        };
        let kernel = &self.kernels[kpos];
        let kernel_name = kernel.name.clone();
        let kernel_decl = kernel.name_span;
        let params = kernel.params.clone();
        let n_results = kernel.results.len();
        let mut ok = true;
        let outputs: Vec<Option<Access>> = call
            .lhs
            .iter()
            .map(|t| self.access(&t.matrix, &t.indices, t.span))
            .collect();
        if call.lhs.len() != n_results {
            let lhs_span = call
                .lhs
                .first()
                .zip(call.lhs.last())
                .map(|(a, b)| a.span.to(b.span))
                .unwrap_or(span);
            self.errors.push(ResolveError::ResultCount {
                span: lhs_span,
                kernel: kernel_name.clone(),
                expected: n_results,
                found: call.lhs.len(),
                decl: kernel_decl,
            });
            ok = false;
        }
        let mut args = Vec::new();
        if call.args.len() != params.len() {
            let args_span = call
                .args
                .first()
                .zip(call.args.last())
                .map(|(a, b)| a.span.to(b.span))
                .unwrap_or(call.kernel.span);
            self.errors.push(ResolveError::CallArity {
                span: args_span,
                kernel: kernel_name.clone(),
                expected: params.len(),
                found: call.args.len(),
                decl: kernel_decl,
            });
            for a in &call.args {
                let _ = self.arg_best_effort(a);
            }
            ok = false;
        } else {
            for (a, p) in call.args.iter().zip(&params) {
                match self.call_arg(a, p, &kernel_name) {
                    Some(arg) => args.push(arg),
                    None => ok = false,
                }
            }
        }
        let outputs: Option<Vec<Access>> = outputs.into_iter().collect();
        let outputs = outputs?;
        if !ok {
            return None;
        }
        let (line, column) = self.sources.line_col(span.file, span.start);
        Some(self.push_stmt(
            StmtKind::Call(Call {
                kernel: KernelId::from_index(kpos),
                outputs,
                args,
                line,
                column,
                kernel_span: call.kernel.span,
            }),
            span,
        ))
    }

    /// Reports a call of an undeclared kernel, after checking its tiles
    /// and arguments for further errors.
    fn undefined_call(&mut self, call: &ast::Call) {
        for t in &call.lhs {
            let _ = self.access(&t.matrix, &t.indices, t.span);
        }
        for a in &call.args {
            let _ = self.arg_best_effort(a);
        }
        self.errors.push(ResolveError::UndefinedKernel {
            span: call.kernel.span,
            name: call.kernel.name.clone(),
            suggestion: did_you_mean(
                &call.kernel.name,
                self.kernels.iter().map(|k| k.name.as_str()),
            ),
            standard: standard_signature(&call.kernel.name).map(|s| s.declaration()),
        });
    }

    /// Resolves argument `a` of a call of `kernel` for its parameter `p`:
    /// a tile reference for a tile, a number for a scalar.
    fn call_arg(&mut self, a: &ast::Expr, p: &KernelParam, kernel: &str) -> Option<Arg> {
        match p.kind {
            ParamKind::Tile => match &a.peel().kind {
                ast::ExprKind::Index(name, indices) => {
                    self.access(name, indices, a.peel().span).map(Arg::Tile)
                }
                ast::ExprKind::Name(n)
                    if matches!(self.lookup(&n.name), Some(Binding::Matrix(_))) =>
                {
                    // A whole matrix: one error saying to index it.
                    self.errors.push(ResolveError::ExpectedTile {
                        span: a.span,
                        kernel: kernel.to_string(),
                        param: p.name.clone(),
                    });
                    None
                }
                _ => {
                    let _ = self.expr(a);
                    self.errors.push(ResolveError::ExpectedTile {
                        span: a.span,
                        kernel: kernel.to_string(),
                        param: p.name.clone(),
                    });
                    None
                }
            },
            ParamKind::Scalar(_) => {
                if let ast::ExprKind::Index(name, indices) = &a.peel().kind {
                    let _ = self.access(name, indices, a.span);
                    self.errors.push(ResolveError::TileAsValue {
                        span: a.span,
                        context: format!("the scalar parameter `{}`", p.name),
                    });
                    None
                } else {
                    self.expr(a).map(Arg::Scalar)
                }
            }
        }
    }

    /// Resolves an argument of a call whose signature is unknown: a tile
    /// reference as a tile, anything else as a scalar.
    fn arg_best_effort(&mut self, a: &ast::Expr) -> Option<()> {
        match &a.peel().kind {
            ast::ExprKind::Index(name, indices) => self.access(name, indices, a.span).map(|_| ()),
            _ => self.expr(a).map(|_| ()),
        }
    }
}

/// The value of an integer literal, possibly negated.
fn literal_int(e: &ast::Expr) -> Option<i64> {
    match &e.peel().kind {
        ast::ExprKind::Int(v) => Some(*v),
        ast::ExprKind::Unary(ast::UnOp::Neg, inner) => match &inner.peel().kind {
            ast::ExprKind::Int(v) => v.checked_neg(),
            _ => None,
        },
        _ => None,
    }
}
