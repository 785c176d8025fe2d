//! The fuzz smoke of the test suite (docs/fuzzing.md): the bodies of the
//! fuzz targets (`fuzz/src/lib.rs`, compiled into this test binary so that
//! the suite needs neither the nightly toolchain nor the fuzz crate's own
//! build) run on every checked-in seed and regression, then on random
//! mutations of the seeds for a bounded time. This is not coverage-guided
//! fuzzing (`scripts/fuzz-run` is); it keeps every crash the fuzzers found
//! fixed, and tries a few thousand fresh inputs per run of the suite.
//!
//! A failing input is written to `target/fuzz-smoke/TARGET-N` and named in
//! the failure; the mutation seed is printed, and `LPK_FUZZ_SMOKE_SEED`
//! replays it.

#[allow(dead_code, unused_imports, clippy::all)]
#[path = "../../../../fuzz/src/lib.rs"]
mod targets;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What one input may take (the replay test's limit, with slack for a
/// debug build on a loaded machine).
const PER_INPUT: Duration = Duration::from_secs(10);

/// The time the mutation part takes in all, shared by the targets.
const MUTATION_BUDGET: Duration = Duration::from_secs(24);

fn fuzz_dir() -> PathBuf {
    lpk_test_support::workspace_root().join("fuzz")
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The dictionary entries of `fuzz/lpk.dict` (quoted strings, `\xNN`
/// escapes kept literally: the smoke only needs the language's words).
fn dictionary() -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(fuzz_dir().join("lpk.dict")).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let start = l.find('"')?;
            let end = l.rfind('"')?;
            (end > start + 1).then(|| l.as_bytes()[start + 1..end].to_vec())
        })
        .collect()
}

/// One to four random edits of `input`: bit flips, interesting bytes,
/// deletions, duplications, dictionary words and splices of another seed.
fn mutate(rng: &mut Rng, input: &[u8], others: &[Vec<u8>], dict: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(7) {
            0 if !out.is_empty() => {
                let i = at.min(out.len() - 1);
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = at.min(out.len() - 1);
                out[i] = *[0u8, 0xff, b'0', b'9', b' ', b'\n', b'(', b']', b'-'][..]
                    .get(rng.below(9))
                    .unwrap_or(&0);
            }
            2 => {
                let len = rng.below(16).min(out.len() - at);
                out.drain(at..at + len);
            }
            3 => {
                let len = rng.below(32).min(out.len() - at);
                let piece = out[at..at + len].to_vec();
                out.splice(at..at, piece);
            }
            4 | 5 if !dict.is_empty() => {
                let word = &dict[rng.below(dict.len())];
                out.splice(at..at, word.iter().copied());
            }
            _ if !others.is_empty() => {
                let other = &others[rng.below(others.len())];
                let from = rng.below(other.len() + 1);
                let len = rng.below(64).min(other.len() - from);
                out.splice(at..at, other[from..from + len].iter().copied());
            }
            _ => {}
        }
    }
    out.truncate(64 << 10);
    out
}

/// Runs `target` on `data`; on a panic or a run past [`PER_INPUT`], saves
/// the input and returns what went wrong.
fn try_one(name: &str, target: targets::Target, data: &[u8], what: &str) -> Option<String> {
    let started = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| target(data)));
    let took = started.elapsed();
    let why = match result {
        Err(_) => "panicked (its message is above)".to_string(),
        Ok(()) if took > PER_INPUT => format!("took {took:?}, more than {PER_INPUT:?}"),
        Ok(()) => return None,
    };
    let dir = lpk_test_support::workspace_root()
        .join("target")
        .join("fuzz-smoke");
    let _ = std::fs::create_dir_all(&dir);
    let n = std::fs::read_dir(&dir).map_or(0, |d| d.count());
    let path = dir.join(format!("{name}-{n}"));
    let _ = std::fs::write(&path, data);
    Some(format!(
        "target `{name}` on {what} {why}; the input is saved as {} (replay: cargo run \
         --release --manifest-path fuzz/Cargo.toml --bin {name} -- {})",
        path.display(),
        path.display()
    ))
}

fn files(dir: &Path) -> Vec<PathBuf> {
    targets::inputs(dir)
}

#[test]
fn fuzz_targets_pass_their_seeds_regressions_and_fresh_mutations() {
    let seed = std::env::var("LPK_FUZZ_SMOKE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    eprintln!("fuzz smoke: mutation seed {seed} (LPK_FUZZ_SMOKE_SEED={seed} replays it)");
    let mut rng = Rng(seed);
    let dict = dictionary();
    let mut failures = Vec::new();
    let per_target = MUTATION_BUDGET / targets::TARGETS.len() as u32;
    for (name, target) in targets::TARGETS {
        let started = Instant::now();
        let mut seeds: Vec<Vec<u8>> = Vec::new();
        let mut replayed = 0;
        for dir in ["seeds", "regressions"] {
            for f in files(&fuzz_dir().join(dir).join(name)) {
                let data = std::fs::read(&f).unwrap_or_default();
                let what = f.display().to_string();
                failures.extend(try_one(name, *target, &data, &what));
                replayed += 1;
                if dir == "seeds" {
                    seeds.push(data);
                }
            }
        }
        assert!(!seeds.is_empty(), "no seeds for fuzz target `{name}`");
        let replay_took = started.elapsed();
        let mut mutants = 0;
        let until = Instant::now() + per_target;
        while Instant::now() < until && failures.len() < 5 {
            let base = &seeds[rng.below(seeds.len())];
            let data = mutate(&mut rng, base, &seeds, &dict);
            let what = format!("mutant {mutants} (seed {seed})");
            failures.extend(try_one(name, *target, &data, &what));
            mutants += 1;
        }
        eprintln!(
            "fuzz smoke: {name}: {replayed} seeds and regressions in {:.1} s, {mutants} mutants in {:.1} s",
            replay_took.as_secs_f64(),
            (started.elapsed() - replay_took).as_secs_f64()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
