//! The kernels of the pivoted tile LU (incremental pivoting, PLASMA's
//! `getrf_incpiv`): `getrf` (LU with partial pivoting of a diagonal tile),
//! `gessm` (its transformation applied to a tile on its right), `tstrf`
//! (LU with partial pivoting of an upper-triangular tile stacked on a
//! tile below it) and `ssssm` (that transformation applied to a stacked
//! pair of tiles).
//!
//! A pivot tile is a k×1 tile of row indices, a permutation of 0..k exact
//! in f64: row i of P·a is row p[i] of a. Every transformation is L⁻¹·P
//! with L unit lower triangular (trapezoidal for `tstrf`, whose L is the
//! whole (n+m)×n factor of the stack, so `ssssm` is one permutation, one
//! triangular solve and one product, all level 3).
//!
//! A zero pivot column is not an error: like LAPACK's `dgetrf`, the step
//! is skipped (its multipliers stay zero and u gets a zero on its
//! diagonal), because a later `tstrf` with the tiles below can still find
//! a pivot there. A matrix that is singular for good then fails in the
//! back substitution (`trsm_lu`: u is singular), never silently.

use super::args::{cols, dims, expect_equal, expect_split, order, rows, square, tiles};
use super::{KernelArg, KernelError, Tile};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::solve_unit_lower_triangular_in_place;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, MatMut, Par};

/// Columns at or below which the recursive LU runs the unblocked loop.
const LEAF: usize = 16;

/// Swaps rows `i` and `j` of `a`.
fn swap_rows(mut a: MatMut<'_, f64>, i: usize, j: usize) {
    if i == j {
        return;
    }
    for c in 0..a.ncols() {
        let x = a[(i, c)];
        a[(i, c)] = a[(j, c)];
        a[(j, c)] = x;
    }
}

/// The unblocked LU with partial pivoting of the m×n panel `a` (m ≥ n):
/// row j is swapped with row `t[j]` ≥ j before column j is eliminated.
fn plu_leaf(mut a: MatMut<'_, f64>, t: &mut [usize]) {
    let (m, n) = a.shape();
    for j in 0..n {
        let mut imax = j;
        let mut max = 0.0;
        for i in j..m {
            let v = a[(i, j)].abs();
            if v > max {
                max = v;
                imax = i;
            }
        }
        t[j] = imax;
        swap_rows(a.rb_mut(), j, imax);
        if max == 0.0 {
            // A zero column: nothing to eliminate, the multipliers stay 0.
            continue;
        }
        super::factor::eliminate(a.rb_mut(), j);
    }
}

/// LU with partial pivoting of the m×n panel `a` (m ≥ n) in place, as
/// LAPACK's recursive `dgetrf2`: the unit lower factor below the diagonal,
/// u on and above it, and in `t` (length n) the row interchanges, row j
/// with row `t[j]` in order (applied to the whole panel).
fn plu_in_place(mut a: MatMut<'_, f64>, t: &mut [usize]) {
    let (m, n) = a.shape();
    if n <= LEAF {
        plu_leaf(a, t);
        return;
    }
    let h = n / 2;
    let (mut left, mut right) = a.rb_mut().split_at_col_mut(h);
    plu_in_place(left.rb_mut(), &mut t[..h]);
    for (j, &r) in t[..h].iter().enumerate() {
        swap_rows(right.rb_mut(), j, r);
    }
    {
        let (l11, l21) = left.rb().split_at_row(h);
        let (mut a12, mut a22) = right.rb_mut().split_at_row_mut(h);
        solve_unit_lower_triangular_in_place(l11, a12.rb_mut(), Par::Seq);
        matmul(a22.rb_mut(), Accum::Add, l21, a12.rb(), -1.0, Par::Seq);
    }
    let (_, a22) = right.split_at_row_mut(h);
    plu_in_place(a22, &mut t[h..]);
    let (_, mut bottom_left) = left.split_at_row_mut(h);
    for (j, r) in t[h..].iter_mut().enumerate() {
        swap_rows(bottom_left.rb_mut(), j, *r);
        *r += h;
    }
    debug_assert!(t.iter().all(|&r| r < m));
}

/// The permutation (row i of P·a is row `perm[i]` of a) of the row
/// interchanges `t` on `m` rows.
fn permutation(t: &[usize], m: usize) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..m).collect();
    for (j, &r) in t.iter().enumerate() {
        perm.swap(j, r);
    }
    perm
}

/// A permutation as a pivot tile (m×1).
fn pivot_tile(perm: &[usize]) -> Tile {
    Tile::from_fn(perm.len(), 1, |i, _| perm[i] as f64)
}

/// Reads the pivot tile `p` of a `len`-row transformation: len×1, a
/// permutation of 0..len.
fn read_pivots(kernel: &str, p: &Tile, len: usize) -> Result<Vec<usize>, KernelError> {
    if p.ncols() != 1 || p.nrows() != len {
        return Err(KernelError::new(format!(
            "{kernel}: p is {} but must be {len}×1 (one row index per row of the transformation)",
            dims(p)
        )));
    }
    let mut seen = vec![false; len];
    let mut perm = Vec::with_capacity(len);
    for i in 0..len {
        let x = p[(i, 0)];
        let ok = x.is_finite() && x >= 0.0 && x.fract() == 0.0 && (x as usize) < len;
        if !ok || seen[x as usize] {
            return Err(KernelError::new(format!(
                "{kernel}: p is not a pivot tile (p[{i}] = {x} is not a row index of 0..{len} \
                 used once)"
            )));
        }
        seen[x as usize] = true;
        perm.push(x as usize);
    }
    Ok(perm)
}

