//! `lpkc lint`: the static analyses of a checked program, over every
//! parameter value.
//!
//! Each rule of the language (single assignment, no write to an input,
//! every read tile written earlier, indices inside the extents) is first
//! posed as integer feasibility problems over the index-constraint IR
//! (built and decided by [`crate::constraint`]); when every problem is
//! infeasible the rule is *proved* for all parameter values up to
//! [`crate::constraint::PARAM_CEILING`]. Otherwise the
//! bounded exhaustive check ([`exhaustive`]) expands every parameter
//! combination up to the bound and reports what the oracle sees, with the
//! smallest failing values as counterexample; a clean result is then only
//! *checked*, and the wording says so. Warnings (unused names, dead writes,
//! statements that never run, outputs never written) follow.
//!
//! Precondition: the program has no resolve or type errors.

pub mod artifact;
pub mod exhaustive;
mod rules;
mod scan;
mod split;

use crate::diag::{Diagnostic, Severity};
use crate::front::hir;
use exhaustive::{params_text, Budget, Coverage, ErrorKind, Finding, Site};
use lpk_grammar::ast::{FileId, Span};
use lpk_model::program::{Instance, Program};

/// Options of a lint run.
#[derive(Clone, Debug)]
pub struct LintOptions {
    /// Largest parameter value of the exhaustive check (`--bound`).
    pub bound: i64,
    /// Tasks the exhaustive check may expand over all instances.
    pub task_budget: usize,
    /// Tasks the instance given with `-p` may have.
    pub instance_max_tasks: usize,
}

impl Default for LintOptions {
    fn default() -> LintOptions {
        LintOptions {
            bound: DEFAULT_BOUND,
            task_budget: DEFAULT_TASK_BUDGET,
            instance_max_tasks: 10_000_000,
        }
    }
}

/// The default `--bound`.
pub const DEFAULT_BOUND: i64 = 64;
/// The default task budget of the exhaustive check.
pub const DEFAULT_TASK_BUDGET: usize = 400_000;

/// How a rule stands after lint.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleStatus {
    /// Proved for every parameter value up to the ceiling.
    Proved,
    /// Not proved, and no violation in the checked combinations.
    Checked(Coverage),
    /// Violated (see the findings).
    Violated,
}

/// Everything lint found about a program, before rendering.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    /// The first `require` that no parameter value satisfies (0-based),
    /// and whether that is proved (else only checked).
    pub unsatisfiable: Option<(usize, bool)>,
    /// Rule violations seen in real expansions.
    pub findings: Vec<Finding>,
    /// The status of each error rule.
    pub rules: Vec<(ErrorKind, RuleStatus)>,
    /// Statements that run for no parameter value, and whether that is
    /// proved (else only checked).
    pub never_runs: Vec<(lpk_model::StmtId, bool)>,
    /// Write accesses (statement, access) whose tiles are never read.
    pub dead_writes: Vec<(lpk_model::StmtId, u32)>,
    /// Output matrices no running statement writes.
    pub unwritten_outputs: Vec<lpk_model::MatrixId>,
    /// How far the exhaustive check got, if it ran.
    pub coverage: Option<Coverage>,
    /// Why the instance given with `-p` could not be checked, if it could
    /// not.
    pub instance_error: Option<String>,
    /// For each error rule that is not proved, what stopped its proof.
    pub stops: Vec<Stop>,
}

/// What stopped the proof of one rule: the first question that stayed
/// feasible, its statements, and the atoms (non-affine terms) the solver
/// could not see through, or a sentence (a writer map that cannot be
/// inverted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stop {
    /// The rule.
    pub kind: ErrorKind,
    /// The statements of the question, `kernel@line`.
    pub statements: Vec<String>,
    /// The atoms of the question, in `.lpk` syntax, or a sentence.
    pub atoms: Vec<String>,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stmts: Vec<String> = self.statements.iter().map(|s| format!("`{s}`")).collect();
        let atoms: Vec<String> = self.atoms.iter().map(|s| format!("`{s}`")).collect();
        write!(
            f,
            "{} not proved at {}: stopped by {}",
            self.kind.code().as_str(),
            stmts.join(" and "),
            atoms.join(", ")
        )
    }
}

fn stop(p: &Program, kind: ErrorKind, b: rules::Blocked) -> Stop {
    let statements = b
        .stmts
        .iter()
        .filter_map(|&s| p.statements.get(s))
        .map(|st| {
            let k = p
                .kernels
                .get(st.kernel.index())
                .map(|k| k.name.as_str())
                .unwrap_or("?");
            format!("{k}@{}", st.line)
        })
        .collect();
    Stop {
        kind,
        statements,
        atoms: b.atoms,
    }
}

