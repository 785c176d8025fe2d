//! The left-side triangular solves of the linear-system programs
//! (`examples/gesv.lpk`, `examples/posv.lpk`): `trsm_lu` (u·x = b, the
//! back substitution with an LU's u), `trsm_ln` (l·x = b, the forward
//! substitution with a Cholesky factor) and `trsm_lt` (lᵀ·x = b, its back
//! substitution), and [`triangular_solve`], which they share with the
//! right-side `trsm` and `trsm_ru` in `blas.rs` (where `trsm_ll`, unit
//! lower, lives too).
//!
//! Each works on one owned copy of its right-hand side and calls faer with
//! `Par::Seq`, as the other kernels do.

use super::args::{cols, expect_equal, nonzero_diagonal, order, rows, square, tiles};
use super::{KernelArg, KernelError, Tile};
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::{MatMut, Par};

/// Where the triangle stands in a solve.
#[derive(Clone, Copy)]
pub(super) enum Side {
    /// `t · x = b` (or `tᵀ · x = b`): b's rows equal t's order.
    Left,
    /// `x · t = b` (or `x · tᵀ = b`): b's columns equal t's order.
    Right,
}

/// A triangular solve `kernel(t, b) -> (x)` on a copy of b, once `t`, named
/// `name`, is square with no zero on its diagonal and b's rows (on the
/// left) or columns (on the right) equal its order: `solve(t, x)` solves on
/// x, or on its transposed view on the right, as x · t = b is
/// tᵀ · xᵀ = bᵀ.
pub(super) fn triangular_solve(
    kernel: &str,
    (name, side): (&str, Side),
    args: &[KernelArg<'_>],
    solve: impl FnOnce(&Tile, MatMut<'_, f64>),
) -> Result<Vec<Tile>, KernelError> {
    let [t, b] = tiles(kernel, args)?;
    square(kernel, name, t)?;
    let along = match side {
        Side::Left => rows("b", b),
        Side::Right => cols("b", b),
    };
    expect_equal(kernel, along, order(name, t))?;
    nonzero_diagonal(kernel, name, t)?;
    let mut x = b.clone();
    match side {
        Side::Left => solve(t, x.as_mut()),
        Side::Right => solve(t, x.as_mut().transpose_mut()),
    }
    Ok(vec![x])
}

/// `trsm_lu(u, b) -> (x)`: u · x = b for upper-triangular u (n×n) and b
/// n×c. Only the upper triangle of u is read.
pub(super) fn trsm_lu(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    triangular_solve("trsm_lu", ("u", Side::Left), args, |u, x| {
        solve_upper_triangular_in_place(u.as_ref(), x, Par::Seq)
    })
}

/// `trsm_ln(l, b) -> (x)`: l · x = b for lower-triangular l (n×n, its
/// diagonal not assumed unit) and b n×c. Only the lower triangle of l is
/// read.
pub(super) fn trsm_ln(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    triangular_solve("trsm_ln", ("l", Side::Left), args, |l, x| {
        solve_lower_triangular_in_place(l.as_ref(), x, Par::Seq)
    })
}

/// `trsm_lt(l, b) -> (x)`: lᵀ · x = b for lower-triangular l (n×n) and b
/// n×c. Only the lower triangle of l is read.
pub(super) fn trsm_lt(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    triangular_solve("trsm_lt", ("l", Side::Left), args, |l, x| {
        solve_upper_triangular_in_place(l.transpose(), x, Par::Seq)
    })
}
