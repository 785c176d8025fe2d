//! Dense reference routines on faer, called exactly as a user of faer
//! would (the high-level decompositions and `matmul`), so benchmarks can put
//! lpk's tiled run side by side with the monolithic routine on the same
//! matrix, and tests can compare results.

use crate::kernels::Tile;
use faer::linalg::matmul::matmul;
use faer::{Accum, Par, Side};

/// A parallelism of `threads` threads (1 is sequential).
pub(crate) fn par(threads: usize) -> Par {
    if threads <= 1 {
        Par::Seq
    } else {
        Par::rayon(threads)
    }
}

/// The lower Cholesky factor of `a` (faer `llt`), or `None` if `a` is not
/// positive definite.
pub fn cholesky(a: &Tile, threads: usize) -> Option<Tile> {
    faer::set_global_parallelism(par(threads));
    a.llt(Side::Lower).ok().map(|f| f.L().to_owned())
}

/// The lower Cholesky factor of `a` by faer's in-place factorisation (no
/// copy into a decomposition object; the fastest way to call faer), or
/// `None` if `a` is not positive definite. The strictly upper part of the
/// result is left as it was in `a`.
pub fn cholesky_in_place(a: &Tile, threads: usize) -> Option<Tile> {
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::cholesky::llt::factor;
    let par = par(threads);
    let mut l = a.clone();
    let mut mem = MemBuffer::new(factor::cholesky_in_place_scratch::<f64>(
        l.nrows(),
        par,
        Default::default(),
    ));
    factor::cholesky_in_place(
        l.as_mut(),
        Default::default(),
        par,
        MemStack::new(&mut mem),
        Default::default(),
    )
    .ok()?;
    Some(l)
}

/// `a · b` (faer `matmul`).
pub fn product(a: &Tile, b: &Tile, threads: usize) -> Option<Tile> {
    if a.ncols() != b.nrows() {
        return None;
    }
    let mut c = Tile::zeros(a.nrows(), b.ncols());
    matmul(
        c.as_mut(),
        Accum::Replace,
        a.as_ref(),
        b.as_ref(),
        1.0,
        par(threads),
    );
    Some(c)
}

/// The R factor of the thin QR of `a` (faer `qr`).
pub fn qr_r(a: &Tile, threads: usize) -> Tile {
    faer::set_global_parallelism(par(threads));
    a.qr().thin_R().to_owned()
}
