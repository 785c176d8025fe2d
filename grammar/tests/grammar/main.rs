//! The grammar's integration tests, in one binary: parser behaviour
//! (`parse`), formatter round trips (`fmt`) and proptest robustness on
//! hostile input (`robustness`); `erase` compares trees up to spans.

mod erase;
mod fmt;
mod parse;
mod robustness;
