//! The contract of `lpkc run` beyond numerics: an unmet `require` as the
//! binding diagnostic every command gives, which outputs are written and
//! how (`--output`, tiles with an index when an output forms no grid), the
//! warnings only about what was asked for, and the summary's timings.

use crate::binary::lpkc;
use serde_json::Value;

#[test]
fn an_unmet_require_names_the_require_and_the_inferred_values() {
    // 8 x 40 with block 8 is 1 x 5 tiles: M = 1 and N = 5 are inferred,
    // and caqr requires M >= N (line 63).
    let run = [
        "run",
        "examples/caqr.lpk",
        "--block",
        "8",
        "--input",
        "A=random:8x40",
    ];
    let mut json: Vec<&str> = run.to_vec();
    json.extend(["--format", "json"]);
    let (code, out, _) = lpkc(&json);
    assert_eq!(code, 1, "{out}");
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let d = &v["diagnostics"][0];
    assert_eq!(d["code"], "E0601", "{d}");
    assert_eq!(
        d["message"],
        "`require M >= N` does not hold for M = 1, N = 5"
    );
    assert_eq!(d["file"], "examples/caqr.lpk");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(63), Some(5))
    );

    let mut text: Vec<&str> = vec!["--color", "never"];
    text.extend(run);
    let (code, out, err) = lpkc(&text);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("error[E0601]: `require M >= N` does not hold for M = 1, N = 5"),
        "{err}"
    );
    assert!(err.contains("examples/caqr.lpk:63:5"), "{err}");
    assert!(!err.contains("requirement 2 of the program"), "{err}");
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("lpk-run-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// tsqr on 2000 x 64 with block 256: the last row block has 208 rows, so
/// V's leaves do not tile a rectangle.
const TSQR: [&str; 7] = [
    "run",
    "examples/tsqr.lpk",
    "--block",
    "256",
    "--input",
    "A=random:2000x64",
    "--no-progress",
];

#[test]
fn outputs_not_asked_for_are_not_warned_about() {
    let (code, out, err) = lpkc(&TSQR);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "", "no output directory, nothing to say about outputs");
    assert!(out.starts_with("ran tsqr (N=8)"), "{out}");

    // Asked for R's final tile only: V is not written, nor mentioned.
    let dir = scratch("final-r");
    let dir_s = dir.display().to_string();
    let mut args = TSQR.to_vec();
    args.extend(["--output-dir", &dir_s, "--output", "R[3, 0]"]);
    let (code, _, err) = lpkc(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
    let r = runtime::npy::read_file(&dir.join("R[3,0].npy")).expect("the final R");
    assert_eq!((r.nrows(), r.ncols()), (64, 64));
    assert!(!dir.join("V").exists() && !dir.join("R.npy").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_output_that_forms_no_grid_is_said_once_and_written_as_tiles() {
    let dir = scratch("no-grid");
    let dir_s = dir.display().to_string();
    let mut args = TSQR.to_vec();
    args.extend(["--output-dir", &dir_s, "--format", "json"]);
    let (code, out, err) = lpkc(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err,
        format!(
            "note: output `V` forms no grid (tiles of tile row 0 have 256 and 208 rows); \
             wrote its 15 tiles and {dir_s}/V/index.json\n"
        )
    );
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let outputs = &v["outputs"];
    assert_eq!(outputs[0]["output"], "R");
    assert_eq!(outputs[0]["shape"], serde_json::json!([256, 512]));
    assert_eq!(outputs[1]["output"], "V");
    assert_eq!(outputs[1]["tiles"], 15);
    assert_eq!(outputs[1]["path"], format!("{dir_s}/V/index.json"));
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("V/index.json")).expect("index"))
            .expect("index.json is JSON");
    let tiles = index["tiles"].as_array().expect("tiles");
    assert_eq!(tiles.len(), 15);
    for t in tiles {
        let file = dir.join("V").join(t["file"].as_str().expect("file"));
        let tile = runtime::npy::read_file(&file).expect("tile");
        assert_eq!(
            serde_json::json!([tile.nrows(), tile.ncols()]),
            t["shape"],
            "{t}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
