//! The standard kernels against naive references (triple loops written
//! here), on small, odd and edge shapes, on ill-conditioned inputs, and on
//! the errors users see. Every call goes through `Registry::standard()` and
//! checks its result shapes against `flops::result_shapes`.

use crate::calls::{call_with, eye, fail, mul, norm, run, transpose, Rng};
use lpk_runtime::kernels::{KernelArg, Registry, Tile};

// ---------------------------------------------------------------------------
// Helpers

fn zeros(m: usize, n: usize) -> Tile {
    Tile::zeros(m, n)
}

fn sub(a: &Tile, b: &Tile) -> Tile {
    assert_eq!(a.shape(), b.shape());
    Tile::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)] - b[(i, j)])
}

/// ‖x − y‖ / ‖y‖ (absolute when y is zero).
fn rel(x: &Tile, y: &Tile) -> f64 {
    assert_eq!(x.shape(), y.shape(), "shapes differ");
    let d = norm(&sub(x, y));
    let s = norm(y);
    if s == 0.0 {
        d
    } else {
        d / s
    }
}

/// The error bound for a result whose largest dimension is `n`.
fn tol(n: usize) -> f64 {
    1e-13 * n.max(1) as f64
}

fn assert_close(what: &str, x: &Tile, y: &Tile, n: usize) {
    let e = rel(x, y);
    assert!(e <= tol(n), "{what}: relative error {e:e} > {:e}", tol(n));
}

/// Checks that every entry of `a` strictly above (or below) the diagonal
/// is exactly zero.
fn assert_zero_above(what: &str, a: &Tile) {
    for j in 0..a.ncols() {
        for i in 0..j.min(a.nrows()) {
            assert_eq!(a[(i, j)], 0.0, "{what}[{i}, {j}] must be zero");
        }
    }
}

fn assert_zero_below(what: &str, a: &Tile) {
    for j in 0..a.ncols() {
        for i in j + 1..a.nrows() {
            assert_eq!(a[(i, j)], 0.0, "{what}[{i}, {j}] must be zero");
        }
    }
}

/// A well-conditioned lower-triangular matrix (diagonal dominant).
fn lower(rng: &mut Rng, n: usize) -> Tile {
    let mut l = rng.mat(n, n);
    for j in 0..n {
        for i in 0..j {
            l[(i, j)] = 0.0;
        }
        l[(j, j)] = 2.0 + rng.next().abs() + (n as f64).sqrt();
    }
    l
}

/// A symmetric positive definite matrix g·gᵀ + n·I.
fn spd(rng: &mut Rng, n: usize) -> Tile {
    let g = rng.mat(n, n);
    let mut a = mul(&g, &transpose(&g));
    for i in 0..n {
        a[(i, i)] += n as f64;
    }
    a
}

/// `a`'s upper trapezoid: `a` with every entry below the diagonal zero.
fn upper(a: &Tile) -> Tile {
    Tile::from_fn(
        a.nrows(),
        a.ncols(),
        |i, j| if i <= j { a[(i, j)] } else { 0.0 },
    )
}

/// `top` above `bottom`.
fn stack(top: &Tile, bottom: &Tile) -> Tile {
    assert_eq!(top.ncols(), bottom.ncols());
    let mut s = zeros(top.nrows() + bottom.nrows(), top.ncols());
    s.as_mut().subrows_mut(0, top.nrows()).copy_from(top);
    s.as_mut()
        .subrows_mut(top.nrows(), bottom.nrows())
        .copy_from(bottom);
    s
}

fn hilbert(m: usize, n: usize) -> Tile {
    Tile::from_fn(m, n, |i, j| 1.0 / (i + j + 1) as f64)
}

/// The shapes the brief asks for.
const SHAPES: &[(usize, usize)] = &[(1, 1), (2, 3), (7, 5), (17, 9), (64, 64), (130, 70)];

/// The square orders for the square kernels.
const ORDERS: &[usize] = &[1, 2, 3, 7, 17, 33, 64, 130];

// ---------------------------------------------------------------------------
// Registry

#[test]
fn registry_holds_exactly_the_standard_kernels() {
    let registry = Registry::standard();
    let names: Vec<&str> = registry.names().collect();
    let mut expected: Vec<&str> = lpk_model::stdlib::STANDARD.iter().map(|s| s.name).collect();
    expected.sort_unstable();
    assert_eq!(names, expected);
    for name in names {
        assert_eq!(registry.get(name).map(|k| k.name()), Some(name));
    }
}

