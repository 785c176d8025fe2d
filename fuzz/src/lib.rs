//! The bodies of lpk's fuzz targets (docs/fuzzing.md), one function per
//! target taking the fuzzer's bytes. The cargo-fuzz binaries in
//! `fuzz_targets/` call them under libFuzzer; `tests/replay.rs` calls them
//! on stable Rust for every checked-in seed and regression, so a fixed
//! crash stays fixed without a nightly toolchain.
//!
//! Every target must return normally whatever its input: the project's
//! rule is that bad input gets a clear error, never a panic, a hang or
//! unbounded memory. A target panics (with a message saying which
//! property broke) only when a property that must hold does not.

use lpk_compiler::diag::SourceMap;
use lpk_compiler::explore::query::{parse_command, AnswerFormat, Answerer};
use lpk_compiler::explore::repl::Session;
use lpk_compiler::front::hir;
use lpk_compiler::lint::{lint_program, LintOptions};
use lpk_compiler::pipeline::{
    check_source, compile_source, try_compile_program, Checked, LintGate,
};
use lpk_grammar::ast::FileId;
use lpk_model::artifact::{self, Artifact, SourceInfo};
use lpk_model::program::{Instance, Program, TreeNode};
use lpk_model::task::Task;
use lpk_runtime::kernels::Tile;
use lpk_runtime::npy::{self, ReadLimit};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The file name every source is checked and compiled as.
const FILE: &str = "fuzz.lpk";

/// Programs of one source that the compiling targets try.
const MAX_PROGRAMS: usize = 4;

/// Sources longer than this are skipped by the targets that compile: the
/// parser's limits are fuzzed by `parse`, and a long input only slows the
/// solver down without reaching new code.
const MAX_COMPILE_BYTES: usize = 16 << 10;

/// The input as source text: invalid UTF-8 replaced, as a caller reading
/// bytes lossily would.
fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// Target `parse`: any text through the parser. Every error must point
/// inside the source at character boundaries (diagnostics slice the
/// source there), and the errors come in source order.
pub fn parse(data: &[u8]) {
    let src = text(data);
    let parsed = lpk_grammar::parse(&src, FileId(0));
    let mut last = 0;
    for e in &parsed.errors {
        let span = e.span();
        let (start, end) = (span.start as usize, span.end as usize);
        assert!(
            start <= end && end <= src.len(),
            "{}: span {start}..{end} outside a source of {} bytes",
            e.code(),
            src.len()
        );
        assert!(
            src.is_char_boundary(start) && src.is_char_boundary(end),
            "{}: span {start}..{end} splits a character",
            e.code()
        );
        assert!(start >= last, "errors out of source order");
        last = start;
        let _ = e.to_string();
    }
}

/// The programs of a checked module, each compiled (plans solved) with
/// what `lint` needs, at most [`MAX_PROGRAMS`].
fn compile_all<'m>(
    module: &'m hir::Module,
    sources: &SourceMap,
) -> Vec<(&'m hir::ProgramDef, Program)> {
    module
        .programs
        .iter()
        .take(MAX_PROGRAMS)
        .filter_map(|p| try_compile_program(module, p, sources).ok().map(|c| (p, c)))
        .collect()
}

/// The input checked as a source, with the source map its diagnostics
/// point into, when it is short enough to compile and has no errors: what
/// the targets that only look at compiled programs start from.
fn check_clean(data: &[u8]) -> Option<(SourceMap, Checked)> {
    if data.len() > MAX_COMPILE_BYTES {
        return None;
    }
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, FILE, &text(data));
    (!checked.has_errors()).then_some((sources, checked))
}

/// Target `check`: the front end on any text, its diagnostics rendered
/// (text and JSON), then, when it has no errors, every program compiled
/// (lowered, plans solved) with the lint gate off, as `compile_source`
/// does.
pub fn check(data: &[u8]) {
    if data.len() > MAX_COMPILE_BYTES {
        return;
    }
    let src = text(data);
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, FILE, &src);
    let _ = sources.render_plain(&checked.diagnostics);
    let _ = sources.to_json(&checked.diagnostics);
    if checked.has_errors() {
        return;
    }
    let mut sources2 = SourceMap::new();
    match compile_source(&mut sources2, FILE, &src, None, LintGate::Off) {
        Ok(compiled) => {
            let _ = compiled.hir();
            let _ = sources2.render_plain(&compiled.checked.diagnostics);
        }
        Err(e) => {
            let _ = e.to_string();
            if let lpk_compiler::pipeline::CompileError::Diagnostics(d) = &e {
                let _ = sources2.render_plain(d);
            }
        }
    }
    // Every program by name: compile_source refuses a file with several
    // programs unless one is chosen.
    for p in checked.module.programs.iter().take(MAX_PROGRAMS) {
        let mut s = SourceMap::new();
        if let Err(e) = compile_source(&mut s, FILE, &src, Some(&p.name), LintGate::Off) {
            let _ = e.to_string();
        }
    }
}

