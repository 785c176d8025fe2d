//! NumPy `.npy` files: reading any 2-D (or 1-D) numeric array into a
//! [`Tile`], and writing a tile as `<f8` in Fortran order.
//!
//! The format (NumPy's `numpy.lib.format`): the magic `\x93NUMPY`, a major
//! and minor version byte, the header length (2 bytes little-endian in
//! version 1.0, 4 bytes in 2.0 and 3.0), the header — a Python dict literal
//! with the keys `'descr'`, `'fortran_order'` and `'shape'`, padded with
//! spaces and ended by a newline — and then the raw array data.
//!
//! What is read:
//! - versions 1.0, 2.0 and 3.0;
//! - dtypes `f8` and `f4` in either byte order (`f4` is widened exactly),
//!   and the integers `i8` and `i4` in either byte order, converted to
//!   `f64` (an `i8` above 2^53 in magnitude is rounded to the nearest
//!   `f64`);
//! - `fortran_order` `True` or `False`;
//! - shapes `(r, c)` (an r×c tile), `(n,)` (an n×1 column) and empty
//!   extents such as `(0, 0)` (an empty tile); a scalar `()` and more than
//!   two dimensions are errors, and so is an empty shape with an extent
//!   above the element limit, such as `(0, 100000000000)`: it holds
//!   nothing, but a program would take it for a grid of that many tiles.
//!
//! Files are treated as hostile: the header length is limited, the header is
//! parsed as the dict literal it must be (keys in any order, whitespace,
//! trailing commas), the element count is checked for overflow and against a
//! limit, and no buffer is sized from the shape before the data is known to
//! be there (a file's length is checked first; a stream is read in growing
//! chunks up to what it actually holds). Truncated data and trailing bytes
//! are errors. Every error names the file or tile it is about.
//!
//! Conversion is done in bulk, per column or per block of rows, with the
//! dtype chosen once outside the loop, so an 8192×8192 matrix reads and
//! writes at close to memory bandwidth.

use crate::kernels::Tile;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::Path;

/// The magic string every `.npy` file starts with.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Elements converted per chunk (a 512 KiB buffer of `f8`).
const CHUNK_ELEMS: usize = 1 << 16;

/// Bounds on what a read accepts, so a hostile file cannot make the reader
/// allocate or loop without end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimit {
    /// The longest header accepted, in bytes.
    pub max_header_bytes: u32,
    /// The most elements an array may have.
    pub max_elements: u64,
}

impl Default for ReadLimit {
    /// 64 KiB of header and 2^31 elements (16 GiB of `f64`), the same bound
    /// as the generated inputs.
    fn default() -> Self {
        ReadLimit {
            max_header_bytes: 64 * 1024,
            max_elements: MAX_ELEMENTS as u64,
        }
    }
}

/// The most elements of one matrix lpk reads or generates (2^31, 16 GiB
/// of `f64`), so a typo or a hostile header cannot allocate terabytes.
pub(crate) const MAX_ELEMENTS: usize = 1 << 31;

/// An array shape, shown as the Python tuple it is written as: `()`,
/// `(5,)`, `(3, 4)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape(pub Vec<u64>);

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [] => write!(f, "()"),
            [n] => write!(f, "({n},)"),
            dims => {
                write!(f, "(")?;
                for (k, d) in dims.iter().enumerate() {
                    if k > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{d}")?;
                }
                write!(f, ")")
            }
        }
    }
}

/// What is wrong with a header that is not the expected dict literal.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderProblem {
    /// The text does not parse.
    #[error("at byte {at}: expected {expected}, found {found}")]
    Syntax {
        /// Byte offset in the header text.
        at: usize,
        /// What the parser expected.
        expected: &'static str,
        /// What it found (a short excerpt, or "the end of the header").
        found: String,
    },
    /// A required key is absent.
    #[error("the key '{0}' is missing")]
    MissingKey(&'static str),
    /// A key appears twice.
    #[error("the key '{0}' appears twice")]
    DuplicateKey(String),
    /// A key other than `descr`, `fortran_order` and `shape`.
    #[error("unexpected key '{0}' (a .npy header has only 'descr', 'fortran_order' and 'shape')")]
    UnknownKey(String),
    /// A key's value has the wrong type.
    #[error("'{key}' must be {expected}")]
    WrongType {
        /// The key.
        key: &'static str,
        /// The expected type, e.g. "a tuple of integers".
        expected: &'static str,
    },
    /// A dimension does not fit in 64 bits.
    #[error("dimension {0} does not fit in 64 bits")]
    DimensionTooLarge(String),
}