/// Checks that a factor's input is finite (partial pivoting compares
/// magnitudes, which a NaN would silently defeat).
fn finite(kernel: &str, name: &str, a: &Tile) -> Result<(), KernelError> {
    for j in 0..a.ncols() {
        for i in 0..a.nrows() {
            if !a[(i, j)].is_finite() {
                return Err(KernelError::new(format!(
                    "{kernel}: {name}[{i}, {j}] is not finite"
                )));
            }
        }
    }
    Ok(())
}

/// The LU with partial pivoting of the tall `s` (m×n, m ≥ n): `[l, u, p]`
/// with l m×n unit lower trapezoidal (ones stored), u n×n upper and p the
/// m×1 pivot tile, P·s = l·u.
fn factor(mut s: Tile) -> Vec<Tile> {
    let (m, n) = s.shape();
    let mut t = vec![0; n];
    plu_in_place(s.as_mut(), &mut t);
    let mut u = s.as_ref().subrows(0, n).to_owned();
    for j in 0..n {
        u.col_mut(j).subrows_mut(j + 1, n - j - 1).fill(0.0);
        s.col_mut(j).subrows_mut(0, j).fill(0.0);
        s[(j, j)] = 1.0;
    }
    vec![s, u, pivot_tile(&permutation(&t, m))]
}

/// `getrf(a) -> (l, u, p)`: P·a = l·u with partial pivoting, l unit lower
/// triangular (ones stored), u upper triangular, p the n×1 pivot tile.
pub(super) fn getrf(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [a] = tiles("getrf", args)?;
    square("getrf", "a", a)?;
    finite("getrf", "a", a)?;
    Ok(factor(a.clone()))
}

/// Row i of the result is row `perm[i]` of the stack [top; bottom].
fn permuted_stack(perm: &[usize], top: &Tile, bottom: Option<&Tile>) -> Tile {
    let n0 = top.nrows();
    Tile::from_fn(perm.len(), top.ncols(), |i, j| {
        let r = perm[i];
        match bottom {
            Some(b) if r >= n0 => b[(r - n0, j)],
            _ => top[(r, j)],
        }
    })
}

/// `gessm(p, l, a) -> (b)`: b = l⁻¹·P·a for the (l, p) of a `getrf`
/// (l n×n unit lower, only its strict lower triangle read; a n×c).
pub(super) fn gessm(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [p, l, a] = tiles("gessm", args)?;
    let n = square("gessm", "l", l)?;
    expect_equal("gessm", rows("a", a), order("l", l))?;
    let perm = read_pivots("gessm", p, n)?;
    let mut b = permuted_stack(&perm, a, None);
    solve_unit_lower_triangular_in_place(l.as_ref(), b.as_mut(), Par::Seq);
    Ok(vec![b])
}

/// `tstrf(u, a) -> (u2, l, p)`: P·[u; a] = l·u2 with partial pivoting, u
/// n×n upper triangular (only its upper triangle read), a m×n; l is the
/// (n+m)×n unit lower trapezoidal factor, u2 n×n upper triangular and p
/// the (n+m)×1 pivot tile.
pub(super) fn tstrf(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [u, a] = tiles("tstrf", args)?;
    let n = square("tstrf", "u", u)?;
    expect_equal("tstrf", cols("a", a), order("u", u))?;
    finite("tstrf", "u", u)?;
    finite("tstrf", "a", a)?;
    let m = a.nrows();
    let mut s = Tile::zeros(n + m, n);
    for j in 0..n {
        for i in 0..=j {
            s[(i, j)] = u[(i, j)];
        }
    }
    s.as_mut().subrows_mut(n, m).copy_from(a);
    let [l, u2, p]: [Tile; 3] = factor(s)
        .try_into()
        .map_err(|_| KernelError::new("tstrf: internal error (factor shape)"))?;
    Ok(vec![u2, l, p])
}

/// `ssssm(l, p, c0, c1) -> (d0, d1)`: [d0; d1] = l⁻¹·P·[c0; c1] for the
/// (l, p) of a `tstrf`, l (n+m)×n split at c0's n rows: d0 = l₀⁻¹·(P·c)₀
/// and d1 = (P·c)₁ − l₁·d0.
pub(super) fn ssssm(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [l, p, c0, c1] = tiles("ssssm", args)?;
    expect_equal("ssssm", rows("c0", c0), cols("l", l))?;
    expect_equal("ssssm", cols("c1", c1), cols("c0", c0))?;
    let (n, m) = (c0.nrows(), c1.nrows());
    expect_split("ssssm", rows("l", l), rows("c0", c0), rows("c1", c1))?;
    let perm = read_pivots("ssssm", p, n + m)?;
    let s = permuted_stack(&perm, c0, Some(c1));
    let mut d0 = s.as_ref().subrows(0, n).to_owned();
    let mut d1 = s.as_ref().subrows(n, m).to_owned();
    let (l0, l1) = l.as_ref().split_at_row(n);
    solve_unit_lower_triangular_in_place(l0, d0.as_mut(), Par::Seq);
    matmul(d1.as_mut(), Accum::Add, l1, d0.as_ref(), -1.0, Par::Seq);
    Ok(vec![d0, d1])
}
