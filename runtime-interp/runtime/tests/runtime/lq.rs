//! The LQ kernels (`lq_factor`, `lq_pair`, `lq_apply`, `lq_apply_pair`)
//! against exact identities: a = [l 0]·Q with Q = I − vᵀ·tᵀ·v orthogonal,
//! the apply kernels against that explicit Q, bit-for-bit agreement with
//! the QR kernels on the transposed tiles, and their shape errors. Every
//! call goes through `Registry::standard()` and checks its result shapes
//! against `flops::result_shapes`.

use crate::calls::{call, eye, mul, run, transpose, Rng};
use crate::kernels::PAIR_SHAPES;
use lpk_runtime::kernels::Tile;

/// [a b] side by side.
fn beside(a: &Tile, b: &Tile) -> Tile {
    assert_eq!(a.nrows(), b.nrows());
    let n0 = a.ncols();
    Tile::from_fn(a.nrows(), n0 + b.ncols(), |i, j| {
        if j < n0 {
            a[(i, j)]
        } else {
            b[(i, j - n0)]
        }
    })
}

fn cols(a: &Tile, from: usize, n: usize) -> Tile {
    a.as_ref().subcols(from, n).to_owned()
}

/// ‖x − y‖_F / max(‖y‖_F, 1).
fn err(x: &Tile, y: &Tile) -> f64 {
    assert_eq!(x.shape(), y.shape());
    let (mut d, mut s) = (0.0f64, 0.0f64);
    for j in 0..x.ncols() {
        for i in 0..x.nrows() {
            d += (x[(i, j)] - y[(i, j)]).powi(2);
            s += y[(i, j)].powi(2);
        }
    }
    d.sqrt() / s.sqrt().max(1.0)
}

/// Backward-stable Householder bound for a result of largest dimension n.
fn tol(n: usize) -> f64 {
    2e-15 * n.max(4) as f64
}

fn assert_close(what: &str, x: &Tile, y: &Tile, n: usize) {
    let e = err(x, y);
    assert!(e <= tol(n), "{what}: error {e:e} > {:e}", tol(n));
}

/// The explicit Q = I − vᵀ·tᵀ·v of an LQ factorisation.
fn form_q(v: &Tile, t: &Tile) -> Tile {
    let w = mul(&mul(&transpose(v), &transpose(t)), v);
    Tile::from_fn(v.ncols(), v.ncols(), |i, j| {
        f64::from(u8::from(i == j)) - w[(i, j)]
    })
}

/// Checks every property of a compact WY LQ of `a`: the spec's form
/// (v unit upper trapezoidal, t upper and l lower triangular, exact
/// zeros), Q orthogonal and a = [l 0]·Q.
fn check_lq(what: &str, a: &Tile, out: &[Tile]) {
    let (m, n) = a.shape();
    let k = m.min(n);
    let (v, t, l) = (&out[0], &out[1], &out[2]);
    assert_eq!((v.shape(), t.shape(), l.shape()), ((k, n), (k, k), (m, k)));
    for i in 0..k {
        assert_eq!(v[(i, i)], 1.0, "{what}: v[{i}, {i}] must be one");
        for j in 0..i {
            assert_eq!(v[(i, j)], 0.0, "{what}: v[{i}, {j}] must be zero");
            assert_eq!(t[(i, j)], 0.0, "{what}: t[{i}, {j}] must be zero");
        }
    }
    for i in 0..m {
        for j in (i + 1)..k {
            assert_eq!(l[(i, j)], 0.0, "{what}: l[{i}, {j}] must be zero");
        }
    }
    let q = form_q(v, t);
    assert_close(
        &format!("{what}: Q Qᵀ = I"),
        &mul(&q, &transpose(&q)),
        &eye(n),
        n,
    );
    let l0 = Tile::from_fn(m, n, |i, j| if j < k { l[(i, j)] } else { 0.0 });
    assert_close(&format!("{what}: a = [l 0] Q"), &mul(&l0, &q), a, m.max(n));
}

/// Wide, square and tall shapes (an LQ is usually of a wide tile).
const SHAPES: &[(usize, usize)] = &[
    (1, 1),
    (3, 2),
    (2, 3),
    (5, 7),
    (7, 5),
    (9, 17),
    (17, 9),
    (64, 64),
    (70, 130),
    (130, 70),
    (12, 300),
    (6, 1),
    (1, 6),
];

#[test]
fn lq_factor_reconstructs_a_with_orthogonal_q() {
    let mut rng = Rng::new(31);
    for &(m, n) in SHAPES {
        let a = rng.mat(m, n);
        check_lq(&format!("lq_factor {m}×{n}"), &a, &run("lq_factor", &[&a]));
    }
    // Rank-deficient tiles keep the exact form too.
    let mut a = rng.mat(9, 17);
    let r2 = a.row(2).to_owned();
    a.row_mut(6).copy_from(&r2);
    let cases = [
        ("zero 3×5", Tile::zeros(3, 5)),
        ("zero 5×3", Tile::zeros(5, 3)),
        ("repeated row", a),
        (
            "Hilbert 20×40",
            Tile::from_fn(20, 40, |i, j| 1.0 / (i + j + 1) as f64),
        ),
    ];
    for (what, a) in &cases {
        check_lq(what, a, &run("lq_factor", &[a]));
    }
}

