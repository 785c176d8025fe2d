//! The Householder QR kernels in compact WY form: `qr_factor`, `qr_pair`,
//! `qr_apply` and `qr_apply_pair`.
//!
//! The convention is the spec's (LAPACK `dgeqrt`'s): for an m×n tile with
//! k = min(m, n), `v` is m×k unit lower trapezoidal (ones on the diagonal
//! and zeros above it stored explicitly), `t` is k×k upper triangular, `r`
//! is k×n upper trapezoidal, Q = I − v·t·vᵀ and a = Q·[r; 0].
//!
//! faer stores the block factor the other way round (each block reflector
//! is I − V·T⁻¹·Vᵀ, with T = striu(VᵀV) + diag(τ) in faer's τ), so the
//! kernel forms S = striu(vᵀv) + diag(τ) for the whole tile and inverts it:
//! t = S⁻¹. A reflector that is the identity (an empty or zero column below
//! the diagonal, τ = ∞ in faer's form) contributes a zero row and column to
//! t, as LAPACK's `dlarft` gives.
//!
//! faer's QR is rank-revealing: when a column is numerically dependent on
//! the previous ones it skips it, and the factors no longer have the
//! spec's shape. On such tiles (rank < k) the kernel falls back to an
//! unblocked LAPACK-style Householder QR (`dgeqr2`), which is slower but
//! always gives the standard form.

use super::args::{dims, mismatch, tiles};
use super::{KernelArg, KernelError, Tile};
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::householder::{
    apply_block_householder_sequence_transpose_on_the_left_in_place_scratch,
    apply_block_householder_sequence_transpose_on_the_left_in_place_with_conj,
};
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::linalg::qr::no_pivoting::factor::{
    qr_in_place, qr_in_place_scratch, recommended_block_size,
};
use faer::linalg::triangular_inverse::invert_upper_triangular;
use faer::reborrow::Reborrow;
use faer::{Accum, Conj, MatMut, MatRef, Par};

/// The compact WY factors of a tile, `[v, t, r]`, from the tile itself
/// (overwritten). `rebuild` gives the tile again if faer's routine finds it
/// rank deficient and the unblocked fallback must start over.
fn factor(mut a: Tile, rebuild: impl FnOnce() -> Tile) -> Vec<Tile> {
    let (m, n) = a.shape();
    let k = m.min(n);
    if k == 0 {
        return vec![Tile::zeros(m, 0), Tile::zeros(0, 0), Tile::zeros(0, n)];
    }
    let inv_tau = match faer_qr(&mut a, k) {
        Some(inv_tau) => inv_tau,
        None => {
            a = rebuild();
            unblocked_qr(a.as_mut(), k)
        }
    };
    let r = Tile::from_fn(k, n, |i, j| if i <= j { a[(i, j)] } else { 0.0 });
    // a now holds the reflectors below its diagonal: it becomes v.
    a.truncate(m, k);
    for j in 0..k {
        a.col_mut(j).subrows_mut(0, j).fill(0.0);
        a[(j, j)] = 1.0;
    }
    let t = triangular_factor(a.as_ref(), &inv_tau);
    vec![a, t, r]
}

/// faer's blocked QR of the leading m×k block of `a` in place, then Qᵀ
/// applied to the remaining columns (a wide tile). Returns faer's τ of each
/// reflector (H = I − v·vᵀ/τ, ∞ for the identity), or `None` if faer found
/// the block rank deficient.
fn faer_qr(a: &mut Tile, k: usize) -> Option<Vec<f64>> {
    let (m, n) = a.shape();
    let bs = recommended_block_size::<f64>(m, k);
    let mut h = Tile::zeros(bs, k);
    let req = StackReq::any_of(&[
        qr_in_place_scratch::<f64>(m, k, bs, Par::Seq, Default::default()),
        apply_block_householder_sequence_transpose_on_the_left_in_place_scratch::<f64>(
            m,
            bs,
            n - k,
        ),
    ]);
    let mut mem = MemBuffer::new(req);
    let stack = MemStack::new(&mut mem);
    let info = qr_in_place(
        a.as_mut().subcols_mut(0, k),
        h.as_mut(),
        Par::Seq,
        stack,
        Default::default(),
    );
    if info.rank < k {
        return None;
    }
    if n > k {
        let (left, right) = a.as_mut().split_at_col_mut(k);
        apply_block_householder_sequence_transpose_on_the_left_in_place_with_conj(
            left.rb(),
            h.as_ref(),
            Conj::No,
            right,
            Par::Seq,
            stack,
        );
    }
    // Block b's factor sits in h[0..bs, b·bs..], so reflector j's τ is on
    // that block's diagonal.
    Some((0..k).map(|j| h[(j % bs, j)]).collect())
}

