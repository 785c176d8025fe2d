//! Fuzz target `check`: see `lpk_fuzz::check` (docs/fuzzing.md), and
//! `lpk_fuzz::fuzz_target_file` for what this file becomes.
#![cfg_attr(fuzzing, no_main)]

lpk_fuzz::fuzz_target_file!(check);
