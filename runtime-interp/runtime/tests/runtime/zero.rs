//! Zero tiles (`lpk_runtime::zero`): their shapes from the kernels' shape
//! rules and the block size, and a padded reduction tree run on real
//! tiles (`tests/fixtures/programs/gemm_tree_zero.lpka`, the example
//! `gemm_tree_zero` compiled with `--no-source`), which fails without its
//! zero matrix.

use crate::program;
use lpk_model::program::{Instance, Program};
use lpk_model::task::Task;
use lpk_model::MatrixId;
use lpk_runtime::dense::{self, RunError};
use lpk_runtime::exec::{ExecConfig, ExecError, Progress};
use lpk_runtime::in_memory;
use lpk_runtime::kernels::rules::Dim;
use lpk_runtime::kernels::{Registry, Tile};
use lpk_runtime::zero::{zero_tiles, ZeroTileError};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The first task of the statement calling `kernel`.
fn task_of(p: &Program, kernel: &str) -> Task {
    let stmt = p
        .statements
        .iter()
        .position(|s| p.kernel(s.kernel).name == kernel)
        .expect("a call of the kernel");
    Task {
        stmt: lpk_model::StmtId::from_index(stmt).expect("a small index"),
        vars: vec![0; p.statements[stmt].depth()].into(),
    }
}

fn tile(r: usize, c: usize) -> Option<Arc<Tile>> {
    Some(Arc::new(Tile::from_fn(r, c, |i, j| {
        (i + 2 * j) as f64 + 1.0
    })))
}

/// The standard implementation of every kernel `p` declares.
fn std_kernels(p: &lpk_model::program::Program) -> Vec<Arc<dyn lpk_runtime::kernels::Kernel>> {
    lpk_runtime::exec::resolve_kernels(p, &lpk_runtime::kernels::Registry::standard())
        .expect("standard kernels")
}

fn shapes(tiles: &[Arc<Tile>]) -> Vec<(usize, usize)> {
    tiles.iter().map(|t| (t.nrows(), t.ncols())).collect()
}

/// The padded tree at M = N = 1 and K = 3, a K that needs padding.
fn small_tree(p: &Program) -> Instance<'_> {
    p.bind(&[("M".into(), 1), ("N".into(), 1), ("K".into(), 3)])
        .expect("binds")
}

#[test]
fn a_zero_tile_takes_the_shape_its_kernel_ties_to_the_other_tiles() {
    let p = program("gemm_tree_zero");
    let inst = small_tree(&p);
    let kernels = std_kernels(&p);
    let make = |task: &Task, tiles: Vec<Option<Arc<Tile>>>, block: Option<usize>| {
        zero_tiles(&inst, &kernels, task, tiles, block).expect("made")
    };
    let add = task_of(&p, "add");
    // The padded right child is the left child's shape, an edge tile too.
    let made = make(&add, vec![tile(3, 2), None], Some(8));
    assert_eq!(shapes(&made), [(3, 2), (3, 2)]);
    assert!(made[1].col_iter().all(|c| c.iter().all(|&x| x == 0.0)));
    assert_eq!(made[0][(2, 1)], 5.0, "a loaded tile is passed through");
    let made = make(&add, vec![None, tile(1, 7)], None);
    assert_eq!(shapes(&made), [(1, 7), (1, 7)]);
    // Nothing tied: the block size.
    let made = make(&add, vec![None, None], Some(5));
    assert_eq!(shapes(&made), [(5, 5), (5, 5)]);
    // gemm(a, b) ties a's columns to b's rows only; a's rows are the block.
    let gemm = task_of(&p, "gemm");
    let made = make(&gemm, vec![None, tile(4, 6)], Some(5));
    assert_eq!(shapes(&made), [(5, 4), (4, 6)]);
    let copy = task_of(&p, "copy");
    let made = make(&copy, vec![None], Some(2));
    assert_eq!(shapes(&made), [(2, 2)]);
    // Nothing loaded to make: the same tiles back.
    let kept = tile(2, 2);
    let made = make(&copy, vec![kept.clone()], None);
    assert!(Arc::ptr_eq(&made[0], kept.as_ref().expect("a tile")));
}

#[test]
fn a_zero_tile_of_no_known_size_is_an_error_naming_it() {
    let p = program("gemm_tree_zero");
    let inst = small_tree(&p);
    let e = zero_tiles(
        &inst,
        &std_kernels(&p),
        &task_of(&p, "add"),
        vec![None, None],
        None,
    )
    .expect_err("no size");
    assert!(
        matches!(&e, ZeroTileError::NoSize { dim: Dim::Rows, kernel, .. } if kernel == "add"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "task add@61(level=0, m=0, n=0, k=0) reads the zero tile P[0, 0, 0, 0], whose rows no \
         other argument of kernel `add` gives, and the run has no block size for it"
    );
}

/// C = A B by the padded tree, on edge tiles, for K = 1..=9 tiles of the
/// reduced dimension; the same program without its zero matrix fails on
/// the first padded read (none when K is a power of two).
#[test]
fn the_padded_tree_computes_the_product_and_needs_its_zero_matrix() {
    let p = program("gemm_tree_zero");
    let mut plain = p.clone().into_parts();
    for m in &mut plain.matrices {
        m.zero = false;
    }
    let plain = Program::validate(plain, &lpk_model::artifact::Limits::default()).expect("valid");
    let block = 4;
    for k in 1..=9usize {
        let inner = k * block - 1;
        let a = Tile::from_fn(7, inner, |i, j| ((3 * i + j) % 5) as f64 - 1.5);
        let b = Tile::from_fn(inner, 6, |i, j| ((i + 2 * j) % 7) as f64 * 0.25);
        let find = |name: &str| p.matrix_named(name).expect("a matrix of the program");
        let data: BTreeMap<MatrixId, Tile> =
            [(find("A"), a.clone()), (find("B"), b.clone())].into();
        let run = |prog: &Program| {
            in_memory::run(
                prog,
                &[],
                &data,
                block,
                &Registry::standard(),
                &ExecConfig { workers: 2 },
                &Progress::default(),
            )
            .map(|r| {
                let c = r.outputs.get(&find("C")).cloned().unwrap_or_default();
                dense::assemble(&r.instance.extents[find("C").index()], &c, block)
                    .expect("assembles")
            })
        };
        let c = run(&p).unwrap_or_else(|e| panic!("K={k}: {e}"));
        let want = &a * &b;
        let err = (&c - &want).norm_l2() / want.norm_l2().max(1.0);
        assert!(err < 1e-13, "K={k}: relative error {err:e}");
        match run(&plain) {
            Ok(_) => assert!(k.is_power_of_two(), "K={k}: ran without zero tiles"),
            Err(RunError::Exec(ExecError::Unwritten { tile, .. })) => {
                assert!(!k.is_power_of_two(), "K={k}");
                assert!(tile.starts_with("P["), "{tile}");
            }
            Err(e) => panic!("K={k}: {e}"),
        }
    }
}
