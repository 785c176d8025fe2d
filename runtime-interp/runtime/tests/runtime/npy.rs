//! The `.npy` reader and writer: round trips, files written by numpy
//! (`tests/fixtures/npy/`, made by `make_fixtures.py`), every malformed
//! case with its message, and random corruption that must never panic.

// Helpers outside `#[test]` functions unwrap too: a failure there is a
// test failure, which is what `allow-unwrap-in-tests` permits.
#![allow(clippy::unwrap_used)]

use super::store::assert_same;
use lpk_runtime::kernels::Tile;
use lpk_runtime::npy::{self, NpyError, ReadLimit};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/npy")
        .join(name)
}

/// A distinct value per element, exact in f32 and i32 for small shapes.
fn sample(rows: usize, cols: usize) -> Tile {
    Tile::from_fn(rows, cols, |i, j| 10.0 * i as f64 + j as f64 + 0.5)
}

/// A `.npy` file from its parts, with the header padded like numpy does.
fn raw(version: (u8, u8), header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[version.0, version.1]);
    let len_bytes = if version.0 == 1 { 2 } else { 4 };
    let mut text = header.as_bytes().to_vec();
    let total = (8 + len_bytes + text.len() + 1).next_multiple_of(64);
    text.resize(total - 8 - len_bytes - 1, b' ');
    text.push(b'\n');
    // The length, little-endian in `len_bytes` bytes.
    out.extend_from_slice(&(text.len() as u32).to_le_bytes()[..len_bytes]);
    out.extend_from_slice(&text);
    out.extend_from_slice(data);
    out
}

/// A version 1.0 `.npy` file without header padding.
fn tight(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// `tile` as row-major little-endian f8 bytes (what numpy writes for a C
/// array).
fn c_order_bytes(tile: &Tile) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..tile.nrows() {
        for j in 0..tile.ncols() {
            out.extend_from_slice(&tile[(i, j)].to_le_bytes());
        }
    }
    out
}

/// `tile` as the C-order `<f8` `.npy` file numpy writes by default.
pub(crate) fn c_order_npy(tile: &Tile) -> Vec<u8> {
    let (r, c) = (tile.nrows(), tile.ncols());
    raw(
        (1, 0),
        &format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({r}, {c}), }}"),
        &c_order_bytes(tile),
    )
}

fn read(bytes: &[u8]) -> Result<Tile, NpyError> {
    npy::read_bytes(bytes, "t.npy", &ReadLimit::default())
}

/// Reads `bytes` both from memory and as a stream, expects the same error
/// message from both, and returns it.
fn error_of(bytes: &[u8]) -> String {
    let from_bytes = read(bytes).expect_err("expected an error").to_string();
    let from_stream = npy::read(&mut &bytes[..], "t.npy", &ReadLimit::default())
        .expect_err("expected an error from the stream reader")
        .to_string();
    assert_eq!(from_bytes, from_stream);
    from_bytes
}

fn temp_dir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("lpk-npy-{tag}-"))
        .tempdir()
        .expect("temp dir")
}

#[test]
fn round_trips_odd_shapes_in_memory_and_files() {
    let dir = temp_dir("rt");
    for (r, c) in [
        (0, 0),
        (0, 3),
        (3, 0),
        (1, 1),
        (3, 7),
        (5, 1),
        (1, 5),
        (300, 200),
    ] {
        let t = sample(r, c);
        let bytes = npy::to_bytes(&t);
        assert_same(&read(&bytes).unwrap(), &t);
        let mut stream = bytes.as_slice();
        assert_same(
            &npy::read(&mut stream, "s", &ReadLimit::default()).unwrap(),
            &t,
        );
        let path = dir.path().join(format!("m{r}x{c}.npy"));
        npy::write_file(&path, &t).unwrap();
        assert_same(&npy::read_file(&path).unwrap(), &t);
    }
    // Only the final file is left: the temporary files were renamed.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert_eq!(names, Vec::<String>::new());
}