/// Runs every analysis on a lowered program; `given` is the instance of
/// `-p`, checked exhaustively too.
pub fn analyze(p: &Program, opts: &LintOptions, given: Option<&Instance<'_>>) -> Analysis {
    let mut a = Analysis::default();
    let budget = Budget {
        bound: opts.bound,
        tasks: opts.task_budget,
    };
    if let Some(i) = rules::unsatisfiable_requires::unsatisfiable_require(p) {
        a.unsatisfiable = Some((i, true));
        return a;
    }
    let sp = split::split(p);
    // E0503 and E0504 share one proof (see `rules::read_before_write`), so
    // it runs once.
    let reads = rules::read_unwritten::proved(p, &sp);
    let results = [
        (
            ErrorKind::DoubleWrite,
            rules::single_assignment::proved(p, &sp),
        ),
        (
            ErrorKind::WriteToInput,
            rules::write_to_input::proved(p, &sp),
        ),
        (ErrorKind::ReadUnwritten, reads.clone()),
        (ErrorKind::ReadBeforeWrite, reads),
        (ErrorKind::OutOfBounds, rules::out_of_bounds::proved(p, &sp)),
    ];
    let mut proved = Vec::with_capacity(results.len());
    for (k, r) in results {
        proved.push((k, r.is_ok()));
        if let Err(b) = r {
            a.stops.push(stop(p, k, b));
        }
    }
    let is_proved = |k: ErrorKind| proved.iter().any(|&(x, ok)| x == k && ok);
    let never = rules::never_runs::never_runs(&sp);
    let all_proved = ErrorKind::ALL.iter().all(|&k| is_proved(k));
    let ran = if !all_proved {
        let (findings, ran, cov) = exhaustive::check(p, budget);
        a.findings = findings;
        a.coverage = Some(cov);
        Some(ran)
    } else if never.iter().any(|n| !n) {
        let (ran, cov) = exhaustive::statements_that_run(p, budget);
        a.coverage = Some(cov);
        Some(ran)
    } else {
        None
    };
    if let Some(cov) = &a.coverage {
        // No instance expanded: the `require`s are unsatisfiable only if
        // no combination meets them (instances can fail for other reasons:
        // a negative extent, an index that does not evaluate).
        if cov.instances == 0
            && cov.stopped.is_none()
            && !p.requires.is_empty()
            && !exhaustive::requires_met_somewhere(p, opts.bound)
        {
            a.unsatisfiable = Some((p.requires.len().saturating_sub(1), false));
            return a;
        }
    }
    if let Some(inst) = given {
        if let Err(e) = exhaustive::check_instance(&mut a.findings, inst, opts.instance_max_tasks) {
            a.instance_error = Some(e.to_string());
        }
    }
    for k in ErrorKind::ALL {
        let status = if a.findings.iter().any(|f| f.kind == k) {
            RuleStatus::Violated
        } else if is_proved(k) {
            RuleStatus::Proved
        } else {
            RuleStatus::Checked(a.coverage.clone().unwrap_or_default())
        };
        a.rules.push((k, status));
    }
    for ((id, _), &n) in p.statement_ids().zip(never.iter()) {
        let s = id.index();
        if n {
            a.never_runs.push((id, true));
        } else if let (Some(ran), Some(cov)) = (&ran, &a.coverage) {
            if !ran.get(s).copied().unwrap_or(true) && cov.complete_to.is_some() {
                a.never_runs.push((id, false));
            }
        }
    }
    let never_all: Vec<bool> = (0..p.statements.len())
        .map(|s| a.never_runs.iter().any(|&(x, _)| x.index() == s))
        .collect();
    a.dead_writes = rules::dead_write::dead_writes(p, &sp, &never_all);
    a.unwritten_outputs = rules::unwritten_output::unwritten_outputs(p, &never_all);
    a
}

/// The result of linting one program.
#[derive(Clone, Debug, Default)]
pub struct LintReport {
    /// Errors and warnings, in source order.
    pub diagnostics: Vec<Diagnostic>,
    /// One line per error rule: proved, checked (and how far) or violated.
    pub summary: Vec<RuleLine>,
}

/// The standing of one rule, for the summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleLine {
    /// The rule's code.
    pub code: &'static str,
    /// The rule.
    pub rule: &'static str,
    /// `proved`, `checked` or `violated`.
    pub status: &'static str,
    /// A sentence saying for which parameter values.
    pub detail: String,
}

