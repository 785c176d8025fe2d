//! The `.lpk` front end: tokens ([`lexer`]), the syntax tree ([`ast`]), the
//! parser with error recovery ([`parse`]) and the canonical formatter
//! ([`fmt`]). It knows nothing of names, types or dependence solving; those
//! belong to the compiler.
#![warn(missing_docs)]

pub mod ast;
pub mod fmt;
pub mod lexer;
pub mod parse;

pub use parse::{parse, ParseError, Parsed};
