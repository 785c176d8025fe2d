//! What a run writes (`lpk_runtime::outputs` through `run_job`): `--output`
//! requests parsed and checked, whole matrices, single tiles and slices,
//! 1-D outputs assembled, outputs whose tiles form no grid written as
//! tiles with an `index.json`, and nothing assembled or reported when
//! nothing is written.

use crate::{one_input, program};
use lpk_runtime::dense::{AssembleError, InputSpec};
use lpk_runtime::exec::{ExecConfig, Progress};
use lpk_runtime::job::{run_job, Job, JobError, JobReport, MARKER};
use lpk_runtime::kernels::{Registry, Tile};
use lpk_runtime::npy;
use lpk_runtime::outputs::{Form, OutputError, OutputRequest};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lpk-outputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn run<'p>(
    p: &'p lpk_model::program::Program,
    inputs: &BTreeMap<lpk_model::MatrixId, InputSpec>,
    block: usize,
    dir: Option<&Path>,
    outputs: Option<&[OutputRequest]>,
) -> Result<JobReport<'p>, JobError> {
    run_job(
        p,
        &Job {
            params: &[],
            inputs,
            seed: 3,
            block,
            output_dir: dir,
            outputs,
            tile_store: None,
            assemble: true,
            verify: false,
        },
        &Registry::standard(),
        &ExecConfig { workers: 2 },
        &Progress::default(),
    )
}

fn requests(texts: &[&str]) -> Vec<OutputRequest> {
    texts
        .iter()
        .map(|t| OutputRequest::parse(t).expect("parses"))
        .collect()
}

#[test]
fn requests_parse_match_and_name_their_files() {
    let r = OutputRequest::parse(" R[3, :] ").expect("parses");
    assert_eq!(r.matrix, "R");
    assert_eq!(r.index, Some(vec![Some(3), None]));
    assert_eq!(r.to_string(), "R[3, :]");
    assert_eq!(r.file_stem(), "R[3,_]");
    assert!(r.matches(&[3, 7]) && !r.matches(&[2, 7]));
    assert_eq!(r.tile(), None);
    let t = OutputRequest::parse("R[3,0]").expect("parses");
    assert_eq!(
        (t.tile(), t.file_stem()),
        (Some(vec![3, 0]), "R[3,0]".into())
    );
    let m = OutputRequest::parse("L").expect("parses");
    assert!(m.matches(&[5, 1]) && m.index.is_none());
    for bad in ["", "R[", "R[1,]", "R[-1]", "R[x]", "3R", "R[1]x", "R]"] {
        assert_eq!(
            OutputRequest::parse(bad),
            Err(OutputError::Syntax { text: bad.into() }),
            "{bad}"
        );
    }
}

/// A's rows 2000 in blocks of 256: 8 row blocks, the last of 208 rows.
fn tsqr_inputs() -> BTreeMap<lpk_model::MatrixId, InputSpec> {
    one_input(InputSpec::Random {
        rows: 2000,
        cols: 16,
    })
}

#[test]
fn without_an_output_directory_nothing_is_assembled_or_reported() {
    let p = program("tsqr");
    let done = run(&p, &tsqr_inputs(), 256, None, None).expect("runs");
    assert_eq!(done.written, []);
}