/// Statement positions blanked, in a program and its source map: the one
/// thing formatting may change.
fn without_positions(program: Program) -> Program {
    fn tree(nodes: &mut [TreeNode]) {
        for n in nodes {
            match n {
                TreeNode::Loop(l) => {
                    l.line = 0;
                    tree(&mut l.body);
                }
                TreeNode::If {
                    branches,
                    else_body,
                    line,
                } => {
                    *line = 0;
                    for (_, b) in branches {
                        tree(b);
                    }
                    tree(else_body);
                }
                TreeNode::Call(_) => {}
            }
        }
    }
    let mut program = program.into_parts();
    for s in &mut program.statements {
        s.line = 0;
        s.column = 0;
        s.span = (0, 0);
        for a in s.writes.iter_mut().chain(s.reads.iter_mut()) {
            a.span = (0, 0);
        }
    }
    tree(&mut program.tree);
    // Positions are not validated: a compiled program stays valid.
    Program::validate(program, &lpk_model::artifact::Limits::default())
        .expect("blanking positions keeps a program valid")
}

/// The artifact bytes `lpkc compile --no-source` writes for `program`
/// (without the lint record, which `lint` fuzzes), with positions blanked.
fn artifact_bytes(program: Program) -> Vec<u8> {
    let program = without_positions(program);
    let art = Artifact {
        compiler: "lpk-fuzz".to_string(),
        source: SourceInfo::of_program(&program, FILE, None),
        program,
        lint: None,
    };
    match artifact::encode(&art) {
        Ok(bytes) => bytes,
        Err(e) => panic!("a compiled program does not encode: {e}"),
    }
}

/// What checking a source says: its sorted diagnostic codes, and each
/// program's name with its artifact bytes (`None` when it does not
/// compile).
struct Outcome {
    codes: Vec<String>,
    programs: Vec<(String, Option<Vec<u8>>)>,
}

fn outcome(src: &str) -> Outcome {
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, FILE, src);
    let mut codes: Vec<String> = checked
        .diagnostics
        .iter()
        .map(|d| format!("{:?}", d.code))
        .collect();
    codes.sort();
    if checked.has_errors() {
        return Outcome {
            codes,
            programs: Vec::new(),
        };
    }
    let programs = checked
        .module
        .programs
        .iter()
        .take(MAX_PROGRAMS)
        .map(|p| {
            let bytes = try_compile_program(&checked.module, p, &sources)
                .ok()
                .map(artifact_bytes);
            (p.name.clone(), bytes)
        })
        .collect();
    Outcome { codes, programs }
}

/// Target `fmt_roundtrip`: for a source that parses, the formatted text
/// parses, formatting it again changes nothing, it checks with the same
/// diagnostic codes, and every program compiles to the same artifact bytes
/// (statement positions aside) as the original's.
pub fn fmt_roundtrip(data: &[u8]) {
    if data.len() > MAX_COMPILE_BYTES {
        return;
    }
    let src = text(data);
    let Ok(once) = lpk_grammar::fmt::format_source(&src) else {
        return;
    };
    let twice = match lpk_grammar::fmt::format_source(&once) {
        Ok(t) => t,
        Err(e) => panic!(
            "the formatted source does not parse: {:?}\n--- formatted:\n{once}",
            e.iter().map(|e| e.to_string()).collect::<Vec<_>>()
        ),
    };
    assert!(
        once == twice,
        "formatting is not idempotent\n--- once:\n{once}\n--- twice:\n{twice}"
    );
    let original = outcome(&src);
    let formatted = outcome(&once);
    assert_eq!(
        original.codes, formatted.codes,
        "the formatted source checks differently\n--- formatted:\n{once}"
    );
    assert_eq!(original.programs.len(), formatted.programs.len());
    for ((name, a), (name_f, b)) in original.programs.iter().zip(&formatted.programs) {
        assert_eq!(name, name_f);
        if let Some(a) = a {
            assert!(
                b.as_ref() == Some(a),
                "program `{name}` compiles differently once formatted\n--- formatted:\n{once}"
            );
        }
    }
}