/// Why reading or writing a `.npy` file failed. Every variant names the
/// file (or tile) as `name`.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// An I/O error.
    #[error("{name}: {source}")]
    Io {
        /// The file or tile.
        name: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The data does not start with `\x93NUMPY`.
    #[error("{name}: not a .npy file (it does not start with \\x93NUMPY)")]
    BadMagic {
        /// The file or tile.
        name: String,
    },
    /// The data ends before the header does.
    #[error("{name}: the file ends inside the .npy header")]
    TruncatedHeader {
        /// The file or tile.
        name: String,
    },
    /// A format version other than 1.0, 2.0 and 3.0.
    #[error("{name}: unsupported .npy format version {major}.{minor} (supported: 1.0, 2.0, 3.0)")]
    Version {
        /// The file or tile.
        name: String,
        /// Major version byte.
        major: u8,
        /// Minor version byte.
        minor: u8,
    },
    /// The header is longer than [`ReadLimit::max_header_bytes`].
    #[error("{name}: the .npy header is {len} bytes long, more than the limit of {limit}")]
    HeaderTooLong {
        /// The file or tile.
        name: String,
        /// The declared header length.
        len: u64,
        /// The limit.
        limit: u32,
    },
    /// The header is not the expected dict literal.
    #[error("{name}: malformed .npy header: {problem}")]
    Header {
        /// The file or tile.
        name: String,
        /// What is wrong.
        problem: HeaderProblem,
    },
    /// A dtype the reader does not convert.
    #[error(
        "{name}: unsupported dtype '{descr}' (supported: <f8, >f8, <f4, >f4, <i8, >i8, <i4, >i4)"
    )]
    Dtype {
        /// The file or tile.
        name: String,
        /// The `descr` as written.
        descr: String,
    },
    /// A 0-dimensional array.
    #[error("{name}: shape () is a scalar; a tile needs a matrix (r, c) or a vector (n,)")]
    Scalar {
        /// The file or tile.
        name: String,
    },
    /// More than two dimensions.
    #[error("{name}: shape {shape} has {} dimensions; a tile needs a matrix (r, c) or a vector (n,)", shape.0.len())]
    TooManyDims {
        /// The file or tile.
        name: String,
        /// The shape.
        shape: Shape,
    },
    /// The element count overflows or exceeds [`ReadLimit::max_elements`].
    #[error("{name}: shape {shape} has more than {limit} elements")]
    TooLarge {
        /// The file or tile.
        name: String,
        /// The shape.
        shape: Shape,
        /// The element limit.
        limit: u64,
    },
    /// An empty array (no elements) with an extent above
    /// [`ReadLimit::max_elements`]: it holds nothing, but it would make a
    /// tile grid that large, so it is refused as a too-long extent, not as
    /// too many elements.
    #[error("{name}: shape {shape} holds no elements, but its extent {extent} is more than the limit of {limit} per extent")]
    EmptyExtentTooLarge {
        /// The file or tile.
        name: String,
        /// The shape.
        shape: Shape,
        /// The extent above the limit.
        extent: u64,
        /// The limit.
        limit: u64,
    },
    /// Less data than the shape implies.
    #[error("{name}: expected {expected} bytes of data for shape {shape} {descr}, found {found}")]
    Truncated {
        /// The file or tile.
        name: String,
        /// Bytes the shape and dtype imply.
        expected: u64,
        /// Bytes present.
        found: u64,
        /// The shape.
        shape: Shape,
        /// The dtype as written.
        descr: String,
    },
    /// More data than the shape implies.
    #[error("{name}: expected {expected} bytes of data for shape {shape} {descr}, found {found} (trailing bytes after the array)")]
    TrailingBytes {
        /// The file or tile.
        name: String,
        /// Bytes the shape and dtype imply.
        expected: u64,
        /// Bytes present (at least `expected + 1` for streams, which are
        /// not read further).
        found: u64,
        /// The shape.
        shape: Shape,
        /// The dtype as written.
        descr: String,
    },
}

/// Byte order of a dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endian {
    Little,
    Big,
}

/// The element types the reader converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    F8,
    F4,
    I8,
    I4,
}

/// A parsed `descr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Dtype {
    kind: Kind,
    endian: Endian,
}

impl Dtype {
    fn parse(descr: &str) -> Option<Dtype> {
        let mut chars = descr.chars();
        let endian = match chars.next()? {
            '<' => Endian::Little,
            '>' => Endian::Big,
            '=' if cfg!(target_endian = "little") => Endian::Little,
            '=' => Endian::Big,
            _ => return None,
        };
        let kind = match chars.as_str() {
            "f8" => Kind::F8,
            "f4" => Kind::F4,
            "i8" => Kind::I8,
            "i4" => Kind::I4,
            _ => return None,
        };
        Some(Dtype { kind, endian })
    }

    fn size(self) -> usize {
        match self.kind {
            Kind::F8 | Kind::I8 => 8,
            Kind::F4 | Kind::I4 => 4,
        }
    }
}

/// A validated header: what the data that follows must be.
#[derive(Clone, Debug)]
struct Header {
    descr: String,
    dtype: Dtype,
    fortran_order: bool,
    shape: Shape,
    rows: usize,
    cols: usize,
    /// Bytes of data the shape and dtype imply.
    data_bytes: u64,
    /// Bytes from the start of the file to the start of the data.
    data_offset: u64,
}

fn io_err(name: &str, source: io::Error) -> NpyError {
    NpyError::Io {
        name: name.to_string(),
        source,
    }
}

/// `read_exact` with an end of data inside the header reported as such.
fn read_header_bytes(reader: &mut impl Read, buf: &mut [u8], name: &str) -> Result<(), NpyError> {
    reader.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            NpyError::TruncatedHeader {
                name: name.to_string(),
            }
        } else {
            io_err(name, e)
        }
    })
}

/// Reads and validates the preamble and the header.
fn read_header(reader: &mut impl Read, name: &str, limit: &ReadLimit) -> Result<Header, NpyError> {
    let (major, minor) = read_preamble(reader, name)?;
    let (len, len_bytes) = read_header_len(reader, name, major, minor)?;
    if len > u64::from(limit.max_header_bytes) {
        return Err(NpyError::HeaderTooLong {
            name: name.to_string(),
            len,
            limit: limit.max_header_bytes,
        });
    }
    // `len` is at most `max_header_bytes` (a u32), so this is no larger
    // than the limit the caller chose.
    let mut text = vec![0u8; len as usize];
    read_header_bytes(reader, &mut text, name)?;
    let dict = parse_dict(&text).map_err(|problem| NpyError::Header {
        name: name.to_string(),
        problem,
    })?;
    let dtype = Dtype::parse(&dict.descr).ok_or_else(|| NpyError::Dtype {
        name: name.to_string(),
        descr: dict.descr.clone(),
    })?;
    let shape = Shape(dict.shape.clone());
    let (rows, cols, data_bytes) = extents(&shape, dtype, name, limit)?;
    Ok(Header {
        descr: dict.descr,
        dtype,
        fortran_order: dict.fortran_order,
        shape,
        rows,
        cols,
        data_bytes,
        data_offset: 8 + len_bytes + len,
    })
}

