//! Fuzz target `npy`: see `lpk_fuzz::npy` (docs/fuzzing.md), and
//! `lpk_fuzz::fuzz_target_file` for what this file becomes.
#![cfg_attr(fuzzing, no_main)]

lpk_fuzz::fuzz_target_file!(npy);
