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
