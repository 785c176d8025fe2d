//! Erasing spans, so trees can be compared "up to spans" (used by `fmt`
//! and `robustness`).

use lpk_grammar::ast::{
    Block, Call, Expr, ExprKind, Ident, Item, KernelDecl, KernelParam, LetStmt, MatrixDecl,
    ProgramDecl, ProgramParam, SourceFile, Span, Stmt, StmtKind, TileRef, TypeAnn,
};

// ---- span erasure (destructuring without `..`, so a new field cannot be
// forgotten) ----

pub fn erase_file(file: &SourceFile) -> SourceFile {
    let mut file = file.clone();
    let SourceFile { items } = &mut file;
    items.iter_mut().for_each(erase_item);
    file
}

fn erase_span(span: &mut Span) {
    *span = Span::default();
}

fn erase_ident(id: &mut Ident) {
    let Ident { name: _, span } = id;
    erase_span(span);
}

fn erase_type(ty: &mut TypeAnn) {
    let TypeAnn { kind: _, span } = ty;
    erase_span(span);
}

fn erase_item(item: &mut Item) {
    match item {
        Item::Kernel(KernelDecl {
            name,
            params,
            results,
            span,
        }) => {
            erase_ident(name);
            for KernelParam { name, ty } in params {
                erase_ident(name);
                if let Some(ty) = ty {
                    erase_type(ty);
                }
            }
            results.iter_mut().for_each(erase_ident);
            erase_span(span);
        }
        Item::Program(ProgramDecl {
            name,
            params,
            body,
            span,
        }) => {
            erase_ident(name);
            for ProgramParam {
                name,
                ty,
                default,
                span,
            } in params
            {
                erase_ident(name);
                erase_type(ty);
                if let Some(default) = default {
                    erase_expr(default);
                }
                erase_span(span);
            }
            erase_block(body);
            erase_span(span);
        }
        Item::Error(span) => erase_span(span),
    }
}

fn erase_block(block: &mut Block) {
    let Block { stmts, span } = block;
    stmts.iter_mut().for_each(erase_stmt);
    erase_span(span);
}

fn erase_tile(tile: &mut TileRef) {
    let TileRef {
        matrix,
        indices,
        span,
    } = tile;
    erase_ident(matrix);
    indices.iter_mut().for_each(erase_expr);
    erase_span(span);
}

fn erase_stmt(stmt: &mut Stmt) {
    let Stmt { kind, span } = stmt;
    erase_span(span);
    match kind {
        StmtKind::Require(cond) => erase_expr(cond),
        StmtKind::Decl(MatrixDecl {
            role: _,
            name,
            extents,
            init,
        }) => {
            erase_ident(name);
            extents.iter_mut().for_each(erase_expr);
            init.iter_mut().for_each(erase_expr);
        }
        StmtKind::Call(Call { lhs, kernel, args }) => {
            lhs.iter_mut().for_each(erase_tile);
            erase_ident(kernel);
            args.iter_mut().for_each(erase_expr);
        }
        StmtKind::For(f) => {
            erase_ident(&mut f.var);
            f.range_args.iter_mut().for_each(erase_expr);
            erase_span(&mut f.range_span);
            erase_block(&mut f.body);
        }
        StmtKind::If(stmt) => {
            for (cond, block) in &mut stmt.branches {
                erase_expr(cond);
                erase_block(block);
            }
            if let Some(block) = &mut stmt.else_block {
                erase_block(block);
            }
        }
        StmtKind::Let(LetStmt { name, value }) => {
            erase_ident(name);
            erase_expr(value);
        }
        StmtKind::Error => {}
    }
}

fn erase_expr(expr: &mut Expr) {
    let Expr { kind, span } = expr;
    erase_span(span);
    match kind {
        ExprKind::Int(_) | ExprKind::Real(_) | ExprKind::Bool(_) => {}
        ExprKind::Name(id) => erase_ident(id),
        ExprKind::Index(id, args) | ExprKind::Call(id, args) => {
            erase_ident(id);
            args.iter_mut().for_each(erase_expr);
        }
        ExprKind::Unary(_, e) | ExprKind::Paren(e) => erase_expr(e),
        ExprKind::Binary(_, a, b) => {
            erase_expr(a);
            erase_expr(b);
        }
    }
}