/// The magic string and the format version (major, minor).
fn read_preamble(reader: &mut impl Read, name: &str) -> Result<(u8, u8), NpyError> {
    let mut pre = [0u8; 8];
    // The magic is checked on as many bytes as there are, so a short file
    // that is not .npy at all says so rather than "truncated".
    let mut got = 0;
    while got < pre.len() {
        match reader.read(&mut pre[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err(name, e)),
        }
    }
    let seen = got.min(MAGIC.len());
    if pre[..seen] != MAGIC[..seen] || got == 0 {
        return Err(NpyError::BadMagic {
            name: name.to_string(),
        });
    }
    if got < pre.len() {
        return Err(NpyError::TruncatedHeader {
            name: name.to_string(),
        });
    }
    Ok((pre[6], pre[7]))
}

/// The header's length and the bytes that give it, as the version says.
fn read_header_len(
    reader: &mut impl Read,
    name: &str,
    major: u8,
    minor: u8,
) -> Result<(u64, u64), NpyError> {
    match (major, minor) {
        (1, 0) => {
            let mut b = [0u8; 2];
            read_header_bytes(reader, &mut b, name)?;
            Ok((u64::from(u16::from_le_bytes(b)), 2))
        }
        (2, 0) | (3, 0) => {
            let mut b = [0u8; 4];
            read_header_bytes(reader, &mut b, name)?;
            Ok((u64::from(u32::from_le_bytes(b)), 4))
        }
        _ => Err(NpyError::Version {
            name: name.to_string(),
            major,
            minor,
        }),
    }
}

/// The rows, columns and data bytes of an array of `shape` (1-D arrays
/// as one column), within `limit`.
fn extents(
    shape: &Shape,
    dtype: Dtype,
    name: &str,
    limit: &ReadLimit,
) -> Result<(usize, usize, u64), NpyError> {
    let (rows, cols) = match *shape.0.as_slice() {
        [] => {
            return Err(NpyError::Scalar {
                name: name.to_string(),
            })
        }
        [n] => (n, 1),
        [r, c] => (r, c),
        _ => {
            return Err(NpyError::TooManyDims {
                name: name.to_string(),
                shape: shape.clone(),
            })
        }
    };
    let too_large = || NpyError::TooLarge {
        name: name.to_string(),
        shape: shape.clone(),
        limit: limit.max_elements,
    };
    // Each extent is bounded too, so an empty array cannot claim a
    // billion-billion columns (and a tile grid as long). Only an empty
    // array can break this bound without breaking the element count, so
    // it gets its own message: it has no elements to have too many of.
    if rows.min(cols) == 0 && rows.max(cols) > limit.max_elements {
        return Err(NpyError::EmptyExtentTooLarge {
            name: name.to_string(),
            extent: rows.max(cols),
            shape: shape.clone(),
            limit: limit.max_elements,
        });
    }
    let elements = rows
        .checked_mul(cols)
        .filter(|&n| n <= limit.max_elements)
        .ok_or_else(too_large)?;
    let data_bytes = elements
        .checked_mul(dtype.size() as u64)
        .ok_or_else(too_large)?;
    let rows = usize::try_from(rows).map_err(|_| too_large())?;
    let cols = usize::try_from(cols).map_err(|_| too_large())?;
    usize::try_from(data_bytes).map_err(|_| too_large())?;
    Ok((rows, cols, data_bytes))
}

/// Checks that exactly `found` bytes of data are present.
fn check_data_len(h: &Header, found: u64, name: &str) -> Result<(), NpyError> {
    if found < h.data_bytes {
        return Err(NpyError::Truncated {
            name: name.to_string(),
            expected: h.data_bytes,
            found,
            shape: h.shape.clone(),
            descr: h.descr.clone(),
        });
    }
    if found > h.data_bytes {
        return Err(NpyError::TrailingBytes {
            name: name.to_string(),
            expected: h.data_bytes,
            found,
            shape: h.shape.clone(),
            descr: h.descr.clone(),
        });
    }
    Ok(())
}

/// Converts `out.len()` elements from `bytes` (which holds at least that
/// many elements of `dtype`).
fn convert(dtype: Dtype, bytes: &[u8], out: &mut [f64]) {
    match (dtype.kind, dtype.endian) {
        (Kind::F8, Endian::Little) => each(bytes, out, f64::from_le_bytes),
        (Kind::F8, Endian::Big) => each(bytes, out, f64::from_be_bytes),
        (Kind::F4, Endian::Little) => each(bytes, out, |b| f64::from(f32::from_le_bytes(b))),
        (Kind::F4, Endian::Big) => each(bytes, out, |b| f64::from(f32::from_be_bytes(b))),
        (Kind::I8, Endian::Little) => each(bytes, out, |b| i64::from_le_bytes(b) as f64),
        (Kind::I8, Endian::Big) => each(bytes, out, |b| i64::from_be_bytes(b) as f64),
        (Kind::I4, Endian::Little) => each(bytes, out, |b| f64::from(i32::from_le_bytes(b))),
        (Kind::I4, Endian::Big) => each(bytes, out, |b| f64::from(i32::from_be_bytes(b))),
    }
}

