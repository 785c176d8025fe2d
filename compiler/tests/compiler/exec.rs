//! The executor against a sequential reference run: every example runs
//! with "mixing" kernels (each result tile is a fixed, order-sensitive
//! function of the kernel's inputs), on several worker counts; every
//! output tile must equal, bit for bit, the tile a plain sequential run of
//! the program in source order computes. A missing dependence edge makes a
//! task read a tile that is not yet written (an error), and a wrong edge
//! order changes the values, so both are caught. A zero matrix's unwritten
//! tiles are zero tiles in both runs (`lpk_runtime::zero::zero_tiles`).

use crate::compile_example as compile;
use crate::instance;
use lpk_model::program::{Arg, Instance, Program, Role};
use lpk_model::query::Engine;
use lpk_runtime::dense::CollectSink;
use lpk_runtime::exec::{
    execute, ExecConfig, ExecError, Progress, RunReport, TileError, TileSource,
};
use lpk_runtime::kernels::{Kernel, KernelArg, KernelError, Registry, Tile};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Result `r` = 1x2 tile [sum_k (k + 1) * a_k[0] * 1.0001^r + r, count].
struct Mix {
    name: String,
    results: usize,
}

impl Kernel for Mix {
    fn name(&self) -> &str {
        &self.name
    }
    /// The standard kernel's rule of the same name (zero tiles take their
    /// shapes from it, as in a run with the standard kernels).
    fn shape_rule(&self) -> Option<lpk_runtime::kernels::ShapeRule> {
        lpk_runtime::kernels::rules::shape_rule(&self.name)
    }
    fn call(&self, args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
        let mut acc = 0.0;
        let mut count = 0.0;
        for (k, a) in args.iter().enumerate() {
            let v = match a {
                KernelArg::Tile(t) => {
                    count += t.ncols() as f64;
                    t[(0, 0)]
                }
                KernelArg::Int(i) => *i as f64,
                KernelArg::Real(r) => *r,
            };
            acc = acc * 0.5 + (k as f64 + 1.0) * v;
        }
        Ok((0..self.results)
            .map(|r| {
                Tile::from_fn(1, 2, |_, j| {
                    if j == 0 {
                        acc * 1.0001f64.powi(r as i32) + r as f64 + 1.0
                    } else {
                        count
                    }
                })
            })
            .collect())
    }
}

fn registry(p: &Program) -> Registry {
    let mut r = Registry::new();
    for k in &p.kernels {
        r.register(Arc::new(Mix {
            name: k.name.clone(),
            results: k.results.len(),
        }));
    }
    r
}

/// Input tile value: a hash of the matrix and index.
fn input_tile(matrix: lpk_model::MatrixId, index: &[i64]) -> Tile {
    let mut v = matrix.index() as f64 + 0.5;
    for &i in index {
        v = v * 1.37 + i as f64;
    }
    Tile::from_fn(1, 1, |_, _| v)
}

struct Inputs;
impl TileSource for Inputs {
    fn input(&self, matrix: lpk_model::MatrixId, index: &[i64]) -> Result<Arc<Tile>, TileError> {
        Ok(Arc::new(input_tile(matrix, index)))
    }
}

/// Runs the program in source order, keeping every tile.
fn sequential(
    inst: &Instance<'_>,
    reg: &Registry,
) -> BTreeMap<(lpk_model::MatrixId, Vec<i64>), Tile> {
    let p = inst.program;
    let engine = Engine::new(inst);
    let kernels = lpk_runtime::exec::resolve_kernels(p, reg).expect("every kernel");
    let mut tiles: BTreeMap<(lpk_model::MatrixId, Vec<i64>), Tile> = BTreeMap::new();
    let tasks = inst.tasks().expect("tasks");
    for t in &tasks {
        let st = p.statement(t.stmt);
        let reads = engine.reads(t).expect("reads");
        let loaded: Vec<Option<Arc<Tile>>> = reads
            .iter()
            .map(|r| {
                if p.matrix(r.matrix).role == Role::Input {
                    Some(Arc::new(input_tile(r.matrix, &r.index)))
                } else if let Some(tile) = tiles.get(&(r.matrix, r.index.clone())) {
                    Some(Arc::new(tile.clone()))
                } else if p.is_zero(r.matrix) {
                    None
                } else {
                    panic!("sequential run reads unwritten {r:?}")
                }
            })
            .collect();
        let loaded =
            lpk_runtime::zero::zero_tiles(inst, &kernels, t, loaded, None).expect("zero tiles");
        let env = lpk_model::expr::Env {
            params: &inst.params,
            slots: &t.vars,
        };
        let args: Vec<KernelArg<'_>> = st
            .args
            .iter()
            .map(|a| match a {
                Arg::Tile(i) => KernelArg::Tile(&loaded[*i as usize]),
                Arg::Scalar(e) => match p.exprs.eval(*e, env).expect("scalar") {
                    lpk_model::expr::Value::Int(v) => KernelArg::Real(v as f64),
                    lpk_model::expr::Value::Real(v) => KernelArg::Real(v),
                    lpk_model::expr::Value::Bool(_) => panic!("bool arg"),
                },
            })
            .collect();
        let kernel = reg.get(&p.kernel(st.kernel).name).expect("kernel");
        let out = kernel.call(&args).expect("kernel runs");
        for (w, tile) in engine.writes(t).expect("writes").into_iter().zip(out) {
            tiles.insert((w.matrix, w.index), tile);
        }
    }
    tiles
}

