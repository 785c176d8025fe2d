//! Solving A X = B through the binary against NumPy: `examples/gesv.lpk`
//! (the pivoted tile LU) on random matrices and on matrices with a zero or
//! tiny leading entry, where `examples/lu.lpk` fails or loses every digit,
//! and `examples/posv.lpk` (Cholesky) on SPD matrices, for several tile
//! grids N × M whose blocks do not divide the sizes. Python 3 with NumPy
//! makes the inputs, runs `lpkc run` and measures: the normwise backward
//! error ‖A X − B‖ / (‖A‖ ‖X‖ + ‖B‖) of lpk's X and of
//! `numpy.linalg.solve`'s on the same system, and their relative
//! difference. A missing `python3` or NumPy fails the test.

use crate::binary::{run, scratch_dir};

/// The oracle: for each case of argv[3] (JSON: program, kind, n, columns,
/// block), writes A and B, runs lpkc, and prints one JSON line with the
/// backward errors and the difference to NumPy's solution.
const ORACLE: &str = r#"
import json, os, subprocess, sys
import numpy as np

lpkc, scratch, cases = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
rng = np.random.default_rng(7)

def backward(a, x, b):
    r = np.linalg.norm(a @ x - b)
    return r / (np.linalg.norm(a) * np.linalg.norm(x) + np.linalg.norm(b))

for i, (program, kind, n, cols, block) in enumerate(cases):
    a = rng.standard_normal((n, n))
    if kind == "spd":
        a = a @ a.T / n + np.eye(n)
    elif kind == "zero":
        a[0, 0] = 0.0
    elif kind == "tiny":
        a[0, 0] = 1e-15
    b = rng.standard_normal((n, cols))
    d = os.path.join(scratch, f"case{i}")
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "a.npy"), a)
    np.save(os.path.join(d, "b.npy"), b)
    out = os.path.join(d, "out")
    p = subprocess.run([lpkc, "run", f"examples/{program}.lpk", "--block", str(block),
                        "--workers", "2", "--input", f"A={d}/a.npy", "--input",
                        f"B={d}/b.npy", "--output-dir", out, "--no-progress"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(json.dumps({"case": i, "error": p.stderr}))
        continue
    x = np.load(os.path.join(out, "X.npy"))
    xn = np.linalg.solve(a, b)
    row = {"case": i, "ours": backward(a, x, b), "numpy": backward(a, xn, b),
           "diff": np.linalg.norm(x - xn) / np.linalg.norm(xn),
           "cond": np.linalg.cond(a)}
    if kind in ("zero", "tiny"):
        # The unpivoted tile LU on the same matrix.
        lu = subprocess.run([lpkc, "run", "examples/lu.lpk", "--block", str(block),
                             "--input", f"A={d}/a.npy", "--verify", "--format", "json",
                             "--output-dir", os.path.join(d, "lu")],
                            capture_output=True, text=True)
        row["lu_code"] = lu.returncode
        row["lu_err"] = lu.stderr + lu.stdout
        if lu.stdout.strip():
            residual = json.loads(lu.stdout).get("residual")
            if residual:
                row["lu_residual"] = residual["value"]
    print(json.dumps(row))
"#;

/// Runs the cases and returns one JSON object per case.
fn solve_cases(name: &str, cases: &[(&str, &str, usize, usize, usize)]) -> Vec<serde_json::Value> {
    let dir = scratch_dir(name);
    let json = serde_json::to_string(cases).expect("cases");
    let args = [
        "-".to_string(),
        env!("CARGO_BIN_EXE_lpkc").to_string(),
        dir.display().to_string(),
        json,
    ];
    let (code, out, err) = run("python3", &args, ORACLE);
    assert_eq!(code, 0, "python3 with numpy is required: {err}");
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(rows.len(), cases.len(), "{out}{err}");
    let _ = std::fs::remove_dir_all(&dir);
    rows
}

/// lpk's backward error is within 10× NumPy's (or of 10 ε when NumPy's
/// is below ε), and X within 1e-9 · cond(A) of NumPy's.
fn assert_like_numpy(what: &str, row: &serde_json::Value) {
    assert!(row.get("error").is_none(), "{what}: {}", row["error"]);
    let f = |k: &str| row[k].as_f64().unwrap_or(f64::NAN);
    let (ours, numpy, diff, cond) = (f("ours"), f("numpy"), f("diff"), f("cond"));
    assert!(
        ours <= 10.0 * numpy.max(f64::EPSILON),
        "{what}: backward error {ours:e}, NumPy's {numpy:e}"
    );
    assert!(
        diff <= 1e-12 * cond.max(1.0),
        "{what}: X differs from NumPy's by {diff:e} (cond {cond:e})"
    );
}

#[test]
fn gesv_solves_like_numpy_where_lu_fails() {
    let cases = [
        ("gesv", "random", 50, 13, 8),  // N = 7 with an edge of 2, M = 2
        ("gesv", "random", 37, 40, 16), // N = 3, M = 3, both with edges
        ("gesv", "random", 8, 1, 8),    // a 1 x 1 grid
        ("gesv", "random", 64, 64, 16), // blocks that divide
        ("gesv", "zero", 48, 5, 12),
        ("gesv", "tiny", 48, 5, 12),
    ];
    let rows = solve_cases("solve-gesv", &cases);
    for (case, row) in cases.iter().zip(&rows) {
        let what = format!("{case:?}");
        assert_like_numpy(&what, row);
        match case.1 {
            "zero" => {
                assert_eq!(row["lu_code"], 1, "{what}: lu must fail");
                let err = row["lu_err"].as_str().unwrap_or("");
                assert!(err.contains("pivot 0 is zero"), "{what}: {err}");
            }
            "tiny" => {
                // lu runs, but its factors are far from A (and --verify
                // says so with exit code 1).
                assert_eq!(row["lu_code"], 1, "{what}: lu's residual");
                let r = row["lu_residual"].as_f64().unwrap_or(0.0);
                assert!(r > 1e-6, "{what}: lu residual {r:e}");
            }
            _ => {}
        }
    }
}

#[test]
fn posv_solves_spd_systems_like_numpy() {
    let cases = [
        ("posv", "spd", 50, 13, 8),
        ("posv", "spd", 37, 40, 16),
        ("posv", "spd", 8, 1, 8),
        ("posv", "spd", 45, 3, 45),
    ];
    let rows = solve_cases("solve-posv", &cases);
    for (case, row) in cases.iter().zip(&rows) {
        assert_like_numpy(&format!("{case:?}"), row);
    }
}
