//! The `.lpk` front end: tokens ([`lexer`]), the syntax tree ([`ast`]) and
//! the parser with error recovery ([`parse`]). It knows nothing of names,
//! types or dependence solving; those belong to the compiler.
#![warn(missing_docs)]

pub mod ast;
pub mod lexer;
pub mod parse;

pub use parse::{parse, ParseError, Parsed};
