//! The pivoted-LU kernels (`getrf`, `gessm`, `tstrf`, `ssssm`) and the
//! left solves (`trsm_lu`, `trsm_ln`, `trsm_lt`, `gemm_sub_t`) against
//! naive references written here: reconstruction of P·a = l·u, the
//! structure of every factor (unit diagonals, zero triangles, pivot tiles
//! that are permutations, multipliers at most 1), tiles with a zero
//! leading pivot on which `lu` fails, singular tiles, edge tiles of
//! unequal shapes, and the errors users see. Every call goes through
//! `Registry::standard()` and checks its result shapes against
//! `flops::result_shapes`.

use crate::calls::{self, call, fail, mul, norm, transpose, Rng};
use lpk_model::flops;
use lpk_runtime::kernels::Tile;

/// Calls `name`, expects success, the flop model's result shapes and a
/// flop count.
fn run(name: &str, tiles: &[&Tile]) -> Vec<Tile> {
    let out = calls::run(name, tiles);
    let shapes: Vec<(usize, usize)> = tiles.iter().map(|t| t.shape()).collect();
    assert!(flops::flops(name, &shapes).is_some_and(|f| f >= 0.0));
    out
}

/// Asserts ‖x − y‖ ≤ 1e-13 · n · max(‖y‖, 1).
fn assert_close(what: &str, x: &Tile, y: &Tile) {
    assert_eq!(x.shape(), y.shape(), "{what}: shapes");
    let d = Tile::from_fn(x.nrows(), x.ncols(), |i, j| x[(i, j)] - y[(i, j)]);
    let n = x.nrows().max(x.ncols()).max(1) as f64;
    let e = norm(&d);
    assert!(
        e <= 1e-13 * n * norm(y).max(1.0),
        "{what}: error {e:e} (‖y‖ = {:e})",
        norm(y)
    );
}

fn stack(top: &Tile, bottom: &Tile) -> Tile {
    assert_eq!(top.ncols(), bottom.ncols());
    Tile::from_fn(top.nrows() + bottom.nrows(), top.ncols(), |i, j| {
        if i < top.nrows() {
            top[(i, j)]
        } else {
            bottom[(i - top.nrows(), j)]
        }
    })
}

fn upper(a: &Tile) -> Tile {
    Tile::from_fn(
        a.nrows(),
        a.ncols(),
        |i, j| if i <= j { a[(i, j)] } else { 0.0 },
    )
}

fn lower(a: &Tile) -> Tile {
    Tile::from_fn(
        a.nrows(),
        a.ncols(),
        |i, j| if i >= j { a[(i, j)] } else { 0.0 },
    )
}

/// The pivot tile `p` as a permutation, asserting it is one (exact
/// integers, each row once).
fn permutation(p: &Tile) -> Vec<usize> {
    assert_eq!(p.ncols(), 1, "a pivot tile is a column");
    let n = p.nrows();
    let mut seen = vec![false; n];
    (0..n)
        .map(|i| {
            let x = p[(i, 0)];
            assert!(
                x >= 0.0 && x.fract() == 0.0 && (x as usize) < n,
                "p[{i}] = {x}"
            );
            assert!(!seen[x as usize], "p[{i}] = {x} twice");
            seen[x as usize] = true;
            x as usize
        })
        .collect()
}

/// P·a: row i is row `p[i]` of a.
fn permute(p: &Tile, a: &Tile) -> Tile {
    let perm = permutation(p);
    Tile::from_fn(a.nrows(), a.ncols(), |i, j| a[(perm[i], j)])
}

/// Asserts l is unit lower trapezoidal (ones and zeros stored exactly)
/// with multipliers of magnitude at most 1 (partial pivoting).
fn assert_unit_lower(what: &str, l: &Tile) {
    for j in 0..l.ncols() {
        for i in 0..l.nrows() {
            let x = l[(i, j)];
            match i.cmp(&j) {
                std::cmp::Ordering::Less => assert_eq!(x, 0.0, "{what}[{i}, {j}]"),
                std::cmp::Ordering::Equal => assert_eq!(x, 1.0, "{what}[{i}, {j}]"),
                std::cmp::Ordering::Greater => assert!(x.abs() <= 1.0, "{what}[{i}, {j}] = {x}"),
            }
        }
    }
}