/// Decodes `out.len()` elements of `N` bytes each from `bytes` with `f`.
fn each<const N: usize>(bytes: &[u8], out: &mut [f64], f: impl Fn([u8; N]) -> f64) {
    for (o, c) in out.iter_mut().zip(bytes.chunks_exact(N)) {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        *o = f(a);
    }
}

/// Reads the data of `h` from `reader` into a new tile. The caller has
/// already checked that the data is all there, so the tile's allocation is
/// backed by bytes that exist.
fn read_data(reader: &mut impl Read, h: &Header, name: &str) -> Result<Tile, NpyError> {
    let (rows, cols) = (h.rows, h.cols);
    let size = h.dtype.size();
    let mut tile = Tile::zeros(rows, cols);
    if rows == 0 || cols == 0 {
        return Ok(tile);
    }
    let native = cfg!(target_endian = "little")
        && h.dtype.kind == Kind::F8
        && h.dtype.endian == Endian::Little;
    if native && (h.fortran_order || rows == 1 || cols == 1) {
        // The file's bytes are the tile's columns, one after the other:
        // read them straight into the tile.
        if let Some(cols) = col_slices_mut(&mut tile) {
            let mut columns: Vec<&mut [u8]> =
                cols.into_iter().map(bytemuck::cast_slice_mut).collect();
            read_exact_vectored(reader, &mut columns).map_err(|e| io_err(name, e))?;
            return Ok(tile);
        }
    }
    if h.fortran_order || rows == 1 || cols == 1 {
        // Column-major data (or a vector, where both orders agree): each
        // column is contiguous in the file and in the tile.
        let mut buf = vec![0u8; rows.min(CHUNK_ELEMS) * size];
        for j in 0..cols {
            for chunk in tile.col_as_slice_mut(j).chunks_mut(CHUNK_ELEMS) {
                let bytes = &mut buf[..chunk.len() * size];
                reader.read_exact(bytes).map_err(|e| io_err(name, e))?;
                convert(h.dtype, bytes, chunk);
            }
        }
    } else {
        // Row-major data: read a block of rows, convert it, then copy each
        // column of the block, so every write to the tile is contiguous.
        let block = (CHUNK_ELEMS / cols).clamp(1, rows);
        let mut buf = vec![0u8; block * cols * size];
        let mut scratch = vec![0.0f64; block * cols];
        let mut i0 = 0;
        while i0 < rows {
            let nb = block.min(rows - i0);
            let bytes = &mut buf[..nb * cols * size];
            reader.read_exact(bytes).map_err(|e| io_err(name, e))?;
            let vals = &mut scratch[..nb * cols];
            convert(h.dtype, bytes, vals);
            for j in 0..cols {
                let col = &mut tile.col_as_slice_mut(j)[i0..i0 + nb];
                for (dst, src) in col.iter_mut().zip(vals[j..].iter().step_by(cols)) {
                    *dst = *src;
                }
            }
            i0 += nb;
        }
    }
    Ok(tile)
}

/// Reads a `.npy` array from a stream. `name` is used in error messages.
///
/// The data is read in growing chunks up to the length the header implies
/// (plus one byte, to detect trailing data), so the memory used is bounded
/// by what the stream actually holds, at most twice the array's size.
pub fn read(reader: &mut impl Read, name: &str, limit: &ReadLimit) -> Result<Tile, NpyError> {
    let h = read_header(reader, name, limit)?;
    let mut data = Vec::new();
    reader
        .take(h.data_bytes.saturating_add(1))
        .read_to_end(&mut data)
        .map_err(|e| io_err(name, e))?;
    check_data_len(&h, data.len() as u64, name)?;
    read_data(&mut data.as_slice(), &h, name)
}

/// Reads a `.npy` array held in memory (e.g. an object fetched from a
/// store). `name` is used in error messages.
pub fn read_bytes(bytes: &[u8], name: &str, limit: &ReadLimit) -> Result<Tile, NpyError> {
    let mut cursor = bytes;
    let h = read_header(&mut cursor, name, limit)?;
    check_data_len(&h, cursor.len() as u64, name)?;
    read_data(&mut cursor, &h, name)
}

/// Reads a `.npy` array from an open file, checking the file's length
/// against the shape before allocating. A file that is not a regular file
/// (a pipe, a device) has no length and is read as a stream, like
/// [`read`]. `name` is used in error messages.
pub(crate) fn read_open_file(file: &File, name: &str, limit: &ReadLimit) -> Result<Tile, NpyError> {
    let meta = file.metadata().map_err(|e| io_err(name, e))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    if !meta.is_file() {
        return read(&mut reader, name, limit);
    }
    let len = meta.len();
    let h = read_header(&mut reader, name, limit)?;
    check_data_len(&h, len.saturating_sub(h.data_offset), name)?;
    read_data(&mut reader, &h, name)
}

/// Reads a `.npy` file with the default [`ReadLimit`]; errors name the
/// path.
pub fn read_file(path: &Path) -> Result<Tile, NpyError> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| io_err(&name, e))?;
    read_open_file(&file, &name, &ReadLimit::default())
}

