//! Where a program's declarations (name, parameters, `require`s, matrices)
//! stand in its source text, found again by parsing it: the lowered program
//! keeps no spans for them, and reports about an instance or an artifact
//! point at them.

use lpk_grammar::ast::FileId;

/// Where a program's declarations stand in its source: what a report about
/// an instance of the program (a `-p` value, an unmet `require`) points at.
/// The lowered program keeps no spans for these; they are found again in
/// the source text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclarationSpans {
    /// The program's name.
    pub name: lpk_grammar::ast::Span,
    /// Each parameter's name and whole declaration, in order.
    pub params: Vec<(String, lpk_grammar::ast::Span)>,
    /// Each `require` statement, in order: the `i`th is the lowered
    /// program's `requires[i]` (a program that compiled has its `require`s
    /// only at the top of its body).
    pub requires: Vec<lpk_grammar::ast::Span>,
    /// Each matrix declaration's name and statement, in order.
    pub matrices: Vec<(String, lpk_grammar::ast::Span)>,
}

/// The [`DeclarationSpans`] of the program named `program` in `text`
/// (file `file` of the caller's source map), or `None` when the text has
/// no such program (an artifact's source that does not match its program).
pub fn declaration_spans(text: &str, file: FileId, program: &str) -> Option<DeclarationSpans> {
    use lpk_grammar::ast::{Item, StmtKind};
    let parsed = lpk_grammar::parse(text, file);
    let decl = parsed.file.items.iter().find_map(|item| match item {
        Item::Program(p) if p.name.name == program => Some(p),
        _ => None,
    })?;
    let mut spans = DeclarationSpans {
        name: decl.name.span,
        params: decl
            .params
            .iter()
            .map(|p| (p.name.name.clone(), p.span))
            .collect(),
        requires: Vec::new(),
        matrices: Vec::new(),
    };
    for stmt in &decl.body.stmts {
        match &stmt.kind {
            StmtKind::Require(_) => spans.requires.push(stmt.span),
            StmtKind::Decl(m) => spans.matrices.push((m.name.name.clone(), stmt.span)),
            _ => {}
        }
    }
    Some(spans)
}
