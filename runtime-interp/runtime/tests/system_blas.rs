//! The system BLAS wrappers (`lpk-sysblas`, behind the `system-blas`
//! feature) against faer on the views the kernels pass: whole tiles,
//! transposed views, sub-views whose column stride exceeds their rows,
//! one-row and one-column shapes, and the refusals (a non-column-major
//! output, shapes that disagree, a matrix that is not positive definite).
//!
//! Run: `cargo test -p lpk-runtime --features system-blas --test
//! system_blas` (needs libopenblas-dev; `scripts/test` installs it).
#![cfg(feature = "system-blas")]

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};
use lpk_sysblas::BlasError;
use lpk_test_support::tiles::random;

fn assert_close(x: &Mat<f64>, y: &Mat<f64>, what: &str) {
    assert_eq!(x.shape(), y.shape(), "{what}");
    for j in 0..y.ncols() {
        for i in 0..y.nrows() {
            let (a, b) = (x[(i, j)], y[(i, j)]);
            assert!(
                (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                "{what}: [{i}, {j}] {a} vs {b}"
            );
        }
    }
}

#[test]
fn gemm_matches_faer_on_every_view_the_kernels_pass() {
    lpk_sysblas::single_threaded();
    for &(m, n, k) in &[
        (7, 5, 3),
        (1, 6, 4),
        (6, 1, 4),
        (5, 4, 1),
        (1, 1, 1),
        (33, 17, 9),
    ] {
        for ta in [false, true] {
            for tb in [false, true] {
                let a0 = if ta { random(k, m, 1) } else { random(m, k, 1) };
                let b0 = if tb { random(n, k, 2) } else { random(k, n, 2) };
                let a = if ta { a0.transpose() } else { a0.as_ref() };
                let b = if tb { b0.transpose() } else { b0.as_ref() };
                let c = random(m, n, 3);
                let mut want = c.clone();
                matmul(want.as_mut(), Accum::Add, a, b, -0.5, Par::Seq);
                let mut got = c.clone();
                lpk_sysblas::gemm(got.as_mut(), 1.0, a, b, -0.5).expect("gemm");
                assert_close(&got, &want, &format!("{m}x{n}x{k} ta={ta} tb={tb}"));
            }
        }
    }
    // Sub-views: the column stride of the parent, larger than the rows.
    let big = random(20, 20, 4);
    let (a, b) = (big.submatrix(2, 3, 5, 4), big.submatrix(7, 1, 4, 6));
    let mut parent = random(20, 20, 5);
    let mut want = parent.clone();
    matmul(
        want.submatrix_mut(1, 2, 5, 6),
        Accum::Replace,
        a,
        b,
        1.0,
        Par::Seq,
    );
    lpk_sysblas::gemm(parent.submatrix_mut(1, 2, 5, 6), 0.0, a, b, 1.0).expect("gemm");
    assert_close(&parent, &want, "sub-views");
}

#[test]
fn the_triangular_solve_and_the_factorisation_match_faer() {
    let n = 37;
    let g = random(n, n, 6);
    let mut spd = Mat::from_fn(n, n, |i, j| 0.5 * (g[(i, j)] + g[(j, i)]));
    for i in 0..n {
        spd[(i, i)] += n as f64;
    }
    let mut l = spd.clone();
    lpk_sysblas::potrf_lower(l.as_mut()).expect("factors");
    for j in 1..n {
        for i in 0..j {
            l[(i, j)] = 0.0;
        }
    }
    let mut back = Mat::<f64>::zeros(n, n);
    matmul(
        back.as_mut(),
        Accum::Replace,
        &l,
        l.transpose(),
        1.0,
        Par::Seq,
    );
    assert_close(&back, &spd, "l lᵀ");
    let b = random(9, n, 7);
    let mut x = b.clone();
    lpk_sysblas::trsm_right_lower_trans(l.as_ref(), x.as_mut()).expect("solves");
    let mut xlt = Mat::<f64>::zeros(9, n);
    matmul(
        xlt.as_mut(),
        Accum::Replace,
        &x,
        l.transpose(),
        1.0,
        Par::Seq,
    );
    assert_close(&xlt, &b, "x lᵀ");
}

#[test]
fn the_library_names_the_kernels_it_runs() {
    let core = lpk_sysblas::core_name();
    assert!(
        !core.is_empty() && core.chars().all(|c| c.is_ascii_alphanumeric()),
        "{core:?}"
    );
}

#[test]
fn bad_views_shapes_and_matrices_are_refused_before_the_call() {
    let a = random(4, 4, 8);
    let mut c = random(4, 4, 9);
    let e = lpk_sysblas::gemm(c.as_mut().transpose_mut(), 1.0, a.as_ref(), a.as_ref(), 1.0)
        .expect_err("a transposed output");
    assert!(matches!(e, BlasError::Layout { what: "c", .. }), "{e}");
    let e = lpk_sysblas::gemm(c.as_mut(), 1.0, a.submatrix(0, 0, 4, 3), a.as_ref(), 1.0)
        .expect_err("inner sizes differ");
    assert_eq!(e.to_string(), "gemm: c is 4x4, a 4x3, b 4x4");
    let mut not_spd = Mat::<f64>::identity(3, 3);
    not_spd[(1, 1)] = -1.0;
    assert_eq!(
        lpk_sysblas::potrf_lower(not_spd.as_mut()),
        Err(BlasError::NotPositiveDefinite(2))
    );
}
