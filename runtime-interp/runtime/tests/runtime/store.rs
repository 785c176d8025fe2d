//! Tile stores: put/get/delete round trips on every store, missing tiles,
//! concurrent puts, the `.npy` layout on disk, `open_store` specs, and the
//! executor adapters.

// Helpers outside `#[test]` functions unwrap too: a failure there is a
// test failure, which is what `allow-unwrap-in-tests` permits.
#![allow(clippy::unwrap_used)]

use lpk_runtime::exec::{TileSink, TileSource};
use lpk_runtime::kernels::Tile;
use lpk_runtime::npy;
use lpk_runtime::store::{
    open_store, tile_key, BlobStore, MemoryStore, NpyDirStore, ObjectStoreTiles, StoreSink,
    StoreSource, TileStore,
};
use std::sync::Arc;

pub(crate) fn sample(rows: usize, cols: usize, seed: f64) -> Tile {
    Tile::from_fn(rows, cols, |i, j| seed + 10.0 * i as f64 + j as f64)
}

pub(crate) fn assert_same(a: &Tile, b: &Tile) {
    assert_eq!(
        (a.nrows(), a.ncols()),
        (b.nrows(), b.ncols()),
        "shapes differ"
    );
    for j in 0..a.ncols() {
        for i in 0..a.nrows() {
            assert_eq!(
                a[(i, j)].to_bits(),
                b[(i, j)].to_bits(),
                "element ({i}, {j})"
            );
        }
    }
}

pub(crate) fn temp_dir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("lpk-store-{tag}-"))
        .tempdir()
        .expect("temp dir")
}

/// The object store of `file://` URL `file://DIR{under}` (`under` empty or
/// starting with `/`), with the URL.
pub(crate) fn file_store(dir: &tempfile::TempDir, under: &str) -> (String, ObjectStoreTiles) {
    let url = format!("file://{}{under}", dir.path().display());
    let store = ObjectStoreTiles::open(&url).unwrap();
    (url, store)
}

/// The one behaviour every store must have.
pub(crate) fn check_store(store: &dyn TileStore) {
    assert!(store.get("A", &[0, 0]).unwrap().is_none());
    let a = sample(3, 2, 0.5);
    store.put("A", &[0, 1], Arc::new(a.clone())).unwrap();
    store.put("b_2", &[7], Arc::new(sample(4, 1, 1.0))).unwrap();
    assert_same(&store.get("A", &[0, 1]).unwrap().unwrap(), &a);
    assert_same(
        &store.get("b_2", &[7]).unwrap().unwrap(),
        &sample(4, 1, 1.0),
    );
    // Neighbouring keys are distinct tiles.
    assert!(store.get("A", &[1, 0]).unwrap().is_none());
    assert!(store.get("A", &[0]).unwrap().is_none());
    assert!(store.get("b_2", &[7, 0]).unwrap().is_none());
    // Put replaces.
    store
        .put("A", &[0, 1], Arc::new(sample(1, 1, 9.0)))
        .unwrap();
    assert_same(
        &store.get("A", &[0, 1]).unwrap().unwrap(),
        &sample(1, 1, 9.0),
    );
    store.delete("A", &[0, 1]).unwrap();
    assert!(store.get("A", &[0, 1]).unwrap().is_none());
    // Deleting a missing tile is fine.
    store.delete("A", &[0, 1]).unwrap();
    // Negative and 3-D indices have keys too.
    store
        .put("C", &[-1, 2, 3], Arc::new(sample(2, 2, 0.0)))
        .unwrap();
    assert_same(
        &store.get("C", &[-1, 2, 3]).unwrap().unwrap(),
        &sample(2, 2, 0.0),
    );
    // Names that could escape the root are refused, with the reason.
    for bad in ["", "..", ".hidden", "a/b", "a\\b", "A[0]"] {
        let e = store
            .put(bad, &[0], Arc::new(sample(1, 1, 0.0)))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("`{bad}` cannot name a matrix in a tile store (use letters, digits, `_`, `-` and `.`, not starting with `.`)")
        );
    }
    assert_eq!(
        store.get("A", &[]).unwrap_err().to_string(),
        "a tile of `A` needs at least one index"
    );
}

