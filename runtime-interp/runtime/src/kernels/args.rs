//! Reading a standard kernel's arguments: the argument count and kinds
//! against the kernel's signature in [`lpk_model::stdlib`], and the wording of
//! shape errors, so every kernel reports a mismatch the same way
//! ("gemm: a is 3×4 but b is 5×2 (a's columns must equal b's rows)").

use super::{KernelArg, KernelError, Tile};
use lpk_model::stdlib;

/// The parameter names of `kernel`, for messages (empty for a kernel
/// without a standard signature, which cannot happen for the kernels here).
fn param_names(kernel: &str) -> Vec<&'static str> {
    stdlib::standard(kernel)
        .map(|s| s.params.iter().map(|(n, _)| *n).collect())
        .unwrap_or_default()
}

/// The name of parameter `i` of `kernel`, or "argument i+1" if the
/// signature has fewer parameters.
fn param_name(kernel: &str, i: usize) -> String {
    param_names(kernel)
        .get(i)
        .map(|n| (*n).to_string())
        .unwrap_or_else(|| format!("argument {}", i + 1))
}

/// What kind of argument this is, for messages.
fn kind(arg: &KernelArg<'_>) -> &'static str {
    match arg {
        KernelArg::Tile(_) => "a tile",
        KernelArg::Int(_) => "an int",
        KernelArg::Real(_) => "a real",
    }
}

/// Checks that exactly `expected` arguments were passed.
fn check_count(kernel: &str, args: &[KernelArg<'_>], expected: usize) -> Result<(), KernelError> {
    if args.len() == expected {
        return Ok(());
    }
    let names = param_names(kernel);
    let list = if names.is_empty() {
        String::new()
    } else {
        format!(" ({})", names.join(", "))
    };
    let plural = if expected == 1 { "" } else { "s" };
    Err(KernelError::new(format!(
        "{kernel}: expected {expected} argument{plural}{list}, found {}",
        args.len()
    )))
}

/// The tile at position `i`, or an error naming the parameter.
fn tile_at<'a>(kernel: &str, args: &[KernelArg<'a>], i: usize) -> Result<&'a Tile, KernelError> {
    match args.get(i) {
        Some(KernelArg::Tile(t)) => Ok(t),
        Some(other) => Err(KernelError::new(format!(
            "{kernel}: {} must be a tile, found {}",
            param_name(kernel, i),
            kind(other)
        ))),
        None => Err(KernelError::new(format!(
            "{kernel}: {} is missing",
            param_name(kernel, i)
        ))),
    }
}

/// The `N` tile arguments of a kernel whose parameters are all tiles.
pub(super) fn tiles<'a, const N: usize>(
    kernel: &str,
    args: &[KernelArg<'a>],
) -> Result<[&'a Tile; N], KernelError> {
    check_count(kernel, args, N)?;
    let mut out: Vec<&'a Tile> = Vec::with_capacity(N);
    for i in 0..N {
        out.push(tile_at(kernel, args, i)?);
    }
    out.try_into()
        .map_err(|_| KernelError::new(format!("{kernel}: internal error reading arguments")))
}

/// The arguments of a kernel with parameters `(tile, real)`.
pub(super) fn tile_and_real<'a>(
    kernel: &str,
    args: &[KernelArg<'a>],
) -> Result<(&'a Tile, f64), KernelError> {
    check_count(kernel, args, 2)?;
    let tile = tile_at(kernel, args, 0)?;
    match args.get(1) {
        Some(KernelArg::Real(x)) => Ok((tile, *x)),
        Some(other) => Err(KernelError::new(format!(
            "{kernel}: {} must be a real, found {}",
            param_name(kernel, 1),
            kind(other)
        ))),
        None => Err(KernelError::new(format!(
            "{kernel}: {} is missing",
            param_name(kernel, 1)
        ))),
    }
}

/// A tile's shape as the messages write it, e.g. "3×4".
pub(super) fn dims(t: &Tile) -> String {
    format!("{}×{}", t.nrows(), t.ncols())
}

/// A shape mismatch between two named arguments.
pub(super) fn mismatch(
    kernel: &str,
    (x, xt): (&str, &Tile),
    (y, yt): (&str, &Tile),
    rule: &str,
) -> KernelError {
    KernelError::new(format!(
        "{kernel}: {x} is {} but {y} is {} ({rule})",
        dims(xt),
        dims(yt)
    ))
}