/// Lints one checked program: the analyses of [`analyze`] plus the unused
/// names of the HIR, as diagnostics with spans in `file`.
pub fn lint_program(
    module: &hir::Module,
    hir_program: &hir::ProgramDef,
    program: &Program,
    file: FileId,
    opts: &LintOptions,
    given: Option<&Instance<'_>>,
) -> LintReport {
    let a = analyze(program, opts, given);
    let mut r = render(hir_program, program, file, &a, given);
    if a.unsatisfiable.is_none() {
        r.diagnostics
            .extend(rules::unused_names::unused_names(module, hir_program));
    }
    crate::diag::sort_by_position(&mut r.diagnostics);
    r
}

/// What the gate of `lpkc compile` and of a run needs from lint: the
/// errors (what they refuse), and the record an artifact carries.
#[derive(Clone, Debug)]
pub struct RuleCheck {
    /// The lint errors, in source order.
    pub errors: Vec<Diagnostic>,
    /// How each error rule stands (meaningful when `errors` is empty).
    pub record: lpk_model::artifact::LintRecord,
}

/// Lints a checked program with the default options and keeps its errors
/// and the standing of each rule.
pub fn check_rules(
    module: &hir::Module,
    hir_program: &hir::ProgramDef,
    program: &Program,
    file: FileId,
) -> RuleCheck {
    let report = lint_program(
        module,
        hir_program,
        program,
        file,
        &LintOptions::default(),
        None,
    );
    rule_check(report)
}

/// Splits a lint report into its errors and the record of its rules.
pub fn rule_check(report: LintReport) -> RuleCheck {
    let rules = report
        .summary
        .iter()
        .filter(|l| !l.code.is_empty() && l.status != "violated")
        .map(|l| lpk_model::artifact::LintRule {
            code: l.code.to_string(),
            status: l.status.to_string(),
        })
        .collect();
    RuleCheck {
        errors: report
            .diagnostics
            .into_iter()
            .filter(|d| d.severity == Severity::Error)
            .collect(),
        record: lpk_model::artifact::LintRecord { rules },
    }
}

/// The lint errors of a checked program (what `lpkc compile` refuses), with
/// the default options.
pub fn lint_errors(
    module: &hir::Module,
    hir_program: &hir::ProgramDef,
    program: &Program,
    file: FileId,
) -> Vec<Diagnostic> {
    check_rules(module, hir_program, program, file).errors
}

fn names(p: &Program) -> String {
    p.param_names().join(", ")
}

/// "proved for all N up to 2^20".
pub(crate) fn proved_text(p: &Program) -> String {
    if p.params.is_empty() {
        "proved".to_string()
    } else {
        format!("proved for all {} up to 2^20", names(p))
    }
}

/// "checked for N <= 64" (and why it stopped early).
pub(crate) fn checked_text(p: &Program, cov: &Coverage) -> String {
    if p.params.is_empty() {
        return "checked (the program has no parameters)".to_string();
    }
    let mut s = match cov.complete_to {
        Some(c) => format!("checked for {} <= {c}", names(p)),
        None => "not checked for any parameter value".to_string(),
    };
    if let Some(why) = &cov.stopped {
        s.push_str(&format!(" ({why})"));
    }
    s
}

/// Compact list of one parameter's failing values: `4..=64` or `2, 5`.
fn value_ranges(values: &[i64]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while let Some(&start) = values.get(i) {
        let mut end = start;
        while values.get(i + 1) == Some(&(end + 1)) {
            end += 1;
            i += 1;
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}..={end}")
        });
        i += 1;
    }
    parts.join(", ")
}

pub(crate) fn span(file: FileId, s: (u32, u32)) -> Span {
    Span {
        file,
        start: s.0,
        end: s.1,
    }
}

fn site_span(p: &Program, file: FileId, site: Site) -> Option<Span> {
    let st = p.get_statement(site.stmt)?;
    let list = if site.write { &st.writes } else { &st.reads };
    list.get(site.access as usize).map(|a| span(file, a.span))
}

