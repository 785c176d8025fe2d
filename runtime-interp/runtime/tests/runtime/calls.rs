//! What the kernel tests (`kernels`, `lq`, `pivot`) share: a deterministic
//! generator of tiles, calls of the standard kernels through
//! `Registry::standard()` that check the result shapes against
//! `flops::result_shapes`, and naive dense products to compare with.

use lpk_model::flops;
use lpk_runtime::kernels::{KernelArg, Registry, Tile};

/// A deterministic xorshift generator, so failures reproduce.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in [-1, 1).
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    /// An m×n tile of [`Rng::next`] values, column by column.
    pub fn mat(&mut self, m: usize, n: usize) -> Tile {
        Tile::from_fn(m, n, |_, _| self.next())
    }
}

/// Calls `name` with these arguments (tiles and scalars).
pub fn call_with(name: &str, args: &[KernelArg<'_>]) -> Result<Vec<Tile>, String> {
    let registry = Registry::standard();
    let kernel = registry
        .get(name)
        .unwrap_or_else(|| panic!("{name} is not registered"));
    kernel.call(args).map_err(|e| e.to_string())
}

/// Calls `name` on tiles.
pub fn call(name: &str, tiles: &[&Tile]) -> Result<Vec<Tile>, String> {
    let args: Vec<KernelArg<'_>> = tiles.iter().map(|t| KernelArg::Tile(t)).collect();
    call_with(name, &args)
}

/// Calls `name` on tiles, expects success, and checks the result shapes
/// against the flop model's.
pub fn run(name: &str, tiles: &[&Tile]) -> Vec<Tile> {
    let out = call(name, tiles).unwrap_or_else(|e| panic!("{name} failed: {e}"));
    let shapes: Vec<(usize, usize)> = tiles.iter().map(|t| t.shape()).collect();
    let got: Vec<(usize, usize)> = out.iter().map(|t| t.shape()).collect();
    assert_eq!(
        Some(got),
        flops::result_shapes(name, &shapes),
        "{name} on {shapes:?}: result shapes disagree with flops::result_shapes"
    );
    out
}

/// The error message of a call on tiles that must fail.
pub fn fail(name: &str, tiles: &[&Tile]) -> String {
    match call(name, tiles) {
        Ok(_) => panic!("{name} succeeded but should have failed"),
        Err(e) => e,
    }
}

/// a · b, by the triple loop.
pub fn mul(a: &Tile, b: &Tile) -> Tile {
    assert_eq!(a.ncols(), b.nrows());
    Tile::from_fn(a.nrows(), b.ncols(), |i, j| {
        (0..a.ncols()).map(|p| a[(i, p)] * b[(p, j)]).sum()
    })
}

/// The n×n identity.
pub fn eye(n: usize) -> Tile {
    Tile::from_fn(n, n, |i, j| if i == j { 1.0 } else { 0.0 })
}

/// aᵀ.
pub fn transpose(a: &Tile) -> Tile {
    Tile::from_fn(a.ncols(), a.nrows(), |i, j| a[(j, i)])
}

/// The Frobenius norm, summed column by column.
pub fn norm(a: &Tile) -> f64 {
    let mut s = 0.0;
    for j in 0..a.ncols() {
        for i in 0..a.nrows() {
            s += a[(i, j)] * a[(i, j)];
        }
    }
    s.sqrt()
}
