//! Writes the seed corpora `fuzz/seeds/TARGET/` (docs/fuzzing.md):
//!
//! - `parse`, `check`, `fmt_roundtrip`, `lint`, `plans`: the examples,
//!   the UI test sources and the regression sources of the repository,
//!   copied (but for one slow program, not for `lint`);
//! - `artifact`: the model's artifact fixtures, copied, plus a few
//!   examples compiled now, as a container, a JSON twin and bare CBOR
//!   payloads (which the target also loads wrapped in a container);
//! - `npy`: headers of every dtype, order and rank the reader knows,
//!   written here byte by byte (numpy is not needed), and two broken ones;
//! - `artifact_edit`: one input per example it edits, and one with two
//!   edits;
//! - `query`: command lines of `lpkc query` and `lpkc repl` on Cholesky.
//!
//! Run from the repository root:
//! `cargo run --release --manifest-path fuzz/Cargo.toml --example make_seeds`

use lpk_compiler::diag::SourceMap;
use lpk_compiler::pipeline::{compile_source, LintGate};
use lpk_model::artifact::{self, Artifact, SourceInfo};
use std::path::Path;

/// A `.npy` file: preamble (version `major`), the dict padded with spaces
/// to a 64-byte boundary, then `data`.
fn npy(major: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let pre = if major == 1 { 10 } else { 12 };
    let total = (pre + dict.len() + 1).next_multiple_of(64);
    let mut header = dict.as_bytes().to_vec();
    header.resize(total - pre - 1, b' ');
    header.push(b'\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.push(major);
    out.push(0);
    // The header length: 2 bytes in version 1, 4 after.
    let width = if major == 1 { 2 } else { 4 };
    out.extend_from_slice(&(header.len() as u32).to_le_bytes()[..width]);
    out.extend_from_slice(&header);
    out.extend_from_slice(data);
    out
}

fn f8le(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::create_dir_all(dir).expect("create the seed directory");
    std::fs::write(dir.join(name), bytes).expect("write a seed");
}

/// Copies every `.lpk` (or every file, with `ext` empty) below `from`
/// into `to`, named by its path below `base` with `/` as `_`.
fn copy_tree(base: &Path, from: &Path, ext: &str, to: &Path) {
    for f in lpk_fuzz::inputs(from) {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "README.md" || !ext.is_empty() && !name.ends_with(ext) {
            continue;
        }
        let rel = f.strip_prefix(base).expect("below the base");
        let flat = rel.to_string_lossy().replace(['/', '\\'], "_");
        let bytes = std::fs::read(&f).expect("read a seed source");
        write(to, &flat, &bytes);
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = root.parent().expect("fuzz/ is in the repository");
    let seeds = root.join("seeds");

    // --- sources
    for target in ["parse", "check", "fmt_roundtrip", "lint", "plans"] {
        let to = seeds.join(target);
        for dir in ["examples", "tests/ui", "tests/regress"] {
            copy_tree(repo, &repo.join(dir), ".lpk", &to);
        }
    }
    // Its proofs run into lint's search limits: about 1.7 s in a release
    // build, several seconds under the fuzzer's instrumentation, past its
    // timeout before fuzzing starts (docs/fuzzing.md, "Findings").
    let slow = seeds.join("lint/tests_regress_writers_that_cover_nothing.lpk");
    std::fs::remove_file(slow).expect("the slow lint seed was copied");

    // --- queries
    let dir = seeds.join("query");
    let queries: &[(&str, &str)] = &[
        (
            "children",
            "children chol@37(k=0)\nchildren trsm@44(k=0, i=1)\n",
        ),
        (
            "parents",
            "parents syrk@53(k=0, j=1, i=2)\nparents chol@39(k=1)\n",
        ),
        (
            "writer_readers",
            "writer L[1, 0]\nreaders L[0, 0]\nreaders S[1, 2, 1]\n",
        ),
        ("tasks", "tasks\ntasks 44\n"),
        (
            "errors",
            "children chol@99(k=0)\nparents trsm@46(k=7, i=1)\nwriter Q[0]\nfoo\n",
        ),
        (
            "repl",
            "show chol@37(k=0)\ncount\npath chol@37(k=0) chol@39(k=2)\ncritical-path\n\
             help\nplans\nset N=2\ntasks --all\n",
        ),
    ];
    for (name, text) in queries {
        write(&dir, &format!("{name}.txt"), text.as_bytes());
    }

    // --- artifact_edit: which example (first byte), then 4-byte edits.
    let dir = seeds.join("artifact_edit");
    for (i, name) in ["cholesky", "gemm_tree_zero", "tsqr", "lu"]
        .iter()
        .enumerate()
    {
        write(&dir, name, &[i as u8]);
    }
    write(
        &dir,
        "cholesky_two_edits",
        b"\x00\x05\x00\x00\x45\x10\x00\x80\x00",
    );

    // --- npy
    let dir = seeds.join("npy");
    let v6: Vec<f64> = (0..6).map(|i| i as f64 * 0.5 - 1.0).collect();
    let dict = |descr: &str, fortran: bool, shape: &str| {
        format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        )
    };
    write(
        &dir,
        "f8_c_2x3.npy",
        &npy(1, &dict("<f8", false, "(2, 3)"), &f8le(&v6)),
    );
    write(
        &dir,
        "f8_f_3x2.npy",
        &npy(1, &dict("<f8", true, "(3, 2)"), &f8le(&v6)),
    );
    write(
        &dir,
        "f8_vector.npy",
        &npy(1, &dict("<f8", false, "(6,)"), &f8le(&v6)),
    );
    write(
        &dir,
        "f8_scalar.npy",
        &npy(1, &dict("<f8", false, "()"), &f8le(&[3.5])),
    );
    write(
        &dir,
        "f8_empty_0x3.npy",
        &npy(1, &dict("<f8", false, "(0, 3)"), &[]),
    );
    let be: Vec<u8> = v6.iter().flat_map(|v| v.to_be_bytes()).collect();
    write(
        &dir,
        "f8_big_endian.npy",
        &npy(1, &dict(">f8", false, "(3, 2)"), &be),
    );
    let f4: Vec<u8> = v6.iter().flat_map(|v| (*v as f32).to_le_bytes()).collect();
    write(
        &dir,
        "f4_c_2x3.npy",
        &npy(1, &dict("<f4", false, "(2, 3)"), &f4),
    );
    let i8: Vec<u8> = (0..6i64).flat_map(|v| (v - 2).to_le_bytes()).collect();
    write(
        &dir,
        "i8_f_2x3.npy",
        &npy(1, &dict("<i8", true, "(2, 3)"), &i8),
    );
    let i4: Vec<u8> = (0..6i32).flat_map(|v| (v * 7).to_be_bytes()).collect();
    write(
        &dir,
        "i4_big_3x2.npy",
        &npy(1, &dict(">i4", false, "(3, 2)"), &i4),
    );
    write(
        &dir,
        "f8_v2_header.npy",
        &npy(2, &dict("<f8", false, "(2, 3)"), &f8le(&v6)),
    );
    // numpy's own spelling: no trailing comma, keys in another order.
    write(
        &dir,
        "f8_key_order.npy",
        &npy(
            1,
            "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f8'}",
            &f8le(&v6),
        ),
    );
    // Special values.
    let special = [f64::NAN, f64::INFINITY, -0.0, f64::MIN_POSITIVE / 2.0];
    write(
        &dir,
        "f8_special_2x2.npy",
        &npy(1, &dict("<f8", true, "(2, 2)"), &f8le(&special)),
    );
    // Broken ones: data one element short, and a 3-D shape.
    write(
        &dir,
        "bad_short_data.npy",
        &npy(1, &dict("<f8", false, "(2, 3)"), &f8le(&v6[..5])),
    );
    write(
        &dir,
        "bad_3d.npy",
        &npy(1, &dict("<f8", false, "(1, 2, 3)"), &f8le(&v6)),
    );

    // --- artifacts of a few examples, as lpkc compile writes them (with
    // the source text), as JSON twins, and as bare CBOR payloads (which the
    // target also loads wrapped in a well-formed container).
    let dir = seeds.join("artifact");
    let fixtures = repo.join("runtime-interp/model/tests/fixtures");
    copy_tree(&fixtures, &fixtures, "", &dir);
    for name in ["cholesky", "trsolve", "gemm"] {
        let path = root.join("..").join("examples").join(format!("{name}.lpk"));
        let text = std::fs::read_to_string(&path).expect("read an example");
        let mut sources = SourceMap::new();
        let file = format!("examples/{name}.lpk");
        let compiled = match compile_source(&mut sources, &file, &text, None, LintGate::DenyErrors)
        {
            Ok(c) => c,
            Err(e) => panic!("{file} does not compile: {e}"),
        };
        let keep_text = name == "cholesky";
        let art = Artifact {
            compiler: "lpkc 0.1.0".to_string(),
            source: SourceInfo::of_program(&compiled.program, &file, keep_text.then_some(text)),
            program: compiled.program,
            lint: compiled.lint,
        };
        let bytes = artifact::encode(&art).expect("encode");
        let (_, cbor) = artifact::read_container(&bytes).expect("read back");
        write(&dir, &format!("{name}.cbor"), &cbor);
        if name == "trsolve" {
            // Today's format (the fixtures are older); the fixtures hold a
            // JSON twin already.
            write(&dir, &format!("{name}_today.lpka"), &bytes);
        }
    }
    eprintln!("wrote the npy and artifact seeds under {}", seeds.display());
}
