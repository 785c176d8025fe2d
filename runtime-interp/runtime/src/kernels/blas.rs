//! The BLAS-like standard kernels: element-wise `copy`, `add`, `add4` and
//! `scale`, the products `gemm`, `gemm_acc`, `gemm_sub`, `syrk` and
//! `gemm_sub_t` (c − aᵀ·b, the update that goes with `trsm_lt`), and the
//! triangular solves `trsm`, `trsm_ll` and `trsm_ru` (the left solves of
//! the linear-system programs are in `solve.rs`).
//!
//! Each kernel works in place on one owned copy of the tile it returns (the
//! accumulator `c` or the right-hand side `b`) and calls faer's routine with
//! `Par::Seq`: the executor parallelises across tasks, not inside one.

use super::args::{cols, expect_equal, mismatch, order, rows, square, tile_and_real, tiles};
use super::solve::{triangular_solve, Side};
use super::{KernelArg, KernelError, Tile};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_unit_lower_triangular_in_place,
};
use faer::{Accum, MatRef, Par};

/// Checks that `y` has the shape of `x` (element-wise kernels).
fn same_shape(kernel: &str, x: (&str, &Tile), y: (&str, &Tile)) -> Result<(), KernelError> {
    if x.1.shape() == y.1.shape() {
        Ok(())
    } else {
        let rule = format!("{} must have the shape of {}", y.0, x.0);
        Err(mismatch(kernel, x, y, &rule))
    }
}

/// `copy(a) -> (b)`: b = a.
pub(super) fn copy(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [a] = tiles("copy", args)?;
    Ok(vec![a.clone()])
}

/// `add(a, b) -> (c)`: c = a + b.
pub(super) fn add(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [a, b] = tiles("add", args)?;
    same_shape("add", ("a", a), ("b", b))?;
    let mut c = a.clone();
    c += b;
    Ok(vec![c])
}

/// `add4(a, b, c, d) -> (e)`: e = a + b + c + d.
pub(super) fn add4(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [a, b, c, d] = tiles("add4", args)?;
    same_shape("add4", ("a", a), ("b", b))?;
    same_shape("add4", ("a", a), ("c", c))?;
    same_shape("add4", ("a", a), ("d", d))?;
    let mut e = a.clone();
    faer::zip!(e.as_mut(), b.as_ref(), c.as_ref(), d.as_ref()).for_each(
        |faer::unzip!(e, b, c, d)| {
            *e += *b + *c + *d;
        },
    );
    Ok(vec![e])
}

/// `scale(a, alpha: real) -> (b)`: b = alpha · a.
pub(super) fn scale(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let (a, alpha) = tile_and_real("scale", args)?;
    let mut b = a.clone();
    b *= faer::Scale(alpha);
    Ok(vec![b])
}

/// `gemm(a, b) -> (c)`: c = a · b.
pub(super) fn gemm(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [a, b] = tiles("gemm", args)?;
    expect_equal("gemm", cols("a", a), rows("b", b))?;
    let mut c = Tile::zeros(a.nrows(), b.ncols());
    matmul(c.as_mut(), Accum::Replace, a, b, 1.0, Par::Seq);
    Ok(vec![c])
}

/// Checks the shapes of `c ± a · b` with c m×n, a m×k, b k×n.
fn check_product(kernel: &str, c: &Tile, a: &Tile, b: &Tile) -> Result<(), KernelError> {
    expect_equal(kernel, rows("a", a), rows("c", c))?;
    expect_equal(kernel, cols("b", b), cols("c", c))?;
    expect_equal(kernel, cols("a", a), rows("b", b))?;
    Ok(())
}

/// d = c + alpha · a · b on a copy of c, the update of `gemm_acc`,
/// `gemm_sub`, `syrk` and `gemm_sub_t` (a and b possibly transposed views).
fn plus_product(c: &Tile, a: MatRef<'_, f64>, b: MatRef<'_, f64>, alpha: f64) -> Tile {
    let mut d = c.clone();
    matmul(d.as_mut(), Accum::Add, a, b, alpha, Par::Seq);
    d
}

/// `gemm_acc(c, a, b) -> (d)`: d = c + a · b.
pub(super) fn gemm_acc(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [c, a, b] = tiles("gemm_acc", args)?;
    check_product("gemm_acc", c, a, b)?;
    Ok(vec![plus_product(c, a.as_ref(), b.as_ref(), 1.0)])
}

/// `gemm_sub(c, a, b) -> (d)`: d = c − a · b.
pub(super) fn gemm_sub(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [c, a, b] = tiles("gemm_sub", args)?;
    check_product("gemm_sub", c, a, b)?;
    Ok(vec![plus_product(c, a.as_ref(), b.as_ref(), -1.0)])
}

/// `syrk(c, a, b) -> (d)`: d = c − a · bᵀ, with c m×n, a m×k, b n×k.
pub(super) fn syrk(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [c, a, b] = tiles("syrk", args)?;
    expect_equal("syrk", rows("a", a), rows("c", c))?;
    expect_equal("syrk", rows("b", b), cols("c", c))?;
    expect_equal("syrk", cols("a", a), cols("b", b))?;
    Ok(vec![plus_product(c, a.as_ref(), b.transpose(), -1.0)])
}

/// `gemm_sub_t(c, a, b) -> (d)`: d = c − aᵀ · b, with c m×n, a k×m, b k×n.
pub(super) fn gemm_sub_t(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [c, a, b] = tiles("gemm_sub_t", args)?;
    expect_equal("gemm_sub_t", cols("a", a), rows("c", c))?;
    expect_equal("gemm_sub_t", cols("b", b), cols("c", c))?;
    expect_equal("gemm_sub_t", rows("a", a), rows("b", b))?;
    Ok(vec![plus_product(c, a.transpose(), b.as_ref(), -1.0)])
}

/// `trsm(l, b) -> (x)`: x · lᵀ = b for lower-triangular l (n×n) and b m×n.
/// Only the lower triangle of l is read.
pub(super) fn trsm(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    // x · lᵀ = b is l · xᵀ = bᵀ.
    triangular_solve("trsm", ("l", Side::Right), args, |l, xt| {
        solve_lower_triangular_in_place(l.as_ref(), xt, Par::Seq)
    })
}

/// `trsm_ll(l, b) -> (x)`: l · x = b for unit lower-triangular l (m×m) and
/// b m×n. The diagonal and upper triangle of l are not read.
pub(super) fn trsm_ll(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [l, b] = tiles("trsm_ll", args)?;
    square("trsm_ll", "l", l)?;
    expect_equal("trsm_ll", rows("b", b), order("l", l))?;
    let mut x = b.clone();
    solve_unit_lower_triangular_in_place(l.as_ref(), x.as_mut(), Par::Seq);
    Ok(vec![x])
}

/// `trsm_ru(u, b) -> (x)`: x · u = b for upper-triangular u (n×n) and b
/// m×n. Only the upper triangle of u is read.
pub(super) fn trsm_ru(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    // x · u = b is uᵀ · xᵀ = bᵀ with uᵀ lower triangular.
    triangular_solve("trsm_ru", ("u", Side::Right), args, |u, xt| {
        solve_lower_triangular_in_place(u.transpose(), xt, Par::Seq)
    })
}
