//! Fuzz target `records`: see `lpk_fuzz::records` (docs/fuzzing.md). Built by
//! cargo-fuzz (`--cfg fuzzing`); otherwise a small program that replays
//! the files or directories given as arguments.
#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| lpk_fuzz::records(data));

#[cfg(not(fuzzing))]
fn main() {
    std::process::exit(lpk_fuzz::replay_main("records", lpk_fuzz::records));
}