// ---------------------------------------------------------------------------
// Element-wise kernels

#[test]
fn elementwise_kernels_match_their_definition() {
    let mut rng = Rng::new(1);
    for &(m, n) in SHAPES {
        let [a, b, c, d] = [rng.mat(m, n), rng.mat(m, n), rng.mat(m, n), rng.mat(m, n)];
        assert_eq!(run("copy", &[&a])[0], a);
        let sum = Tile::from_fn(m, n, |i, j| a[(i, j)] + b[(i, j)]);
        assert_eq!(run("add", &[&a, &b])[0], sum);
        let sum4 = Tile::from_fn(m, n, |i, j| a[(i, j)] + (b[(i, j)] + c[(i, j)] + d[(i, j)]));
        assert_close("add4", &run("add4", &[&a, &b, &c, &d])[0], &sum4, n);
        let out = call_with("scale", &[KernelArg::Tile(&a), KernelArg::Real(-2.5)]).unwrap();
        assert_eq!(out[0], Tile::from_fn(m, n, |i, j| -2.5 * a[(i, j)]));
    }
}

// ---------------------------------------------------------------------------
// Products

/// (m, k, n) for the products: c m×n, a m×k, b k×n.
const PRODUCTS: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (2, 3, 4),
    (7, 5, 3),
    (17, 9, 13),
    (64, 64, 64),
    (130, 70, 33),
    (5, 130, 2),
];

#[test]
fn gemm_family_matches_triple_loops() {
    let mut rng = Rng::new(2);
    for &(m, k, n) in PRODUCTS {
        let (a, b, c) = (rng.mat(m, k), rng.mat(k, n), rng.mat(m, n));
        let ab = mul(&a, &b);
        let dim = m.max(n).max(k);
        assert_close("gemm", &run("gemm", &[&a, &b])[0], &ab, dim);
        let acc = Tile::from_fn(m, n, |i, j| c[(i, j)] + ab[(i, j)]);
        assert_close("gemm_acc", &run("gemm_acc", &[&c, &a, &b])[0], &acc, dim);
        let diff = sub(&c, &ab);
        assert_close("gemm_sub", &run("gemm_sub", &[&c, &a, &b])[0], &diff, dim);
    }
}

#[test]
fn syrk_is_c_minus_a_times_b_transposed() {
    let mut rng = Rng::new(3);
    for &(m, k, n) in PRODUCTS {
        let (c, a, b) = (rng.mat(m, n), rng.mat(m, k), rng.mat(n, k));
        let want = sub(&c, &mul(&a, &transpose(&b)));
        let got = run("syrk", &[&c, &a, &b]);
        assert_close("syrk", &got[0], &want, m.max(n).max(k));
    }
}

// ---------------------------------------------------------------------------
// Triangular solves

/// x with x · u = b, u upper, by substitution along each row.
fn naive_right_upper(u: &Tile, b: &Tile) -> Tile {
    let mut x = zeros(b.nrows(), b.ncols());
    for i in 0..b.nrows() {
        for j in 0..b.ncols() {
            let mut s = b[(i, j)];
            for p in 0..j {
                s -= x[(i, p)] * u[(p, j)];
            }
            x[(i, j)] = s / u[(j, j)];
        }
    }
    x
}

/// x with l · x = b, l lower (its upper part ignored), by substitution
/// down each column; a `unit` l's diagonal is taken as one and not read.
fn naive_left_lower(l: &Tile, b: &Tile, unit: bool) -> Tile {
    let mut x = zeros(b.nrows(), b.ncols());
    for j in 0..b.ncols() {
        for i in 0..b.nrows() {
            let mut s = b[(i, j)];
            for p in 0..i {
                s -= l[(i, p)] * x[(p, j)];
            }
            x[(i, j)] = if unit { s } else { s / l[(i, i)] };
        }
    }
    x
}