/// One dimension of a named tile argument, as shape messages name it
/// ("a's rows", "l's order").
pub(super) struct ArgSize<'a> {
    name: &'a str,
    tile: &'a Tile,
    what: &'static str,
    size: usize,
}

/// The rows of argument `name`.
pub(super) fn rows<'a>(name: &'a str, tile: &'a Tile) -> ArgSize<'a> {
    ArgSize {
        name,
        tile,
        what: "rows",
        size: tile.nrows(),
    }
}

/// The columns of argument `name`.
pub(super) fn cols<'a>(name: &'a str, tile: &'a Tile) -> ArgSize<'a> {
    ArgSize {
        name,
        tile,
        what: "columns",
        size: tile.ncols(),
    }
}

/// The order of argument `name`, a tile already checked [`square`].
pub(super) fn order<'a>(name: &'a str, tile: &'a Tile) -> ArgSize<'a> {
    ArgSize {
        name,
        tile,
        what: "order",
        size: tile.nrows(),
    }
}

/// Checks that `x` equals `y`, else the mismatch "x must equal y" (e.g.
/// "a's rows must equal c's rows"), which shows the two tiles in the order
/// of `kernel`'s parameters whichever of them the rule names first.
pub(super) fn expect_equal(
    kernel: &str,
    x: ArgSize<'_>,
    y: ArgSize<'_>,
) -> Result<(), KernelError> {
    if x.size == y.size {
        return Ok(());
    }
    let rule = format!("{}'s {} must equal {}'s {}", x.name, x.what, y.name, y.what);
    let names = param_names(kernel);
    let position = |a: &ArgSize<'_>| names.iter().position(|n| *n == a.name);
    let (first, second) = if position(&y) < position(&x) {
        (&y, &x)
    } else {
        (&x, &y)
    };
    Err(mismatch(
        kernel,
        (first.name, first.tile),
        (second.name, second.tile),
        &rule,
    ))
}

/// Checks that `t`, named `name`, is square of the order `size` (QR's k×k
/// factor t of the m×k v: "t must be square of order v's columns, k").
pub(super) fn expect_square_of(
    kernel: &str,
    (name, t): (&str, &Tile),
    size: ArgSize<'_>,
) -> Result<(), KernelError> {
    if t.nrows() == size.size && t.ncols() == size.size {
        return Ok(());
    }
    let rule = format!(
        "{name} must be square of order {}'s {}, {}",
        size.name, size.what, size.size
    );
    Err(mismatch(kernel, (size.name, size.tile), (name, t), &rule))
}

/// Checks that `x` and `y`, the two halves of a split, add up to `whole`,
/// else "x plus y must equal whole" (e.g. "c0's rows plus c1's rows must
/// equal v's rows").
pub(super) fn expect_split(
    kernel: &str,
    whole: ArgSize<'_>,
    x: ArgSize<'_>,
    y: ArgSize<'_>,
) -> Result<(), KernelError> {
    if x.size + y.size == whole.size {
        return Ok(());
    }
    Err(KernelError::new(format!(
        "{kernel}: {} is {} but {} is {} and {} is {} \
         ({}'s {} plus {}'s {} must equal {}'s {})",
        whole.name,
        dims(whole.tile),
        x.name,
        dims(x.tile),
        y.name,
        dims(y.tile),
        x.name,
        x.what,
        y.name,
        y.what,
        whole.name,
        whole.what
    )))
}

/// Checks that the named argument is square.
pub(super) fn square(kernel: &str, name: &str, t: &Tile) -> Result<usize, KernelError> {
    if t.nrows() == t.ncols() {
        Ok(t.nrows())
    } else {
        Err(KernelError::new(format!(
            "{kernel}: {name} is {} but must be square",
            dims(t)
        )))
    }
}

/// Checks that a triangular matrix has no zero on its diagonal (the
/// triangular solve or inverse would divide by it).
pub(super) fn nonzero_diagonal(kernel: &str, name: &str, t: &Tile) -> Result<(), KernelError> {
    let n = t.nrows().min(t.ncols());
    match (0..n).find(|&i| t[(i, i)] == 0.0) {
        Some(i) => Err(KernelError::new(format!(
            "{kernel}: {name} is singular (diagonal entry {i} is zero)"
        ))),
        None => Ok(()),
    }
}
