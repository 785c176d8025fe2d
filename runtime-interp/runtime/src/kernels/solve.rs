//! The left-side triangular solves of the linear-system programs
//! (`examples/gesv.lpk`, `examples/posv.lpk`): `trsm_lu` (u·x = b, the
//! back substitution with an LU's u), `trsm_ln` (l·x = b, the forward
//! substitution with a Cholesky factor), `trsm_lt` (lᵀ·x = b, its back
//! substitution), and `gemm_sub_t` (c − aᵀ·b, the update that goes with
//! `trsm_lt`). `trsm_ll` (unit lower) and the right-side `trsm` and
//! `trsm_ru` live in `blas.rs`.
//!
//! Each works on one owned copy of its right-hand side or accumulator and
//! calls faer with `Par::Seq`, as the other kernels do.

use super::args::{cols, expect_equal, nonzero_diagonal, order, rows, square, tiles};
use super::{KernelArg, KernelError, Tile};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::{Accum, MatMut, Par};

/// Checks the arguments of a left solve `t · x = b` (or `tᵀ · x = b`):
/// `t`, named `name`, square with no zero on its diagonal, and b's rows
/// equal to its order.
fn check_left_solve(kernel: &str, name: &str, t: &Tile, b: &Tile) -> Result<(), KernelError> {
    square(kernel, name, t)?;
    expect_equal(kernel, rows("b", b), order(name, t))?;
    nonzero_diagonal(kernel, name, t)
}

/// A left solve `kernel(t, b) -> (x)` on a copy of b, by `solve(t, x)`
/// after [`check_left_solve`] (the triangle named `name`).
fn left_solve(
    kernel: &str,
    name: &str,
    args: &[KernelArg<'_>],
    solve: impl FnOnce(&Tile, MatMut<'_, f64>),
) -> Result<Vec<Tile>, KernelError> {
    let [t, b] = tiles(kernel, args)?;
    check_left_solve(kernel, name, t, b)?;
    let mut x = b.clone();
    solve(t, x.as_mut());
    Ok(vec![x])
}

/// `trsm_lu(u, b) -> (x)`: u · x = b for upper-triangular u (n×n) and b
/// n×c. Only the upper triangle of u is read.
pub(super) fn trsm_lu(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    left_solve("trsm_lu", "u", args, |u, x| {
        solve_upper_triangular_in_place(u.as_ref(), x, Par::Seq)
    })
}

/// `trsm_ln(l, b) -> (x)`: l · x = b for lower-triangular l (n×n, its
/// diagonal not assumed unit) and b n×c. Only the lower triangle of l is
/// read.
pub(super) fn trsm_ln(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    left_solve("trsm_ln", "l", args, |l, x| {
        solve_lower_triangular_in_place(l.as_ref(), x, Par::Seq)
    })
}

/// `trsm_lt(l, b) -> (x)`: lᵀ · x = b for lower-triangular l (n×n) and b
/// n×c. Only the lower triangle of l is read.
pub(super) fn trsm_lt(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    left_solve("trsm_lt", "l", args, |l, x| {
        solve_upper_triangular_in_place(l.transpose(), x, Par::Seq)
    })
}

/// `gemm_sub_t(c, a, b) -> (d)`: d = c − aᵀ · b, with c m×n, a k×m, b k×n.
pub(super) fn gemm_sub_t(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [c, a, b] = tiles("gemm_sub_t", args)?;
    expect_equal("gemm_sub_t", cols("a", a), rows("c", c))?;
    expect_equal("gemm_sub_t", cols("b", b), cols("c", c))?;
    expect_equal("gemm_sub_t", rows("a", a), rows("b", b))?;
    let mut d = c.clone();
    matmul(d.as_mut(), Accum::Add, a.transpose(), b, -1.0, Par::Seq);
    Ok(vec![d])
}
