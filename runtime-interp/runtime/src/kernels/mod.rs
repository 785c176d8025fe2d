//! Tile kernels: the [`Kernel`] trait every kernel implements, the
//! [`Registry`] that maps kernel names to implementations, and the standard
//! kernels of `docs/kernels.md` on `faer` (f64).
//!
//! A kernel is a pure function from input tiles and scalars to result
//! tiles. It must accept any consistent shapes (edge tiles are smaller than
//! the block size) and report inconsistent shapes or numerical failure as a
//! [`KernelError`]; the executor adds the task and tile to the message.

use std::collections::BTreeMap;
use std::sync::Arc;

mod args;
mod blas;
mod factor;
mod qr;
pub mod rules;
mod standard;

/// A dense f64 tile.
pub type Tile = faer::Mat<f64>;

/// One argument of a kernel call, in kernel-parameter order.
#[derive(Clone, Copy, Debug)]
pub enum KernelArg<'a> {
    /// A tile parameter.
    Tile(&'a Tile),
    /// An `int` parameter.
    Int(i64),
    /// A `real` parameter.
    Real(f64),
}

/// Why a kernel call failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{reason}")]
pub struct KernelError {
    /// A human-readable reason, e.g. "tile is not positive definite (pivot
    /// 3 is -0.25)".
    pub reason: String,
}

impl KernelError {
    /// An error with this reason.
    pub fn new(reason: impl Into<String>) -> Self {
        KernelError {
            reason: reason.into(),
        }
    }
}

/// A tile kernel.
pub trait Kernel: Send + Sync {
    /// The name programs call it by.
    fn name(&self) -> &str;
    /// Runs the kernel on `args` (kernel-parameter order) and returns one
    /// tile per result, in result order. Runs on the calling thread only
    /// (the executor parallelises across tasks).
    fn call(&self, args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError>;
}

/// Kernels by name.
#[derive(Clone, Default)]
pub struct Registry {
    kernels: BTreeMap<String, Arc<dyn Kernel>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a kernel.
    pub fn register(&mut self, kernel: Arc<dyn Kernel>) {
        self.kernels.insert(kernel.name().to_string(), kernel);
    }

    /// The kernel called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Kernel>> {
        self.kernels.get(name)
    }

    /// A registry holding every standard kernel of `docs/kernels.md`.
    pub fn standard() -> Self {
        let mut registry = Self::new();
        for kernel in standard::kernels() {
            registry.register(kernel);
        }
        registry
    }

    /// The names of every registered kernel.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.kernels.keys().map(String::as_str)
    }
}
