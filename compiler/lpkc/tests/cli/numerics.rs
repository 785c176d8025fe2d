//! Numerics of `lpkc run` with the standard kernels, end to end through the
//! binary: every example on square and non-square shapes, edge tiles and
//! 1×1 tile grids, against the dense relation its outputs must satisfy
//! (`--verify`: ‖A − L Lᵀ‖/‖A‖, ‖A − L U‖/‖A‖, ‖AᵀA − RᵀR‖/‖A‖², ‖L X − B‖,
//! ‖C − A B‖, each bounded by 1e-12 · n), and identical output files for
//! every worker count; and every example's written files read back and
//! checked against a naive product written here (the final TSQR R asked
//! for by its tile). Plus the failures a user meets: missing or
//! malformed `.npy`, a shape that does not fit, a non-SPD matrix — each exit
//! code 1 with a clear message and no `_SUCCESS` marker.

use crate::binary::lpkc;

use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lpk-numerics-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Every file under `dir` with its bytes, sorted by path.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("readable").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).expect("inside").to_path_buf();
                out.push((rel, std::fs::read(&p).expect("readable")));
            }
        }
    }
    out.sort();
    out
}

/// Runs `example` with `inputs` at `block` on 1 and 3 workers, asserts the
/// residual is within its bound and the output directories are identical.
fn check(example: &str, block: usize, inputs: &[&str]) {
    let tag = format!(
        "{example}-{block}-{}",
        inputs.join("-").replace([':', '='], "_")
    );
    let mut previous: Option<Vec<(PathBuf, Vec<u8>)>> = None;
    for workers in ["1", "3"] {
        let dir = scratch(&format!("{tag}-{workers}"));
        let dir_s = dir.display().to_string();
        let path = format!("examples/{example}.lpk");
        let block_s = block.to_string();
        let mut args = vec![
            "run",
            &path,
            "--block",
            &block_s,
            "--workers",
            workers,
            "--verify",
            "--format",
            "json",
            "--output-dir",
            &dir_s,
        ];
        for i in inputs {
            args.push("--input");
            args.push(i);
        }
        let (code, out, err) = lpkc(&args);
        assert_eq!(code, 0, "{example} {inputs:?} block {block}: {err}{out}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
        let r = &v["residual"];
        let value = r["value"].as_f64().expect("residual value");
        let bound = r["bound"].as_f64().expect("residual bound");
        assert!(
            r["ok"] == true && value <= bound,
            "{example} {inputs:?} block {block}: residual {value:e} > {bound:e}"
        );
        assert!(value.is_finite());
        assert!(dir.join("_SUCCESS").exists());
        let now = files(&dir);
        assert!(now.len() > 1, "outputs were written");
        if let Some(prev) = &previous {
            assert!(
                prev == &now,
                "{example} {inputs:?}: outputs differ between worker counts"
            );
        }
        previous = Some(now);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn cholesky() {
    check("cholesky", 4, &["A=spd:1"]); // 1x1 grid of a 1x1 matrix
    check("cholesky", 16, &["A=spd:10"]); // 1x1 grid, block larger than n
    check("cholesky", 4, &["A=spd:10"]); // edge tiles of 2
    check("cholesky", 7, &["A=spd:50"]);
    check("cholesky", 16, &["A=spd:64"]);
}

/// The GEMM tree padded with a zero matrix is the dense product for
/// K = 1..17 tiles of the reduced dimension (an edge tile of 2 in every
/// dimension): `--verify`'s residual on 1 and 3 workers with identical
/// outputs, and the written C against a naive product.
#[test]
fn gemm_tree_zero_is_the_product_for_k_1_to_17() {
    for k in 1..=17 {
        let inner = 3 * k - 1;
        let (a, b) = (format!("random:5x{inner}"), format!("random:{inner}x8"));
        check("gemm_tree_zero", 3, &[&format!("A={a}"), &format!("B={b}")]);
        check_product("gemm_tree_zero", 3, &a, &b);
    }
}

#[test]
fn lu() {
    check("lu", 5, &["A=spd:5"]);
    check("lu", 8, &["A=spd:30"]);
    check("lu", 6, &["A=spd:31"]);
}

#[test]
fn tsqr() {
    // Row blocks of 16 x 7; the last has 4 rows, fewer than its columns.
    check("tsqr", 16, &["A=random:100x7"]);
    check("tsqr", 8, &["A=random:64x8"]);
    check("tsqr", 40, &["A=random:33x5"]); // one leaf
}

#[test]
fn caqr() {
    check("caqr", 8, &["A=random:40x24"]);
    check("caqr", 8, &["A=random:37x21"]);
    check("caqr", 8, &["A=random:8x8"]);
}

#[test]
fn gemm_tree() {
    check("gemm_tree", 4, &["A=random:20x33", "B=random:33x9"]);
    check("gemm_tree", 8, &["A=random:8x8", "B=random:8x8"]);
    check("gemm_tree", 5, &["A=random:7x80", "B=random:80x3"]);
}

#[test]
fn triangular() {
    check("trsolve", 8, &["L=spd:30", "B=random:30x11"]);
    check("trsolve", 8, &["L=spd:8", "B=random:8x3"]);
    check("trtri", 6, &["L=spd:25"]);
    check("trtri", 30, &["L=spd:25"]);
}

#[test]
fn solves() {
    check("gesv", 8, &["A=random:30x30", "B=random:30x11"]);
    check("gesv", 5, &["A=random:5x5", "B=random:5x1"]);
    check("posv", 8, &["A=spd:30", "B=random:30x11"]);
    check("posv", 16, &["A=spd:10", "B=random:10x3"]);
}

/// Runs a failing command with an output directory and returns stderr,
/// after asserting exit code 1 and no marker.
fn fails(args: &[&str], name: &str) -> String {
    fails_with(1, args, name)
}

/// [`fails`] with exit code `want`.
fn fails_with(want: i32, args: &[&str], name: &str) -> String {
    let dir = scratch(name);
    std::fs::create_dir_all(&dir).expect("dir");
    // A stale marker from an earlier run must not survive a failed run.
    std::fs::write(dir.join("_SUCCESS"), "stale").expect("marker");
    let dir_s = dir.display().to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--output-dir", &dir_s]);
    let (code, out, err) = lpkc(&all);
    assert_eq!(code, want, "{args:?}: {out}{err}");
    assert!(!dir.join("_SUCCESS").exists(), "{args:?} left a marker");
    let _ = std::fs::remove_dir_all(&dir);
    err
}

#[test]
fn bad_inputs_are_clear_errors() {
    let run = ["run", "examples/cholesky.lpk", "--block", "4"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        run.iter().copied().chain(extra.iter().copied()).collect()
    };
    // A missing file is a usage error (docs/cli.md: exit code 2).
    let err = fails_with(2, &with(&["--input", "A=/nonexistent/a.npy"]), "missing");
    assert!(err.contains("/nonexistent/a.npy"), "{err}");

    let garbage = std::env::temp_dir().join(format!("lpk-garbage-{}.npy", std::process::id()));
    std::fs::write(&garbage, b"this is not a numpy file at all").expect("write");
    let spec: &'static str = Box::leak(format!("A={}", garbage.display()).into_boxed_str());
    let err = fails(&with(&["--input", spec]), "garbage");
    assert!(err.contains("lpk-garbage"), "{err}");
    let _ = std::fs::remove_file(&garbage);

    // Not square: A[N, N] cannot hold a 10 x 12 matrix.
    let err = fails(&with(&["--input", "A=random:10x12"]), "shape");
    assert!(err.contains("A"), "{err}");

    // Not positive definite: the failing task and tile are named.
    let err = fails(&with(&["--input", "A=random:8x8"]), "spd");
    assert!(err.contains("chol") || err.contains("trsm"), "{err}");
    assert!(err.contains("positive definite"), "{err}");

    // A parameter that contradicts the data.
    let err = fails(&with(&["--input", "A=spd:8", "-p", "N=3"]), "param");
    assert!(err.contains('N'), "{err}");
}

#[test]
fn inputs_whose_tied_dimensions_differ_fail_before_any_task() {
    // A's 128 columns and B's 100 rows both make 2 tiles of 64, so the
    // grids fit; gemm_acc ties them, and the check at bind time says so.
    let err = fails(
        &[
            "run",
            "examples/gemm.lpk",
            "--block",
            "64",
            "--input",
            "A=random:256x128",
            "--input",
            "B=random:100x256",
        ],
        "disagree",
    );
    assert!(
        err.contains(
            "inputs `A` (256×128) and `B` (100×256) disagree: A's columns (128, 2 tiles of 64) \
             and B's rows (100, 2 tiles of 64 with an edge tile of 36) meet in kernel `gemm_acc` \
             (line 40) as `a`'s columns and `b`'s rows"
        ),
        "{err}"
    );
    assert!(!err.contains("failed reading"), "no task ran: {err}");
}

#[test]
fn output_tiles_go_to_an_object_store_url() {
    let store = scratch("store");
    let out = scratch("store-out");
    let url = format!("file://{}", store.display());
    std::fs::create_dir_all(&store).expect("dir");
    let out_s = out.display().to_string();
    let (code, _, err) = lpkc(&[
        "run",
        "examples/cholesky.lpk",
        "--block",
        "8",
        "--input",
        "A=spd:20",
        "--tile-store",
        &url,
        "--output-dir",
        &out_s,
    ]);
    assert_eq!(code, 0, "{err}");
    let l = lpk_runtime::npy::read_file(&out.join("L.npy")).expect("assembled L");
    // Tiles of 8 with an edge of 4: every lower tile is in the store and
    // equals its block of the assembled factor.
    for i in 0..3usize {
        for j in 0..=i {
            let t = lpk_runtime::npy::read_file(&store.join(format!("L/{i}_{j}.npy")))
                .expect("tile in the store");
            let (r0, c0) = (8 * i, 8 * j);
            assert_eq!(t.nrows(), 8.min(20 - r0));
            assert_eq!(t.ncols(), 8.min(20 - c0));
            for c in 0..t.ncols() {
                for r in 0..t.nrows() {
                    assert_eq!(t[(r, c)], l[(r0 + r, c0 + c)]);
                }
            }
        }
    }
    assert!(
        !store.join("L/0_1.npy").exists(),
        "upper tiles are not written"
    );
    let _ = std::fs::remove_dir_all(&store);
    let _ = std::fs::remove_dir_all(&out);
}

/// A dense matrix as the tests handle it.
type Mat = lpk_runtime::kernels::Tile;

/// `a · b` by the textbook triple loop: a reference that shares no code
/// with the kernels.
fn naive_mul(a: &Mat, b: &Mat) -> Mat {
    assert_eq!(a.ncols(), b.nrows(), "conforming");
    Mat::from_fn(a.nrows(), b.ncols(), |i, j| {
        (0..a.ncols()).map(|k| a[(i, k)] * b[(k, j)]).sum()
    })
}

fn transpose(a: &Mat) -> Mat {
    Mat::from_fn(a.ncols(), a.nrows(), |i, j| a[(j, i)])
}

/// The lower (`lower`) or upper triangle of `a`, the rest zero.
fn triangle(a: &Mat, lower: bool) -> Mat {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| {
        if (lower && i >= j) || (!lower && i <= j) {
            a[(i, j)]
        } else {
            0.0
        }
    })
}

/// Asserts ‖have − want‖ ≤ 1e-12 · n · scale (n the largest dimension).
fn close(what: &str, have: &Mat, want: &Mat, scale: f64) {
    assert_eq!(
        (have.nrows(), have.ncols()),
        (want.nrows(), want.ncols()),
        "{what}: shapes"
    );
    let diff = Mat::from_fn(have.nrows(), have.ncols(), |i, j| {
        have[(i, j)] - want[(i, j)]
    });
    let n = have.nrows().max(have.ncols()).max(1) as f64;
    let err = diff.norm_l2();
    assert!(
        err.is_finite() && err <= 1e-12 * n * scale.max(1.0),
        "{what}: residual {err:e} for scale {scale:e}"
    );
}

/// Runs `example` on inputs written as `.npy` files by the test, with
/// `--output-dir` and `extra` arguments, and returns the inputs and the
/// directory the outputs were written to.
fn run_on_files(
    example: &str,
    block: usize,
    inputs: &[(&str, &str)],
    extra: &[&str],
) -> (Vec<Mat>, PathBuf) {
    let tag = format!(
        "ref-{example}-{block}-{}",
        inputs
            .iter()
            .map(|(_, s)| s.replace(':', "_"))
            .collect::<Vec<_>>()
            .join("-")
    );
    let dir = scratch(&tag);
    let out = dir.join("out");
    std::fs::create_dir_all(&dir).expect("dir");
    let mut data = Vec::new();
    let mut args: Vec<String> = [
        "run",
        &format!("examples/{example}.lpk"),
        "--block",
        &block.to_string(),
        "--output-dir",
        &out.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (k, (name, spec)) in inputs.iter().enumerate() {
        let m = lpk_runtime::dense::InputSpec::parse(spec)
            .expect("spec")
            .generate(11 + k as u64)
            .expect("generated");
        let file = dir.join(format!("{name}.npy"));
        lpk_runtime::npy::write_file(&file, &m).expect("write input");
        args.push("--input".into());
        args.push(format!("{name}={}", file.display()));
        data.push(m);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, err) = lpkc(&argv);
    assert_eq!(code, 0, "{argv:?}: {err}{stdout}");
    assert!(out.join("_SUCCESS").exists(), "{argv:?}");
    (data, out)
}

/// Removes what [`run_on_files`] wrote (inputs and outputs).
fn clean(out: &Path) {
    if let Some(dir) = out.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn read(dir: &Path, file: &str) -> Mat {
    lpk_runtime::npy::read_file(&dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// `A = L Lᵀ`, from the lower triangle of A (the program reads only that).
fn check_cholesky(block: usize, n: usize) {
    let spec = format!("spd:{n}");
    let (a, out) = run_on_files("cholesky", block, &[("A", &spec)], &[]);
    let l = triangle(&read(&out, "L.npy"), true);
    close(
        &format!("cholesky {spec} block {block}"),
        &naive_mul(&l, &transpose(&l)),
        &a[0],
        a[0].norm_l2(),
    );
    clean(&out);
}

fn check_lu(block: usize, n: usize) {
    let spec = format!("spd:{n}");
    let (a, out) = run_on_files("lu", block, &[("A", &spec)], &[]);
    let (l, u) = (read(&out, "L.npy"), read(&out, "U.npy"));
    close(
        &format!("lu {spec} block {block}"),
        &naive_mul(&l, &u),
        &a[0],
        a[0].norm_l2(),
    );
    clean(&out);
}

/// `RᵀR = AᵀA` for the R factor written: R is unique up to the signs of
/// its rows, which this relation does not see.
fn check_qr(what: &str, a: &Mat, r: &Mat) {
    assert_eq!((r.nrows(), r.ncols()), (a.ncols(), a.ncols()), "{what}: R");
    let r = triangle(r, false);
    let na = a.norm_l2();
    close(
        what,
        &naive_mul(&transpose(&r), &r),
        &naive_mul(&transpose(a), a),
        na * na,
    );
}

/// The final R of TSQR, asked for by its tile: `R[ceil(log2 N), 0]`.
fn check_tsqr(block: usize, rows: usize, cols: usize) {
    let spec = format!("random:{rows}x{cols}");
    let n = rows.div_ceil(block);
    let level = (n as f64).log2().ceil() as usize;
    let tile = format!("R[{level}, 0]");
    let (a, out) = run_on_files("tsqr", block, &[("A", &spec)], &["--output", &tile]);
    let r = read(&out, &format!("R[{level},0].npy"));
    check_qr(&format!("tsqr {spec} block {block}"), &a[0], &r);
    clean(&out);
}

fn check_caqr(block: usize, rows: usize, cols: usize) {
    let spec = format!("random:{rows}x{cols}");
    let (a, out) = run_on_files("caqr", block, &[("A", &spec)], &[]);
    check_qr(
        &format!("caqr {spec} block {block}"),
        &a[0],
        &read(&out, "R.npy"),
    );
    clean(&out);
}

/// The band reduction: B is zero below its diagonal and above its
/// `block`-th superdiagonal, exactly, and has A's singular values:
/// `--verify` compares them (faer's SVD of both), and here the traces of
/// (AᵀA)ᵖ = Σ σᵢ²ᵖ, p = 1, 2, 3, are compared with BᵀB's by naive products.
fn check_bdfac(block: usize, n: usize) {
    let spec = format!("random:{n}x{n}");
    let (a, out) = run_on_files("bdfac", block, &[("A", &spec)], &["--verify"]);
    let b = read(&out, "B.npy");
    let what = format!("bdfac {spec} block {block}");
    assert_eq!((b.nrows(), b.ncols()), (n, n), "{what}: B");
    for j in 0..n {
        for i in 0..n {
            if i > j || j > i + block {
                assert_eq!(b[(i, j)], 0.0, "{what}: B[{i}, {j}] is outside the band");
            }
        }
    }
    let gram = |m: &Mat| naive_mul(&transpose(m), m);
    let trace = |m: &Mat| (0..m.nrows()).map(|i| m[(i, i)]).sum::<f64>();
    let (ga, gb) = (gram(&a[0]), gram(&b));
    let (mut pa, mut pb) = (ga.clone(), gb.clone());
    for p in 1..=3 {
        let (ta, tb) = (trace(&pa), trace(&pb));
        assert!(
            (ta - tb).abs() <= 1e-12 * n as f64 * ta,
            "{what}: trace((AᵀA)^{p}) = {ta:e} but trace((BᵀB)^{p}) = {tb:e}"
        );
        pa = naive_mul(&pa, &ga);
        pb = naive_mul(&pb, &gb);
    }
    clean(&out);
}

fn check_product(example: &str, block: usize, a: &str, b: &str) {
    let (ab, out) = run_on_files(example, block, &[("A", a), ("B", b)], &[]);
    let c = read(&out, "C.npy");
    close(
        &format!("{example} {a} {b} block {block}"),
        &c,
        &naive_mul(&ab[0], &ab[1]),
        ab[0].norm_l2() * ab[1].norm_l2(),
    );
    clean(&out);
}

/// `L X = B` with L's lower triangle.
fn check_trsolve(block: usize, n: usize, r: usize) {
    let (l, b) = (format!("spd:{n}"), format!("random:{n}x{r}"));
    let (data, out) = run_on_files("trsolve", block, &[("L", &l), ("B", &b)], &[]);
    let x = read(&out, "X.npy");
    let lower = triangle(&data[0], true);
    close(
        &format!("trsolve {l} {b} block {block}"),
        &naive_mul(&lower, &x),
        &data[1],
        lower.norm_l2() * x.norm_l2(),
    );
    clean(&out);
}

/// `L X = I` with L's lower triangle.
fn check_trtri(block: usize, n: usize) {
    let spec = format!("spd:{n}");
    let (data, out) = run_on_files("trtri", block, &[("L", &spec)], &[]);
    let x = read(&out, "X.npy");
    let lower = triangle(&data[0], true);
    let id = Mat::from_fn(n, n, |i, j| if i == j { 1.0 } else { 0.0 });
    close(
        &format!("trtri {spec} block {block}"),
        &naive_mul(&lower, &x),
        &id,
        lower.norm_l2() * x.norm_l2(),
    );
    clean(&out);
}

/// log |det M| by Gaussian elimination with partial pivoting, written
/// here.
fn log_abs_det(m: &Mat) -> f64 {
    let n = m.nrows();
    let mut a = m.clone();
    let mut log = 0.0;
    for j in 0..n {
        let p = (j..n)
            .max_by(|&x, &y| a[(x, j)].abs().total_cmp(&a[(y, j)].abs()))
            .unwrap_or(j);
        for c in 0..n {
            let t = a[(j, c)];
            a[(j, c)] = a[(p, c)];
            a[(p, c)] = t;
        }
        log += a[(j, j)].abs().ln();
        for i in j + 1..n {
            let f = a[(i, j)] / a[(j, j)];
            for c in j..n {
                a[(i, c)] -= f * a[(j, c)];
            }
        }
    }
    log
}

/// `U` of the incremental-pivoting LU is upper triangular and, since every
/// other factor is a permutation or unit triangular, |det U| = |det A|.
fn check_getrf(block: usize, n: usize) {
    let spec = format!("random:{n}x{n}");
    let (a, out) = run_on_files("getrf", block, &[("A", &spec)], &[]);
    let u = read(&out, "U.npy");
    assert_eq!(
        u,
        triangle(&u, false),
        "getrf {spec}: U is upper triangular"
    );
    let logdet: f64 = (0..n).map(|i| u[(i, i)].abs().ln()).sum();
    let want = log_abs_det(&a[0]);
    assert!(
        (logdet - want).abs() <= 1e-10 * n as f64 * want.abs().max(1.0),
        "getrf {spec} block {block}: log|det U| = {logdet}, log|det A| = {want}"
    );
    clean(&out);
}

/// `A X = B` (A symmetric from its lower triangle for posv).
fn check_solve(example: &str, block: usize, n: usize, r: usize) {
    let a_spec = if example == "posv" {
        format!("spd:{n}")
    } else {
        format!("random:{n}x{n}")
    };
    let b_spec = format!("random:{n}x{r}");
    let (data, out) = run_on_files(example, block, &[("A", &a_spec), ("B", &b_spec)], &[]);
    let x = read(&out, "X.npy");
    close(
        &format!("{example} {a_spec} {b_spec} block {block}"),
        &naive_mul(&data[0], &x),
        &data[1],
        data[0].norm_l2() * x.norm_l2(),
    );
    clean(&out);
}

/// Every example's written outputs, read back and checked against a
/// naive reference computed here: edge tiles, 1 x 1 grids, and blocks
/// larger than the matrix.
#[test]
fn every_example_writes_outputs_that_satisfy_its_relation() {
    let examples: Vec<String> =
        std::fs::read_dir(lpk_test_support::workspace_root().join("examples"))
            .expect("examples")
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".lpk").map(str::to_string)
            })
            .collect();
    for example in &examples {
        match example.as_str() {
            "cholesky" => {
                check_cholesky(4, 1);
                check_cholesky(4, 10);
                check_cholesky(16, 10);
            }
            "lu" => {
                check_lu(6, 31);
                check_lu(5, 5);
            }
            "tsqr" => {
                check_tsqr(16, 100, 7);
                check_tsqr(40, 33, 5);
                check_tsqr(256, 2000, 16);
            }
            "bdfac" => {
                check_bdfac(4, 1);
                check_bdfac(4, 7);
                check_bdfac(4, 13);
                check_bdfac(5, 25);
            }
            "caqr" => {
                check_caqr(8, 37, 21);
                check_caqr(8, 8, 8);
            }
            "gemm" | "gemm_tree" | "gemm_tree_zero" => {
                check_product(example, 4, "random:20x33", "random:33x9");
                check_product(example, 8, "random:7x5", "random:5x3");
            }
            "trsolve" => {
                check_trsolve(8, 30, 11);
                check_trsolve(8, 8, 3);
            }
            "trtri" => {
                check_trtri(6, 25);
                check_trtri(30, 25);
            }
            "getrf" => {
                check_getrf(6, 31);
                check_getrf(8, 8);
            }
            "gesv" | "posv" => {
                check_solve(example, 7, 30, 11);
                check_solve(example, 16, 10, 3);
            }
            other => panic!("examples/{other}.lpk has no reference check here: add one"),
        }
    }
    assert!(examples.len() >= 8, "{examples:?}");
}
