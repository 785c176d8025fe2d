//! Whole runs on files (`lpk_runtime::job`): `.npy` inputs read tile by tile
//! in either order, outputs written in place, byte-identical files for any
//! number of workers and equal to the tiles of an in-memory run, the
//! marker, and a stale marker removed by a failed run.

use super::npy::c_order_npy;
use crate::{one_input, program};
use lpk_model::program::Program;
use lpk_runtime::dense::{self, InputSpec};
use lpk_runtime::exec::{ExecConfig, Progress};
use lpk_runtime::in_memory;
use lpk_runtime::job::{run_job, Job, JobError, JobReport, MARKER};
use lpk_runtime::kernels::{Registry, Tile};
use lpk_runtime::npy::{self, NpyTiles};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lpk-job-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    d
}

/// `tile` as a C-order `<f8` `.npy` file (numpy's default layout).
fn write_c_order(path: &Path, tile: &Tile) {
    std::fs::write(path, c_order_npy(tile)).expect("write");
}

/// Runs `job` of `p` with the standard kernels on `workers` threads.
fn run<'p>(p: &'p Program, job: &Job<'_>, workers: usize) -> Result<JobReport<'p>, JobError> {
    run_job(
        p,
        job,
        &Registry::standard(),
        &ExecConfig { workers },
        &Progress::default(),
    )
}

fn job<'a>(
    inputs: &'a BTreeMap<lpk_model::MatrixId, InputSpec>,
    dir: &'a Path,
    verify: bool,
) -> Job<'a> {
    Job {
        params: &[],
        inputs,
        seed: 0,
        block: 8,
        output_dir: Some(dir),
        outputs: None,
        tile_store: None,
        assemble: true,
        verify,
    }
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("dir")
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn npy_inputs_in_either_order_give_the_in_memory_result_in_place() {
    let p = program("cholesky");
    let a = InputSpec::Spd(30).generate(7).expect("generated");
    let dir = scratch("orders");
    let fortran = dir.join("a_f.npy");
    let c_order = dir.join("a_c.npy");
    npy::write_file(&fortran, &a).expect("write");
    write_c_order(&c_order, &a);
    assert_eq!(NpyTiles::open(&c_order).expect("opens").shape(), (30, 30));

    // The in-memory run's tiles, assembled: the reference.
    let data: BTreeMap<lpk_model::MatrixId, Tile> = [(crate::matrix(0), a.clone())].into();
    let mem = in_memory::run(
        &p,
        &[],
        &data,
        8,
        &Registry::standard(),
        &ExecConfig { workers: 1 },
        &Progress::default(),
    )
    .expect("runs");
    let want = dense::assemble(&mem.instance.extents[1], &mem.outputs[&crate::matrix(1)], 8)
        .expect("assembles");

    let mut previous = None;
    for (file, workers) in [(&fortran, 1), (&c_order, 3), (&fortran, 2)] {
        let out = dir.join(format!("out-{workers}"));
        let inputs = one_input(InputSpec::File(file.clone()));
        let done = run(&p, &job(&inputs, &out, true), workers).expect("runs");
        assert!(done.residual.expect("verified").ok());
        assert_eq!(done.written.len(), 1);
        assert_eq!(
            done.written[0].form,
            lpk_runtime::outputs::Form::Dense { rows: 30, cols: 30 }
        );
        assert!(done.timings.total >= done.timings.compute);
        let l = npy::read_file(&out.join("L.npy")).expect("L.npy");
        assert_eq!((l.nrows(), l.ncols()), (30, 30));
        for j in 0..30 {
            for i in 0..30 {
                assert_eq!(l[(i, j)].to_bits(), want[(i, j)].to_bits(), "L[{i}, {j}]");
            }
        }
        // Only the assembled output and the marker: no tile copies.
        let now = files(&out);
        let names: Vec<&str> = now.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["L.npy", MARKER]);
        if let Some(prev) = &previous {
            assert!(prev == &now, "files differ between worker counts");
        }
        previous = Some(now);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_run_leaves_no_marker_and_no_output_file() {
    let p = program("cholesky");
    let dir = scratch("fails");
    std::fs::write(dir.join(MARKER), "stale").expect("marker");
    // Not positive definite: the task fails while L.npy is being written.
    let inputs = one_input(InputSpec::Random { rows: 20, cols: 20 });
    let e = run(&p, &job(&inputs, &dir, false), 2).err().expect("fails");
    assert!(e.to_string().contains("positive definite"), "{e}");
    assert!(matches!(e, JobError::Run(_)));
    assert!(files(&dir).is_empty(), "{:?}", files(&dir));

    // A truncated file fails when it is opened, naming the input.
    let bad = dir.join("bad.npy");
    let a = InputSpec::Spd(10).generate(1).expect("generated");
    let mut bytes = npy::to_bytes(&a);
    bytes.truncate(bytes.len() - 8);
    std::fs::write(&bad, bytes).expect("write");
    let inputs = one_input(InputSpec::File(bad));
    let e = run(&p, &job(&inputs, &dir, false), 1).err().expect("fails");
    assert!(matches!(e, JobError::Input { .. }), "{e}");
    assert!(e.to_string().starts_with("input `A`: "), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unmet_require_is_a_bind_error_with_the_parameters_bound() {
    let p = program("cholesky");
    let dir = scratch("require");
    let inputs = one_input(InputSpec::Spd(8));
    let params = [("N".to_string(), 0)];
    let with_params = Job {
        params: &params,
        ..job(&inputs, &dir, false)
    };
    let e = run(&p, &with_params, 1).err().expect("fails");
    let JobError::Bind { error, params } = &e else {
        panic!("not a bind error: {e}");
    };
    assert_eq!(
        *error,
        lpk_model::program::BindError::Require {
            index: 1,
            text: "N >= 1".to_string()
        }
    );
    assert_eq!(*params, [("N".to_string(), 0)]);
    let _ = std::fs::remove_dir_all(&dir);
}
