//! The runtime's integration tests, in one binary: each kernel against a
//! naive reference (`kernels`; the pivoted LU and left solves in `pivot`),
//! the LQ kernels against exact identities (`lq`), `.npy` reading and writing against the
//! fixtures in `tests/fixtures/npy/` (`npy`), the tile stores (`store`),
//! S3 and raw objects on a real S3 server on loopback (`s3`),
//! the shape check before a run (`shapes`), whole runs from `.npy`
//! files (`job`) and what they write (`outputs`), zero tiles (`zero`), on compiled programs in `tests/fixtures/programs/`.

mod calls;
mod job;
mod kernels;
mod lq;
mod npy;
mod outputs;
mod pivot;
mod s3;
mod shapes;
mod store;
mod zero;

/// Matrix `i` of a test program (tests name matrices by position).
pub fn matrix(i: usize) -> lpk_model::MatrixId {
    lpk_model::MatrixId::from_index(i).expect("a small index")
}

/// The data of a program whose one input is matrix 0.
pub fn one_input(
    spec: lpk_runtime::dense::InputSpec,
) -> std::collections::BTreeMap<lpk_model::MatrixId, lpk_runtime::dense::InputSpec> {
    [(matrix(0), spec)].into()
}

/// A compiled program of `tests/fixtures/programs/` (made with `lpkc
/// compile --no-source`, so these tests need no compiler).
pub fn program(name: &str) -> lpk_model::program::Program {
    let path = format!(
        "{}/tests/fixtures/programs/{name}.lpka",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    lpk_model::artifact::decode(&bytes)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .artifact
        .program
}