#[test]
fn triangular_solves_match_substitution() {
    let mut rng = Rng::new(4);
    for &(m, n) in SHAPES {
        // trsm and trsm_ru: b m×n with a triangle of order n.
        let l = lower(&mut rng, n);
        let b = rng.mat(m, n);
        let x = run("trsm", &[&l, &b]).remove(0);
        assert_close("trsm", &x, &naive_right_upper(&transpose(&l), &b), m.max(n));
        assert_close("trsm residual", &mul(&x, &transpose(&l)), &b, m.max(n));
        // Garbage above the diagonal must not be read.
        let mut l_dirty = l.clone();
        for j in 1..n {
            l_dirty[(0, j)] = 1e300;
        }
        assert_eq!(run("trsm", &[&l_dirty, &b])[0], x);

        let u = transpose(&lower(&mut rng, n));
        let x = run("trsm_ru", &[&u, &b]).remove(0);
        assert_close("trsm_ru", &x, &naive_right_upper(&u, &b), m.max(n));
        assert_close("trsm_ru residual", &mul(&x, &u), &b, m.max(n));

        // trsm_ll: l m×m unit lower, b m×n; diagonal and upper part are
        // garbage that must be ignored.
        let mut l = lower(&mut rng, m);
        for i in 0..m {
            l[(i, i)] = 1e300;
            for j in i + 1..m {
                l[(i, j)] = f64::NAN;
            }
        }
        let x = run("trsm_ll", &[&l, &b]).remove(0);
        let want = naive_left_lower(&l, &b, true);
        assert_close("trsm_ll", &x, &want, m.max(n));
    }
}

// ---------------------------------------------------------------------------
// Cholesky

fn naive_chol(a: &Tile) -> Tile {
    let n = a.nrows();
    let mut l = zeros(n, n);
    for j in 0..n {
        let mut d = a[(j, j)];
        for p in 0..j {
            d -= l[(j, p)] * l[(j, p)];
        }
        let d = d.sqrt();
        l[(j, j)] = d;
        for i in j + 1..n {
            let mut s = a[(i, j)];
            for p in 0..j {
                s -= l[(i, p)] * l[(j, p)];
            }
            l[(i, j)] = s / d;
        }
    }
    l
}

#[test]
fn chol_matches_the_textbook_algorithm() {
    let mut rng = Rng::new(5);
    for &n in ORDERS {
        let a = spd(&mut rng, n);
        let l = run("chol", &[&a]).remove(0);
        assert_zero_above("l", &l);
        assert_close("chol", &l, &naive_chol(&a), n);
        assert_close("chol residual", &mul(&l, &transpose(&l)), &a, n);
    }
}

#[test]
fn chol_reads_only_the_lower_triangle() {
    let mut rng = Rng::new(6);
    let a = spd(&mut rng, 40);
    let mut dirty = a.clone();
    for j in 1..40 {
        for i in 0..j {
            dirty[(i, j)] = f64::NAN;
        }
    }
    assert_eq!(run("chol", &[&dirty]), run("chol", &[&a]));
}

#[test]
fn chol_of_ill_conditioned_matrices_has_a_small_residual() {
    // Hilbert matrices up to order 12 are numerically positive definite
    // (condition ~1.7e16 at 12).
    for n in [4, 8, 10, 12] {
        let a = hilbert(n, n);
        let l = run("chol", &[&a]).remove(0);
        let e = rel(&mul(&l, &transpose(&l)), &a);
        assert!(e < 1e-15 * n as f64, "Hilbert {n}: residual {e:e}");
    }
    // Nearly singular: g·gᵀ of rank n − 1 plus 1e-9·I.
    let mut rng = Rng::new(7);
    for n in [17, 64, 130] {
        let g = rng.mat(n, n - 1);
        let mut a = mul(&g, &transpose(&g));
        for i in 0..n {
            a[(i, i)] += 1e-9;
        }
        let l = run("chol", &[&a]).remove(0);
        let e = rel(&mul(&l, &transpose(&l)), &a);
        assert!(e < 1e-15 * n as f64, "nearly singular {n}: residual {e:e}");
    }
}

/// Checks that chol of `a` fails at `pivot` ("3 is -2.500e-1").
fn assert_chol_pivot(a: &Tile, pivot: &str) {
    let want = format!("chol: a is not positive definite (pivot {pivot})");
    assert_eq!(fail("chol", &[a]), want);
}