/// Unblocked Householder QR of `a` in place, LAPACK `dgeqr2`'s algorithm
/// (v below the diagonal, r on and above it) for the first k columns, the
/// reflectors applied to all n. Returns 1/τ of each reflector in LAPACK's
/// form H = I − τ·v·vᵀ (∞ where τ = 0, i.e. H = I).
fn unblocked_qr(mut a: MatMut<'_, f64>, k: usize) -> Vec<f64> {
    let (m, n) = a.shape();
    let mut inv_tau = vec![f64::INFINITY; k];
    for (j, inv) in inv_tau.iter_mut().enumerate() {
        let alpha = a[(j, j)];
        let xnorm = a.rb().col(j).subrows(j + 1, m - j - 1).norm_l2();
        if xnorm == 0.0 {
            continue;
        }
        let beta = -alpha.signum() * alpha.hypot(xnorm);
        let tau = (beta - alpha) / beta;
        // Divide rather than multiply by the reciprocal, which could
        // overflow when the column is tiny.
        let denom = alpha - beta;
        for i in j + 1..m {
            a[(i, j)] /= denom;
        }
        a[(j, j)] = beta;
        *inv = tau.recip();
        for c in j + 1..n {
            let mut w = a[(j, c)];
            for i in j + 1..m {
                w += a[(i, j)] * a[(i, c)];
            }
            let w = w * tau;
            a[(j, c)] -= w;
            for i in j + 1..m {
                let vi = a[(i, j)];
                a[(i, c)] -= w * vi;
            }
        }
    }
    inv_tau
}

/// LAPACK's triangular factor t of the reflectors in `v` (m×k, unit lower
/// trapezoidal, stored explicitly), given each reflector's 1/τ in LAPACK's
/// form (equivalently τ in faer's; ∞ for the identity): t = S⁻¹ with
/// S = striu(vᵀv) + diag(1/τ), restricted to the non-identity reflectors.
fn triangular_factor(v: MatRef<'_, f64>, inv_tau: &[f64]) -> Tile {
    let k = v.ncols();
    let mut s = Tile::zeros(k, k);
    triangular::matmul(
        s.as_mut(),
        BlockStructure::StrictTriangularUpper,
        Accum::Replace,
        v.transpose(),
        BlockStructure::Rectangular,
        v,
        BlockStructure::Rectangular,
        1.0,
        Par::Seq,
    );
    let active: Vec<usize> = (0..k).filter(|&j| inv_tau[j].is_finite()).collect();
    if active.len() == k {
        for (j, &d) in inv_tau.iter().enumerate() {
            s[(j, j)] = d;
        }
        let mut t = Tile::zeros(k, k);
        invert_upper_triangular(t.as_mut(), s.as_ref(), Par::Seq);
        return t;
    }
    // Identity reflectors drop out of the product: invert S on the others
    // and leave zero rows and columns for them.
    let p = active.len();
    let sa = Tile::from_fn(p, p, |x, y| match x.cmp(&y) {
        std::cmp::Ordering::Equal => inv_tau[active[x]],
        std::cmp::Ordering::Less => s[(active[x], active[y])],
        std::cmp::Ordering::Greater => 0.0,
    });
    let mut ta = Tile::zeros(p, p);
    invert_upper_triangular(ta.as_mut(), sa.as_ref(), Par::Seq);
    let mut t = Tile::zeros(k, k);
    for (x, &i) in active.iter().enumerate() {
        for (y, &j) in active.iter().enumerate().skip(x) {
            t[(i, j)] = ta[(x, y)];
        }
    }
    t
}

/// `qr_factor(a) -> (v, t, r)`: Householder QR of a (any shape).
pub(super) fn qr_factor(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [a] = tiles("qr_factor", args)?;
    Ok(factor(a.clone(), || a.clone()))
}