/// Target `lint`: for a source that compiles, the lint of every program
/// with small budgets (bound 6, 2000 tasks), with the instance where every
/// parameter is 2 when it binds, its report rendered.
pub fn lint(data: &[u8]) {
    let Some((sources, checked)) = check_clean(data) else {
        return;
    };
    let opts = LintOptions {
        bound: 6,
        task_budget: 2000,
        instance_max_tasks: 2000,
    };
    for (hir_program, program) in compile_all(&checked.module, &sources) {
        // With an instance when every parameter may be 2 (`lpkc lint -p`:
        // the proofs, the exhaustive check and the instance), else without.
        let inst = program.bind_values(vec![2; program.params.len()]).ok();
        let report = lint_program(
            &checked.module,
            hir_program,
            &program,
            checked.file,
            &opts,
            inst.as_ref(),
        );
        let _ = sources.render_plain(&report.diagnostics);
        let _ = sources.to_json(&report.diagnostics);
        let _ = lpk_compiler::lint::rule_check(report);
    }
}

/// Tasks an instance of the `plans` target may have.
const PLANS_MAX_TASKS: usize = 2000;

/// Parameter values the `plans` target binds: every parameter to one of
/// these, and two mixed tuples.
const PLANS_VALUES: [i64; 4] = [1, 2, 3, 4];

/// Target `plans` (the property the oracle tests check on the examples
/// and on generated programs, here on mutated ones): for a source that
/// compiles, on small instances whose expansion sees no rule violation,
/// the DAG built from the dependence plans equals the brute-force
/// expansion (same tasks in the same order, same edges), and `parents`
/// of each task agrees with the edges into it.
pub fn plans(data: &[u8]) {
    let Some((sources, checked)) = check_clean(data) else {
        return;
    };
    for (_, program) in compile_all(&checked.module, &sources) {
        let n = program.params.len();
        let mut tuples: Vec<Vec<i64>> = PLANS_VALUES.iter().map(|&v| vec![v; n]).collect();
        if n >= 2 {
            let mixed = |a: i64, b: i64| (0..n).map(|i| if i % 2 == 0 { a } else { b }).collect();
            tuples.push(mixed(1, 3));
            tuples.push(mixed(3, 1));
        }
        for params in tuples {
            let Ok(inst) = program.bind_values(params.clone()) else {
                continue;
            };
            compare_with_oracle(&inst, &params);
        }
    }
}

fn compare_with_oracle(inst: &Instance<'_>, params: &[i64]) {
    let p = inst.program;
    // Count first, so that neither walk runs long.
    match inst.count_tasks(QUERY_BUDGET) {
        Ok(c) if c.total() <= PLANS_MAX_TASKS as u64 => {}
        _ => return,
    }
    let Ok((oracle, violations)) = lpk_model::dag::expand(inst, PLANS_MAX_TASKS) else {
        return;
    };
    if !violations.is_empty() {
        return;
    }
    let at = format!("{} at {params:?}", p.name);
    let planned = match lpk_model::dag::from_plans(inst, PLANS_MAX_TASKS) {
        Ok(d) => d,
        // A plan may give up within its work budget; that is an error
        // the caller sees, not a wrong answer.
        Err(lpk_model::dag::ExpandError::Query(_)) => return,
        Err(e) => panic!("{at}: the plans fail where the expansion does not: {e}"),
    };
    assert!(
        planned.tasks == oracle.tasks,
        "{at}: the plans enumerate other tasks than the expansion ({} vs {})",
        planned.tasks.len(),
        oracle.tasks.len()
    );
    if let Some((missing, extra)) = oracle.edge_difference(&planned, p, 5) {
        panic!("{at}: the plans' edges differ from the expansion's\nmissing: {missing:?}\nextra: {extra:?}");
    }
    let mut into: Vec<Vec<(Task, lpk_model::task::TileRef)>> = vec![Vec::new(); oracle.tasks.len()];
    for e in &oracle.edges {
        into[e.to].push((oracle.tasks[e.from].clone(), e.tile.clone()));
    }
    let mut engine = lpk_model::query::Engine::new(inst);
    for (t, want) in oracle.tasks.iter().zip(&mut into).take(MAX_NEIGHBOUR_TASKS) {
        want.sort_by(|a, b| p.sequential_cmp(&a.0, &b.0).then_with(|| a.1.cmp(&b.1)));
        let Ok(got) = engine.parents(t) else { continue };
        assert!(
            got == *want,
            "{at}: parents of {} from the plans differ from the expansion's",
            p.task_name(t)
        );
    }
}

