//! Edits: formatting with `lpkc fmt`'s formatter (`lpk_grammar::fmt`), and the
//! quick fixes the diagnostics already suggest — the missing `;` of a
//! syntax error, the similar name of a "did you mean" help, the
//! declaration of a standard kernel called without one, and the removal
//! of an unused `let`.

use crate::lsp::analysis::Analysis;
use crate::lsp::diagnostics::{to_lsp, Origin};
use lpk_compiler::diag::{Code, Diagnostic};
use lpk_compiler::front::hir::VarKind;
use lpk_grammar::ParseError;
use lsp_types::{CodeAction, CodeActionKind, TextEdit, Uri, WorkspaceEdit};
use std::collections::HashMap;

/// The edits that format the document: one edit replacing the whole
/// text, none when it is formatted already, `None` when it has syntax
/// errors (the formatter formats only what parses).
pub(crate) fn format(a: &Analysis) -> Option<Vec<TextEdit>> {
    let formatted = lpk_grammar::fmt::format_source(&a.text).ok()?;
    if formatted == *a.text {
        return Some(Vec::new());
    }
    Some(vec![TextEdit {
        range: a.range(0, a.text.len()),
        new_text: formatted,
    }])
}

/// The quick fixes for the diagnostics that overlap bytes `start..end`.
pub(crate) fn code_actions(a: &Analysis, uri: &Uri, start: usize, end: usize) -> Vec<CodeAction> {
    let mut out = Vec::new();
    let overlapping = |d: &&Diagnostic| {
        d.primary_span()
            .is_some_and(|s| s.start as usize <= end && start <= s.end as usize)
    };
    for (d, origin) in a
        .checked
        .diagnostics
        .iter()
        .map(|d| (d, Origin::Check))
        .chain(a.lint.iter().flatten().map(|d| (d, Origin::Lint)))
    {
        if !overlapping(&d) {
            continue;
        }
        if let Some((title, edit)) = fix(a, d) {
            out.push(CodeAction {
                title,
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![to_lsp(a, uri, d, origin)]),
                edit: Some(WorkspaceEdit {
                    changes: Some(HashMap::from([(uri.clone(), vec![edit])])),
                    ..WorkspaceEdit::default()
                }),
                command: None,
                is_preferred: Some(true),
                disabled: None,
                data: None,
            });
        }
    }
    out
}

/// The fix one diagnostic suggests, with its title.
fn fix(a: &Analysis, d: &Diagnostic) -> Option<(String, TextEdit)> {
    let span = d.primary_span()?;
    let (start, end) = (span.start as usize, span.end as usize);
    match d.code {
        Code::E0002 => missing_semicolon(a, start),
        Code::E0101 | Code::E0102 | Code::E0103 | Code::E0110 => {
            if let Some(decl) = help_quote(d, "it is a standard kernel; declare it: ") {
                return declare_kernel(a, decl);
            }
            let name = help_quote(d, "a similar name exists: ")
                .or_else(|| help_quote(d, "a kernel with a similar name exists: "))?;
            Some((
                format!("Replace with `{name}`"),
                TextEdit {
                    range: a.range(start, end),
                    new_text: name.to_string(),
                },
            ))
        }
        Code::W0507 => remove_let(a, start),
        _ => None,
    }
}

/// The text between backquotes of a help line that starts with `prefix`.
fn help_quote<'d>(d: &'d Diagnostic, prefix: &str) -> Option<&'d str> {
    d.notes.iter().find_map(|n| {
        let rest = n.strip_prefix("help: ")?.strip_prefix(prefix)?;
        rest.strip_prefix('`')?.strip_suffix('`')
    })
}

/// Inserts the `;` the parser expected at `at`, if the syntax error there
/// is a missing semicolon.
fn missing_semicolon(a: &Analysis, at: usize) -> Option<(String, TextEdit)> {
    let parsed = lpk_grammar::parse(&a.text, a.checked.file);
    parsed.errors.iter().find_map(|e| match e {
        ParseError::MissingSemicolon { span, .. } if span.start as usize == at => Some((
            "Insert `;`".to_string(),
            TextEdit {
                range: a.range(at, at),
                new_text: ";".into(),
            },
        )),
        _ => None,
    })
}

/// Declares a standard kernel above the first program.
fn declare_kernel(a: &Analysis, decl: &str) -> Option<(String, TextEdit)> {
    let first = a
        .checked
        .module
        .programs
        .first()
        .map_or(0, |p| p.span.start as usize);
    let line_start = a.text.get(..first)?.rfind('\n').map_or(0, |i| i + 1);
    Some((
        format!("Declare `{decl}`"),
        TextEdit {
            range: a.range(line_start, line_start),
            new_text: format!("{decl}\n\n"),
        },
    ))
}

/// Removes the `let` statement that binds the variable at `at`, with its
/// line when nothing else is on it.
fn remove_let(a: &Analysis, at: usize) -> Option<(String, TextEdit)> {
    let program = a.program(a.program_at(at)?)?;
    let var = program.vars.iter().find(|v| v.span.start as usize == at)?;
    let VarKind::Let(stmt) = var.kind else {
        return None;
    };
    let s = program.stmts.get(stmt.index())?;
    let (mut start, mut end) = (s.span.start as usize, s.span.end as usize);
    let text = &a.text;
    let line_start = text.get(..start)?.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text
        .get(end..)?
        .find('\n')
        .map_or(text.len(), |i| end + i + 1);
    let before = text.get(line_start..start)?;
    let after = text.get(end..line_end)?;
    if before.trim().is_empty() && after.trim().is_empty() {
        (start, end) = (line_start, line_end);
    }
    Some((
        format!("Remove the unused `let {}`", var.name),
        TextEdit {
            range: a.range(start, end),
            new_text: String::new(),
        },
    ))
}