#[test]
fn special_values_survive_bit_for_bit() {
    let vals = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE / 2.0,
        f64::MAX,
    ];
    let t = Tile::from_fn(vals.len(), 1, |i, _| vals[i]);
    assert_same(&read(&npy::to_bytes(&t)).unwrap(), &t);
}

#[test]
fn writes_a_numpy_header_aligned_to_64_bytes() {
    let h = npy::header_bytes(3, 7);
    assert_eq!(h.len() % 64, 0);
    assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
    let text = String::from_utf8(h[10..].to_vec()).unwrap();
    assert_eq!(
        text.trim_end(),
        "{'descr': '<f8', 'fortran_order': True, 'shape': (3, 7), }"
    );
    assert!(text.ends_with('\n'));
    assert_eq!(npy::to_bytes(&sample(3, 7)).len(), h.len() + 3 * 7 * 8);
}

#[test]
fn reads_c_order_across_row_blocks() {
    // 300 x 400 takes two row blocks of the reader (the second partial);
    // 2 x 70000 is wider than a block, so each row is its own block.
    for (r, c) in [(3, 7), (300, 400), (2, 70000)] {
        let t = sample(r, c);
        assert_same(&read(&c_order_npy(&t)).unwrap(), &t);
    }
}

/// The fixtures that hold `sample(3, 4)`, in every float dtype, byte
/// order, memory order and format version numpy writes.
const SAMPLE_FIXTURES: [&str; 8] = [
    "f8_c.npy",
    "f8_f.npy",
    "f8_be.npy",
    "f8_be_f.npy",
    "f4_c.npy",
    "f4_be.npy",
    "f8_v2.npy",
    "f8_v3.npy",
];

/// The fixtures that hold `sample(3, 4)` less its halves, as integers.
const INT_FIXTURES: [&str; 2] = ["i8_c.npy", "i4_f.npy"];

/// The fixtures that hold a vector, a row and an empty array.
const OTHER_FIXTURES: [&str; 3] = ["vec.npy", "row.npy", "empty.npy"];

