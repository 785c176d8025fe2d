//! Why a simulation fails: the one error type every module of the
//! simulator returns. It sits below them all, so that no two modules import
//! each other for it.

use lpk_model::query::QueryError;

/// Why a simulation failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A plan query failed.
    #[error("{0}")]
    Query(#[from] QueryError),
    /// The loop tree could not be walked.
    #[error("{0}")]
    Walk(#[from] lpk_model::task::WalkError),
    /// The settings are unusable.
    #[error("{0}")]
    Config(String),
    /// The walk contradicted itself (a plan bug).
    #[error("inconsistent DAG: {0}")]
    Inconsistent(String),
    /// METIS failed.
    #[error("partition failed: {0}")]
    Partition(String),
}
