//! Input shapes checked against the kernels' shape rules when a run binds
//! its inputs (`lpk_runtime::shapes`), on compiled example programs
//! (`tests/fixtures/programs/*.lpka`, written by `lpkc compile
//! examples/NAME.lpk --no-source`), and the shape rules against the kernels
//! themselves.

use crate::program;
use lpk_model::program::{Instance, Program};
use lpk_model::MatrixId;
use lpk_runtime::dense::{RunError, ShapeError};
use lpk_runtime::exec::{ExecConfig, Progress};
use lpk_runtime::in_memory;
use lpk_runtime::kernels::rules::Dim;
use lpk_runtime::kernels::{KernelArg, Registry, Tile};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

/// Inputs by matrix name: (rows, columns), filled with ones.
fn inputs(p: &Program, shapes: &[(&str, usize, usize)]) -> BTreeMap<MatrixId, Tile> {
    shapes
        .iter()
        .map(|&(name, r, c)| {
            (
                p.matrix_named(name).expect("matrix"),
                Tile::from_fn(r, c, |i, j| if i == j { 4.0 } else { 0.5 }),
            )
        })
        .collect()
}

/// gemm's instance of `M = K = N = tiles`, with its matrices A and B.
fn gemm_instance(p: &Program, tiles: i64) -> (Instance<'_>, MatrixId, MatrixId) {
    let given = ["M", "K", "N"].map(|n| (n.to_string(), tiles));
    let inst = p.bind(&given).expect("binds");
    let a = p.matrix_named("A").expect("A");
    (inst, a, p.matrix_named("B").expect("B"))
}

/// Runs `name` on matrices of these shapes; returns the error, after
/// checking that no task ran.
fn check(name: &str, block: usize, shapes: &[(&str, usize, usize)]) -> Result<(), ShapeError> {
    let p = program(name);
    let data = inputs(&p, shapes);
    let progress = Progress::default();
    let result = in_memory::run(
        &p,
        &[],
        &data,
        block,
        &Registry::standard(),
        &ExecConfig { workers: 2 },
        &progress,
    );
    match result {
        Ok(_) => Ok(()),
        Err(RunError::Shape(e)) => {
            assert_eq!(progress.done.load(Ordering::Relaxed), 0, "no task ran");
            assert_eq!(progress.total.load(Ordering::Relaxed), 0, "no roots pass");
            Err(e)
        }
        Err(e) => panic!("{name}: not a shape error: {e}"),
    }
}

fn disagreement(e: ShapeError) -> lpk_runtime::shapes::Disagreement {
    match e {
        ShapeError::Disagree(d) => *d,
        other => panic!("not a disagreement: {other}"),
    }
}