/// Runs an instance on `workers` threads with the mixing kernels of
/// `reg` and the hashed inputs, into `sink`.
fn run(
    inst: &Instance<'_>,
    reg: &Registry,
    sink: &CollectSink,
    workers: usize,
    progress: &Progress,
) -> Result<RunReport, ExecError> {
    execute(
        inst,
        reg,
        &Inputs,
        sink,
        false,
        &ExecConfig { workers },
        progress,
    )
}

/// Runs Cholesky at `N = n` with the mixing kernels on `workers` workers.
fn run_cholesky(n: i64, workers: usize, progress: &Progress) -> Result<RunReport, ExecError> {
    let program = compile("examples/cholesky.lpk");
    let reg = registry(&program);
    let inst = instance(&program, &[("N", n)]);
    run(&inst, &reg, &CollectSink::default(), workers, progress)
}

fn check(path: &str, sets: &[&[(&str, i64)]]) {
    let program = compile(path);
    let reg = registry(&program);
    for params in sets {
        let inst = match crate::bind(&program, params) {
            Ok(Some(i)) => i,
            Ok(None) => continue,
            Err(e) => panic!("{path} {params:?}: {e}"),
        };
        let reference = sequential(&inst, &reg);
        let expected: BTreeMap<_, _> = reference
            .into_iter()
            .filter(|((m, _), _)| program.matrix(*m).role == Role::Output)
            .collect();
        let total = inst.tasks().expect("tasks").len() as u64;
        for workers in [1, 2, 4] {
            let sink = CollectSink::default();
            let progress = Progress::default();
            let report = run(&inst, &reg, &sink, workers, &progress)
                .unwrap_or_else(|e| panic!("{path} {params:?} workers={workers}: {e}"));
            assert_eq!(report.tasks, total, "{path} {params:?}");
            let got: BTreeMap<_, _> = sink
                .into_tiles()
                .into_iter()
                .map(|(k, v)| (k, (*v).clone()))
                .collect();
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                expected.keys().collect::<Vec<_>>(),
                "{path} {params:?} workers={workers}: output tiles"
            );
            for (k, v) in &expected {
                let g = &got[k];
                assert!(
                    g.nrows() == v.nrows()
                        && (0..v.ncols()).all(|j| g[(0, j)].to_bits() == v[(0, j)].to_bits()),
                    "{path} {params:?} workers={workers}: tile {k:?}"
                );
            }
        }
    }
}

#[test]
fn cholesky_matches_sequential_run() {
    check(
        "examples/cholesky.lpk",
        &[&[("N", 1)], &[("N", 2)], &[("N", 5)], &[("N", 12)]],
    );
}

#[test]
fn lu_trsolve_trtri_match_sequential_run() {
    check("examples/lu.lpk", &[&[("N", 1)], &[("N", 4)], &[("N", 9)]]);
    check(
        "examples/trsolve.lpk",
        &[&[("N", 1), ("R", 1)], &[("N", 5), ("R", 3)]],
    );
    check("examples/trtri.lpk", &[&[("N", 1)], &[("N", 6)]]);
}

#[test]
fn qr_and_gemm_tree_match_sequential_run() {
    check(
        "examples/tsqr.lpk",
        &[&[("N", 1)], &[("N", 5)], &[("N", 8)], &[("N", 13)]],
    );
    check(
        "examples/caqr.lpk",
        &[
            &[("M", 1), ("N", 1)],
            &[("M", 6), ("N", 3)],
            &[("M", 9), ("N", 4)],
        ],
    );
    check(
        "examples/gemm_tree.lpk",
        &[
            &[("M", 1), ("N", 1), ("K", 1)],
            &[("M", 2), ("N", 3), ("K", 7)],
            &[("M", 1), ("N", 2), ("K", 17)],
        ],
    );
    check(
        "examples/gemm_tree_zero.lpk",
        &[
            &[("M", 1), ("N", 1), ("K", 1)],
            &[("M", 2), ("N", 3), ("K", 7)],
            &[("M", 1), ("N", 2), ("K", 17)],
        ],
    );
}

#[test]
fn temporaries_are_freed_after_their_last_reader() {
    let report = run_cholesky(24, 1, &Progress::default()).expect("runs");
    // Tiles are 1x2 (16 bytes) or 1x1 inputs. Without freeing, every S
    // tile (N^3/6 of them) would stay; the live set is O(N^2).
    let all_s = 24 * 23 * 25 / 6;
    assert!(
        report.peak_tile_bytes < (all_s * 16) as u64 / 2,
        "peak {} bytes",
        report.peak_tile_bytes
    );
}

#[test]
fn cancel_stops_a_run() {
    let progress = Progress::default();
    progress
        .cancel
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let err = run_cholesky(8, 2, &progress).expect_err("cancelled");
    assert!(err.to_string().contains("cancelled"), "{err}");
}

#[test]
fn a_failing_kernel_names_task_and_tiles() {
    struct Fails;
    impl Kernel for Fails {
        fn name(&self) -> &str {
            "syrk"
        }
        fn call(&self, _: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError> {
            Err(KernelError::new("planted failure"))
        }
    }
    let program = compile("examples/cholesky.lpk");
    let mut reg = registry(&program);
    reg.register(Arc::new(Fails));
    let inst = instance(&program, &[("N", 3)]);
    let err = run(
        &inst,
        &reg,
        &CollectSink::default(),
        2,
        &Progress::default(),
    )
    .expect_err("fails");
    let text = err.to_string();
    assert!(text.contains("syrk@"), "{text}");
    assert!(text.contains("reading A["), "{text}");
    assert!(text.contains("planted failure"), "{text}");
}