#[test]
fn chol_names_the_failing_pivot() {
    let mut a = eye(6);
    a[(3, 3)] = -0.25;
    assert_chol_pivot(&a, "3 is -2.500e-1");
    let a = Tile::from_fn(2, 2, |i, j| if i == j { 1.0 } else { 2.0 });
    assert_chol_pivot(&a, "1 is -3.000e0");
    // Deep inside a blocked factorisation: a = L·Lᵀ with unit lower L, so
    // every pivot is 1; lowering a[70, 70] by 1.5 makes pivot 70 −0.5.
    let mut rng = Rng::new(8);
    let n = 100;
    let mut l = Tile::from_fn(n, n, |i, j| if i > j { 0.3 * rng.next() } else { 0.0 });
    for i in 0..n {
        l[(i, i)] = 1.0;
    }
    let mut a = mul(&l, &transpose(&l));
    a[(70, 70)] -= 1.5;
    assert_chol_pivot(&a, "70 is -5.000e-1");
}

#[test]
fn chol_rejects_nan() {
    let mut a = eye(4);
    a[(0, 0)] = f64::NAN;
    assert_chol_pivot(&a, "0 is NaN");
    let mut rng = Rng::new(9);
    let mut a = spd(&mut rng, 8);
    a[(5, 2)] = f64::NAN;
    assert_chol_pivot(&a, "5 is NaN");
    let mut a = eye(3);
    a[(1, 1)] = f64::INFINITY;
    assert_chol_pivot(&a, "1 is inf");
}

// ---------------------------------------------------------------------------
// LU

/// Doolittle LU without pivoting.
fn naive_lu(a: &Tile) -> (Tile, Tile) {
    let n = a.nrows();
    let (mut l, mut u) = (eye(n), zeros(n, n));
    for i in 0..n {
        for j in i..n {
            let mut s = a[(i, j)];
            for p in 0..i {
                s -= l[(i, p)] * u[(p, j)];
            }
            u[(i, j)] = s;
        }
        for j in i + 1..n {
            let mut s = a[(j, i)];
            for p in 0..i {
                s -= l[(j, p)] * u[(p, i)];
            }
            l[(j, i)] = s / u[(i, i)];
        }
    }
    (l, u)
}

#[test]
fn lu_matches_doolittle() {
    let mut rng = Rng::new(10);
    for &n in ORDERS {
        let mut a = rng.mat(n, n);
        for i in 0..n {
            a[(i, i)] += n as f64;
        }
        let out = run("lu", &[&a]);
        let (l, u) = (&out[0], &out[1]);
        assert_zero_above("l", l);
        assert_zero_below("u", u);
        for i in 0..n {
            assert_eq!(l[(i, i)], 1.0, "l[{i}, {i}] must be one");
        }
        let (wl, wu) = naive_lu(&a);
        assert_close("lu l", l, &wl, n);
        assert_close("lu u", u, &wu, n);
        assert_close("lu residual", &mul(l, u), &a, n);
    }
}

#[test]
fn lu_names_a_zero_pivot() {
    let a = Tile::from_fn(2, 2, |i, j| ((i + 1) * (j + 1)) as f64);
    assert_eq!(fail("lu", &[&a]), "lu: pivot 1 is zero (lu does not pivot)");
    // A zero pivot deep in the recursive path: a = L·U with small integer
    // entries (so elimination is exact) and U[40, 40] = 0.
    let n = 64;
    let mut rng = Rng::new(11);
    let mut l = Tile::from_fn(n, n, |i, j| if i > j { rng.next().round() } else { 0.0 });
    let mut u = Tile::from_fn(n, n, |i, j| if i < j { rng.next().round() } else { 0.0 });
    for i in 0..n {
        l[(i, i)] = 1.0;
        u[(i, i)] = if i == 40 { 0.0 } else { 1.0 };
    }
    let a = mul(&l, &u);
    assert_eq!(
        fail("lu", &[&a]),
        "lu: pivot 40 is zero (lu does not pivot)"
    );
    let mut a = eye(3);
    a[(0, 0)] = f64::INFINITY;
    assert_eq!(fail("lu", &[&a]), "lu: pivot 0 is inf (lu does not pivot)");
}

// ---------------------------------------------------------------------------
// trtri

#[test]
fn trtri_inverts_lower_triangular_tiles() {
    let mut rng = Rng::new(12);
    for &n in ORDERS {
        let l = lower(&mut rng, n);
        let x = run("trtri", &[&l]).remove(0);
        assert_zero_above("x", &x);
        assert_close("trtri", &x, &naive_left_lower(&l, &eye(n), false), n);
        assert_close("trtri residual", &mul(&x, &l), &eye(n), n);
    }
}