#[test]
fn reads_files_written_by_numpy() {
    let m = sample(3, 4);
    for name in SAMPLE_FIXTURES {
        let t = npy::read_file(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same(&t, &m);
    }
    let ints = Tile::from_fn(3, 4, |i, j| 10.0 * i as f64 + j as f64);
    for name in INT_FIXTURES {
        assert_same(&npy::read_file(&fixture(name)).unwrap(), &ints);
    }
    let vec = Tile::from_fn(5, 1, |i, _| 10.0 * i as f64 + 0.5);
    assert_same(&npy::read_file(&fixture("vec.npy")).unwrap(), &vec);
    assert_same(&npy::read_file(&fixture("row.npy")).unwrap(), &sample(1, 4));
    let empty = npy::read_file(&fixture("empty.npy")).unwrap();
    assert_eq!((empty.nrows(), empty.ncols()), (0, 3));
}

#[test]
fn rejects_numpy_files_that_are_not_matrices() {
    let msg = |name: &str| {
        let path = fixture(name);
        let e = npy::read_file(&path).unwrap_err().to_string();
        e.replace(&path.display().to_string(), name)
    };
    assert_eq!(
        msg("scalar.npy"),
        "scalar.npy: shape () is a scalar; a tile needs a matrix (r, c) or a vector (n,)"
    );
    assert_eq!(
        msg("rank3.npy"),
        "rank3.npy: shape (2, 2, 2) has 3 dimensions; a tile needs a matrix (r, c) or a vector (n,)"
    );
    assert_eq!(
        msg("c16.npy"),
        "c16.npy: unsupported dtype '<c16' (supported: <f8, >f8, <f4, >f4, <i8, >i8, <i4, >i4)"
    );
}

#[test]
fn parses_header_variants() {
    let t = sample(2, 3);
    let f_data = &npy::to_bytes(&t)[npy::header_bytes(2, 3).len()..];
    for header in [
        "{'shape': (2, 3), 'fortran_order': True, 'descr': '<f8'}",
        "{\"descr\": \"<f8\", \"fortran_order\": True, \"shape\": (2,3)}",
        "{ 'descr' : '<f8' ,\n 'fortran_order' : True , 'shape' : ( 2 , 3 , ) , }",
        "{'descr': '<f8', 'fortran_order': True, 'shape': (2L, 3L), }",
    ] {
        assert_same(
            &read(&raw((1, 0), header, f_data)).unwrap_or_else(|e| panic!("{header}: {e}")),
            &t,
        );
    }
}

/// Each malformed header and its message.
#[test]
fn malformed_headers_name_the_problem() {
    let d = |h: &str| error_of(&raw((1, 0), h, &[0u8; 48]));
    let cases: &[(&str, &str)] = &[
        (
            "",
            "t.npy: malformed .npy header: at byte 54: expected '{', found the end of the header",
        ),
        (
            "{'descr': '<f8', 'fortran_order': True}",
            "t.npy: malformed .npy header: the key 'shape' is missing",
        ),
        (
            "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), 'shape': (2, 3)}",
            "t.npy: malformed .npy header: the key 'shape' appears twice",
        ),
        (
            "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), 'x': 1}",
            "t.npy: malformed .npy header: unexpected key 'x' (a .npy header has only 'descr', 'fortran_order' and 'shape')",
        ),
        (
            "{'descr': '<f8', 'fortran_order': 1, 'shape': (2, 3)}",
            "t.npy: malformed .npy header: at byte 34: expected a string, True, False or a tuple, found \"1, 'shape':\"",
        ),
        (
            "{'descr': '<f8', 'fortran_order': 'yes', 'shape': (2, 3)}",
            "t.npy: malformed .npy header: 'fortran_order' must be True or False",
        ),
        (
            "{'descr': [('a', '<f8')], 'fortran_order': True, 'shape': (2, 3)}",
            "t.npy: malformed .npy header: at byte 10: expected a string, True, False or a tuple, found \"[('a', '<f8'\"",
        ),
        (
            "{'descr': '<f8', 'fortran_order': True, 'shape': (6)}",
            "t.npy: malformed .npy header: 'shape' must be a tuple of integers (a 1-D shape is written (n,))",
        ),
        (
            "{'descr': '<f8', 'fortran_order': True, 'shape': (2, -3)}",
            "t.npy: malformed .npy header: at byte 53: expected a non-negative integer, found \"-3)}\"",
        ),
        (
            "{'descr': '<f8', 'fortran_order': True, 'shape': (2 3)}",
            "t.npy: malformed .npy header: at byte 52: expected ',' or ')', found \"3)}\"",
        ),
        (
            "{'descr': '<f8', 'fortran_order': True, 'shape': (99999999999999999999, 1)}",
            "t.npy: malformed .npy header: dimension 99999999999999999999 does not fit in 64 bits",
        ),
        (
            "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3)} x",
            "t.npy: malformed .npy header: at byte 57: expected the end of the header after '}', found \"x\"",
        ),
        (
            "{'descr': '<f8' 'fortran_order': True, 'shape': (2, 3)}",
            "t.npy: malformed .npy header: at byte 16: expected ',' or '}', found \"'fortran_ord\"",
        ),
        (
            "{'descr': '<f\\8', 'fortran_order': True, 'shape': (2, 3)}",
            "t.npy: malformed .npy header: at byte 13: expected the end of the string (escapes are not supported), found \"\\\\8', 'fortra\"",
        ),
        (
            "{'descr': '<u2', 'fortran_order': True, 'shape': (2, 3)}",
            "t.npy: unsupported dtype '<u2' (supported: <f8, >f8, <f4, >f4, <i8, >i8, <i4, >i4)",
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(header, want)| {
            let got = d(header);
            (got != *want).then(|| format!("header {header:?}\n  got:  {got}\n  want: {want}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn bad_preambles_are_named() {
    assert_eq!(
        error_of(b"PK\x03\x04 this is a zip file"),
        "t.npy: not a .npy file (it does not start with \\x93NUMPY)"
    );
    assert_eq!(
        error_of(b""),
        "t.npy: not a .npy file (it does not start with \\x93NUMPY)"
    );
    assert_eq!(
        error_of(b"\x93NUM"),
        "t.npy: the file ends inside the .npy header"
    );
    assert_eq!(
        error_of(b"\x93NUMPY\x01\x00\x40"),
        "t.npy: the file ends inside the .npy header"
    );
    assert_eq!(
        error_of(b"\x93NUMPY\x01\x00\x40\x00{'descr'"),
        "t.npy: the file ends inside the .npy header"
    );
    let h = "{'descr': '<f8', 'fortran_order': True, 'shape': (1, 1), }";
    for (v, text) in [((4, 0), "4.0"), ((1, 1), "1.1"), ((0, 9), "0.9")] {
        assert_eq!(
            error_of(&raw(v, h, &[0u8; 8])),
            format!("t.npy: unsupported .npy format version {text} (supported: 1.0, 2.0, 3.0)")
        );
    }
}

#[test]
fn header_length_is_limited() {
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    bytes.extend_from_slice(&0xffff_fff0u32.to_le_bytes());
    bytes.extend_from_slice(b"{'descr'");
    assert_eq!(
        error_of(&bytes),
        "t.npy: the .npy header is 4294967280 bytes long, more than the limit of 65536"
    );
    let limit = ReadLimit {
        max_header_bytes: 200,
        ..ReadLimit::default()
    };
    let ok = npy::to_bytes(&sample(2, 2));
    let e = npy::read_bytes(&ok, "t.npy", &limit).unwrap();
    assert_eq!(e.nrows(), 2);
    let limit = ReadLimit {
        max_header_bytes: 32,
        ..ReadLimit::default()
    };
    assert_eq!(
        npy::read_bytes(&ok, "t.npy", &limit)
            .unwrap_err()
            .to_string(),
        "t.npy: the .npy header is 118 bytes long, more than the limit of 32"
    );
}

#[test]
fn data_length_must_match_the_shape() {
    let h = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
    assert_eq!(
        error_of(&raw((1, 0), h, &[0u8; 40])),
        "t.npy: expected 48 bytes of data for shape (2, 3) <f8, found 40"
    );
    assert_eq!(
        read(&raw((1, 0), h, &[0u8; 56])).unwrap_err().to_string(),
        "t.npy: expected 48 bytes of data for shape (2, 3) <f8, found 56 (trailing bytes after the array)"
    );
    // The stream reader stops one byte past the array.
    assert_eq!(
        npy::read(&mut &raw((1, 0), h, &[0u8; 56])[..], "t.npy", &ReadLimit::default())
            .unwrap_err()
            .to_string(),
        "t.npy: expected 48 bytes of data for shape (2, 3) <f8, found 49 (trailing bytes after the array)"
    );
    let h4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }";
    assert_eq!(
        error_of(&raw((1, 0), h4, &[0u8; 19])),
        "t.npy: expected 20 bytes of data for shape (5,) <f4, found 19"
    );
}

#[test]
fn files_name_their_path_and_check_their_length_first() {
    let dir = temp_dir("len");
    let path = dir.path().join("a.npy");
    let h = "{'descr': '<f8', 'fortran_order': False, 'shape': (1000, 1000), }";
    std::fs::write(&path, raw((1, 0), h, &[0u8; 4096])).unwrap();
    assert_eq!(
        npy::read_file(&path).unwrap_err().to_string(),
        format!(
            "{}: expected 8000000 bytes of data for shape (1000, 1000) <f8, found 4096",
            path.display()
        )
    );
    let missing = dir.path().join("missing.npy");
    let e = npy::read_file(&missing).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}: ", missing.display())) && e.contains("No such file"),
        "{e}"
    );
}

#[test]
fn huge_shapes_fail_fast_without_allocating() {
    let dir = temp_dir("huge");
    let start = Instant::now();
    // Over the element limit: refused from the header alone.
    let h = "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000000000), }";
    let bytes = tight(h, &[0u8; 13]);
    assert_eq!(bytes.len(), 100);
    assert_eq!(
        error_of(&bytes),
        "t.npy: shape (1000000000, 1000000000) has more than 2147483648 elements"
    );
    // Overflowing u64.
    let h = "{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551615, 3), }";
    assert_eq!(
        error_of(&raw((1, 0), h, &[])),
        "t.npy: shape (18446744073709551615, 3) has more than 2147483648 elements"
    );
    // An empty array with an absurd extent: it holds no elements, so the
    // message says its extent is too long, not that it has too many
    // elements.
    for (shape, extent) in [
        ("(0, 18446744073709551615)", "18446744073709551615"),
        ("(0, 100000000000)", "100000000000"),
        ("(100000000000, 0)", "100000000000"),
    ] {
        let h = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
        assert_eq!(
            error_of(&raw((1, 0), &h, &[])),
            format!(
                "t.npy: shape {shape} holds no elements, but its extent {extent} is more than \
                 the limit of 2147483648 per extent"
            )
        );
    }
    // Under the limit (16 GB of data) but the file holds 36 bytes: the
    // length check comes before any allocation, for files and streams.
    let h = "{'descr': '<f8', 'fortran_order': True, 'shape': (50000, 40000), }";
    let bytes = raw((1, 0), h, &[0u8; 36]);
    let path = dir.path().join("big.npy");
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(
        npy::read_file(&path).unwrap_err().to_string(),
        format!(
            "{}: expected 16000000000 bytes of data for shape (50000, 40000) <f8, found 36",
            path.display()
        )
    );
    assert_eq!(
        error_of(&bytes),
        "t.npy: expected 16000000000 bytes of data for shape (50000, 40000) <f8, found 36"
    );
    // Not a timing assertion on speed, only that nothing tried to fill
    // 16 GB: that would take far longer than this.
    assert!(start.elapsed().as_secs() < 30);
}

#[test]
fn write_file_replaces_atomically_and_reports_bad_paths() {
    let dir = temp_dir("atomic");
    let path = dir.path().join("m.npy");
    npy::write_file(&path, &sample(2, 2)).unwrap();
    npy::write_file(&path, &sample(4, 1)).unwrap();
    assert_same(&npy::read_file(&path).unwrap(), &sample(4, 1));
    let bad = dir.path().join("no/such/dir/m.npy");
    let e = npy::write_file(&bad, &sample(1, 1))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with(&format!("{}: ", bad.display())), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Flipped bits, overwritten bytes and truncations of a valid file
    /// give a tile or an error naming the file, never a panic.
    #[test]
    fn corrupted_files_never_panic(
        flips in proptest::collection::vec((0usize..400, 0u8..8), 0..6),
        sets in proptest::collection::vec((0usize..400, any::<u8>()), 0..4),
        cut in proptest::option::of(0usize..400),
        fortran in any::<bool>(),
    ) {
        let t = sample(4, 5);
        let mut bytes = if fortran {
            npy::to_bytes(&t)
        } else {
            c_order_npy(&t)
        };
        let len = bytes.len();
        for (at, bit) in flips {
            bytes[at % len] ^= 1 << bit;
        }
        for (at, v) in sets {
            bytes[at % len] = v;
        }
        if let Some(c) = cut {
            bytes.truncate(c % (len + 1));
        }
        match read(&bytes) {
            Ok(tile) => prop_assert!(tile.nrows() * tile.ncols() <= bytes.len()),
            Err(e) => prop_assert!(e.to_string().starts_with("t.npy: "), "{}", e),
        }
        let _ = npy::read(&mut bytes.as_slice(), "t.npy", &ReadLimit::default());
    }

    /// Arbitrary bytes after a valid magic and version.
    #[test]
    fn random_headers_never_panic(
        version in prop_oneof![Just(1u8), Just(2u8), Just(3u8)],
        body in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut bytes = b"\x93NUMPY".to_vec();
        bytes.extend_from_slice(&[version, 0]);
        bytes.extend_from_slice(&body);
        if let Err(e) = read(&bytes) {
            prop_assert!(e.to_string().starts_with("t.npy: "), "{}", e);
        }
    }

    /// Any shape round-trips through the writer.
    #[test]
    fn any_small_tile_round_trips(r in 0usize..20, c in 0usize..20, seed in any::<u64>()) {
        let t = Tile::from_fn(r, c, |i, j| f64::from_bits(seed.wrapping_mul(i as u64 * 31 + j as u64 + 1)));
        let back = read(&npy::to_bytes(&t)).unwrap();
        prop_assert_eq!((back.nrows(), back.ncols()), (r, c));
        for j in 0..c {
            for i in 0..r {
                prop_assert_eq!(back[(i, j)].to_bits(), t[(i, j)].to_bits());
            }
        }
    }
}

/// A reader that hands out at most 3 bytes per call, like a slow pipe.
struct Trickle<'a>(&'a [u8]);

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(3).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn streams_may_deliver_data_in_small_pieces() {
    let t = sample(30, 20);
    let bytes = npy::to_bytes(&t);
    let got = npy::read(&mut Trickle(&bytes), "pipe", &ReadLimit::default()).unwrap();
    assert_same(&got, &t);
    let e = npy::read(
        &mut Trickle(&bytes[..bytes.len() - 5]),
        "pipe",
        &ReadLimit::default(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "pipe: expected 4800 bytes of data for shape (30, 20) <f8, found 4795"
    );
}

#[cfg(unix)]
#[test]
fn devices_and_directories_are_read_as_streams_with_named_errors() {
    assert_eq!(
        npy::read_file(Path::new("/dev/null"))
            .unwrap_err()
            .to_string(),
        "/dev/null: not a .npy file (it does not start with \\x93NUMPY)"
    );
    let dir = temp_dir("isdir");
    let e = npy::read_file(dir.path()).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}: ", dir.path().display())) && e.contains("directory"),
        "{e}"
    );
}

/// Every block of every readable fixture, read by position, equals the
/// same block of the whole array; blocks beyond the array are errors.
#[test]
fn blocks_read_by_position_match_the_whole_array() {
    for name in SAMPLE_FIXTURES
        .into_iter()
        .chain(INT_FIXTURES)
        .chain(OTHER_FIXTURES)
    {
        let path = fixture(name);
        let whole = npy::read_file(&path).unwrap();
        let tiles = npy::NpyTiles::open(&path).unwrap();
        assert_eq!(tiles.shape(), (whole.nrows(), whole.ncols()), "{name}");
        assert_same(&tiles.read_all().unwrap(), &whole);
        let (rows, cols) = tiles.shape();
        for r0 in 0..rows {
            for c0 in 0..cols {
                for (nr, nc) in [(1, 1), (rows - r0, cols - c0), ((rows - r0).min(2), 1)] {
                    let block = tiles.read_block(r0, c0, nr, nc).unwrap();
                    let want = whole.as_ref().submatrix(r0, c0, nr, nc).to_owned();
                    assert_same(&block, &want);
                }
            }
        }
        let err = tiles.read_block(rows, 0, 1, 1).unwrap_err().to_string();
        assert!(err.contains("outside"), "{name}: {err}");
    }
    // Streams and files that are not .npy are refused at open.
    assert!(npy::NpyTiles::open(&fixture("make_fixtures.py"))
        .unwrap_err()
        .to_string()
        .contains("not a .npy file"));
}

/// Blocks written in place land where the whole array has them.
#[test]
fn blocks_written_in_place_make_the_whole_array() {
    let dir = std::env::temp_dir().join(format!("lpk-npy-blocks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.npy");
    let whole = sample(7, 5);
    let w = npy::NpyBlockWriter::create(&path, 7, 5).unwrap();
    for (r0, c0, nr, nc) in [(4, 3, 3, 2), (0, 0, 4, 3), (4, 0, 3, 3), (0, 3, 4, 2)] {
        let block = whole.as_ref().submatrix(r0, c0, nr, nc).to_owned();
        w.write_block(r0, c0, &block).unwrap();
    }
    assert!(w.write_block(5, 4, &sample(3, 1)).is_err());
    assert!(!path.exists(), "only the temporary file until finish");
    w.finish().unwrap();
    assert_same(&npy::read_file(&path).unwrap(), &whole);
    assert_eq!(std::fs::read(&path).unwrap(), npy::to_bytes(&whole));
    let _ = std::fs::remove_dir_all(&dir);
}