#[test]
fn gemm_with_inner_dimensions_that_differ_fails_before_any_task() {
    let e = check("gemm", 64, &[("A", 256, 128), ("B", 100, 256)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "inputs `A` (256×128) and `B` (100×256) disagree: A's columns (128, 2 tiles of 64) and \
         B's rows (100, 2 tiles of 64 with an edge tile of 36) meet in kernel `gemm_acc` \
         (line 40) as `a`'s columns and `b`'s rows (first in task gemm_acc@40(m=0, n=0), \
         where `a` is 64×64 and `b` is 36×64)"
    );
    let d = disagreement(e);
    assert_eq!((d.first.matrix.as_str(), d.first.dim), ("A", Dim::Cols));
    assert_eq!((d.second.matrix.as_str(), d.second.dim), ("B", Dim::Rows));
    assert_eq!((d.kernel.as_str(), d.line), ("gemm_acc", 40));
    assert_eq!((d.first_tile, d.second_tile), ((64, 64), (36, 64)));
}

#[test]
fn a_matrix_that_must_be_square_disagrees_with_itself() {
    let d = disagreement(check("cholesky", 4, &[("A", 10, 12)]).unwrap_err());
    assert_eq!(d.first.matrix, "A");
    assert_eq!(d.second.matrix, "A");
    assert_ne!(d.first.dim, d.second.dim);
    assert!(
        d.to_string()
            .starts_with("input `A` (10×12) disagrees with itself: "),
        "{d}"
    );
}

#[test]
fn disagreements_through_intermediate_tiles_name_the_inputs() {
    // B meets L only after gemm and gemm_sub carried it into X and W.
    let d = disagreement(check("trsolve", 8, &[("L", 30, 30), ("B", 29, 11)]).unwrap_err());
    let mut names = [d.first.matrix.as_str(), d.second.matrix.as_str()];
    names.sort();
    assert_eq!(names, ["B", "L"]);
    assert_eq!((d.first.dim, d.second.dim), (Dim::Rows, Dim::Rows));
    assert!(d
        .to_string()
        .contains("L's rows (30, 4 tiles of 8 with an edge tile of 6)"));
    assert!(d
        .to_string()
        .contains("B's rows (29, 4 tiles of 8 with an edge tile of 5)"));
}

#[test]
fn consistent_shapes_with_edge_tiles_pass() {
    check("gemm", 4, &[("A", 20, 33), ("B", 33, 9)]).expect("gemm");
    check("gemm", 64, &[("A", 256, 128), ("B", 128, 100)]).expect("gemm");
    check("cholesky", 4, &[("A", 10, 10)]).expect("cholesky");
    check("trsolve", 8, &[("L", 30, 30), ("B", 30, 11)]).expect("trsolve");
    // Row blocks narrower than the block, the last shorter than its width.
    check("tsqr", 16, &[("A", 100, 7)]).expect("tsqr");
}

#[test]
fn the_check_needs_only_shapes_and_stays_bounded() {
    // 1000 x 1000 tiles with edges: no data is allocated, and the
    // readers of the short tiles are sampled up to the budget.
    let p = program("gemm");
    let (inst, a, b) = gemm_instance(&p, 1001);
    let ok: BTreeMap<MatrixId, (usize, usize)> =
        [(a, (100_050, 100_050)), (b, (100_050, 100_050))].into();
    lpk_runtime::shapes::check(&inst, &Registry::standard(), &ok, 100).expect("consistent");
    let bad: BTreeMap<MatrixId, (usize, usize)> =
        [(a, (100_050, 100_050)), (b, (100_070, 100_050))].into();
    let d = lpk_runtime::shapes::check(&inst, &Registry::standard(), &bad, 100)
        .expect_err("inner dimensions differ");
    assert_eq!((d.first.dim, d.second.dim), (Dim::Cols, Dim::Rows));
}

/// Consistent argument shapes for each standard kernel (tile arguments
/// only; `scale` also takes a real).
fn consistent(kernel: &str) -> Vec<(usize, usize)> {
    match kernel {
        "copy" | "scale" | "qr_factor" => vec![(4, 2)],
        "add" => vec![(3, 2); 2],
        "add4" => vec![(3, 2); 4],
        "gemm" => vec![(3, 4), (4, 2)],
        "gemm_acc" | "gemm_sub" => vec![(3, 2), (3, 4), (4, 2)],
        "syrk" => vec![(3, 2), (3, 4), (2, 4)],
        "chol" | "trtri" | "lu" => vec![(3, 3)],
        "trsm" | "trsm_ru" => vec![(2, 2), (3, 2)],
        "trsm_ll" => vec![(3, 3), (3, 2)],
        "qr_pair" => vec![(2, 2), (2, 2)],
        "qr_apply" => vec![(4, 2), (2, 2), (4, 3)],
        "qr_apply_pair" => vec![(4, 2), (2, 2), (2, 3), (2, 3)],
        "lq_factor" => vec![(2, 4)],
        "lq_pair" => vec![(2, 2), (2, 2)],
        "lq_apply" => vec![(2, 4), (2, 2), (3, 4)],
        "lq_apply_pair" => vec![(2, 4), (2, 2), (3, 2), (3, 2)],
        "getrf" => vec![(3, 3)],
        "gessm" => vec![(3, 1), (3, 3), (3, 2)],
        "tstrf" => vec![(2, 2), (3, 2)],
        "ssssm" => vec![(5, 2), (5, 1), (2, 3), (3, 3)],
        "trsm_lu" | "trsm_ln" | "trsm_lt" => vec![(3, 3), (3, 2)],
        "gemm_sub_t" => vec![(3, 2), (4, 3), (4, 2)],
        other => panic!("no shapes for {other}"),
    }
}

fn call(kernel: &str, shapes: &[(usize, usize)]) -> Result<Vec<Tile>, String> {
    // The pivot tile of `gessm` and `ssssm` must be a permutation.
    let pivots = match kernel {
        "gessm" => Some(0),
        "ssssm" => Some(1),
        _ => None,
    };
    let tiles: Vec<Tile> = shapes
        .iter()
        .enumerate()
        .map(|(k, &(r, c))| {
            if Some(k) == pivots {
                Tile::from_fn(r, c, |i, _| i as f64)
            } else {
                Tile::from_fn(r, c, |i, j| if i == j { 8.0 } else { 0.25 })
            }
        })
        .collect();
    let mut args: Vec<KernelArg<'_>> = tiles.iter().map(KernelArg::Tile).collect();
    if kernel == "scale" {
        args.push(KernelArg::Real(2.0));
    }
    let registry = Registry::standard();
    let k = registry.get(kernel).expect("standard kernel");
    k.call(&args).map_err(|e| e.reason)
}

#[test]
fn shape_rules_match_the_kernels() {
    let registry = Registry::standard();
    for kernel in registry.names() {
        let rule = registry
            .shape_rule(kernel)
            .unwrap_or_else(|| panic!("{kernel} has no rule"));
        let shapes = consistent(kernel);
        let results = call(kernel, &shapes).unwrap_or_else(|e| panic!("{kernel}: {e}"));
        assert_eq!(results.len(), rule.results.len(), "{kernel}");
        for (t, dims) in results.iter().zip(rule.results) {
            for (d, src) in dims.iter().enumerate() {
                if let Some(src) = src {
                    let want = shapes[src.arg];
                    let want = if src.dim == Dim::Rows { want.0 } else { want.1 };
                    let have = if d == 0 { t.nrows() } else { t.ncols() };
                    assert_eq!(have, want, "{kernel}: result dimension {d}");
                }
            }
        }
        // Breaking any tie makes the kernel refuse the call.
        for (x, _) in rule.ties {
            let mut broken = shapes.clone();
            match x.dim {
                Dim::Rows => broken[x.arg].0 += 1,
                Dim::Cols => broken[x.arg].1 += 1,
            }
            assert!(
                call(kernel, &broken).is_err(),
                "{kernel}: {broken:?} accepted"
            );
        }
    }
}

/// A kernel named like a standard one that tells nothing but its name and
/// computes with the standard implementation, counting one flop a call
/// when asked to; with `needs_context`, it fails when called outside the
/// test's thread context.
struct Plain {
    name: &'static str,
    flop: Option<f64>,
    needs_context: bool,
}

thread_local! {
    /// Set on a thread while it runs inside the test's thread context.
    static IN_CONTEXT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl lpk_runtime::kernels::Kernel for Plain {
    fn name(&self) -> &str {
        self.name
    }
    fn call(&self, args: &[KernelArg<'_>]) -> Result<Vec<Tile>, lpk_runtime::kernels::KernelError> {
        if self.needs_context && !IN_CONTEXT.with(std::cell::Cell::get) {
            return Err(lpk_runtime::kernels::KernelError::new(
                "called outside the thread context",
            ));
        }
        let standard = Registry::standard();
        standard
            .get(self.name)
            .expect("a standard kernel")
            .call(args)
    }
    fn flops(&self, _tiles: &[(usize, usize)]) -> Option<f64> {
        self.flop
    }
}

/// Runs examples/gemm.lpk on 8 x 8 inputs with this block, registry and
/// number of executor threads.
fn run_gemm(
    registry: &Registry,
    block: usize,
    workers: usize,
) -> Result<lpk_runtime::exec::RunReport, RunError> {
    let p = program("gemm");
    let data = inputs(&p, &[("A", 8, 8), ("B", 8, 8)]);
    in_memory::run(
        &p,
        &[],
        &data,
        block,
        registry,
        &ExecConfig { workers },
        &Progress::default(),
    )
    .map(|run| run.report)
}

/// The shape check and the flop count ask the registry: the same program
/// and inputs are refused with the standard kernels (`gemm`'s rule ties
/// a's columns to b's rows) and pass the check with kernels of the same
/// names that have no rule; a run's flops are what its kernels count.
#[test]
fn the_shape_check_and_the_flops_come_from_the_registry() {
    let p = program("gemm");
    let (inst, a, b) = gemm_instance(&p, 2);
    let bad: BTreeMap<MatrixId, (usize, usize)> = [(a, (150, 150)), (b, (170, 150))].into();
    assert!(lpk_runtime::shapes::check(&inst, &Registry::standard(), &bad, 100).is_err());
    let registry = |flop: Option<f64>| {
        let mut r = Registry::new();
        for name in ["gemm", "gemm_acc"] {
            r.register(std::sync::Arc::new(Plain {
                name,
                flop,
                needs_context: false,
            }));
        }
        r
    };
    assert!(lpk_runtime::shapes::check(&inst, &registry(None), &bad, 100).is_ok());

    let run = |registry: &Registry| run_gemm(registry, 4, 1).expect("runs");
    let standard = run(&Registry::standard());
    // 2 x 2 x 2 tiles of 4: two gemm and two gemm_acc tiles of C.
    assert_eq!(standard.tasks, 8);
    assert_eq!(standard.flops, 4.0 * 128.0 + 4.0 * (128.0 + 16.0));
    assert!(standard.flops_complete);
    let one = run(&registry(Some(1.0)));
    assert_eq!((one.flops, one.flops_complete), (8.0, true));
    let none = run(&registry(None));
    assert_eq!((none.flops, none.flops_complete), (0.0, false));
}

/// Every executor thread runs its loop inside the registry's thread
/// context, once per thread (Python kernels keep a thread state there).
#[test]
fn every_executor_thread_runs_in_the_registrys_thread_context() {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    let mut registry = Registry::new();
    for name in ["gemm", "gemm_acc"] {
        registry.register(Arc::new(Plain {
            name,
            flop: None,
            needs_context: true,
        }));
    }
    let run = |registry: &Registry| run_gemm(registry, 2, 3);
    assert!(run(&registry).is_err(), "no context: the kernels refuse");
    let entered = Arc::new(AtomicUsize::new(0));
    let counter = entered.clone();
    registry.set_thread_context(Arc::new(move |body| {
        counter.fetch_add(1, Ordering::Relaxed);
        IN_CONTEXT.with(|c| c.set(true));
        body();
        IN_CONTEXT.with(|c| c.set(false));
    }));
    let out = run(&registry).expect("runs in the context");
    assert_eq!(out.tasks, 64);
    assert_eq!(entered.load(Ordering::Relaxed), 3, "once per worker thread");
}
