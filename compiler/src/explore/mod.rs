//! The tools for exploring a compiled program, on the program model alone
//! (they use nothing else of the compiler): the query language, the REPL
//! session, statistics, Graphviz DOT, the DAG's JSON and readable plans.

pub mod dagfmt;
pub mod dot;
pub mod limit;
pub mod plans_text;
pub mod query;
pub mod repl;
pub mod stats;