fn assert_upper(what: &str, u: &Tile) {
    assert_eq!(u, &upper(u), "{what} is not upper triangular");
}

/// Runs `getrf` on `a` and checks P·a = l·u and the factors' structure.
fn check_getrf(what: &str, a: &Tile) -> Vec<Tile> {
    let out = run("getrf", &[a]);
    let (l, u, p) = (&out[0], &out[1], &out[2]);
    assert_unit_lower(&format!("{what}: l"), l);
    assert_upper(&format!("{what}: u"), u);
    assert_close(&format!("{what}: P a = l u"), &mul(l, u), &permute(p, a));
    out
}

/// The square orders of the tests.
const ORDERS: &[usize] = &[1, 2, 3, 7, 17, 33, 64, 130];

#[test]
fn getrf_is_partial_pivoting_lu() {
    let mut rng = Rng::new(21);
    for &n in ORDERS {
        let a = rng.mat(n, n);
        let out = check_getrf(&format!("getrf {n}"), &a);
        // Partial pivoting: every pivot is the largest candidate of its
        // column, so |u[j, j]| >= |l[i, j] u[j, j]| for i > j, and the
        // first pivot is the largest entry of a's first column.
        let max0 = (0..n).map(|i| a[(i, 0)].abs()).fold(0.0, f64::max);
        assert_eq!(out[1][(0, 0)].abs(), max0, "getrf {n}: first pivot");
    }
}

#[test]
fn getrf_pivots_where_lu_fails() {
    for n in [2, 5, 40] {
        // A zero leading entry: lu stops, getrf swaps.
        let mut rng = Rng::new(22 + n as u64);
        let mut a = rng.mat(n, n);
        a[(0, 0)] = 0.0;
        let err = fail("lu", &[&a]);
        assert!(err.contains("pivot 0 is zero"), "{err}");
        check_getrf(&format!("zero pivot {n}"), &a);
        // A tiny leading entry: lu's huge multipliers lose every digit
        // (or cancel into an exact zero pivot further on); getrf's
        // reconstruction stays at rounding.
        a[(0, 0)] = 1e-18;
        if let Ok(lu) = call("lu", &[&a]) {
            let lu_a = mul(&lu[0], &lu[1]);
            let lu_err = norm(&Tile::from_fn(n, n, |i, j| lu_a[(i, j)] - a[(i, j)]));
            assert!(lu_err > 1e-6, "lu loses accuracy ({lu_err:e})");
        }
        check_getrf(&format!("tiny pivot {n}"), &a);
    }
}

#[test]
fn getrf_of_a_singular_tile_skips_the_zero_column() {
    let mut rng = Rng::new(23);
    let mut a = rng.mat(6, 6);
    for i in 0..6 {
        a[(i, 2)] = 0.0;
    }
    let out = check_getrf("zero column", &a);
    assert_eq!(out[1][(2, 2)], 0.0, "u keeps the zero pivot");
    let zero = Tile::zeros(4, 4);
    let out = check_getrf("zero tile", &zero);
    assert_eq!(out[1], zero);
}

#[test]
fn gessm_applies_the_getrf_transformation() {
    let mut rng = Rng::new(24);
    for &n in ORDERS {
        let a = rng.mat(n, n);
        let f = run("getrf", &[&a]);
        for c in [1, n, 2 * n + 3] {
            let x = rng.mat(n, c);
            let b = run("gessm", &[&f[2], &f[0], &x]);
            // l·b = P·x.
            assert_close(
                &format!("gessm {n}x{c}"),
                &mul(&f[0], &b[0]),
                &permute(&f[2], &x),
            );
        }
        // Applied to a itself it gives u.
        let b = run("gessm", &[&f[2], &f[0], &a]);
        assert_close(&format!("gessm {n} on a"), &b[0], &f[1]);
    }
}

