//! Deterministic test matrices for the kernel benches and tests: random
//! entries, a symmetric positive definite matrix and a well-conditioned
//! lower triangle, the same on every machine (xorshift, no global state).

use faer::Mat;

/// An m×n matrix with entries in [-1, 1), the same for the same seed.
pub fn random(m: usize, n: usize, seed: u64) -> Mat<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    Mat::from_fn(m, n, |_, _| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    })
}

/// A symmetric positive definite n×n matrix, diagonally dominant.
pub fn spd(n: usize) -> Mat<f64> {
    let g = random(n, n, 7);
    let mut a = Mat::from_fn(n, n, |i, j| 0.5 * (g[(i, j)] + g[(j, i)]));
    for i in 0..n {
        a[(i, i)] += n as f64;
    }
    a
}

/// A well-conditioned lower-triangular n×n matrix (zero above the
/// diagonal, a dominant diagonal).
pub fn lower(n: usize) -> Mat<f64> {
    let mut l = random(n, n, 5);
    for j in 0..n {
        for i in 0..j {
            l[(i, j)] = 0.0;
        }
        l[(j, j)] = 2.0 + n as f64;
    }
    l
}