/// The preamble and header of a `<f8` Fortran-order array of `rows` ×
/// `cols`: version 1.0, or 2.0 if the header would not fit in 65535 bytes,
/// padded so the data starts at a multiple of 64 bytes.
pub fn header_bytes(rows: usize, cols: usize) -> Vec<u8> {
    let dict = format!("{{'descr': '<f8', 'fortran_order': True, 'shape': ({rows}, {cols}), }}");
    let unpadded = |pre: usize| pre + dict.len() + 1;
    let (major, pre) = if unpadded(10).next_multiple_of(64) - 10 <= usize::from(u16::MAX) {
        (1u8, 10)
    } else {
        (2u8, 12)
    };
    let total = unpadded(pre).next_multiple_of(64);
    let hlen = total - pre;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[major, 0]);
    if major == 1 {
        out.extend_from_slice(&(hlen as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(hlen as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

/// Writes `tile` as a `.npy` array: `<f8`, Fortran order (faer's own
/// layout, which numpy reads as is), shape `(rows, cols)`.
pub fn write(writer: &mut impl Write, tile: &Tile) -> io::Result<()> {
    writer.write_all(&header_bytes(tile.nrows(), tile.ncols()))?;
    if cfg!(target_endian = "little") {
        // The columns' bytes as they are, with no copy in between.
        let columns: Vec<&[u8]> = (0..tile.ncols())
            .map(|j| bytemuck::cast_slice(tile.col_as_slice(j)))
            .collect();
        return write_all_vectored(writer, &columns);
    }
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK_ELEMS * 8);
    for j in 0..tile.ncols() {
        for chunk in tile.col_as_slice(j).chunks(CHUNK_ELEMS) {
            let at = buf.len();
            buf.resize(at + chunk.len() * 8, 0);
            for (dst, v) in buf[at..].chunks_exact_mut(8).zip(chunk) {
                dst.copy_from_slice(&v.to_le_bytes());
            }
            if buf.len() >= CHUNK_ELEMS * 8 {
                writer.write_all(&buf)?;
                buf.clear();
            }
        }
    }
    writer.write_all(&buf)
}

/// The columns of a tile, each as a mutable slice (an owned `Mat`'s
/// columns are always contiguous; `None` otherwise).
fn col_slices_mut(tile: &mut Tile) -> Option<Vec<&mut [f64]>> {
    tile.col_iter_mut()
        .map(|c| c.try_as_col_major_mut().map(|c| c.as_slice_mut()))
        .collect()
}

/// At most this many buffers per vectored call (Linux's `IOV_MAX`).
const MAX_IOVECS: usize = 1024;

/// Writes every byte of `bufs`, in order, with as few vectored writes as
/// the writer takes (one `writev` per 1024 buffers for a file).
fn write_all_vectored(writer: &mut impl Write, bufs: &[&[u8]]) -> io::Result<()> {
    let mut slices: Vec<io::IoSlice<'_>> = bufs.iter().map(|b| io::IoSlice::new(b)).collect();
    let mut rest = &mut slices[..];
    // Empty buffers first: a writer may take none of them.
    io::IoSlice::advance_slices(&mut rest, 0);
    while !rest.is_empty() {
        match writer.write_vectored(&rest[..rest.len().min(MAX_IOVECS)]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => io::IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Fills every byte of `bufs`, in order, with as few vectored reads as the
/// reader takes; an early end of the data is `UnexpectedEof`.
fn read_exact_vectored(reader: &mut impl Read, bufs: &mut [&mut [u8]]) -> io::Result<()> {
    let mut slices: Vec<io::IoSliceMut<'_>> =
        bufs.iter_mut().map(|b| io::IoSliceMut::new(b)).collect();
    let mut rest = &mut slices[..];
    io::IoSliceMut::advance_slices(&mut rest, 0);
    while !rest.is_empty() {
        let k = rest.len().min(MAX_IOVECS);
        match reader.read_vectored(&mut rest[..k]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => io::IoSliceMut::advance_slices(&mut rest, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `tile` as the bytes of a `.npy` file.
pub fn to_bytes(tile: &Tile) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + tile.nrows() * tile.ncols() * 8);
    // Writing to a Vec cannot fail.
    let _ = write(&mut out, tile);
    out
}

/// A staging file beside `path` in its directory, renamed over it when
/// complete (by [`persist`]). It is created with the mode an ordinary file
/// gets (0666 less the umask, as `_SUCCESS` and every other tool's
/// outputs): a temporary file's private 0600 would survive the rename and
/// hide the outputs from the user's group.
fn staging(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{file_name}.");
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(0o666));
    }
    b.tempfile_in(dir)
}

/// Syncs a complete staging file and renames it over `path`; `name` is
/// `path` as errors show it. On failure the staging file is removed when
/// `tmp` is dropped.
fn persist(tmp: tempfile::NamedTempFile, path: &Path, name: &str) -> Result<(), NpyError> {
    tmp.as_file().sync_all().map_err(|e| io_err(name, e))?;
    tmp.persist(path).map_err(|e| io_err(name, e.error))?;
    Ok(())
}

/// Writes `tile` to `path` atomically: the bytes go to a temporary file in
/// the same directory, which is synced and then renamed over `path`, so a
/// crash never leaves a half-written file under the final name.
pub fn write_file(path: &Path, tile: &Tile) -> Result<(), NpyError> {
    let name = path.display().to_string();
    let mut tmp = staging(path).map_err(|e| io_err(&name, e))?;
    {
        let mut w = io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        write(&mut w, tile).map_err(|e| io_err(&name, e))?;
        w.flush().map_err(|e| io_err(&name, e))?;
    }
    persist(tmp, path, &name)
}

/// The three values of a header dict.
struct Dict {
    descr: String,
    fortran_order: bool,
    shape: Vec<u64>,
}

/// A value of the header dict.
enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
}

/// A parser for the Python dict literal of a header.
struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0c') = self.text.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn error(&self, expected: &'static str) -> HeaderProblem {
        let rest = self.text.get(self.at..).unwrap_or_default();
        let found = if rest.is_empty() {
            "the end of the header".to_string()
        } else {
            let excerpt = String::from_utf8_lossy(&rest[..rest.len().min(12)]).into_owned();
            format!("{:?}", excerpt.trim_end())
        };
        HeaderProblem::Syntax {
            at: self.at,
            expected,
            found,
        }
    }

    fn eat(&mut self, b: u8, expected: &'static str) -> Result<(), HeaderProblem> {
        self.skip_ws();
        if self.peek() == Some(b) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(expected))
        }
    }

    /// A string literal in single or double quotes, without escapes (no
    /// header numpy writes needs them).
    fn string(&mut self) -> Result<String, HeaderProblem> {
        self.skip_ws();
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(self.error("a quoted string")),
        };
        let start = self.at + 1;
        let mut end = start;
        loop {
            match self.text.get(end) {
                Some(&c) if c == quote => break,
                Some(b'\\' | b'\n') | None => {
                    self.at = end;
                    return Err(self.error("the end of the string (escapes are not supported)"));
                }
                Some(_) => end += 1,
            }
        }
        self.at = end + 1;
        let bytes = self.text.get(start..end).unwrap_or_default();
        Ok(String::from_utf8_lossy(bytes).into_owned())
    }

    fn word(&mut self) -> &[u8] {
        let start = self.at;
        while let Some(b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_') = self.peek() {
            self.at += 1;
        }
        self.text.get(start..self.at).unwrap_or_default()
    }

    /// A non-negative integer, with the `L` suffix of Python 2 headers.
    fn int(&mut self) -> Result<u64, HeaderProblem> {
        self.skip_ws();
        let start = self.at;
        let word = self.word();
        let digits = word.strip_suffix(b"L").unwrap_or(word);
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            self.at = start;
            return Err(self.error("a non-negative integer"));
        }
        let text = String::from_utf8_lossy(digits).into_owned();
        text.parse::<u64>()
            .map_err(|_| HeaderProblem::DimensionTooLarge(text))
    }

    fn tuple(&mut self) -> Result<Vec<u64>, HeaderProblem> {
        self.eat(b'(', "'('")?;
        let mut dims = Vec::new();
        let mut comma = false;
        loop {
            self.skip_ws();
            if self.peek() == Some(b')') {
                self.at += 1;
                break;
            }
            if !dims.is_empty() && !comma {
                return Err(self.error("',' or ')'"));
            }
            if dims.len() >= 64 {
                return Err(self.error("at most 64 dimensions"));
            }
            dims.push(self.int()?);
            self.skip_ws();
            comma = self.peek() == Some(b',');
            if comma {
                self.at += 1;
            }
        }
        if dims.len() == 1 && !comma {
            // `(5)` is the integer 5 in Python, not a tuple.
            return Err(HeaderProblem::WrongType {
                key: "shape",
                expected: "a tuple of integers (a 1-D shape is written (n,))",
            });
        }
        Ok(dims)
    }

    fn value(&mut self) -> Result<Value, HeaderProblem> {
        self.skip_ws();
        match self.peek() {
            Some(b'\'' | b'"') => Ok(Value::Str(self.string()?)),
            Some(b'(') => Ok(Value::Tuple(self.tuple()?)),
            _ => {
                let start = self.at;
                match self.word() {
                    b"True" => Ok(Value::Bool(true)),
                    b"False" => Ok(Value::Bool(false)),
                    _ => {
                        self.at = start;
                        Err(self.error("a string, True, False or a tuple"))
                    }
                }
            }
        }
    }
}