#[test]
fn lq_kernels_are_the_qr_kernels_transposed_bit_for_bit() {
    let mut rng = Rng::new(32);
    let a = rng.mat(9, 14);
    let lq = run("lq_factor", &[&a]);
    let qr = run("qr_factor", &[&transpose(&a)]);
    assert_eq!(lq[0], transpose(&qr[0]), "v");
    assert_eq!(lq[1], qr[1], "t");
    assert_eq!(lq[2], transpose(&qr[2]), "l");
    let c = rng.mat(4, 14);
    let d = run("lq_apply", &[&lq[0], &lq[1], &c]);
    let e = run("qr_apply", &[&qr[0], &qr[1], &transpose(&c)]);
    assert_eq!(d[0], transpose(&e[0]), "lq_apply");
    let (l0, l1) = (rng.mat(6, 6), rng.mat(6, 4));
    let lq = run("lq_pair", &[&l0, &l1]);
    let qr = run("qr_pair", &[&transpose(&l0), &transpose(&l1)]);
    assert_eq!(lq[0], transpose(&qr[0]), "pair v");
    assert_eq!(lq[1], qr[1], "pair t");
    assert_eq!(lq[2], transpose(&qr[2]), "pair l");
}

#[test]
fn lq_pair_factors_the_tiles_side_by_side() {
    let mut rng = Rng::new(33);
    // QR's pair shapes transposed: l0 (or c0) m×n0 beside l1 (or c1) m×n1.
    for &(n0, n1, m) in PAIR_SHAPES {
        // l0 lower triangular, as in a tiled LQ, and a general l0.
        let general = rng.mat(m, n0);
        let lower = Tile::from_fn(m, n0, |i, j| if j <= i { general[(i, j)] } else { 0.0 });
        let l1 = rng.mat(m, n1);
        for l0 in [&lower, &general] {
            let out = run("lq_pair", &[l0, &l1]);
            check_lq(&format!("lq_pair {m}×{n0}+{n1}"), &beside(l0, &l1), &out);
        }
    }
}

#[test]
fn lq_apply_equals_c_times_the_explicit_q_transposed() {
    let mut rng = Rng::new(34);
    for &(m, n) in SHAPES {
        let a = rng.mat(m, n);
        let out = run("lq_factor", &[&a]);
        let (v, t, l) = (&out[0], &out[1], &out[2]);
        let qt = transpose(&form_q(v, t));
        for p in [1, 3, 33] {
            let c = rng.mat(p, n);
            let d = run("lq_apply", &[v, t, &c]).remove(0);
            assert_close("lq_apply", &d, &mul(&c, &qt), n.max(p));
        }
        // a·Qᵀ = [l 0].
        let d = run("lq_apply", &[v, t, &a]).remove(0);
        let k = m.min(n);
        let l0 = Tile::from_fn(m, n, |i, j| if j < k { l[(i, j)] } else { 0.0 });
        assert_close(&format!("a Qᵀ = [l 0] for {m}×{n}"), &d, &l0, m.max(n));
    }
}

#[test]
fn lq_apply_pair_equals_the_explicit_q_transposed() {
    let mut rng = Rng::new(35);
    for &(n0, n1, m) in PAIR_SHAPES {
        let out = run("lq_pair", &[&rng.mat(m, n0), &rng.mat(m, n1)]);
        let (v, t) = (&out[0], &out[1]);
        let qt = transpose(&form_q(v, t));
        for p in [1, 5, 40] {
            let (c0, c1) = (rng.mat(p, n0), rng.mat(p, n1));
            let want = mul(&beside(&c0, &c1), &qt);
            let d = run("lq_apply_pair", &[v, t, &c0, &c1]);
            let dim = (n0 + n1).max(p);
            assert_close("lq_apply_pair d0", &d[0], &cols(&want, 0, n0), dim);
            assert_close("lq_apply_pair d1", &d[1], &cols(&want, n0, n1), dim);
        }
    }
}

#[test]
fn lq_shape_mismatches_name_both_shapes() {
    let t = Tile::zeros;
    let cases: Vec<(&str, Vec<Tile>, &str)> = vec![
        ("lq_pair", vec![t(4, 3), t(5, 2)], "lq_pair: l0 is 4×3 but l1 is 5×2 (l0's rows must equal l1's rows)"),
        ("lq_apply", vec![t(5, 7), t(4, 4), t(2, 7)], "lq_apply: v is 5×7 but t is 4×4 (t must be square of order v's rows, 5)"),
        ("lq_apply", vec![t(5, 7), t(5, 5), t(2, 6)], "lq_apply: v is 5×7 but c is 2×6 (c's columns must equal v's columns)"),
        ("lq_apply_pair", vec![t(5, 7), t(5, 5), t(2, 3), t(2, 3)], "lq_apply_pair: v is 5×7 but c0 is 2×3 and c1 is 2×3 (c0's columns plus c1's columns must equal v's columns)"),
        ("lq_apply_pair", vec![t(5, 7), t(5, 5), t(2, 3), t(1, 4)], "lq_apply_pair: c0 is 2×3 but c1 is 1×4 (c0's rows must equal c1's rows)"),
    ];
    for (name, tiles, want) in cases {
        let refs: Vec<&Tile> = tiles.iter().collect();
        match call(name, &refs) {
            Ok(_) => panic!("{name} accepted {tiles:?}"),
            Err(e) => assert_eq!(e, want),
        }
    }
}
