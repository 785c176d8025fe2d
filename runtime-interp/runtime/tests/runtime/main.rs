//! The runtime's integration tests, in one binary: each kernel against a
//! naive reference (`kernels`), `.npy` reading and writing against the
//! fixtures in `tests/fixtures/npy/` (`npy`), and the tile stores
//! (`store`).

mod kernels;
mod npy;
mod store;