#[test]
fn singular_triangles_are_errors() {
    let mut l = eye(4);
    l[(2, 2)] = 0.0;
    assert_eq!(
        fail("trtri", &[&l]),
        "trtri: l is singular (diagonal entry 2 is zero)"
    );
    assert_eq!(
        fail("trsm", &[&l, &eye(4)]),
        "trsm: l is singular (diagonal entry 2 is zero)"
    );
    assert_eq!(
        fail("trsm_ru", &[&l, &eye(4)]),
        "trsm_ru: u is singular (diagonal entry 2 is zero)"
    );
    // trsm_ll never reads the diagonal, so a zero there is fine.
    assert_eq!(run("trsm_ll", &[&l, &eye(4)])[0], eye(4));
}

// ---------------------------------------------------------------------------
// QR

/// Q = I − v·t·vᵀ, formed explicitly.
fn form_q(v: &Tile, t: &Tile) -> Tile {
    sub(&eye(v.nrows()), &mul(&mul(v, t), &transpose(v)))
}

/// LAPACK dlarft's T from v and the τ on t's diagonal:
/// T[0..j, j] = −τ_j · T[0..j, 0..j] · V[:, 0..j]ᵀ · v_j.
fn naive_larft(v: &Tile, t: &Tile) -> Tile {
    let k = v.ncols();
    let mut w = zeros(k, k);
    for j in 0..k {
        let tau = t[(j, j)];
        w[(j, j)] = tau;
        let g: Vec<f64> = (0..j)
            .map(|p| (0..v.nrows()).map(|i| v[(i, p)] * v[(i, j)]).sum())
            .collect();
        for i in 0..j {
            let s: f64 = (i..j).map(|p| w[(i, p)] * g[p]).sum();
            w[(i, j)] = -tau * s;
        }
    }
    w
}

/// Checks every property of a compact WY QR of `a`.
fn check_qr(what: &str, a: &Tile, out: &[Tile]) {
    let (m, n) = a.shape();
    let k = m.min(n);
    let (v, t, r) = (&out[0], &out[1], &out[2]);
    assert_eq!((v.shape(), t.shape(), r.shape()), ((m, k), (k, k), (k, n)));
    assert_zero_above(&format!("{what} v"), v);
    for j in 0..k {
        assert_eq!(v[(j, j)], 1.0, "{what}: v[{j}, {j}] must be one");
    }
    assert_zero_below(&format!("{what} t"), t);
    assert_zero_below(&format!("{what} r"), r);
    // Each reflector is orthogonal: τ = 2 / ‖v_j‖², or 0 for the identity.
    for j in 0..k {
        let vv: f64 = (0..m).map(|i| v[(i, j)] * v[(i, j)]).sum();
        let tau = t[(j, j)];
        assert!(
            tau == 0.0 || (tau * vv - 2.0).abs() < 1e-12,
            "{what}: reflector {j} has τ = {tau} but ‖v‖² = {vv}"
        );
        if tau == 0.0 {
            assert_eq!(vv, 1.0, "{what}: identity reflector {j} must be e_{j}");
        }
    }
    assert_close(&format!("{what} t is dlarft's"), t, &naive_larft(v, t), m);
    let q = form_q(v, t);
    assert_close(&format!("{what} QᵀQ"), &mul(&transpose(&q), &q), &eye(m), m);
    let r0 = stack(r, &zeros(m - k, n));
    assert_close(&format!("{what} a = Q[r; 0]"), &mul(&q, &r0), a, m.max(n));
}

/// Tall, square and wide shapes, including m < n.
const QR_SHAPES: &[(usize, usize)] = &[
    (1, 1),
    (2, 3),
    (3, 2),
    (7, 5),
    (5, 7),
    (17, 9),
    (9, 17),
    (64, 64),
    (130, 70),
    (70, 130),
    (300, 12),
    (1, 6),
    (6, 1),
];

#[test]
fn qr_factor_gives_the_spec_compact_wy_form() {
    let mut rng = Rng::new(13);
    for &(m, n) in QR_SHAPES {
        let a = rng.mat(m, n);
        let out = run("qr_factor", &[&a]);
        check_qr(&format!("qr_factor {m}×{n}"), &a, &out);
    }
}

