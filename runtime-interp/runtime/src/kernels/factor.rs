//! The factorisation kernels on square tiles: `chol` (Cholesky, faer's
//! left-looking blocked routine), `lu` (LU without pivoting, a recursive
//! column split whose updates are faer's triangular solve and matmul) and
//! `trtri` (inverse of a lower-triangular tile).
//!
//! Results are full tiles with the unused triangle set to zero, and unit
//! diagonals stored explicitly, so a later kernel can read them as dense.

use super::args::{dims, nonzero_diagonal, square, tiles};
use super::{KernelArg, KernelError, Tile};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch, LltError};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_inverse::invert_lower_triangular;
use faer::linalg::triangular_solve::solve_unit_lower_triangular_in_place;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, MatMut, Par};

/// Formats a pivot for an error message.
fn pivot_text(p: f64) -> String {
    if p.is_nan() {
        "NaN".to_string()
    } else if p == 0.0 {
        "zero".to_string()
    } else {
        format!("{p:.3e}")
    }
}

/// `chol(a) -> (l)`: l lower triangular with l · lᵀ = a. Only the lower
/// triangle of a is read; the strictly upper part of l is zero.
pub(super) fn chol(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [a] = tiles("chol", args)?;
    let n = square("chol", "a", a)?;
    let mut l = a.clone();
    let mut mem = MemBuffer::new(cholesky_in_place_scratch::<f64>(
        n,
        Par::Seq,
        Default::default(),
    ));
    let result = cholesky_in_place(
        l.as_mut(),
        Default::default(),
        Par::Seq,
        MemStack::new(&mut mem),
        Default::default(),
    );
    match result {
        Ok(_) => {}
        Err(LltError::NonPositivePivot { index }) => {
            return Err(not_positive_definite(a, &l, index));
        }
    }
    for j in 1..n {
        l.col_mut(j).subrows_mut(0, j).fill(0.0);
    }
    if !l.as_ref().is_all_finite() {
        let (i, j) = first_non_finite(&l).unwrap_or((0, 0));
        // Unreachable for finite input; an infinite entry can only reach l
        // through a pivot, which faer checks, but say so rather than return
        // a poisoned factor.
        return Err(KernelError::new(format!(
            "chol: a is not positive definite (l[{i}, {j}] is not finite)"
        )));
    }
    Ok(vec![l])
}

/// The error for a failed Cholesky pivot. faer stops at column `k` with
/// row k of l final left of the diagonal, so the pivot it rejected is
/// a[k, k] − Σ l[k, j]² over j < k.
fn not_positive_definite(a: &Tile, l: &Tile, k: usize) -> KernelError {
    let pivot = if k < a.nrows() {
        let row_sq: f64 = (0..k).map(|j| l[(k, j)] * l[(k, j)]).sum();
        a[(k, k)] - row_sq
    } else {
        f64::NAN
    };
    KernelError::new(format!(
        "chol: a is not positive definite (pivot {k} is {})",
        pivot_text(pivot)
    ))
}

/// The first non-finite entry of `t`, column by column.
fn first_non_finite(t: &Tile) -> Option<(usize, usize)> {
    (0..t.ncols()).find_map(|j| {
        (0..t.nrows())
            .find(|&i| !t[(i, j)].is_finite())
            .map(|i| (i, j))
    })
}

/// Columns at or below which the recursive LU runs the unblocked loop.
const LU_LEAF: usize = 16;

/// LU without pivoting of the m×n panel `a` (m ≥ n) in place: the unit
/// lower factor below the diagonal, u on and above it. `offset` is the
/// panel's first pivot index in the whole tile, for the error message.
/// One step of unblocked Gaussian elimination on column `j` of `a`, whose
/// pivot `a[(j, j)]` is non-zero: the multipliers below it (column `j`
/// scaled by the pivot's inverse), and their update of the columns to the
/// right.
pub(super) fn eliminate(mut a: MatMut<'_, f64>, j: usize) {
    let (m, n) = a.shape();
    let inv = a[(j, j)].recip();
    for i in j + 1..m {
        a[(i, j)] *= inv;
    }
    for c in j + 1..n {
        let u = a[(j, c)];
        if u != 0.0 {
            for i in j + 1..m {
                let lij = a[(i, j)];
                a[(i, c)] -= lij * u;
            }
        }
    }
}

fn lu_in_place(mut a: MatMut<'_, f64>, offset: usize) -> Result<(), KernelError> {
    let n = a.ncols();
    if n <= LU_LEAF {
        for j in 0..n {
            let pivot = a[(j, j)];
            if pivot == 0.0 || !pivot.is_finite() {
                return Err(KernelError::new(format!(
                    "lu: pivot {} is {} (lu does not pivot)",
                    offset + j,
                    pivot_text(pivot)
                )));
            }
            eliminate(a.rb_mut(), j);
        }
        return Ok(());
    }
    let h = n / 2;
    let (mut left, right) = a.rb_mut().split_at_col_mut(h);
    lu_in_place(left.rb_mut(), offset)?;
    let (l11, l21) = left.rb().split_at_row(h);
    let (mut a12, mut a22) = right.split_at_row_mut(h);
    solve_unit_lower_triangular_in_place(l11, a12.rb_mut(), Par::Seq);
    matmul(a22.rb_mut(), Accum::Add, l21, a12.rb(), -1.0, Par::Seq);
    lu_in_place(a22, offset + h)
}

/// `lu(a) -> (l, u)`: a = l · u without pivoting, l unit lower triangular
/// (ones stored on the diagonal), u upper triangular. A zero or non-finite
/// pivot is an error naming its index.
pub(super) fn lu(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [a] = tiles("lu", args)?;
    let n = square("lu", "a", a)?;
    let mut l = a.clone();
    lu_in_place(l.as_mut(), 0)?;
    let mut u = l.clone();
    for j in 0..n {
        u.col_mut(j).subrows_mut(j + 1, n - j - 1).fill(0.0);
    }
    for j in 0..n {
        l.col_mut(j).subrows_mut(0, j).fill(0.0);
        l[(j, j)] = 1.0;
    }
    Ok(vec![l, u])
}

/// `trtri(l) -> (x)`: x = l⁻¹ for lower-triangular l. Only the lower
/// triangle of l is read; the strictly upper part of x is zero.
pub(super) fn trtri(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [l] = tiles("trtri", args)?;
    let n = square("trtri", "l", l)?;
    nonzero_diagonal("trtri", "l", l)?;
    let mut x = Tile::zeros(n, n);
    invert_lower_triangular(x.as_mut(), l.as_ref(), Par::Seq);
    if !x.as_ref().is_all_finite() {
        let (i, j) = first_non_finite(&x).unwrap_or((0, 0));
        return Err(KernelError::new(format!(
            "trtri: the inverse of l ({}) is not finite at x[{i}, {j}] \
             (l has a non-finite entry or is too ill-conditioned)",
            dims(l)
        )));
    }
    Ok(vec![x])
}
