//! Lint of a compiled artifact: the rules that need only the plans
//! ([`analyze`]), as diagnostics pointing into the source text the artifact
//! carries (if it carries it). The unused-name warnings need the source's
//! names and are not part of it.

use super::{
    analyze, checked_text, proved_text, Analysis, LintOptions, LintReport, RuleLine, RuleStatus,
};
use crate::diag::{Code, Diagnostic, Label, Severity, SourceMap};
use crate::front::decls::{declaration_spans, DeclarationSpans};
use lpk_grammar::ast::{FileId, Span};
use lpk_model::artifact::Artifact;
use lpk_model::program::{Instance, Program};

/// Lints the program of `art` (and the instance `given`, if any); the
/// artifact's source text, if it carries one, is added to `sources` and
/// the diagnostics point into it.
pub fn lint_artifact(
    art: &Artifact,
    sources: &mut SourceMap,
    opts: &LintOptions,
    given: Option<&Instance<'_>>,
) -> LintReport {
    let p = &art.program;
    let a = analyze(p, opts, given);
    let file = art
        .source
        .text
        .as_ref()
        .map(|text| sources.add(art.source.file.clone(), text.clone()));
    let decls = file.and_then(|f| declaration_spans(sources.source(f), f, &p.name));
    let sites = Sites { p, file, decls };
    let mut diagnostics = Vec::new();
    sites.errors(&a, given, &mut diagnostics);
    sites.warnings(&a, &mut diagnostics);
    let summary = rule_summary(p, a);
    crate::diag::sort_by_position(&mut diagnostics);
    LintReport {
        diagnostics,
        summary,
    }
}

/// Where the diagnostics of an artifact's program point.
struct Sites<'a> {
    p: &'a Program,
    /// The artifact's source text, if it carries one.
    file: Option<FileId>,
    /// The spans of the program's declarations in that text.
    decls: Option<DeclarationSpans>,
}

impl Sites<'_> {
    /// The span `span` of the artifact's source text, if it has one.
    fn at(&self, span: (u32, u32)) -> Option<Span> {
        self.file.map(|file| Span {
            file,
            start: span.0,
            end: span.1,
        })
    }

    /// Adds the errors of `a` to `out`: unsatisfiable `require`s and the
    /// rules' findings.
    fn errors(&self, a: &Analysis, given: Option<&Instance<'_>>, out: &mut Vec<Diagnostic>) {
        let p = self.p;
        if let Some((i, _)) = a.unsatisfiable {
            let span = self.decls.as_ref().and_then(|d| d.requires.get(i).copied());
            out.push(diag(
                Severity::Error,
                Code::E0506,
                "no parameter value satisfies the `require`s".into(),
                span,
                "this requirement can never hold with the ones before it",
            ));
        }
        for f in &a.findings {
            let message = super::finding_message(p, f, given);
            let site = f.primary;
            let span = p.get_statement(site.stmt).and_then(|st| {
                let list = if site.write { &st.writes } else { &st.reads };
                list.get(site.access as usize).map(|acc| acc.span)
            });
            out.push(diag(
                Severity::Error,
                f.kind.code(),
                message,
                span.and_then(|s| self.at(s)),
                f.kind.rule(),
            ));
        }
    }

    /// Adds the warnings of `a` to `out`: statements that never run, dead
    /// writes and unwritten outputs.
    fn warnings(&self, a: &Analysis, out: &mut Vec<Diagnostic>) {
        let p = self.p;
        for &(s, _) in &a.never_runs {
            if let Some(st) = p.get_statement(s) {
                out.push(diag(
                    Severity::Warning,
                    Code::W0502,
                    format!(
                        "the statement on line {} runs for no parameter value",
                        st.line
                    ),
                    self.at(st.span),
                    "never runs",
                ));
            }
        }
        for &(s, acc) in &a.dead_writes {
            let Some(w) = p
                .get_statement(s)
                .and_then(|st| st.writes.get(acc as usize))
            else {
                continue;
            };
            let name = p.get_matrix(w.matrix).map_or("?", |m| &m.name);
            out.push(diag(
                Severity::Warning,
                Code::W0501,
                format!("tiles written here are never read, and `{name}` is not an output"),
                self.at(w.span),
                "dead write",
            ));
        }
        for &m in &a.unwritten_outputs {
            let Some(name) = p.get_matrix(m).map(|m| m.name.as_str()) else {
                continue;
            };
            let span = self
                .decls
                .as_ref()
                .and_then(|d| d.matrices.iter().find(|(n, _)| n == name).map(|(_, s)| *s));
            out.push(diag(
                Severity::Warning,
                Code::W0508,
                format!("output `{name}` is never written"),
                span,
                "declared as an output here",
            ));
        }
    }
}

/// A diagnostic with one primary label `label` at `span`, if any.
fn diag(
    severity: Severity,
    code: Code,
    message: String,
    span: Option<Span>,
    label: &str,
) -> Diagnostic {
    Diagnostic {
        severity,
        code,
        message,
        labels: span
            .map(|span| Label {
                span,
                message: label.to_string(),
                primary: true,
            })
            .into_iter()
            .collect(),
        notes: Vec::new(),
    }
}

/// One summary line per rule of `a`, and one for the instance if it could
/// not be checked.
fn rule_summary(p: &Program, a: Analysis) -> Vec<RuleLine> {
    let mut summary = Vec::new();
    for (k, status) in &a.rules {
        let (status, detail) = match status {
            RuleStatus::Proved => ("proved", proved_text(p)),
            RuleStatus::Checked(c) => ("checked", checked_text(p, c)),
            RuleStatus::Violated => ("violated", "violated (see the errors)".to_string()),
        };
        summary.push(RuleLine {
            code: k.code().as_str(),
            rule: k.rule(),
            status,
            detail,
        });
    }
    if let Some(e) = a.instance_error {
        summary.push(RuleLine {
            code: "",
            rule: "the instance given with -p",
            status: "not checked",
            detail: e,
        });
    }
    summary
}
