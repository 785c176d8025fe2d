//! The machine's BLAS and LAPACK (OpenBLAS, linked as `libopenblas`) behind
//! safe functions on faer matrix views: `gemm`, the right lower-transposed
//! triangular solve the Cholesky panel needs, and the lower Cholesky
//! factorisation. lpk-runtime uses them, with its `system-blas` feature,
//! where they beat faer's kernels on this machine (`docs/performance.md`).
//!
//! This is the one crate of lpk with `unsafe` code: every FFI call is
//! behind a function that first checks that each view is column-major
//! (unit row stride, a column stride at least its rows), that the shapes
//! agree and that every dimension fits BLAS's 32-bit integers, so the
//! library reads and writes only the elements of the views it was given.

#![warn(missing_docs)]

use cblas_sys::{CBLAS_DIAG, CBLAS_LAYOUT, CBLAS_SIDE, CBLAS_TRANSPOSE, CBLAS_UPLO};
use faer::{MatMut, MatRef};

#[link(name = "openblas")]
unsafe extern "C" {
    fn openblas_set_num_threads(n: i32);
    fn openblas_get_corename() -> *const std::ffi::c_char;
}

/// Why a call was refused before it reached the library, or what the
/// library reported.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BlasError {
    /// A view that is not column-major storage BLAS can address.
    #[error(
        "{what} is not a column-major view (row stride {row_stride}, column stride {col_stride})"
    )]
    Layout {
        /// Which argument.
        what: &'static str,
        /// Its row stride.
        row_stride: isize,
        /// Its column stride.
        col_stride: isize,
    },
    /// Shapes that do not agree.
    #[error("{0}")]
    Shape(String),
    /// A dimension beyond BLAS's 32-bit integers.
    #[error("a dimension of {0} does not fit a 32-bit BLAS integer")]
    TooLarge(usize),
    /// The Cholesky factorisation met a leading minor that is not positive
    /// definite (1-based order, as LAPACK reports it).
    #[error("the leading minor of order {0} is not positive definite")]
    NotPositiveDefinite(usize),
}

/// Makes OpenBLAS run each call on the calling thread only, as lpk's
/// executor calls its kernels (one task per worker thread).
pub fn single_threaded() {
    // SAFETY: sets a library-wide thread count; no memory is passed.
    unsafe { openblas_set_num_threads(1) }
}

