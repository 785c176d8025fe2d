//! Semantic tokens: the lexer's tokens and comments, each name classified
//! by what the HIR says it denotes (a kernel, a program, a matrix, a
//! parameter, a loop variable, a `let`), with the `declaration` modifier
//! where it is declared, `modification` on a written tile, `readonly` on
//! an input matrix and a `let`, and `defaultLibrary` on standard kernels
//! and built-in functions. Names the front end did not resolve stay
//! unclassified.

use crate::lsp::analysis::{Analysis, Symbol, Use};
use lpk_compiler::front::hir::VarKind;
use lpk_grammar::ast::Role;
use lpk_grammar::lexer::Tok;
use lsp_types::{SemanticToken, SemanticTokenModifier, SemanticTokenType, SemanticTokensLegend};

/// The token types, in legend order.
const TYPES: [SemanticTokenType; 9] = [
    SemanticTokenType::KEYWORD,
    SemanticTokenType::FUNCTION,
    SemanticTokenType::NAMESPACE,
    SemanticTokenType::VARIABLE,
    SemanticTokenType::PARAMETER,
    SemanticTokenType::NUMBER,
    SemanticTokenType::COMMENT,
    SemanticTokenType::OPERATOR,
    SemanticTokenType::TYPE,
];

const KEYWORD: u32 = 0;
const FUNCTION: u32 = 1;
const NAMESPACE: u32 = 2;
const VARIABLE: u32 = 3;
const PARAMETER: u32 = 4;
const NUMBER: u32 = 5;
const COMMENT: u32 = 6;
const OPERATOR: u32 = 7;
const TYPE: u32 = 8;

/// The modifiers, in legend order (bit `i` is `MODIFIERS[i]`).
const MODIFIERS: [SemanticTokenModifier; 4] = [
    SemanticTokenModifier::DECLARATION,
    SemanticTokenModifier::MODIFICATION,
    SemanticTokenModifier::READONLY,
    SemanticTokenModifier::DEFAULT_LIBRARY,
];

const DECLARATION: u32 = 1;
const MODIFICATION: u32 = 2;
const READONLY: u32 = 4;
const DEFAULT_LIBRARY: u32 = 8;

/// The legend the server announces.
pub(crate) fn legend() -> SemanticTokensLegend {
    SemanticTokensLegend {
        token_types: TYPES.to_vec(),
        token_modifiers: MODIFIERS.to_vec(),
    }
}

/// Every token of the document, encoded relative to the previous one.
pub(crate) fn tokens(a: &Analysis) -> Vec<SemanticToken> {
    let (lexed, comments) = lpk_grammar::lexer::lex(&a.text);
    let mut raw: Vec<(usize, usize, u32, u32)> = comments
        .iter()
        .map(|c| (c.start, c.end, COMMENT, 0))
        .collect();
    for (start, tok, end) in lexed {
        if let Some((kind, modifiers)) = classify(a, tok, start) {
            raw.push((start, end, kind, modifiers));
        }
    }
    raw.sort_by_key(|t| t.0);
    encode(a, &raw)
}

fn classify(a: &Analysis, tok: Tok<'_>, start: usize) -> Option<(u32, u32)> {
    Some(match tok {
        Tok::Comment(_) | Tok::Error => return None,
        Tok::Ident(name) => return name_class(a, name, start),
        Tok::Int(_) | Tok::Real(_) => (NUMBER, 0),
        Tok::IntKw | Tok::RealKw => (TYPE, 0),
        Tok::True | Tok::False => (KEYWORD, 0),
        Tok::LParen
        | Tok::RParen
        | Tok::LBracket
        | Tok::RBracket
        | Tok::LBrace
        | Tok::RBrace
        | Tok::Comma
        | Tok::Semi
        | Tok::Colon => return None,
        Tok::Arrow | Tok::Assign => (OPERATOR, 0),
        t if t.is_comparison() || t.is_arithmetic() => (OPERATOR, 0),
        _ => (KEYWORD, 0),
    })
}

fn name_class(a: &Analysis, name: &str, start: usize) -> Option<(u32, u32)> {
    let Some(o) = a.occurrence_at(start).filter(|o| o.start == start) else {
        return lpk_compiler::front::hir::Builtin::from_name(name)
            .map(|_| (FUNCTION, DEFAULT_LIBRARY));
    };
    let declared = if o.role == Use::Definition {
        DECLARATION
    } else {
        0
    };
    let written = if o.role == Use::Write {
        MODIFICATION
    } else {
        0
    };
    Some(match o.symbol {
        Symbol::Kernel(_) => {
            let standard = lpk_model::stdlib::standard(name).map_or(0, |_| DEFAULT_LIBRARY);
            (FUNCTION, declared | standard)
        }
        Symbol::Program(_) => (NAMESPACE, declared),
        Symbol::Matrix(p, m) => {
            let input = a
                .program(p)
                .and_then(|d| d.matrices.get(m.index()))
                .is_some_and(|m| m.role == Role::Input);
            (
                VARIABLE,
                declared | written | if input { READONLY } else { 0 },
            )
        }
        Symbol::Var(p, v) => match a
            .program(p)
            .and_then(|d| d.vars.get(v.index()))
            .map(|v| v.kind)
        {
            Some(VarKind::Param(_)) => (PARAMETER, declared),
            Some(VarKind::Let(_)) => (VARIABLE, declared | READONLY),
            _ => (VARIABLE, declared),
        },
    })
}

/// LSP's relative encoding; a token is one line, its length in UTF-16.
fn encode(a: &Analysis, raw: &[(usize, usize, u32, u32)]) -> Vec<SemanticToken> {
    let mut out = Vec::with_capacity(raw.len());
    let (mut line, mut col) = (0u32, 0u32);
    for &(start, end, kind, modifiers) in raw {
        let from = a.lines.position(&a.text, start);
        let to = a.lines.position(&a.text, end);
        let length = if to.line == from.line {
            to.character.saturating_sub(from.character)
        } else {
            continue;
        };
        let delta_line = from.line.saturating_sub(line);
        let delta_start = if delta_line == 0 {
            from.character.saturating_sub(col)
        } else {
            from.character
        };
        out.push(SemanticToken {
            delta_line,
            delta_start,
            length,
            token_type: kind,
            token_modifiers_bitset: modifiers,
        });
        (line, col) = (from.line, from.character);
    }
    out
}
