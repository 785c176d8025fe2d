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
//! faer's QR is rank-revealing: a column whose part below the diagonal is
//! under 16·ε·(rows left)·‖column‖ gets no reflector of its own, and that
//! residual is dropped from r. The kernel keeps this (it is a backward
//! error of the order of Householder QR's own rounding bound, and avoids a
//! slow path on low-rank tiles); the reflectors faer leaves unused are the
//! identity, with v's column set to the unit vector and a zero row and
//! column in t, so the result still has the spec's form exactly.

use super::args::{cols, expect_equal, expect_split, expect_square_of, rows, tiles, ArgSize};
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
/// (overwritten; it becomes v).
pub(super) fn factor(mut a: Tile) -> Vec<Tile> {
    let (m, n) = a.shape();
    let k = m.min(n);
    if k == 0 {
        return vec![Tile::zeros(m, 0), Tile::zeros(0, 0), Tile::zeros(0, n)];
    }
    let tau = faer_qr(&mut a, k);
    let mut r = a.as_ref().subrows(0, k).to_owned();
    for j in 0..k.min(n) {
        r.col_mut(j).subrows_mut(j + 1, k - j - 1).fill(0.0);
    }
    // a now holds the reflectors below its diagonal: it becomes v. An
    // identity reflector's column (faer leaves whatever was there) becomes
    // the unit vector.
    a.truncate(m, k);
    for (j, tau) in tau.iter().enumerate() {
        a.col_mut(j).subrows_mut(0, j).fill(0.0);
        a[(j, j)] = 1.0;
        if !tau.is_finite() {
            a.col_mut(j).subrows_mut(j + 1, m - j - 1).fill(0.0);
        }
    }
    let t = triangular_factor(a.as_ref(), &tau);
    vec![a, t, r]
}

/// faer's blocked QR of the leading m×k block of `a` in place, then Qᵀ
/// applied to the remaining columns (a wide tile). Returns faer's τ of each
/// reflector (H = I − v·vᵀ/τ, ∞ for the identity, which includes every
/// reflector from the numerical rank on).
fn faer_qr(a: &mut Tile, k: usize) -> Vec<f64> {
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
    // From the numerical rank on faer stores τ = ∞ on the block diagonals
    // of h, which is read below as the identity, so the rank is not needed.
    qr_in_place(
        a.as_mut().subcols_mut(0, k),
        h.as_mut(),
        Par::Seq,
        stack,
        Default::default(),
    );
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
    (0..k).map(|j| h[(j % bs, j)]).collect()
}

/// LAPACK's triangular factor t of the reflectors in `v` (m×k, unit lower
/// trapezoidal, stored explicitly), given each reflector's τ in faer's form
/// (the reciprocal of LAPACK's; ∞ for the identity): t = S⁻¹ with
/// S = striu(vᵀv) + diag(τ), restricted to the non-identity reflectors.
fn triangular_factor(v: MatRef<'_, f64>, tau: &[f64]) -> Tile {
    let k = v.ncols();
    // striu(vᵀv) from v's unit lower top k×k block and its dense rest, as
    // faer's own block-factor update does, so the top costs a third.
    let (top, bottom) = v.split_at_row(k);
    let mut s = Tile::zeros(k, k);
    triangular::matmul(
        s.as_mut(),
        BlockStructure::UnitTriangularUpper,
        Accum::Replace,
        top.transpose(),
        BlockStructure::UnitTriangularUpper,
        top,
        BlockStructure::UnitTriangularLower,
        1.0,
        Par::Seq,
    );
    if bottom.nrows() > 0 {
        triangular::matmul(
            s.as_mut(),
            BlockStructure::UnitTriangularUpper,
            Accum::Add,
            bottom.transpose(),
            BlockStructure::Rectangular,
            bottom,
            BlockStructure::Rectangular,
            1.0,
            Par::Seq,
        );
    }
    let active: Vec<usize> = (0..k).filter(|&j| tau[j].is_finite()).collect();
    if active.len() == k {
        for (j, &d) in tau.iter().enumerate() {
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
        std::cmp::Ordering::Equal => tau[active[x]],
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
    Ok(factor(a.clone()))
}

/// `qr_pair(r0, r1) -> (v, t, r)`: Householder QR of the stacked [r0; r1]
/// (any row counts, the same column count).
pub(super) fn qr_pair(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [r0, r1] = tiles("qr_pair", args)?;
    expect_equal("qr_pair", cols("r0", r0), cols("r1", r1))?;
    let (m0, m1) = (r0.nrows(), r1.nrows());
    let mut stacked = Tile::zeros(m0 + m1, r0.ncols());
    stacked.as_mut().subrows_mut(0, m0).copy_from(r0);
    stacked.as_mut().subrows_mut(m0, m1).copy_from(r1);
    Ok(factor(stacked))
}

/// Overwrites [d0; d1] with Qᵀ·[d0; d1] = [d0; d1] − v·tᵀ·vᵀ·[d0; d1], the
/// rows of v split at d0's row count (d1 absent for a single block).
pub(super) fn apply_qt(
    v: MatRef<'_, f64>,
    t: MatRef<'_, f64>,
    d0: MatMut<'_, f64>,
    d1: Option<MatMut<'_, f64>>,
) {
    let (k, p) = (t.nrows(), d0.ncols());
    let (v0, v1) = v.split_at_row(d0.nrows());
    let mut w = Tile::zeros(k, p);
    matmul(
        w.as_mut(),
        Accum::Replace,
        v0.transpose(),
        d0.rb(),
        1.0,
        Par::Seq,
    );
    if let Some(d1) = &d1 {
        matmul(
            w.as_mut(),
            Accum::Add,
            v1.transpose(),
            d1.rb(),
            1.0,
            Par::Seq,
        );
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
    expect_square_of("qr_apply", ("t", t), cols("v", v))?;
    expect_equal("qr_apply", rows("c", c), rows("v", v))?;
    let mut d = c.clone();
    apply_qt(v.as_ref(), t.as_ref(), d.as_mut(), None);
    Ok(vec![d])
}

/// One dimension of a named tile argument, [`rows`] or [`cols`]: the LQ
/// kernels check QR's rules with the two swapped.
pub(super) type Axis = for<'a> fn(&'a str, &'a Tile) -> ArgSize<'a>;

/// Checks the arguments of `kernel(v, t, c0, c1)`: t square of the order
/// of v's reflectors (v's size `across`), c0 and c1 alike `across`, and
/// their sizes `along` adding up to v's (QR's c0 and c1 split v's rows,
/// LQ's its columns).
pub(super) fn check_apply_pair(
    kernel: &str,
    [v, t, c0, c1]: [&Tile; 4],
    along: Axis,
    across: Axis,
) -> Result<(), KernelError> {
    expect_square_of(kernel, ("t", t), across("v", v))?;
    expect_equal(kernel, across("c0", c0), across("c1", c1))?;
    expect_split(kernel, along("v", v), along("c0", c0), along("c1", c1))
}

/// `qr_apply_pair(v, t, c0, c1) -> (d0, d1)`: [d0; d1] = Qᵀ·[c0; c1] for
/// Q = I − v·t·vᵀ, split at c0's rows.
pub(super) fn qr_apply_pair(args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
    let [v, t, c0, c1] = tiles("qr_apply_pair", args)?;
    check_apply_pair("qr_apply_pair", [v, t, c0, c1], rows, cols)?;
    let mut d0 = c0.clone();
    let mut d1 = c1.clone();
    apply_qt(v.as_ref(), t.as_ref(), d0.as_mut(), Some(d1.as_mut()));
    Ok(vec![d0, d1])
}
