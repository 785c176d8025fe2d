//! Fuzz target `fmt_roundtrip`: see `lpk_fuzz::fmt_roundtrip` (docs/fuzzing.md), and
//! `lpk_fuzz::fuzz_target_file` for what this file becomes.
#![cfg_attr(fuzzing, no_main)]

lpk_fuzz::fuzz_target_file!(fmt_roundtrip);