fn render(
    hir_program: &hir::ProgramDef,
    p: &Program,
    file: FileId,
    a: &Analysis,
    given: Option<&Instance<'_>>,
) -> LintReport {
    let mut out = LintReport::default();
    if let Some((i, proved)) = a.unsatisfiable {
        out.diagnostics
            .push(rules::unsatisfiable_requires::diagnostic(
                hir_program,
                p,
                i,
                proved,
                a.coverage.as_ref(),
            ));
        return out;
    }
    for f in &a.findings {
        out.diagnostics
            .push(finding_diagnostic(p, file, f, given, a.coverage.as_ref()));
    }
    for &(s, proved) in &a.never_runs {
        let Some(st) = p.get_statement(s) else {
            continue;
        };
        out.diagnostics.push(rules::never_runs::diagnostic(
            p,
            file,
            st,
            proved,
            a.coverage.as_ref(),
        ));
    }
    for &(s, acc) in &a.dead_writes {
        let Some(st) = p.get_statement(s) else {
            continue;
        };
        let Some(w) = st.writes.get(acc as usize) else {
            continue;
        };
        out.diagnostics
            .push(rules::dead_write::diagnostic(p, file, w));
    }
    for &m in &a.unwritten_outputs {
        let Some(decl) = hir_program.matrices.get(m.index()) else {
            continue;
        };
        out.diagnostics
            .push(rules::unwritten_output::diagnostic(decl));
    }
    out.diagnostics
        .extend(rules::shared_line::diagnostics(p, file));
    for (k, status) in &a.rules {
        let (status_word, detail) = match status {
            RuleStatus::Proved => ("proved", proved_text(p)),
            RuleStatus::Checked(c) => ("checked", checked_text(p, c)),
            RuleStatus::Violated => ("violated", "violated (see the errors)".to_string()),
        };
        out.summary.push(RuleLine {
            code: k.code().as_str(),
            rule: k.rule(),
            status: status_word,
            detail,
        });
    }
    if let Some(e) = &a.instance_error {
        out.summary.push(RuleLine {
            code: "",
            rule: "the instance given with -p",
            status: "not checked",
            detail: e.clone(),
        });
    }
    if let Some((params, e)) = a.coverage.as_ref().and_then(|c| c.eval_errors.as_ref()) {
        out.summary.push(RuleLine {
            code: "",
            rule: "evaluation",
            status: "failed",
            detail: format!("for {}: {e}", params_text(p, params)),
        });
    }
    out
}

/// A finding's message: the violation, after the parameter values it was
/// seen at (those of `given` when it was seen there).
fn finding_message(p: &Program, f: &Finding, given: Option<&Instance<'_>>) -> String {
    let values = if f.failing_count == 0 {
        given.map(|g| g.params.clone()).unwrap_or_default()
    } else {
        f.params.clone()
    };
    let describe = match p.bind_values(values.clone()) {
        Ok(inst) => f.violation.describe(&inst),
        Err(e) => e.to_string(),
    };
    if p.params.is_empty() {
        describe
    } else {
        format!("for {}: {describe}", params_text(p, &values))
    }
}

fn finding_diagnostic(
    p: &Program,
    file: FileId,
    f: &Finding,
    given: Option<&Instance<'_>>,
    coverage: Option<&Coverage>,
) -> Diagnostic {
    let head = finding_message(p, f, given);
    // The oracle expanded `p`, so its tasks name statements of `p`; an
    // access it could not attribute is shown at its statement.
    let primary = site_span(p, file, f.primary)
        .or_else(|| p.get_statement(f.primary.stmt).map(|s| span(file, s.span)))
        .expect("the oracle's tasks name statements of the program it expanded");
    let &rules::ErrorRule {
        here, there, help, ..
    } = f.kind.error_rule();
    let mut d = Diagnostic::error(f.kind.code(), head, primary).with_primary_message(here);
    if let Some(sec) = f.secondary {
        if sec != f.primary {
            if let Some(sp) = site_span(p, file, sec) {
                d = d.with_label(sp, there);
            }
        }
    }
    if f.failing_count > 0 {
        let when = if p.params.len() == 1 {
            let vals: Vec<i64> = f
                .failing
                .iter()
                .filter_map(|t| t.first().copied())
                .collect();
            format!(
                "happens for {} = {}",
                p.params.first().map(|x| x.name.as_str()).unwrap_or("?"),
                value_ranges(&vals)
            )
        } else if p.params.is_empty() {
            "happens in the only instance".to_string()
        } else {
            format!(
                "happens for {} of the checked parameter combinations, the smallest {}",
                f.failing_count,
                params_text(p, &f.params)
            )
        };
        let how = match coverage {
            Some(c) => format!(
                "{}; the counterexample is the smallest failing value",
                checked_text(p, c)
            ),
            None => "the counterexample is the smallest failing value".to_string(),
        };
        d = d.with_note(format!("{when} ({how})"));
    }
    if f.in_given_instance {
        if let Some(g) = given {
            d = d.with_note(format!(
                "also happens for the instance given with -p ({})",
                params_text(p, &g.params)
            ));
        }
    }
    d.with_help(help)
}