/// The keys of a header, each with the type of its value.
const KEYS: [(&str, &str); 3] = [
    (
        "descr",
        "a dtype string such as '<f8' (structured dtypes are not supported)",
    ),
    ("fortran_order", "True or False"),
    ("shape", "a tuple of integers"),
];

/// Parses the header text: `{'descr': ..., 'fortran_order': ..., 'shape':
/// ...}` with the keys in any order, optional trailing comma and any
/// whitespace (the padding included).
fn parse_dict(text: &[u8]) -> Result<Dict, HeaderProblem> {
    let mut p = Parser { text, at: 0 };
    p.eat(b'{', "'{'")?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.skip_ws();
        if p.peek() == Some(b'}') {
            p.at += 1;
            break;
        }
        let key = p.string()?;
        let Some(&(name, expected)) = KEYS.iter().find(|(k, _)| *k == key) else {
            return Err(HeaderProblem::UnknownKey(key));
        };
        p.eat(b':', "':'")?;
        let slot_taken = match (name, p.value()?) {
            ("descr", Value::Str(s)) => descr.replace(s).is_some(),
            ("fortran_order", Value::Bool(b)) => fortran.replace(b).is_some(),
            ("shape", Value::Tuple(t)) => shape.replace(t).is_some(),
            _ => {
                return Err(HeaderProblem::WrongType {
                    key: name,
                    expected,
                })
            }
        };
        if slot_taken {
            return Err(HeaderProblem::DuplicateKey(key));
        }
        p.skip_ws();
        match p.peek() {
            Some(b',') => p.at += 1,
            Some(b'}') => {}
            _ => return Err(p.error("',' or '}'")),
        }
    }
    p.skip_ws();
    // NumPy pads the header with spaces and ends it with a newline; some
    // writers pad with NUL bytes.
    while p.peek() == Some(0) {
        p.at += 1;
    }
    if p.at < text.len() {
        return Err(p.error("the end of the header after '}'"));
    }
    Ok(Dict {
        descr: descr.ok_or(HeaderProblem::MissingKey("descr"))?,
        fortran_order: fortran.ok_or(HeaderProblem::MissingKey("fortran_order"))?,
        shape: shape.ok_or(HeaderProblem::MissingKey("shape"))?,
    })
}

/// A `.npy` file read tile by tile: the header is read and checked once
/// (the file's length against the shape), then each block of the array is
/// read with positioned reads of its rows (C order) or columns (Fortran
/// order), so nothing beyond the block is read or held, and any number of
/// threads read at once.
#[derive(Debug)]
pub struct NpyTiles {
    file: File,
    name: String,
    header: Header,
}