#[test]
fn qr_factor_of_rank_deficient_tiles_is_still_standard() {
    let mut rng = Rng::new(14);
    let mut cases: Vec<(String, Tile)> = vec![
        ("zero 5×3".into(), zeros(5, 3)),
        ("zero 3×5".into(), zeros(3, 5)),
        ("Hilbert 64×64".into(), hilbert(64, 64)),
        ("Hilbert 130×70".into(), hilbert(130, 70)),
        ("Hilbert 20×40".into(), hilbert(20, 40)),
        ("identity 9×9".into(), eye(9)),
    ];
    // A zero column, a repeated column, and an upper-triangular tile.
    let mut a = rng.mat(17, 9);
    a.col_mut(0).fill(0.0);
    cases.push(("zero first column".into(), a));
    let mut a = rng.mat(17, 9);
    let c2 = a.col(2).to_owned();
    a.col_mut(5).copy_from(&c2);
    cases.push(("repeated column".into(), a));
    cases.push(("upper triangular".into(), upper(&rng.mat(12, 12))));
    for (what, a) in &cases {
        let out = run("qr_factor", &[a]);
        check_qr(what, a, &out);
    }
}

/// (m0, m1, n) for the pair kernels: r0 (or c0) m0×n on top of r1 (or
/// c1) m1×n (transposed, the LQ pair kernels' shapes too).
pub(crate) const PAIR_SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (4, 4, 4),
    (3, 5, 4),
    (9, 2, 7),
    (64, 64, 64),
    (70, 60, 70),
    (2, 3, 9),
];

#[test]
fn qr_pair_factors_the_stacked_tiles() {
    let mut rng = Rng::new(15);
    for &(m0, m1, n) in PAIR_SHAPES {
        // r0 upper triangular, as in tiled QR, and a general r0.
        let general = rng.mat(m0, n);
        let r1 = rng.mat(m1, n);
        let r0 = upper(&general);
        for top in [&r0, &general] {
            let a = stack(top, &r1);
            let out = run("qr_pair", &[top, &r1]);
            check_qr(&format!("qr_pair {m0}+{m1}×{n}"), &a, &out);
        }
    }
}

#[test]
fn qr_apply_equals_the_explicit_q_transposed() {
    let mut rng = Rng::new(16);
    for &(m, n) in QR_SHAPES {
        let a = rng.mat(m, n);
        let out = run("qr_factor", &[&a]);
        let (v, t, r) = (&out[0], &out[1], &out[2]);
        let q = form_q(v, t);
        for p in [1, 3, 33] {
            let c = rng.mat(m, p);
            let d = run("qr_apply", &[v, t, &c]).remove(0);
            assert_close("qr_apply", &d, &mul(&transpose(&q), &c), m.max(p));
        }
        // Qᵀ·a = [r; 0].
        let d = run("qr_apply", &[v, t, &a]).remove(0);
        let r0 = stack(r, &zeros(m - m.min(n), n));
        let e = norm(&sub(&d, &r0)) / norm(&a);
        assert!(e <= tol(m.max(n)), "Qᵀa = [r; 0] for {m}×{n}: {e:e}");
    }
}

