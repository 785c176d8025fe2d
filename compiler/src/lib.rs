//! The lpk compiler library.
#![warn(missing_docs)]