impl NpyTiles {
    /// Opens `path` and checks its header against [`ReadLimit::default`];
    /// errors name the path. A file that is not a regular file (a pipe)
    /// cannot be read by position and is refused.
    pub fn open(path: &Path) -> Result<NpyTiles, NpyError> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| io_err(&name, e))?;
        let meta = file.metadata().map_err(|e| io_err(&name, e))?;
        if !meta.is_file() {
            return Err(io_err(
                &name,
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a regular file, so its tiles cannot be read by position",
                ),
            ));
        }
        let header = {
            let mut reader = BufReader::with_capacity(4096, &file);
            read_header(&mut reader, &name, &ReadLimit::default())?
        };
        check_data_len(
            &header,
            meta.len().saturating_sub(header.data_offset),
            &name,
        )?;
        Ok(NpyTiles { file, name, header })
    }

    /// The array's shape as (rows, columns); a vector `(n,)` is n×1.
    pub fn shape(&self) -> (usize, usize) {
        (self.header.rows, self.header.cols)
    }

    /// The file's name, as errors give it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads rows `r0..r0 + nr` and columns `c0..c0 + nc`.
    pub fn read_block(&self, r0: usize, c0: usize, nr: usize, nc: usize) -> Result<Tile, NpyError> {
        let h = &self.header;
        check_block(&self.name, (h.rows, h.cols), (r0, c0), (nr, nc))?;
        let size = h.dtype.size();
        let mut tile = Tile::zeros(nr, nc);
        if nr == 0 || nc == 0 {
            return Ok(tile);
        }
        // Every offset is below the data's length, checked at open.
        let at = |i: usize, j: usize| -> u64 {
            let k = if h.fortran_order || h.cols == 1 || h.rows == 1 {
                j * h.rows + i
            } else {
                i * h.cols + j
            };
            h.data_offset + (k * size) as u64
        };
        let column_major = h.fortran_order || h.cols == 1 || h.rows == 1;
        // `<f8` on a little-endian machine (what numpy writes here) is read
        // straight into the f64s, with no conversion pass.
        let native = cfg!(target_endian = "little")
            && h.dtype
                == (Dtype {
                    kind: Kind::F8,
                    endian: Endian::Little,
                });
        if column_major {
            let mut buf = vec![0u8; if native { 0 } else { nr * size }];
            for j in 0..nc {
                let col = tile.col_as_slice_mut(j);
                if native {
                    self.read_at(bytemuck::cast_slice_mut(col), at(r0, c0 + j))?;
                } else {
                    self.read_at(&mut buf, at(r0, c0 + j))?;
                    convert(h.dtype, &buf, col);
                }
            }
        } else {
            // Row-major: each row of the block into a row-major scratch,
            // then one cache-friendly transposing copy into the tile.
            let mut scratch = vec![0.0f64; nr * nc];
            let mut buf = vec![0u8; if native { 0 } else { nc * size }];
            for (i, row) in scratch.chunks_exact_mut(nc).enumerate() {
                if native {
                    self.read_at(bytemuck::cast_slice_mut(row), at(r0 + i, c0))?;
                } else {
                    self.read_at(&mut buf, at(r0 + i, c0))?;
                    convert(h.dtype, &buf, row);
                }
            }
            tile.as_mut()
                .copy_from(faer::MatRef::from_row_major_slice(&scratch, nr, nc));
        }
        Ok(tile)
    }

    /// Reads the whole array (for checks that need it, like `--verify`).
    pub fn read_all(&self) -> Result<Tile, NpyError> {
        self.read_block(0, 0, self.header.rows, self.header.cols)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), NpyError> {
        positioned::read_exact_at(&self.file, buf, offset).map_err(|e| io_err(&self.name, e))
    }
}

/// Refuses a block of `size` (rows, columns) at `at` (its top-left
/// element) that does not lie inside an array of `shape` in file `name`.
fn check_block(
    name: &str,
    shape: (usize, usize),
    at: (usize, usize),
    size: (usize, usize),
) -> Result<(), NpyError> {
    let ((rows, cols), (r0, c0), (nr, nc)) = (shape, at, size);
    let inside = r0.checked_add(nr).is_some_and(|e| e <= rows)
        && c0.checked_add(nc).is_some_and(|e| e <= cols);
    if inside {
        return Ok(());
    }
    Err(io_err(
        name,
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("block of {nr}×{nc} at ({r0}, {c0}) is outside the {rows}×{cols} array"),
        ),
    ))
}

/// A `<f8` Fortran-order `.npy` file written block by block, in place:
/// the header first, then each block at its offset with positioned writes
/// (any number of threads at once), then one sync and a rename to the
/// final name, so a crash never leaves a half-written file under it.
#[derive(Debug)]
pub struct NpyBlockWriter {
    tmp: tempfile::NamedTempFile,
    path: std::path::PathBuf,
    name: String,
    rows: usize,
    cols: usize,
    data_offset: u64,
}

impl NpyBlockWriter {
    /// Creates a temporary file next to `path` holding the header of a
    /// `rows` × `cols` array, its data zero (a sparse file until written).
    pub fn create(path: &Path, rows: usize, cols: usize) -> Result<NpyBlockWriter, NpyError> {
        let name = path.display().to_string();
        let mut tmp = staging(path).map_err(|e| io_err(&name, e))?;
        let header = header_bytes(rows, cols);
        let data = (rows as u64)
            .checked_mul(cols as u64)
            .and_then(|n| n.checked_mul(8))
            .ok_or_else(|| {
                io_err(
                    &name,
                    io::Error::new(io::ErrorKind::InvalidInput, "the array is too large"),
                )
            })?;
        tmp.as_file_mut()
            .write_all(&header)
            .map_err(|e| io_err(&name, e))?;
        tmp.as_file()
            .set_len(header.len() as u64 + data)
            .map_err(|e| io_err(&name, e))?;
        Ok(NpyBlockWriter {
            tmp,
            path: path.to_path_buf(),
            name,
            rows,
            cols,
            data_offset: header.len() as u64,
        })
    }