/// Eight threads put 64 distinct tiles each, then every tile reads back.
pub(crate) fn check_concurrent(store: &dyn TileStore) {
    std::thread::scope(|s| {
        for t in 0..8i64 {
            s.spawn(move || {
                for k in 0..64i64 {
                    let tile = sample(2, 3, (t * 1000 + k) as f64);
                    store.put("M", &[t, k], Arc::new(tile)).unwrap();
                }
            });
        }
    });
    for t in 0..8i64 {
        for k in 0..64i64 {
            let got = store.get("M", &[t, k]).unwrap().unwrap();
            assert_same(&got, &sample(2, 3, (t * 1000 + k) as f64));
        }
    }
}

#[test]
fn keys_join_indices_with_underscores() {
    assert_eq!(tile_key("A", &[1, 2]).unwrap(), "A/1_2.npy");
    assert_eq!(tile_key("x", &[5]).unwrap(), "x/5.npy");
    assert_eq!(tile_key("S", &[-1, 0, 3]).unwrap(), "S/-1_0_3.npy");
}

#[test]
fn memory_store() {
    let store = MemoryStore::new();
    check_store(&store);
    assert_eq!(store.describe(), "memory");
    let store = MemoryStore::new();
    check_concurrent(&store);
    assert_eq!(store.len(), 8 * 64);
}