/// The CPU kernels OpenBLAS chose (`SkylakeX`, `Haswell`, ...). An old
/// OpenBLAS on a newer CPU falls back to `Prescott` (SSE3), 4× slower than
/// faer; `OPENBLAS_CORETYPE` overrides its choice at start-up.
pub fn core_name() -> String {
    // SAFETY: OpenBLAS returns a pointer to a static NUL-terminated string
    // (or null, checked); it is copied before anything else runs.
    unsafe {
        let p = openblas_get_corename();
        if p.is_null() {
            return String::new();
        }
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

fn int(n: usize) -> Result<i32, BlasError> {
    i32::try_from(n).map_err(|_| BlasError::TooLarge(n))
}

/// How BLAS addresses a view: the column-major matrix it is stored as
/// (leading dimension `ld`), and whether the view is that matrix's
/// transpose (a faer transposed view). `None` for a view BLAS cannot
/// address (negative or interleaved strides).
fn stored(a: MatRef<'_, f64>) -> Option<(bool, usize)> {
    let (m, n) = (a.nrows(), a.ncols());
    let (rs, cs) = (a.row_stride(), a.col_stride());
    let at_least =
        |stride: isize, min: usize| usize::try_from(stride).ok().filter(|&s| s >= min.max(1));
    // The same rule for both orientations: the view as stored (unit row
    // stride, columns `cs` apart), or as the transpose of a stored matrix
    // (unit column stride, rows `rs` apart). A single row or column needs
    // no stride along it.
    for (transposed, unit, lead, rows, cols) in [(false, rs, cs, m, n), (true, cs, rs, n, m)] {
        if rows <= 1 || unit == 1 {
            let ld = if cols <= 1 {
                Some(rows.max(1))
            } else {
                at_least(lead, rows)
            };
            if let Some(ld) = ld {
                return Some((transposed, ld));
            }
        }
    }
    None
}

/// [`stored`] as the transpose flag and leading dimension BLAS takes, or
/// the error naming `what`; a `plain_only` view must not be transposed
/// (an output, or an operand whose transpose the call itself names).
fn blas_view(
    what: &'static str,
    a: MatRef<'_, f64>,
    plain_only: bool,
) -> Result<(CBLAS_TRANSPOSE, i32), BlasError> {
    match stored(a) {
        Some((false, ld)) => Ok((CBLAS_TRANSPOSE::CblasNoTrans, int(ld)?)),
        Some((true, ld)) if !plain_only => Ok((CBLAS_TRANSPOSE::CblasTrans, int(ld)?)),
        _ => Err(BlasError::Layout {
            what,
            row_stride: a.row_stride(),
            col_stride: a.col_stride(),
        }),
    }
}

/// `c ← beta·c + alpha·a·b` (dgemm); `a` and `b` may be transposed views.
pub fn gemm(
    c: MatMut<'_, f64>,
    beta: f64,
    a: MatRef<'_, f64>,
    b: MatRef<'_, f64>,
    alpha: f64,
) -> Result<(), BlasError> {
    let (m, n, k) = (c.nrows(), c.ncols(), a.ncols());
    if a.nrows() != m || b.nrows() != k || b.ncols() != n {
        return Err(BlasError::Shape(format!(
            "gemm: c is {m}x{n}, a {}x{}, b {}x{}",
            a.nrows(),
            a.ncols(),
            b.nrows(),
            b.ncols()
        )));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let (_, ldc) = blas_view("c", c.as_ref(), true)?;
    let (ta, lda) = blas_view("a", a, false)?;
    let (tb, ldb) = blas_view("b", b, false)?;
    let (mi, ni, ki) = (int(m)?, int(n)?, int(k)?);
    // SAFETY: each view is column-major (or the transpose of one) with a
    // leading dimension at least its stored rows (`stored`), so dgemm
    // reads a (m x k), b (k x n) and writes c (m x n) inside the views.
    unsafe {
        cblas_sys::cblas_dgemm(
            CBLAS_LAYOUT::CblasColMajor,
            ta,
            tb,
            mi,
            ni,
            ki,
            alpha,
            a.as_ptr(),
            lda,
            b.as_ptr(),
            ldb,
            beta,
            c.as_ptr_mut(),
            ldc,
        );
    }
    Ok(())
}

/// Solves `x · lᵀ = b` in place (`x` holds `b`) for lower-triangular `l`
/// (n×n, only its lower triangle read) and `x` m×n: dtrsm, right side,
/// lower, transposed, non-unit diagonal.
pub fn trsm_right_lower_trans(l: MatRef<'_, f64>, x: MatMut<'_, f64>) -> Result<(), BlasError> {
    let (m, n) = (x.nrows(), x.ncols());
    if l.nrows() != n || l.ncols() != n {
        return Err(BlasError::Shape(format!(
            "trsm: l is {}x{}, x {m}x{n}",
            l.nrows(),
            l.ncols()
        )));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let (_, ldl) = blas_view("l", l, true)?;
    let (_, ldx) = blas_view("x", x.as_ref(), true)?;
    let (mi, ni) = (int(m)?, int(n)?);
    // SAFETY: l (n x n) and x (m x n) are column-major views with leading
    // dimensions at least their rows, checked above.
    unsafe {
        cblas_sys::cblas_dtrsm(
            CBLAS_LAYOUT::CblasColMajor,
            CBLAS_SIDE::CblasRight,
            CBLAS_UPLO::CblasLower,
            CBLAS_TRANSPOSE::CblasTrans,
            CBLAS_DIAG::CblasNonUnit,
            mi,
            ni,
            1.0,
            l.as_ptr(),
            ldl,
            x.as_ptr_mut(),
            ldx,
        );
    }
    Ok(())
}

/// Factors `a = l · lᵀ` in place (dpotrf, lower): the lower triangle of
/// `a` becomes `l`; the strict upper triangle is left as it was.
pub fn potrf_lower(a: MatMut<'_, f64>) -> Result<(), BlasError> {
    let n = a.nrows();
    if a.ncols() != n {
        return Err(BlasError::Shape(format!(
            "potrf: a is {}x{}, not square",
            a.nrows(),
            a.ncols()
        )));
    }
    if n == 0 {
        return Ok(());
    }
    let (_, lda) = blas_view("a", a.as_ref(), true)?;
    let ni = int(n)?;
    let mut info: i32 = 0;
    // SAFETY: a is an n x n column-major view with lda >= n, checked above;
    // the scalars are passed by reference as Fortran expects.
    unsafe {
        lapack_sys::dpotrf_(c"L".as_ptr(), &ni, a.as_ptr_mut(), &lda, &mut info);
    }
    match info {
        0 => Ok(()),
        i if i > 0 => Err(BlasError::NotPositiveDefinite(i as usize)),
        i => Err(BlasError::Shape(format!(
            "potrf: argument {} is invalid",
            -i
        ))),
    }
}