    /// The array's shape.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The temporary file's path, where the data is until [`Self::finish`].
    pub fn temp_path(&self) -> &Path {
        self.tmp.path()
    }

    /// Writes `block` with its top-left element at (`r0`, `c0`).
    pub fn write_block(&self, r0: usize, c0: usize, block: &Tile) -> Result<(), NpyError> {
        let (nr, nc) = (block.nrows(), block.ncols());
        check_block(&self.name, (self.rows, self.cols), (r0, c0), (nr, nc))?;
        let native = cfg!(target_endian = "little");
        let mut buf = vec![0u8; if native { 0 } else { nr * 8 }];
        for j in 0..nc {
            let col = block.col_as_slice(j);
            let bytes: &[u8] = if native {
                bytemuck::cast_slice(col)
            } else {
                for (dst, v) in buf.chunks_exact_mut(8).zip(col) {
                    dst.copy_from_slice(&v.to_le_bytes());
                }
                &buf
            };
            let offset = self.data_offset + (((c0 + j) * self.rows + r0) * 8) as u64;
            positioned::write_all_at(self.tmp.as_file(), bytes, offset)
                .map_err(|e| io_err(&self.name, e))?;
        }
        Ok(())
    }

    /// Flushes what was written so far to the disk without waiting for the
    /// end (a thread may call it while others write, so the final sync
    /// has less left to do).
    pub fn sync_data(&self) -> Result<(), NpyError> {
        self.tmp
            .as_file()
            .sync_data()
            .map_err(|e| io_err(&self.name, e))
    }

    /// Syncs the file and renames it to its final name.
    pub fn finish(self) -> Result<(), NpyError> {
        persist(self.tmp, &self.path, &self.name)
    }
}

/// Positioned reads and writes, which never move a shared cursor.
mod positioned {
    use std::fs::File;
    use std::io;

    #[cfg(unix)]
    pub(super) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }

    #[cfg(unix)]
    pub(super) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
    }

    #[cfg(windows)]
    pub(super) fn read_exact_at(
        file: &File,
        mut buf: &mut [u8],
        mut offset: u64,
    ) -> io::Result<()> {
        use std::os::windows::fs::FileExt;
        while !buf.is_empty() {
            match file.seek_read(buf, offset)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }

    #[cfg(windows)]
    pub(super) fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
        use std::os::windows::fs::FileExt;
        while !buf.is_empty() {
            match file.seek_write(buf, offset)? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => {
                    buf = &buf[n..];
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes at most `step` bytes per call, vectored or not.
    struct Trickle {
        out: Vec<u8>,
        step: usize,
        calls: usize,
    }
    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.calls += 1;
            let n = buf.len().min(self.step);
            self.out.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
            self.calls += 1;
            let mut left = self.step;
            for b in bufs {
                let n = b.len().min(left);
                self.out.extend_from_slice(&b[..n]);
                left -= n;
                if left == 0 {
                    break;
                }
            }
            Ok(self.step - left)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A reader that gives at most `step` bytes per call, vectored or not.
    struct Drip<'a> {
        data: &'a [u8],
        step: usize,
    }
    impl Read for Drip<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.step).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
        fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
            let mut done = 0;
            for b in bufs {
                let n = b.len().min(self.step - done).min(self.data.len());
                b[..n].copy_from_slice(&self.data[..n]);
                self.data = &self.data[n..];
                done += n;
                if done == self.step || self.data.is_empty() {
                    break;
                }
            }
            Ok(done)
        }
    }

    fn sample(rows: usize, cols: usize) -> Tile {
        Tile::from_fn(rows, cols, |i, j| {
            (i * 7919 + j * 104_729) as f64 * 0.5 - 3.25
        })
    }

    #[test]
    fn short_vectored_writes_and_reads_move_every_byte_in_order() {
        // More columns than one vectored call takes (1024), odd steps that
        // cut columns anywhere.
        let t = sample(3, 1500);
        let whole = to_bytes(&t);
        for step in [1usize, 7, 1000, 4096, 1 << 20] {
            let mut w = Trickle {
                out: Vec::new(),
                step,
                calls: 0,
            };
            write(&mut w, &t).unwrap();
            assert_eq!(w.out, whole, "step {step}");
            let mut r = Drip { data: &whole, step };
            let h = read_header(&mut r, "t", &ReadLimit::default()).unwrap();
            let back = read_data(&mut r, &h, "t").unwrap();
            assert_eq!(back, t, "step {step}");
        }
        // Large steps take one vectored call per 1024 columns.
        let mut w = Trickle {
            out: Vec::new(),
            step: 1 << 30,
            calls: 0,
        };
        write(&mut w, &t).unwrap();
        assert_eq!(w.calls, 1 + 2, "the header, then 1500 columns in two calls");
    }

    #[test]
    fn a_short_file_is_an_error_not_a_partial_tile() {
        let t = sample(4, 5);
        let whole = to_bytes(&t);
        let cut = &whole[..whole.len() - 9];
        let mut r = Drip {
            data: cut,
            step: 13,
        };
        let h = read_header(&mut r, "t", &ReadLimit::default()).unwrap();
        let e = read_data(&mut r, &h, "t").unwrap_err().to_string();
        assert!(e.contains("t:"), "{e}");
    }
}