/// Tasks one instance's queries look at.
const MAX_QUERY_TASKS: usize = 300;
/// Tasks whose neighbours are asked for.
const MAX_NEIGHBOUR_TASKS: usize = 40;
/// Work budget of each plan query (the default is 2^26).
const QUERY_BUDGET: u64 = 1 << 16;

/// A few queries on a small instance of a loaded program.
fn exercise(program: &Program) {
    let n = program.params.len();
    for value in [2, 1] {
        let Ok(inst) = program.bind_values(vec![value; n]) else {
            continue;
        };
        exercise_instance(&inst);
    }
}

fn exercise_instance(inst: &Instance<'_>) {
    let p = inst.program;
    let counts = inst.count_tasks(QUERY_BUDGET);
    let mut tasks: Vec<Task> = Vec::new();
    let walked = inst.for_each_task(&mut |t| {
        tasks.push(t.clone());
        if tasks.len() >= MAX_QUERY_TASKS {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    let mut engine = lpk_model::query::Engine::new(inst);
    engine.budget = QUERY_BUDGET;
    for t in tasks.iter().take(MAX_NEIGHBOUR_TASKS) {
        let _ = p.task_name(t).to_string();
        let _ = engine.check_task(t);
        let _ = engine.children(t);
        let _ = engine.parents(t);
        let _ = engine.in_degree(t);
        let _ = engine.has_parent(t);
        let _ = engine.reads(t);
        if let Ok(writes) = engine.writes(t) {
            for tile in writes.iter().take(4) {
                let _ = p.tile_name(tile);
                let _ = engine.writer(tile);
                let _ = engine.readers(tile);
            }
        }
    }
    // The whole DAG, both ways, for an instance known to be small.
    let small = walked.is_ok()
        && tasks.len() < MAX_QUERY_TASKS
        && counts.is_ok_and(|c| c.total() < MAX_QUERY_TASKS as u64);
    if small {
        let _ = lpk_model::dag::from_plans(inst, MAX_QUERY_TASKS);
        let _ = lpk_model::dag::expand(inst, MAX_QUERY_TASKS);
    }
}

/// `bytes` as the CBOR payload of a well-formed container (current
/// version, right lengths and checksum), so that mutations of a payload
/// reach the decoder and the validator instead of the checksum.
fn container(cbor: &[u8]) -> Vec<u8> {
    let payload = miniz_oxide::deflate::compress_to_vec_zlib(cbor, 1);
    let mut out = Vec::with_capacity(artifact::HEADER_LEN + payload.len());
    out.extend_from_slice(&artifact::MAGIC);
    out.extend_from_slice(&artifact::FORMAT_MAJOR.to_le_bytes());
    out.extend_from_slice(&artifact::FORMAT_MINOR.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&(cbor.len() as u32).to_le_bytes());
    out.extend_from_slice(&artifact::crc32(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// Decodes `bytes`; when they load, re-encoding is stable (both
/// encodings) and a few queries run on small instances.
fn load_and_query(bytes: &[u8]) {
    let loaded = match artifact::decode(bytes) {
        Ok(l) => l,
        Err(e) => {
            let _ = (e.to_string(), e.code());
            return;
        }
    };
    let art = &loaded.artifact;
    let encoded = match artifact::encode(art) {
        Ok(b) => b,
        Err(e) => panic!("a loaded artifact does not encode again: {e}"),
    };
    let again = match artifact::decode(&encoded) {
        Ok(l) => l,
        Err(e) => panic!("a re-encoded artifact does not load: {e}"),
    };
    match artifact::encode(&again.artifact) {
        Ok(b) => assert!(b == encoded, "encode(decode(encode(a))) != encode(a)"),
        Err(e) => panic!("a reloaded artifact does not encode: {e}"),
    }
    match artifact::encode_json(art) {
        Ok(json) => match artifact::decode(json.as_bytes()) {
            Ok(l) => match artifact::encode(&l.artifact) {
                Ok(b) => assert!(b == encoded, "the JSON twin loads as another artifact"),
                Err(e) => panic!("an artifact loaded from its JSON twin does not encode: {e}"),
            },
            Err(e) => panic!("the JSON twin of a loaded artifact does not load: {e}"),
        },
        Err(e) => panic!("a loaded artifact has no JSON twin: {e}"),
    }
    exercise(&art.program);
}

/// Target `artifact`: bytes through the artifact loader (the CBOR
/// container or the JSON twin); bytes that are neither are also loaded as
/// the CBOR payload of a well-formed container. What loads must encode
/// again to the same bytes, and answer queries on a small instance
/// (every parameter 2, then 1) within a work budget.
pub fn artifact(data: &[u8]) {
    load_and_query(data);
    if !data.starts_with(b"LPKA") && data.len() <= artifact::MAX_PAYLOAD as usize {
        load_and_query(&container(data));
    }
}

/// Programs whose artifacts `artifact_edit` edits.
const EDIT_BASES: [(&str, &str); 4] = [
    ("cholesky", include_str!("../../examples/cholesky.lpk")),
    (
        "gemm_tree_zero",
        include_str!("../../examples/gemm_tree_zero.lpk"),
    ),
    ("tsqr", include_str!("../../examples/tsqr.lpk")),
    ("lu", include_str!("../../examples/lu.lpk")),
];

/// An artifact's JSON twin as a tree, and the JSON pointers of its
/// numbers and booleans.
struct EditBase {
    json: serde_json::Value,
    leaves: Vec<String>,
}

fn edit_bases() -> &'static [EditBase] {
    static BASES: OnceLock<Vec<EditBase>> = OnceLock::new();
    BASES.get_or_init(|| {
        EDIT_BASES
            .iter()
            .map(|(name, src)| {
                let mut sources = SourceMap::new();
                let program = match compile_source(&mut sources, name, src, None, LintGate::Off) {
                    Ok(c) => c.program,
                    Err(e) => panic!("examples/{name}.lpk does not compile: {e}"),
                };
                let art = Artifact {
                    compiler: "lpk-fuzz".to_string(),
                    source: SourceInfo::of_program(&program, name, None),
                    program,
                    lint: None,
                };
                let text = match artifact::encode_json(&art) {
                    Ok(t) => t,
                    Err(e) => panic!("examples/{name}.lpk does not encode: {e}"),
                };
                let json: serde_json::Value = match serde_json::from_str(&text) {
                    Ok(v) => v,
                    Err(e) => panic!("the JSON twin of {name} is not JSON: {e}"),
                };
                let mut leaves = Vec::new();
                collect_leaves(&json, String::new(), &mut leaves);
                EditBase { json, leaves }
            })
            .collect()
    })
}

fn collect_leaves(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Number(_) | serde_json::Value::Bool(_) => out.push(at),
        serde_json::Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                collect_leaves(x, format!("{at}/{i}"), out);
            }
        }
        serde_json::Value::Object(fields) => {
            for (k, x) in fields {
                let k = k.replace('~', "~0").replace('/', "~1");
                collect_leaves(x, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

/// Values an edit writes besides small ones.
const EDIT_SPECIAL: [i64; 8] = [
    i64::MAX,
    i64::MIN,
    u32::MAX as i64,
    1 << 31,
    1 << 32,
    1 << 62,
    -(1 << 40),
    63,
];

/// Target `artifact_edit`: structure-aware
/// edits of valid artifacts, so that the loader's validation and the
/// evaluators see nearly valid programs rather than broken encodings.
/// The first byte picks one of four compiled examples; every 4 bytes
/// after it set one number or boolean of its JSON twin (2 bytes: which
/// one; 2 bytes: the value, small or one of a few extremes). The result
/// goes through the `artifact` target's checks: it loads or is refused
/// with an error, re-encodes stably, and answers queries within budget.
pub fn artifact_edit(data: &[u8]) {
    let Some((&pick, edits)) = data.split_first() else {
        return;
    };
    let bases = edit_bases();
    let base = &bases[usize::from(pick) % bases.len()];
    let mut json = base.json.clone();
    for e in edits.chunks_exact(4).take(16) {
        let which = usize::from(u16::from_le_bytes([e[0], e[1]])) % base.leaves.len();
        let Some(slot) = json.pointer_mut(&base.leaves[which]) else {
            continue;
        };
        *slot = if e[2] & 0x80 != 0 {
            if slot.is_boolean() {
                serde_json::Value::Bool(e[3] & 1 == 1)
            } else {
                EDIT_SPECIAL[usize::from(e[3]) % EDIT_SPECIAL.len()].into()
            }
        } else {
            // -64 ..= 63 from the low 7 bits.
            (i64::from(e[3] & 0x7f) - 64).into()
        };
    }
    let bytes = match serde_json::to_vec(&json) {
        Ok(b) => b,
        Err(e) => panic!("an edited twin does not serialise: {e}"),
    };
    load_and_query(&bytes);
}

/// The most elements the `npy` target accepts (a fuzzer's input is small;
/// the default limit is 2^31).
const NPY_MAX_ELEMENTS: u64 = 1 << 20;

/// Whether two tiles hold the same shape and the same bits.
fn same_tile(a: &Tile, b: &Tile) -> bool {
    a.nrows() == b.nrows()
        && a.ncols() == b.ncols()
        && (0..a.ncols())
            .all(|j| (0..a.nrows()).all(|i| a[(i, j)].to_bits() == b[(i, j)].to_bits()))
}

/// A temporary file of this process for the readers that take a path.
fn scratch_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::temp_dir().join(format!("lpk-fuzz-npy-{}.npy", std::process::id()))
    })
}

/// Target `npy`: bytes through the `.npy` readers (in memory, as a
/// stream, and from a file by blocks). The in-memory and stream readers
/// must agree; what they read writes back as a `.npy` that reads as the
/// same tile, and the block reader returns the same values.
pub fn npy(data: &[u8]) {
    let limit = ReadLimit {
        max_header_bytes: 64 * 1024,
        max_elements: NPY_MAX_ELEMENTS,
    };
    let from_bytes = npy::read_bytes(data, "fuzz.npy", &limit);
    let from_stream = npy::read(&mut &data[..], "fuzz.npy", &limit);
    let tile = match (from_bytes, from_stream) {
        (Ok(a), Ok(b)) => {
            assert!(same_tile(&a, &b), "read_bytes and read disagree");
            a
        }
        (Err(a), Err(b)) => {
            let _ = (a.to_string(), b.to_string());
            return;
        }
        (Ok(_), Err(e)) => panic!("read_bytes accepts what read refuses: {e}"),
        (Err(e), Ok(_)) => panic!("read accepts what read_bytes refuses: {e}"),
    };
    let written = npy::to_bytes(&tile);
    match npy::read_bytes(&written, "written.npy", &limit) {
        Ok(back) => assert!(
            same_tile(&tile, &back),
            "a written tile reads back differently"
        ),
        Err(e) => panic!("a written tile does not read back: {e}"),
    }
    // The readers by path and by position, on a file removed afterwards.
    struct Remove(&'static Path);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(self.0);
        }
    }
    let path = scratch_path();
    if std::fs::write(path, data).is_err() {
        return;
    }
    let _remove = Remove(path);
    match npy::read_file(path) {
        Ok(t) => assert!(same_tile(&tile, &t), "read_file disagrees with read_bytes"),
        Err(e) => panic!("read_file refuses what read_bytes accepts: {e}"),
    }
    match npy::NpyTiles::open(path) {
        Ok(tiles) => {
            assert_eq!(tiles.shape(), (tile.nrows(), tile.ncols()));
            match tiles.read_all() {
                Ok(t) => assert!(same_tile(&tile, &t), "NpyTiles::read_all disagrees"),
                Err(e) => panic!("NpyTiles::read_all fails: {e}"),
            }
            let (r, c) = tiles.shape();
            if r > 1 && c > 1 {
                let (r0, c0, nr, nc) = (r / 2, c / 3, r - r / 2, c - c / 3);
                match tiles.read_block(r0, c0, nr, nc) {
                    Ok(b) => {
                        let same = (0..nc).all(|j| {
                            (0..nr).all(|i| b[(i, j)].to_bits() == tile[(r0 + i, c0 + j)].to_bits())
                        });
                        assert!(same, "NpyTiles::read_block disagrees");
                    }
                    Err(e) => panic!("NpyTiles::read_block fails: {e}"),
                }
            }
            assert!(tiles.read_block(r, c, 1, 1).is_err());
        }
        Err(e) => panic!("NpyTiles::open refuses what read_bytes accepts: {e}"),
    }
}

/// `examples/cholesky.lpk`, compiled once, for the `query` target.
fn cholesky() -> &'static (Program, String) {
    static PROGRAM: OnceLock<(Program, String)> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let src = include_str!("../../examples/cholesky.lpk");
        let mut sources = SourceMap::new();
        match compile_source(&mut sources, "cholesky.lpk", src, None, LintGate::Off) {
            Ok(c) => (c.program, src.to_string()),
            Err(e) => panic!("examples/cholesky.lpk does not compile: {e}"),
        }
    })
}