/// Runs `tstrf` on (u, a) and checks P·[triu(u); a] = l·u2.
fn check_tstrf(what: &str, u: &Tile, a: &Tile) -> Vec<Tile> {
    let out = run("tstrf", &[u, a]);
    let (u2, l, p) = (&out[0], &out[1], &out[2]);
    assert_unit_lower(&format!("{what}: l"), l);
    assert_upper(&format!("{what}: u2"), u2);
    let s = stack(&upper(u), a);
    assert_close(
        &format!("{what}: P [u; a] = l u2"),
        &mul(l, u2),
        &permute(p, &s),
    );
    out
}

/// (n, m): u n×n on a m×n, square and edge shapes.
const PAIRS: &[(usize, usize)] = &[(1, 1), (3, 2), (7, 7), (17, 5), (5, 17), (64, 64), (33, 70)];

#[test]
fn tstrf_is_partial_pivoting_lu_of_the_stack() {
    let mut rng = Rng::new(25);
    for &(n, m) in PAIRS {
        let u = rng.mat(n, n);
        let a = rng.mat(m, n);
        let out = check_tstrf(&format!("tstrf {n} on {m}"), &u, &a);
        // Only u's upper triangle is read.
        assert_eq!(run("tstrf", &[&upper(&u), &a]), out, "tstrf {n}: lower u");
    }
    // A zero top triangle (a singular diagonal tile): the pivots come
    // from the tile below.
    let a = rng.mat(5, 5);
    let out = check_tstrf("zero u", &Tile::zeros(5, 5), &a);
    assert!((0..5).all(|j| out[0][(j, j)] != 0.0), "u2 is non-singular");
}

#[test]
fn ssssm_applies_the_tstrf_transformation() {
    let mut rng = Rng::new(26);
    for &(n, m) in PAIRS {
        let u = upper(&rng.mat(n, n));
        let a = rng.mat(m, n);
        let f = run("tstrf", &[&u, &a]);
        let (u2, l, p) = (&f[0], &f[1], &f[2]);
        // Applied to the stack it factored: [u2; 0].
        let d = run("ssssm", &[l, p, &u, &a]);
        assert_close(&format!("ssssm {n} {m}: d0"), &d[0], u2);
        assert!(norm(&d[1]) <= 1e-13 * (n + m) as f64 * norm(&a).max(1.0));
        for k in [1, n + 2] {
            let (c0, c1) = (rng.mat(n, k), rng.mat(m, k));
            let d = run("ssssm", &[l, p, &c0, &c1]);
            // P·[c0; c1] = [l | (0; I)]·[d0; d1].
            let mut want = mul(l, &d[0]);
            for i in 0..m {
                for j in 0..k {
                    want[(n + i, j)] += d[1][(i, j)];
                }
            }
            let pc = permute(p, &stack(&c0, &c1));
            assert_close(&format!("ssssm {n} {m} {k}"), &want, &pc);
        }
    }
}

