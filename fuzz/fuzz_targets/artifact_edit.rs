//! Fuzz target `artifact_edit`: see `lpk_fuzz::artifact_edit` (docs/fuzzing.md), and
//! `lpk_fuzz::fuzz_target_file` for what this file becomes.
#![cfg_attr(fuzzing, no_main)]

lpk_fuzz::fuzz_target_file!(artifact_edit);