/// Command lines of one `query` input that are run.
const MAX_QUERY_LINES: usize = 8;
/// Tasks one answer may hold in the `query` target.
const QUERY_MAX_TASKS: u64 = 1000;

/// Target `query`: each line of the input as a query of `lpkc query`
/// (parsed, answered as text and as JSON) on Cholesky at N = 3, and as a
/// line of `lpkc repl` on the same program.
pub fn query(data: &[u8]) {
    let src = text(data);
    let (program, source) = cholesky();
    let inst = match program.bind(&[("N".to_string(), 3)]) {
        Ok(i) => i,
        Err(e) => panic!("cholesky does not bind at N = 3: {e}"),
    };
    let mut answerer = Answerer::new(&inst, QUERY_MAX_TASKS, "--max-tasks");
    answerer.engine().budget = QUERY_BUDGET;
    let mut out = Vec::new();
    for line in src.lines().take(MAX_QUERY_LINES) {
        let Ok(q) = parse_command(program, line) else {
            continue;
        };
        for format in [AnswerFormat::Text, AnswerFormat::Json] {
            out.clear();
            if answerer.answer(&q, line, format, &mut out).is_ok() {
                if format == AnswerFormat::Json {
                    let first = out.split(|&b| b == b'\n').next().unwrap_or(&[]);
                    assert!(
                        serde_json::from_slice::<serde_json::Value>(first).is_ok(),
                        "a JSON answer is not JSON: {}",
                        String::from_utf8_lossy(&out)
                    );
                }
            } else {
                assert!(out.is_empty(), "a failed answer left output behind");
            }
        }
    }
    let mut session = match Session::new(program.clone(), source.clone(), &[("N".into(), 3)]) {
        Ok(s) => s,
        Err(e) => panic!("cholesky's REPL session does not start at N = 3: {e}"),
    };
    session.set_max_tasks(QUERY_MAX_TASKS);
    for line in src.lines().take(MAX_QUERY_LINES) {
        // Counting the tasks of a large binding takes up to its budget of
        // 2^22 loop iterations (`tasks --all` refuses after it, as it
        // should): bound the values so that an input is not slow only for
        // that. Two digits is N <= 99.
        let digits = line
            .split(|c: char| !c.is_ascii_digit())
            .map(str::len)
            .max()
            .unwrap_or(0);
        if line.trim_start().starts_with("set") && digits > 2 {
            continue;
        }
        let _ = session.execute(line);
    }
}