#[test]
fn pivot_kernel_errors_are_clear() {
    let mut rng = Rng::new(27);
    let a = rng.mat(4, 4);
    let f = run("getrf", &[&a]);
    let e = fail("getrf", &[&rng.mat(3, 4)]);
    assert!(e.contains("getrf: a is 3×4 but must be square"), "{e}");
    let mut nan = a.clone();
    nan[(2, 1)] = f64::NAN;
    let e = fail("getrf", &[&nan]);
    assert!(e.contains("a[2, 1] is not finite"), "{e}");
    let mut bad = f[2].clone();
    bad[(1, 0)] = bad[(0, 0)];
    let e = fail("gessm", &[&bad, &f[0], &a]);
    assert!(e.contains("gessm: p is not a pivot tile"), "{e}");
    let e = fail("gessm", &[&Tile::zeros(4, 2), &f[0], &a]);
    assert!(e.contains("p is 4×2 but must be 4×1"), "{e}");
    let e = fail("gessm", &[&f[2], &f[0], &rng.mat(3, 2)]);
    assert!(e.contains("a's rows must equal l's order"), "{e}");
    let e = fail("tstrf", &[&a, &rng.mat(2, 3)]);
    assert!(e.contains("a's columns must equal u's order"), "{e}");
    let t = run("tstrf", &[&a, &rng.mat(2, 4)]);
    let e = fail("ssssm", &[&t[1], &t[2], &rng.mat(4, 3), &rng.mat(3, 3)]);
    assert!(
        e.contains("c0's rows plus c1's rows must equal l's rows"),
        "{e}"
    );
    let e = fail("ssssm", &[&t[1], &t[2], &rng.mat(4, 3), &rng.mat(2, 5)]);
    assert!(e.contains("c1's columns must equal c0's columns"), "{e}");
}

/// A well-conditioned triangle with garbage in the other half (which the
/// kernels must not read).
fn triangle_with_garbage(rng: &mut Rng, n: usize, lower_part: bool) -> (Tile, Tile) {
    let mut t = rng.mat(n, n);
    for i in 0..n {
        t[(i, i)] = 2.0 + (n as f64).sqrt() + rng.next().abs();
    }
    let clean = if lower_part { lower(&t) } else { upper(&t) };
    (t, clean)
}

#[test]
fn left_solves_match_their_definition() {
    let mut rng = Rng::new(28);
    for &n in ORDERS {
        for c in [1, 3, n + 1] {
            let b = rng.mat(n, c);
            let (u, uc) = triangle_with_garbage(&mut rng, n, false);
            let x = &run("trsm_lu", &[&u, &b])[0];
            assert_close(&format!("trsm_lu {n} {c}"), &mul(&uc, x), &b);
            let (l, lc) = triangle_with_garbage(&mut rng, n, true);
            let x = &run("trsm_ln", &[&l, &b])[0];
            assert_close(&format!("trsm_ln {n} {c}"), &mul(&lc, x), &b);
            let x = &run("trsm_lt", &[&l, &b])[0];
            assert_close(&format!("trsm_lt {n} {c}"), &mul(&transpose(&lc), x), &b);
        }
    }
    let e = fail("trsm_lu", &[&Tile::zeros(3, 3), &rng.mat(3, 2)]);
    assert!(
        e.contains("trsm_lu: u is singular (diagonal entry 0 is zero)"),
        "{e}"
    );
    let e = fail("trsm_ln", &[&rng.mat(3, 3), &rng.mat(4, 2)]);
    assert!(e.contains("b's rows must equal l's order"), "{e}");
    let e = fail("trsm_lt", &[&rng.mat(3, 4), &rng.mat(3, 2)]);
    assert!(e.contains("l is 3×4 but must be square"), "{e}");
}

#[test]
fn gemm_sub_t_is_c_minus_a_transpose_b() {
    let mut rng = Rng::new(29);
    for (m, n, k) in [(1, 1, 1), (2, 3, 4), (7, 5, 3), (64, 64, 64), (5, 130, 2)] {
        let (c, a, b) = (rng.mat(m, n), rng.mat(k, m), rng.mat(k, n));
        let atb = mul(&transpose(&a), &b);
        let want = Tile::from_fn(m, n, |i, j| c[(i, j)] - atb[(i, j)]);
        assert_close(
            &format!("gemm_sub_t {m} {n} {k}"),
            &run("gemm_sub_t", &[&c, &a, &b])[0],
            &want,
        );
    }
    let e = fail(
        "gemm_sub_t",
        &[&rng.mat(3, 2), &rng.mat(4, 3), &rng.mat(5, 2)],
    );
    assert!(e.contains("a's rows must equal b's rows"), "{e}");
}