#[test]
fn an_output_that_forms_no_grid_is_written_as_tiles_with_an_index() {
    let p = program("tsqr");
    let dir = scratch("tsqr-all");
    let done = run(&p, &tsqr_inputs(), 256, Some(&dir), None).expect("runs");
    // R and T form grids; V's leaves are 256 and 208 rows high.
    let forms: Vec<(String, &Form)> = done
        .written
        .iter()
        .map(|w| (w.request.to_string(), &w.form))
        .collect();
    assert_eq!(
        forms,
        [
            (
                "R".to_string(),
                &Form::Dense {
                    rows: 64,
                    cols: 128
                }
            ),
            (
                "V".to_string(),
                &Form::Tiles {
                    count: 15,
                    why: Some(AssembleError::Inconsistent {
                        what: "row",
                        k: 0,
                        first: 256,
                        second: 208
                    })
                }
            ),
            (
                "T".to_string(),
                &Form::Dense {
                    rows: 64,
                    cols: 128
                }
            ),
        ]
    );
    assert_eq!(done.written[1].path, dir.join("V/index.json"));
    let index = std::fs::read_to_string(dir.join("V/index.json")).expect("index");
    assert!(index.starts_with("{\"output\": \"V\", \"matrix\": \"V\", \"tiles\": [\n"));
    assert!(index.contains("{\"index\": [0, 7], \"file\": \"0_7.npy\", \"shape\": [208, 16]}"));
    assert!(index.contains("{\"index\": [3, 0], \"file\": \"3_0.npy\", \"shape\": [32, 16]}"));
    let leaf = npy::read_file(&dir.join("V/0_7.npy")).expect("tile");
    assert_eq!((leaf.nrows(), leaf.ncols()), (208, 16));
    assert!(dir.join(MARKER).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_tile_and_a_slice_are_written_as_asked() {
    let p = program("tsqr");
    let dir = scratch("tsqr-pick");
    let asked = requests(&["R[3, 0]", "R[0, :]", "V[0, :]"]);
    let done = run(&p, &tsqr_inputs(), 256, Some(&dir), Some(&asked)).expect("runs");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["R[0,_].npy", "R[3,0].npy", "V[0,_]", MARKER]);
    // The final R of the tree: RᵀR = AᵀA.
    let r = npy::read_file(&dir.join("R[3,0].npy")).expect("R");
    let a = InputSpec::Random {
        rows: 2000,
        cols: 16,
    }
    .generate(3)
    .expect("generated");
    let ata = a.transpose() * &a;
    let rtr = r.transpose() * &r;
    assert!((&ata - &rtr).norm_l2() <= 1e-12 * ata.norm_l2());
    // Level 0: one tile row of eight 16 x 16 R factors.
    let row = npy::read_file(&dir.join("R[0,_].npy")).expect("slice");
    assert_eq!((row.nrows(), row.ncols()), (16, 128));
    assert!(matches!(done.written[2].form, Form::Tiles { count: 8, .. }));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn requests_that_do_not_fit_fail_before_anything_is_written() {
    let p = program("tsqr");
    let dir = scratch("tsqr-bad");
    let cases = [
        ("Q", "--output `Q`: `Q` is not an output of program `tsqr` (its outputs: R, V, T)"),
        ("R[1]", "--output `R[1]`: `R` has 2 dimensions, but 1 index is given"),
        ("R[4, 0]", "--output `R[4, 0]`: index 4 of dimension 1 is outside 0..4 (for N = 8)"),
        (
            "R[3, 1]",
            "--output `R[3, 1]`: no task writes this tile (for N = 8), so there is nothing to write",
        ),
    ];
    for (text, message) in cases {
        let asked = requests(&[text]);
        let e = run(&p, &tsqr_inputs(), 256, Some(&dir), Some(&asked))
            .err()
            .expect("fails");
        assert!(matches!(e, JobError::Select(_)), "{e}");
        assert_eq!(e.to_string(), message);
        assert!(!dir.join(MARKER).exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_1d_output_is_assembled_by_stacking_its_row_blocks() {
    let p = program("rows");
    let dir = scratch("rows");
    let inputs = one_input(InputSpec::Random { rows: 10, cols: 3 });
    let done = run(&p, &inputs, 4, Some(&dir), None).expect("runs");
    assert_eq!(done.written[0].form, Form::Dense { rows: 10, cols: 3 });
    let b = npy::read_file(&dir.join("B.npy")).expect("B");
    let a = InputSpec::Random { rows: 10, cols: 3 }
        .generate(3)
        .expect("generated");
    assert_eq!(b, a);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn slices_of_3d_matrices_form_a_grid_of_their_free_dimensions() {
    let tile = |r, c, v| Arc::new(Tile::from_fn(r, c, |_, _| v));
    let tiles: BTreeMap<Vec<i64>, Arc<Tile>> = [
        (vec![0, 0, 0], tile(2, 2, 1.0)),
        (vec![1, 0, 1], tile(2, 3, 2.0)),
        (vec![1, 1, 0], tile(1, 2, 3.0)),
    ]
    .into();
    let ext = [2, 2, 2];
    let whole = OutputRequest::whole("S");
    assert_eq!(
        lpk_runtime::outputs::assemble(&whole, &ext, &tiles, 2),
        Err(AssembleError::Dimensions { dims: 3 })
    );
    let slice = OutputRequest::parse("S[1, :, :]").expect("parses");
    let m = lpk_runtime::outputs::assemble(&slice, &ext, &tiles, 2).expect("a grid");
    assert_eq!((m.nrows(), m.ncols()), (3, 5));
    assert_eq!(
        (m[(0, 2)], m[(2, 0)], m[(2, 2)], m[(0, 0)]),
        (2.0, 3.0, 0.0, 0.0)
    );
    let column = OutputRequest::parse("S[:, 0, 0]").expect("parses");
    let c = lpk_runtime::outputs::assemble(&column, &ext, &tiles, 2).expect("a grid");
    assert_eq!((c.nrows(), c.ncols()), (4, 2));
}