/// Target `records`: what a worker, `collect` and `resume` read from Redis
/// and the store, written there by someone else. The input's lines are
/// tried as a task id, a tile id, a done-marker key and a done-marker log
/// line; the whole input as `manifest.json`; and its lines as `field=value`
/// pairs of a run record (the `lpk:R:meta` hash). What parses must print
/// back to what parses the same: ids through `task_id`/`tile_id`, the
/// manifest through `Manifest::to_json`, the record through its `fields`.
pub fn records(data: &[u8]) {
    use lpk_cluster::ids::{parse_task, parse_tile, task_id, tile_id};
    let text = String::from_utf8_lossy(data);
    for line in text.lines().take(64) {
        if let Ok(t) = parse_task(line) {
            let again = parse_task(&task_id(&t)).expect("a task id printed from a task parses");
            assert_eq!(again, t, "task id round trip of {line:?}");
        }
        if let Ok(t) = parse_tile(line) {
            let again = parse_tile(&tile_id(t.matrix, &t.index))
                .expect("a tile id printed from a tile parses");
            assert_eq!(again, t, "tile id round trip of {line:?}");
        }
        if let Some(t) = lpk_cluster::markers::parse_marker(line) {
            let key = lpk_cluster::markers::marker_key(&t);
            assert_eq!(
                lpk_cluster::markers::parse_marker(&key),
                Some(t),
                "marker key {key}"
            );
        }
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            if let Some(Ok(t)) = v["task"].as_str().map(parse_task) {
                let back = lpk_cluster::markers::marker_line(&t, "w", 1);
                let v2: serde_json::Value =
                    serde_json::from_str(back.trim_end()).expect("a marker line is JSON");
                let parsed = v2["task"].as_str().and_then(|s| parse_task(s).ok());
                assert_eq!(parsed, Some(t), "marker line round trip of {line:?}");
            }
        }
    }
    if let Ok(m) = lpk_cluster::manifest::Manifest::parse("r-1", data) {
        let again = lpk_cluster::manifest::Manifest::parse("r-1", m.to_json().as_bytes())
            .expect("a manifest written from a parsed one parses");
        assert_eq!(again, m, "manifest round trip");
    }
    let mut map = std::collections::HashMap::new();
    for line in data.split(|&b| b == b'\n').take(64) {
        let at = line.iter().position(|&b| b == b'=').unwrap_or(line.len());
        let field = String::from_utf8_lossy(&line[..at]).into_owned();
        map.insert(field, line.get(at + 1..).unwrap_or_default().to_vec());
    }
    if let Ok(rec) = lpk_cluster::record::RunRecord::from_map("r-1", &map) {
        let fields: std::collections::HashMap<String, Vec<u8>> = rec
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let again = lpk_cluster::record::RunRecord::from_map("r-1", &fields)
            .expect("a record written from a parsed one parses");
        assert_eq!(again.fields(), rec.fields(), "run record round trip");
        let _ = rec.load_program();
    }
}