/// `qr_pair(r0, r1) -> (v, t, r)`: Householder QR of the stacked [r0; r1]
/// (any row counts, the same column count).
pub(super) fn qr_pair(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [r0, r1] = tiles("qr_pair", args)?;
    if r0.ncols() != r1.ncols() {
        return Err(mismatch(
            "qr_pair",
            ("r0", r0),
            ("r1", r1),
            "r0's columns must equal r1's columns",
        ));
    }
    let stack = || {
        let (m0, m1) = (r0.nrows(), r1.nrows());
        let mut s = Tile::zeros(m0 + m1, r0.ncols());
        s.as_mut().subrows_mut(0, m0).copy_from(r0);
        s.as_mut().subrows_mut(m0, m1).copy_from(r1);
        s
    };
    Ok(factor(stack(), stack))
}

/// Checks that `t` is the k×k factor of the m×k `v`.
fn check_factor(kernel: &str, v: &Tile, t: &Tile) -> Result<(), KernelError> {
    if t.nrows() != v.ncols() || t.ncols() != v.ncols() {
        return Err(KernelError::new(format!(
            "{kernel}: v is {} but t is {} (t must be square of order v's columns, {})",
            dims(v),
            dims(t),
            v.ncols()
        )));
    }
    Ok(())
}

/// Overwrites [d0; d1] with Qᵀ·[d0; d1] = [d0; d1] − v·tᵀ·vᵀ·[d0; d1], the
/// rows of v split at d0's row count (d1 absent for a single block).
fn apply_qt(v: MatRef<'_, f64>, t: MatRef<'_, f64>, d0: MatMut<'_, f64>, d1: Option<MatMut<'_, f64>>) {
    let (k, p) = (t.nrows(), d0.ncols());
    let (v0, v1) = v.split_at_row(d0.nrows());
    let mut w = Tile::zeros(k, p);
    matmul(w.as_mut(), Accum::Replace, v0.transpose(), d0.rb(), 1.0, Par::Seq);
    if let Some(d1) = &d1 {
        matmul(w.as_mut(), Accum::Add, v1.transpose(), d1.rb(), 1.0, Par::Seq);
    }
    let mut tw = Tile::zeros(k, p);
    triangular::matmul(
        tw.as_mut(),
        BlockStructure::Rectangular,
        Accum::Replace,
        t.transpose(),
        BlockStructure::TriangularLower,
        w.as_ref(),
        BlockStructure::Rectangular,
        1.0,
        Par::Seq,
    );
    matmul(d0, Accum::Add, v0, tw.as_ref(), -1.0, Par::Seq);
    if let Some(d1) = d1 {
        matmul(d1, Accum::Add, v1, tw.as_ref(), -1.0, Par::Seq);
    }
}

/// `qr_apply(v, t, c) -> (d)`: d = Qᵀ·c for Q = I − v·t·vᵀ. Only the
/// upper triangle of t is read.
pub(super) fn qr_apply(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [v, t, c] = tiles("qr_apply", args)?;
    check_factor("qr_apply", v, t)?;
    if c.nrows() != v.nrows() {
        return Err(mismatch(
            "qr_apply",
            ("v", v),
            ("c", c),
            "c's rows must equal v's rows",
        ));
    }
    let mut d = c.clone();
    apply_qt(v.as_ref(), t.as_ref(), d.as_mut(), None);
    Ok(vec![d])
}

/// `qr_apply_pair(v, t, c0, c1) -> (d0, d1)`: [d0; d1] = Qᵀ·[c0; c1] for
/// Q = I − v·t·vᵀ, split at c0's rows.
pub(super) fn qr_apply_pair(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [v, t, c0, c1] = tiles("qr_apply_pair", args)?;
    check_factor("qr_apply_pair", v, t)?;
    if c0.ncols() != c1.ncols() {
        return Err(mismatch(
            "qr_apply_pair",
            ("c0", c0),
            ("c1", c1),
            "c0's columns must equal c1's columns",
        ));
    }
    if c0.nrows() + c1.nrows() != v.nrows() {
        return Err(KernelError::new(format!(
            "qr_apply_pair: v is {} but c0 is {} and c1 is {} \
             (c0's rows plus c1's rows must equal v's rows)",
            dims(v),
            dims(c0),
            dims(c1)
        )));
    }
    let mut d0 = c0.clone();
    let mut d1 = c1.clone();
    apply_qt(v.as_ref(), t.as_ref(), d0.as_mut(), Some(d1.as_mut()));
    Ok(vec![d0, d1])
}