#[test]
fn npy_dir_store_writes_files_numpy_can_read() {
    let dir = temp_dir("dir");
    let root = dir.path().join("tiles");
    let store = NpyDirStore::new(&root);
    check_store(&store);
    assert_eq!(store.describe(), format!("dir {}", root.display()));
    // The tile is a plain .npy file at ROOT/M/i_j.npy.
    let t = sample(5, 4, 0.25);
    store.put("L", &[2, 1], Arc::new(t.clone())).unwrap();
    assert_same(&npy::read_file(&root.join("L/2_1.npy")).unwrap(), &t);
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(root.join("L"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(leftovers, vec!["2_1.npy".to_string()]);
    let store = NpyDirStore::new(dir.path().join("concurrent"));
    check_concurrent(&store);
}

#[test]
fn npy_dir_store_reports_corrupt_tiles() {
    let dir = temp_dir("corrupt");
    let store = NpyDirStore::new(dir.path());
    std::fs::create_dir_all(dir.path().join("A")).unwrap();
    let path = dir.path().join("A/0_0.npy");
    std::fs::write(&path, b"not numpy").unwrap();
    assert_eq!(
        store.get("A", &[0, 0]).unwrap_err().to_string(),
        format!(
            "{}: not a .npy file (it does not start with \\x93NUMPY)",
            path.display()
        )
    );
}

#[test]
fn object_store_over_file_urls() {
    let dir = temp_dir("os");
    let (url, store) = file_store(&dir, "/run");
    check_store(&store);
    assert_eq!(store.describe(), url);
    let t = sample(3, 3, 2.0);
    store.put("X", &[0, 2], Arc::new(t.clone())).unwrap();
    // Objects are the same .npy files a directory store would hold.
    assert_same(
        &npy::read_file(&dir.path().join("run/X/0_2.npy")).unwrap(),
        &t,
    );
    let as_dir = NpyDirStore::new(dir.path().join("run"));
    assert_same(&as_dir.get("X", &[0, 2]).unwrap().unwrap(), &t);
    let (_, store) = file_store(&dir, "/c");
    check_concurrent(&store);
}

#[test]
fn object_store_in_memory_and_corrupt_objects() {
    let store = ObjectStoreTiles::open("memory:///").unwrap();
    check_store(&store);
    check_concurrent(&store);
    let dir = temp_dir("oscorrupt");
    std::fs::create_dir_all(dir.path().join("A")).unwrap();
    std::fs::write(dir.path().join("A/1_1.npy"), b"\x93NUMPY\x09\x00").unwrap();
    let (url, store) = file_store(&dir, "");
    assert_eq!(
        store.get("A", &[1, 1]).unwrap_err().to_string(),
        format!("{url}/A/1_1.npy: unsupported .npy format version 9.0 (supported: 1.0, 2.0, 3.0)")
    );
}

#[test]
fn open_store_specs() {
    let dir = temp_dir("open");
    let plain_spec = dir.path().join("p").display().to_string();
    let url = format!("file://{}/u", dir.path().display());
    // Opening an S3 store does no I/O; what it reaches shows in the first
    // call (`s3.rs` makes those calls).
    for (spec, described) in [
        ("mem", "memory"),
        (plain_spec.as_str(), format!("dir {plain_spec}").as_str()),
        (&format!("dir:{plain_spec}"), &format!("dir {plain_spec}")),
        (&url, &url),
        ("memory:///", "memory:///"),
        ("s3://bucket/run", "s3://bucket/run"),
    ] {
        assert_eq!(open_store(spec).unwrap().describe(), described, "{spec}");
    }
    open_store(&url)
        .unwrap()
        .put("A", &[0], Arc::new(sample(1, 1, 3.0)))
        .unwrap();
    assert!(dir.path().join("u/A/0.npy").is_file());
    for (spec, refused) in [
        ("", "an empty tile store; expected `mem`, a directory, `dir:PATH` or a URL such as file:///abs/path"),
        ("gs://bucket/run", "cannot open tile store `gs://bucket/run`: this build opens file://, memory:// and s3:// URLs (for another S3 server, use s3://BUCKET/PREFIX and set AWS_ENDPOINT_URL)"),
        ("file://[bad/x", "`file://[bad/x` is not a valid store URL: invalid IPv6 address"),
    ] {
        assert_eq!(open_store(spec).unwrap_err().to_string(), refused, "{spec:?}");
    }
}

/// A tiny run by hand: inputs come from a store through `StoreSource`, a
/// "kernel" adds the two inputs, results go through `StoreSink` to a
/// directory of `.npy` files.
#[test]
fn source_and_sink_connect_stores_to_a_run() {
    let names = vec!["A".to_string(), "B".to_string(), "C".to_string()];
    let inputs = MemoryStore::new();
    for i in 0..2 {
        for j in 0..3 {
            let seed = (i * 3 + j) as f64;
            inputs
                .put("A", &[i, j], Arc::new(sample(2, 2, seed)))
                .unwrap();
            inputs
                .put("B", &[i, j], Arc::new(sample(2, 2, 100.0 * seed)))
                .unwrap();
        }
    }
    let dir = temp_dir("adapters");
    let outputs = NpyDirStore::new(dir.path());
    let source = StoreSource::with_names(&inputs, names.clone());
    let sink = StoreSink::with_names(&outputs, names.clone());
    for i in 0..2 {
        for j in 0..3 {
            let a = source.input(crate::matrix(0), &[i, j]).unwrap();
            let b = source.input(crate::matrix(1), &[i, j]).unwrap();
            let c = Tile::from_fn(2, 2, |r, s| a[(r, s)] + b[(r, s)]);
            sink.output(crate::matrix(2), &[i, j], Arc::new(c)).unwrap();
        }
    }
    for i in 0..2 {
        for j in 0..3 {
            let seed = (i * 3 + j) as f64;
            let want = Tile::from_fn(2, 2, |r, s| {
                sample(2, 2, seed)[(r, s)] + sample(2, 2, 100.0 * seed)[(r, s)]
            });
            let got = npy::read_file(&dir.path().join(format!("C/{i}_{j}.npy"))).unwrap();
            assert_same(&got, &want);
        }
    }
    assert_eq!(
        source
            .input(crate::matrix(0), &[5, 5])
            .unwrap_err()
            .to_string(),
        "tile A[5, 5] is not in the tile store (memory)"
    );
    assert_eq!(
        source
            .input(crate::matrix(7), &[0, 0])
            .unwrap_err()
            .to_string(),
        "matrix 7 is not in the program"
    );
    let bad_sink = StoreSink::with_names(&outputs, vec!["../up".to_string()]);
    assert_eq!(
        bad_sink.output(crate::matrix(0), &[0], Arc::new(sample(1, 1, 0.0))).unwrap_err().to_string(),
        "storing ../up[0]: `../up` cannot name a matrix in a tile store (use letters, digits, `_`, `-` and `.`, not starting with `.`)"
    );
}

/// The adapters take matrix names from `Program::matrices`, by index.
#[test]
fn adapters_name_matrices_like_the_program() {
    use lpk_model::artifact::Limits;
    use lpk_model::expr::ExprPool;
    use lpk_model::program::{MatrixDecl, Program, ProgramParts, Role};
    let decl = |name: &str, role| MatrixDecl {
        name: name.to_string(),
        role,
        extents: Vec::new(),
        zero: false,
    };
    let parts = ProgramParts {
        name: "p".to_string(),
        params: Vec::new(),
        requires: Vec::new(),
        matrices: vec![decl("In", Role::Input), decl("Out", Role::Output)],
        kernels: Vec::new(),
        exprs: ExprPool::default(),
        statements: Vec::new(),
        tree: Vec::new(),
        plans: Vec::new(),
    };
    let program = Program::validate(parts, &Limits::default()).expect("valid");
    let store = MemoryStore::new();
    store
        .put("In", &[1, 2], Arc::new(sample(2, 2, 4.0)))
        .unwrap();
    let source = StoreSource::new(&store, &program);
    assert_same(
        &source.input(crate::matrix(0), &[1, 2]).unwrap(),
        &sample(2, 2, 4.0),
    );
    assert_eq!(
        source
            .input(crate::matrix(1), &[1, 2])
            .unwrap_err()
            .to_string(),
        "tile Out[1, 2] is not in the tile store (memory)"
    );
    let sink = StoreSink::new(&store, &program);
    sink.output(crate::matrix(1), &[0], Arc::new(sample(1, 3, 0.0)))
        .unwrap();
    assert_same(
        &store.get("Out", &[0]).unwrap().unwrap(),
        &sample(1, 3, 0.0),
    );
    assert_eq!(
        sink.output(crate::matrix(2), &[0], Arc::new(sample(1, 1, 0.0)))
            .unwrap_err()
            .to_string(),
        "matrix 2 is not in the program"
    );
}

#[test]
fn file_url_tiles_go_straight_to_the_files_object_store_reads() {
    // Tiles of a file:// store are read and written directly, not through
    // object_store; both must see the same objects, and a writer's staging
    // file (`KEY#N`, as LocalFileSystem names them) must stay invisible.
    let dir = temp_dir("direct");
    let (_, store) = file_store(&dir, "/run");
    let t = sample(5, 1500, 3.0);
    store.put("X", &[0, 2], Arc::new(t.clone())).unwrap();
    assert_eq!(
        store.get_bytes("X/0_2.npy", 1 << 20).unwrap().unwrap(),
        npy::to_bytes(&t)
    );
    // A crashed writer's staging file: skipped by listings and by the next
    // writer, which takes the next staging name.
    std::fs::write(dir.path().join("run/X/1_1.npy#1"), b"half a tile").unwrap();
    store.put("X", &[1, 1], Arc::new(t.clone())).unwrap();
    assert_same(&store.get("X", &[1, 1]).unwrap().unwrap(), &t);
    let mut listed = store.list("X").unwrap();
    listed.sort();
    assert_eq!(listed, ["X/0_2.npy", "X/1_1.npy"]);
    // An object put through object_store is a tile the direct path reads.
    let u = sample(7, 3, 4.0);
    store.put_bytes("Y/3_4.npy", npy::to_bytes(&u)).unwrap();
    assert_same(&store.get("Y", &[3, 4]).unwrap().unwrap(), &u);
    assert!(store.get("Y", &[9, 9]).unwrap().is_none());
    // Nothing else was left behind in the tile directories.
    let mut files: Vec<String> = std::fs::read_dir(dir.path().join("run/X"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["0_2.npy", "1_1.npy", "1_1.npy#1"]);
}