/// The whole of a fuzz target's file, for the function `lpk_fuzz::NAME`:
/// under cargo-fuzz (`--cfg fuzzing`) libFuzzer's entry point, otherwise
/// a `main` that replays the files or directories given as arguments
/// ([`replay_main`]). The file also needs `#![cfg_attr(fuzzing, no_main)]`.
#[macro_export]
macro_rules! fuzz_target_file {
    ($name:ident) => {
        #[cfg(fuzzing)]
        libfuzzer_sys::fuzz_target!(|data: &[u8]| $crate::$name(data));

        #[cfg(not(fuzzing))]
        fn main() {
            std::process::exit($crate::replay_main(stringify!($name), $crate::$name));
        }
    };
}

/// Runs `target` on every file given on the command line (directories:
/// every file in them), saying which ran; the fuzz targets' `main` when
/// built without cargo-fuzz. Returns the exit code.
pub fn replay_main(name: &str, target: fn(&[u8])) -> i32 {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if args.is_empty() {
        eprintln!(
            "usage: {name} FILE|DIR...\n(built without cargo-fuzz: replays inputs through the \
             `{name}` target; `cargo fuzz run {name}` fuzzes it)"
        );
        return 2;
    }
    let mut files = Vec::new();
    for a in &args {
        files.extend(inputs(a));
    }
    for f in &files {
        match std::fs::read(f) {
            Ok(data) => {
                eprintln!("{name}: {}", f.display());
                target(&data);
            }
            Err(e) => {
                eprintln!("cannot read {}: {e}", f.display());
                return 1;
            }
        }
    }
    eprintln!("{name}: {} input(s) ran", files.len());
    0
}

/// The files at `path`: itself, or every file below it, sorted.
pub fn inputs(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        entries.sort();
        for e in entries {
            out.extend(inputs(&e));
        }
    } else if path.is_file() {
        out.push(path.to_path_buf());
    }
    out
}

/// A target's body.
pub type Target = fn(&[u8]);

/// The targets by name, as the replay test and the scripts know them.
pub const TARGETS: &[(&str, Target)] = &[
    ("parse", parse),
    ("check", check),
    ("fmt_roundtrip", fmt_roundtrip),
    ("lint", lint),
    ("plans", plans),
    ("artifact", artifact),
    ("artifact_edit", artifact_edit),
    ("npy", npy),
    ("query", query),
    ("records", records),
];
