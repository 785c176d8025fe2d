//! Replays every checked-in fuzz input through its target on stable Rust,
//! without libFuzzer: the seed corpora (`seeds/TARGET/`) and the minimised
//! inputs of every crash, hang or out-of-memory the fuzzers found
//! (`regressions/TARGET/`). A target panics when a property breaks, so a
//! failing input fails its test with the target's message. Each input also
//! has to finish within a time limit (a hang found by the fuzzer is a
//! regression too).

use lpk_fuzz::{inputs, TARGETS};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What one input may take. libFuzzer ran with `-timeout=2` and reported
/// anything above one second as slow; a loaded CI machine gets some slack.
const PER_INPUT: Duration = Duration::from_secs(5);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs every file under `dir/TARGET/` through TARGET, and fails on an
/// unknown target directory (a misspelt name would replay nothing).
fn replay(dir: &str, must_exist: bool) {
    let base = root().join(dir);
    if !base.is_dir() {
        assert!(!must_exist, "{} is missing", base.display());
        return;
    }
    let known: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(&base)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", base.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for sub in &subdirs {
        let name = sub.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert!(
            known.contains(&name),
            "{} is not a fuzz target (targets: {})",
            sub.display(),
            known.join(", ")
        );
    }
    let mut total = 0;
    for (name, target) in TARGETS {
        let files = inputs(&base.join(name));
        if must_exist {
            assert!(!files.is_empty(), "no seeds for target `{name}`");
        }
        for f in files {
            run_one(name, *target, &f);
            total += 1;
        }
    }
    eprintln!("{dir}: {total} inputs replayed");
}

fn run_one(name: &str, target: fn(&[u8]), file: &Path) {
    let data =
        std::fs::read(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    let start = Instant::now();
    let result = std::panic::catch_unwind(|| target(&data));
    let took = start.elapsed();
    if let Err(e) = result {
        let msg = e
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| e.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        panic!("target `{name}` panicked on {}: {msg}", file.display());
    }
    assert!(
        took <= PER_INPUT,
        "target `{name}` took {took:?} on {} (limit {PER_INPUT:?})",
        file.display()
    );
}

#[test]
fn seeds() {
    replay("seeds", true);
}

#[test]
fn regressions() {
    replay("regressions", false);
}
