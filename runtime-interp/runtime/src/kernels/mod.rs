//! Tile kernels: the [`Kernel`] trait every kernel implements, the
//! [`Registry`] that maps kernel names to kernels, and the standard kernels
//! of `docs/kernels.md` on `faer` (f64).
//!
//! The registry is the one place that knows a kernel: its implementation,
//! its signature, its shape rule (checked on tile shapes before any task
//! runs), its result shapes and its flop count. The executor, the
//! distributed worker, the shape check, the zero tiles, `lpkc calibrate`
//! and the simulator's costs all ask it; a kernel it does not hold cannot
//! run, and the error lists the ones it does.
//!
//! A kernel is a pure function from input tiles and scalars to result
//! tiles. It must accept any consistent shapes (edge tiles are smaller than
//! the block size) and report inconsistent shapes or numerical failure as a
//! [`KernelError`]; the executor adds the task and tile to the message.

use lpk_model::program::{KernelDecl, ParamKind};
use lpk_model::stdlib::ScalarKind;
use std::collections::BTreeMap;
use std::sync::Arc;

mod args;
mod blas;
mod factor;
mod lq;
mod pivot;
mod qr;
pub mod rules;
mod solve;
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

/// A tile kernel. Only [`Kernel::name`] and [`Kernel::call`] are
/// required; what else a kernel tells makes more of lpk work for it.
pub trait Kernel: Send + Sync {
    /// The name programs call it by.
    fn name(&self) -> &str;
    /// Runs the kernel on `args` (kernel-parameter order) and returns one
    /// tile per result, in result order. Runs on the calling thread only
    /// (the executor parallelises across tasks).
    fn call(&self, args: &[KernelArg<'_>]) -> Result<Vec<Tile>, KernelError>;
    /// Its signature, if it has a fixed one (every standard kernel does):
    /// `lpkc calibrate` builds arguments from it.
    fn signature(&self) -> Option<Signature> {
        None
    }
    /// Whether it can serve calls declared as `decl` (a distributed
    /// worker asks before it takes a run's tasks); `Err` says what does
    /// not match, completing "this worker's ...". By default from its
    /// signature; a kernel without one accepts any declaration.
    fn fits(&self, decl: &KernelDecl) -> Result<(), String> {
        match self.signature() {
            Some(sig) if !signature_fits(&sig, decl) => {
                Err(format!("implementation is `{}`", sig.declaration()))
            }
            _ => Ok(()),
        }
    }
    /// Its shape rule: a run checks its inputs' shapes against it before
    /// any task runs, and zero tiles it reads get their shapes from it.
    /// `None`: not checked (the kernel's own checks remain).
    fn shape_rule(&self) -> Option<ShapeRule> {
        None
    }
    /// The shapes of its results for tile arguments of these shapes
    /// (scalars skipped), in result order; `None` if unknown.
    fn result_shapes(&self, _tiles: &[(usize, usize)]) -> Option<Vec<(usize, usize)>> {
        None
    }
    /// Its flops for tile arguments of these shapes; `None` if unknown
    /// (a run's GFLOP/s figure then says it is partial, and the simulator
    /// lists the kernel as unmodelled unless calibrated).
    fn flops(&self, _tiles: &[(usize, usize)]) -> Option<f64> {
        None
    }
}

pub use lpk_model::stdlib::Signature;

/// Whether `sig` has `decl`'s parameters (tiles and scalars of the same
/// kinds, in order) and result count.
fn signature_fits(sig: &Signature, decl: &KernelDecl) -> bool {
    sig.results.len() == decl.results.len()
        && sig.params.len() == decl.params.len()
        && sig.params.iter().zip(&decl.params).all(|((_, s), (_, d))| {
            matches!(
                (s, d),
                (None, ParamKind::Tile)
                    | (Some(ScalarKind::Int), ParamKind::Int)
                    | (Some(ScalarKind::Real), ParamKind::Real)
            )
        })
}
pub use rules::ShapeRule;

/// Kernels by name.
#[derive(Clone, Default)]
pub struct Registry {
    kernels: BTreeMap<String, Arc<dyn Kernel>>,
    thread_context: Option<ThreadContext>,
}

/// Runs the loop of a thread that calls kernels (its argument) inside
/// whatever per-thread setup the kernels need, set with
/// [`Registry::set_thread_context`]: Python kernels keep one Python thread
/// state per executor thread instead of making one per call.
pub type ThreadContext = Arc<dyn Fn(&mut (dyn FnMut() + Send)) + Send + Sync>;

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
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

    /// Sets the context every thread that calls these kernels runs its
    /// loop in (the executor's workers and a distributed worker's task
    /// threads). It must call its argument once.
    pub fn set_thread_context(&mut self, context: ThreadContext) {
        self.thread_context = Some(context);
    }

    /// Runs `body`, a kernel-calling thread's loop, in the thread context
    /// (directly when none is set, or if the context did not call it).
    pub fn run_in_thread_context(&self, body: impl FnOnce() + Send) {
        let mut body = Some(body);
        if let Some(context) = &self.thread_context {
            context(&mut || {
                if let Some(b) = body.take() {
                    b();
                }
            });
        }
        if let Some(b) = body {
            b();
        }
    }

    /// The names of every registered kernel.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.kernels.keys().map(String::as_str)
    }

    /// The shape rule of kernel `name`, if it is here and has one.
    pub fn shape_rule(&self, name: &str) -> Option<ShapeRule> {
        self.get(name)?.shape_rule()
    }

    /// The result shapes of kernel `name` on tiles of these shapes.
    pub fn result_shapes(
        &self,
        name: &str,
        tiles: &[(usize, usize)],
    ) -> Option<Vec<(usize, usize)>> {
        self.get(name)?.result_shapes(tiles)
    }

    /// The flops of kernel `name` on tiles of these shapes.
    pub fn flops(&self, name: &str, tiles: &[(usize, usize)]) -> Option<f64> {
        self.get(name)?.flops(tiles)
    }

    /// The signature of kernel `name`.
    pub fn signature(&self, name: &str) -> Option<Signature> {
        self.get(name)?.signature()
    }
}
