//! Navigation: definitions and references of every name (kernels,
//! programs, matrices, parameters, loop variables, `let`s) from the HIR's
//! ids; from a tile access to the accesses the plans pair it with (a
//! read's possible writers, a write's possible readers: "go to
//! implementation"); and the document's outline.

use crate::lsp::analysis::{Analysis, Use};
use crate::lsp::plans;
use lpk_compiler::front::hir::StmtKind;
use lpk_grammar::ast::Span;
use lsp_types::{DocumentSymbol, Location, Range, SymbolKind, Uri};

/// The definition of the name at `offset`.
pub(crate) fn definition(a: &Analysis, uri: &Uri, offset: usize) -> Option<Location> {
    let o = a.occurrence_at(offset)?;
    let d = a.definition(o.symbol)?;
    Some(location(a, uri, d.start, d.end))
}

/// Every occurrence of the name at `offset`, its definition included when
/// asked.
pub(crate) fn references(
    a: &Analysis,
    uri: &Uri,
    offset: usize,
    declaration: bool,
) -> Vec<Location> {
    let Some(o) = a.occurrence_at(offset) else {
        return Vec::new();
    };
    a.occurrences_of(o.symbol)
        .filter(|r| declaration || r.role != Use::Definition)
        .map(|r| location(a, uri, r.start, r.end))
        .collect()
}

/// The accesses the plans pair with the tile access at `offset`: for a
/// read, the writes it may read from; for a write, the reads it may feed.
pub(crate) fn partners(a: &Analysis, uri: &Uri, offset: usize) -> Vec<Location> {
    let Some(p) = a.program_at(offset).and_then(|i| a.compiled(i)) else {
        return Vec::new();
    };
    let Some(at) = plans::access_at(p, offset) else {
        return Vec::new();
    };
    plans::partners(p, at)
        .into_iter()
        .filter_map(|o| plans::access(p, o))
        .map(|acc| location(a, uri, acc.span.0 as usize, acc.span.1 as usize))
        .collect()
}

fn location(a: &Analysis, uri: &Uri, start: usize, end: usize) -> Location {
    Location {
        uri: uri.clone(),
        range: a.range(start, end),
    }
}

/// The outline: kernels, then each program with its parameters, matrices
/// and kernel calls (named as tasks are, `chol@37`).
pub(crate) fn symbols(a: &Analysis) -> Vec<DocumentSymbol> {
    let module = &a.checked.module;
    let mut out: Vec<DocumentSymbol> = module
        .kernels
        .iter()
        .map(|k| declared(a, &k.name, SymbolKind::FUNCTION, k.span, k.name_span))
        .collect();
    for (i, p) in module.programs.iter().enumerate() {
        let mut children = Vec::new();
        for param in &p.params {
            let r = a.span_range(param.span);
            children.push(symbol(
                param.name.clone(),
                Some("parameter".into()),
                SymbolKind::TYPE_PARAMETER,
                r,
                r,
                Vec::new(),
            ));
        }
        for m in &p.matrices {
            children.push(declared(a, &m.name, SymbolKind::ARRAY, m.span, m.name_span));
        }
        let compiled = a.compiled(i);
        for stmt in p.calls() {
            let s = p.stmt(stmt);
            let StmtKind::Call(call) = &s.kind else {
                continue;
            };
            let kernel = module
                .kernels
                .get(call.kernel.index())
                .map_or("?", |k| k.name.as_str());
            let (name, detail) = match compiled
                .and_then(|c| plans::statement_at(c, s.span.start as usize).map(|id| (c, id)))
            {
                Some((c, id)) => (plans::name(c, id), Some(plans::count_set(c, id))),
                None => (format!("{kernel}@{}", call.line), None),
            };
            children.push(symbol(
                name,
                detail,
                SymbolKind::EVENT,
                a.span_range(s.span),
                a.span_range(call.kernel_span),
                Vec::new(),
            ));
        }
        out.push(symbol(
            p.name.clone(),
            Some("program".into()),
            SymbolKind::MODULE,
            a.span_range(p.span),
            a.span_range(p.name_span),
            children,
        ));
    }
    out.sort_by_key(|s| (s.range.start.line, s.range.start.character));
    out
}

/// The outline entry of a declaration, `name` over `span`: its source as
/// the detail.
fn declared(
    a: &Analysis,
    name: &str,
    kind: SymbolKind,
    span: Span,
    name_span: Span,
) -> DocumentSymbol {
    symbol(
        name.to_string(),
        Some(a.slice(span.start, span.end).to_string()),
        kind,
        a.span_range(span),
        a.span_range(name_span),
        Vec::new(),
    )
}

fn symbol(
    name: String,
    detail: Option<String>,
    kind: SymbolKind,
    range: Range,
    selection_range: Range,
    children: Vec<DocumentSymbol>,
) -> DocumentSymbol {
    #[allow(deprecated)] // `deprecated` is a required field of the struct.
    DocumentSymbol {
        name,
        detail,
        kind,
        tags: None,
        deprecated: None,
        range,
        selection_range,
        children: (!children.is_empty()).then_some(children),
    }
}