#[test]
fn qr_apply_pair_equals_the_explicit_q_transposed() {
    let mut rng = Rng::new(17);
    for &(m0, m1, n) in PAIR_SHAPES {
        let (r0, r1) = (rng.mat(m0, n), rng.mat(m1, n));
        let out = run("qr_pair", &[&r0, &r1]);
        let (v, t) = (&out[0], &out[1]);
        let qt = transpose(&form_q(v, t));
        for p in [1, 5, 40] {
            let (c0, c1) = (rng.mat(m0, p), rng.mat(m1, p));
            let want = mul(&qt, &stack(&c0, &c1));
            let d = run("qr_apply_pair", &[v, t, &c0, &c1]);
            let dim = (m0 + m1).max(p);
            assert_close(
                "qr_apply_pair d0",
                &d[0],
                &want.as_ref().subrows(0, m0).to_owned(),
                dim,
            );
            assert_close(
                "qr_apply_pair d1",
                &d[1],
                &want.as_ref().subrows(m0, m1).to_owned(),
                dim,
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Argument errors

#[test]
fn shape_mismatches_say_which_argument_and_what_was_expected() {
    let t = |m, n| zeros(m, n);
    let cases: Vec<(&str, Vec<Tile>, &str)> = vec![
        ("add", vec![t(2, 3), t(3, 2)], "add: a is 2×3 but b is 3×2 (b must have the shape of a)"),
        ("add4", vec![t(2, 3), t(2, 3), t(2, 3), t(2, 2)], "add4: a is 2×3 but d is 2×2 (d must have the shape of a)"),
        ("gemm", vec![t(3, 4), t(5, 2)], "gemm: a is 3×4 but b is 5×2 (a's columns must equal b's rows)"),
        ("gemm_acc", vec![t(3, 2), t(4, 5), t(5, 2)], "gemm_acc: c is 3×2 but a is 4×5 (a's rows must equal c's rows)"),
        ("gemm_sub", vec![t(3, 2), t(3, 5), t(5, 3)], "gemm_sub: c is 3×2 but b is 5×3 (b's columns must equal c's columns)"),
        ("gemm_acc", vec![t(3, 2), t(3, 5), t(4, 2)], "gemm_acc: a is 3×5 but b is 4×2 (a's columns must equal b's rows)"),
        ("syrk", vec![t(3, 2), t(3, 5), t(2, 4)], "syrk: a is 3×5 but b is 2×4 (a's columns must equal b's columns)"),
        ("syrk", vec![t(3, 2), t(3, 5), t(3, 5)], "syrk: c is 3×2 but b is 3×5 (b's rows must equal c's columns)"),
        ("chol", vec![t(3, 4)], "chol: a is 3×4 but must be square"),
        ("lu", vec![t(2, 1)], "lu: a is 2×1 but must be square"),
        ("trtri", vec![t(2, 1)], "trtri: l is 2×1 but must be square"),
        ("trsm", vec![eye(3), t(3, 4)], "trsm: l is 3×3 but b is 3×4 (b's columns must equal l's order)"),
        ("trsm_ll", vec![eye(3), t(4, 3)], "trsm_ll: l is 3×3 but b is 4×3 (b's rows must equal l's order)"),
        ("trsm_ru", vec![eye(3), t(3, 2)], "trsm_ru: u is 3×3 but b is 3×2 (b's columns must equal u's order)"),
        ("trsm_ru", vec![t(3, 2), t(3, 2)], "trsm_ru: u is 3×2 but must be square"),
        ("qr_pair", vec![t(3, 4), t(2, 5)], "qr_pair: r0 is 3×4 but r1 is 2×5 (r0's columns must equal r1's columns)"),
        ("qr_apply", vec![t(7, 5), t(4, 4), t(7, 2)], "qr_apply: v is 7×5 but t is 4×4 (t must be square of order v's columns, 5)"),
        ("qr_apply", vec![t(7, 5), t(5, 5), t(6, 2)], "qr_apply: v is 7×5 but c is 6×2 (c's rows must equal v's rows)"),
        ("qr_apply_pair", vec![t(7, 5), t(5, 5), t(3, 2), t(3, 2)], "qr_apply_pair: v is 7×5 but c0 is 3×2 and c1 is 3×2 (c0's rows plus c1's rows must equal v's rows)"),
        ("qr_apply_pair", vec![t(7, 5), t(5, 5), t(3, 2), t(4, 1)], "qr_apply_pair: c0 is 3×2 but c1 is 4×1 (c0's columns must equal c1's columns)"),
    ];
    for (name, tiles, want) in cases {
        let refs: Vec<&Tile> = tiles.iter().collect();
        assert_eq!(fail(name, &refs), want);
    }
}

#[test]
fn wrong_argument_counts_and_kinds_are_errors() {
    let a = eye(2);
    let err = |name: &str, args: &[KernelArg<'_>]| call_with(name, args).err();
    assert_eq!(
        err("gemm", &[KernelArg::Tile(&a)]).as_deref(),
        Some("gemm: expected 2 arguments (a, b), found 1")
    );
    assert_eq!(
        err("copy", &[]).as_deref(),
        Some("copy: expected 1 argument (a), found 0")
    );
    assert_eq!(
        err("gemm", &[KernelArg::Tile(&a), KernelArg::Real(1.0)]).as_deref(),
        Some("gemm: b must be a tile, found a real")
    );
    assert_eq!(
        err("scale", &[KernelArg::Tile(&a), KernelArg::Int(2)]).as_deref(),
        Some("scale: alpha must be a real, found an int")
    );
    assert_eq!(
        err("scale", &[KernelArg::Real(2.0), KernelArg::Real(2.0)]).as_deref(),
        Some("scale: a must be a tile, found a real")
    );
    assert_eq!(
        err("qr_apply_pair", &[KernelArg::Tile(&a); 5]).as_deref(),
        Some("qr_apply_pair: expected 4 arguments (v, t, c0, c1), found 5")
    );
}
