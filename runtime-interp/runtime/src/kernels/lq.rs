//! The Householder LQ kernels in compact WY form: `lq_factor`, `lq_pair`,
//! `lq_apply` and `lq_apply_pair`, the transposes of the QR kernels.
//!
//! For an m×n tile with k = min(m, n): `v` is k×n unit upper trapezoidal
//! (ones on the diagonal and zeros left of it stored explicitly), `t` is
//! k×k upper triangular, `l` is m×k lower trapezoidal, Q = I − vᵀ·tᵀ·v
//! (n×n, orthogonal) and a = [l 0]·Q. They are exactly the QR kernels
//! of [`super::qr`] on transposed tiles: if aᵀ = Q' [r; 0] with
//! Q' = I − v'·t·v'ᵀ, then a = [rᵀ 0]·Q'ᵀ, so v = v'ᵀ, the same t and
//! l = rᵀ. Transposing is exact, so the LQ kernels have the QR kernels'
//! accuracy (and their rank-revealing treatment of negligible columns,
//! here rows).

use super::args::{cols, expect_equal, expect_square_of, rows, tiles};
use super::qr::{apply_qt, check_apply_pair, factor};
use super::{KernelArg, KernelError, Tile};

/// The transpose of `a`, as a new tile.
fn transposed(a: &Tile) -> Tile {
    a.as_ref().transpose().to_owned()
}

/// `[v, t, l]` of the tile `a` from the QR factors `[v', t, r]` of aᵀ.
fn lq_of(a: Tile) -> Vec<Tile> {
    let mut out = factor(a);
    let r = out.pop().unwrap_or_else(|| Tile::zeros(0, 0));
    let t = out.pop().unwrap_or_else(|| Tile::zeros(0, 0));
    let v = out.pop().unwrap_or_else(|| Tile::zeros(0, 0));
    vec![transposed(&v), t, transposed(&r)]
}

/// `lq_factor(a) -> (v, t, l)`: Householder LQ of a (any shape).
pub(super) fn lq_factor(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [a] = tiles("lq_factor", args)?;
    Ok(lq_of(transposed(a)))
}

/// `lq_pair(l0, l1) -> (v, t, l)`: Householder LQ of [l0 l1] side by side
/// (any column counts, the same row count).
pub(super) fn lq_pair(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [l0, l1] = tiles("lq_pair", args)?;
    expect_equal("lq_pair", rows("l0", l0), rows("l1", l1))?;
    let (n0, n1) = (l0.ncols(), l1.ncols());
    // The transpose of [l0 l1]: [l0ᵀ; l1ᵀ].
    let mut stacked = Tile::zeros(n0 + n1, l0.nrows());
    stacked
        .as_mut()
        .subrows_mut(0, n0)
        .copy_from(l0.as_ref().transpose());
    stacked
        .as_mut()
        .subrows_mut(n0, n1)
        .copy_from(l1.as_ref().transpose());
    Ok(lq_of(stacked))
}

/// `lq_apply(v, t, c) -> (d)`: d = c·Qᵀ for Q = I − vᵀ·tᵀ·v (so that
/// a·Qᵀ = [l 0] for the tile a that `lq_factor` factored). Only the upper
/// triangle of t is read.
pub(super) fn lq_apply(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [v, t, c] = tiles("lq_apply", args)?;
    expect_square_of("lq_apply", ("t", t), rows("v", v))?;
    expect_equal("lq_apply", cols("c", c), cols("v", v))?;
    // (c·Qᵀ)ᵀ = Q'ᵀ·cᵀ with Q' = I − vᵀ·t·v, QR's form with v' = vᵀ.
    let mut d = transposed(c);
    apply_qt(v.as_ref().transpose(), t.as_ref(), d.as_mut(), None);
    Ok(vec![transposed(&d)])
}

/// `lq_apply_pair(v, t, c0, c1) -> (d0, d1)`: [d0 d1] = [c0 c1]·Qᵀ for
/// Q = I − vᵀ·tᵀ·v, split at c0's columns.
pub(super) fn lq_apply_pair(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [v, t, c0, c1] = tiles("lq_apply_pair", args)?;
    // QR's rules on the transposed tiles: c0 and c1 split v's columns.
    check_apply_pair("lq_apply_pair", [v, t, c0, c1], cols, rows)?;
    let mut d0 = transposed(c0);
    let mut d1 = transposed(c1);
    apply_qt(
        v.as_ref().transpose(),
        t.as_ref(),
        d0.as_mut(),
        Some(d1.as_mut()),
    );
    Ok(vec![transposed(&d0), transposed(&d1)])
}
