//! The program artifact end to end: every example compiles to an artifact
//! that loads back to the identical program, is small, gives the same DAG
//! and the same query answers as the source; the CLI reports broken files
//! with their codes; and the loader survives mutated and hostile artifacts
//! (proptest) without a panic, a hang or unbounded memory.

// The tests print the figures they measure (sizes, answer counts).
#![allow(clippy::print_stdout)]

use crate::binary::{lpkc, scratch_dir};
use lpk_model::artifact::{
    self, Artifact, ArtifactError, ArtifactParts, Limits, SourceInfo, ValidationError, HEADER_LEN,
};
use lpk_model::expr::{ExprPool, ExprRef, Node};
use lpk_model::plan::{PlanStep, RangeStep};
use lpk_model::program::{DomainItem, Program, TreeNode};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn examples() -> Vec<PathBuf> {
    let v = lpk_test_support::examples();
    assert!(v.len() >= 7, "expected the examples, found {v:?}");
    v
}

fn root() -> PathBuf {
    lpk_test_support::workspace_root()
}

fn compile(path: &Path) -> Artifact {
    let text = std::fs::read_to_string(path).expect("readable");
    let name = path.display().to_string();
    let program = crate::compile(path);
    Artifact {
        compiler: "test".into(),
        source: SourceInfo::of_program(&program, &name, Some(text)),
        program,
        lint: None,
    }
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

fn tmp_dir(name: &str) -> PathBuf {
    scratch_dir(&format!("artifact-{name}"))
}

#[test]
fn round_trip_is_identical_and_small() {
    let mut sizes = Vec::new();
    for path in examples() {
        let art = compile(&path);
        let bytes = artifact::encode(&art).expect("encodes");
        let loaded = artifact::decode(&bytes).expect("loads");
        assert_eq!(loaded.artifact, art, "{}: CBOR round trip", path.display());
        assert_eq!(loaded.artifact.program, art.program);
        let json = artifact::encode_json(&art).expect("encodes as JSON");
        let from_json = artifact::decode(json.as_bytes()).expect("JSON twin loads");
        assert_eq!(
            from_json.artifact,
            art,
            "{}: JSON round trip",
            path.display()
        );
        assert!(
            bytes.len() < 16 * 1024,
            "{}: artifact is {} bytes, the limit is 16 KiB",
            path.display(),
            bytes.len()
        );
        sizes.push(format!("{}: {} bytes", stem(&path), bytes.len()));
    }
    println!("artifact sizes: {}", sizes.join(", "));
}

#[test]
fn artifact_gives_the_same_dag_as_the_source() {
    for path in examples() {
        let art = compile(&path);
        let bytes = artifact::encode(&art).expect("encodes");
        let loaded = artifact::decode(&bytes).expect("loads").artifact.program;
        let mut bound = 0;
        for n in 1..=12 {
            // Every parameter gets N (and, for a second check, the others
            // stay small) so that each example is really instantiated.
            let given: Vec<(String, i64)> = art
                .program
                .params
                .iter()
                .enumerate()
                .map(|(i, p)| (p.name.clone(), if i == 0 { n } else { (1 + n % 4).min(n) }))
                .collect();
            let (Ok(a), Ok(b)) = (art.program.bind(&given), loaded.bind(&given)) else {
                // A `require` that fails for this N fails for both.
                assert_eq!(
                    art.program.bind(&given).is_ok(),
                    loaded.bind(&given).is_ok()
                );
                continue;
            };
            let da = lpk_model::dag::from_plans(&a, 1_000_000).expect("source DAG");
            let db = lpk_model::dag::from_plans(&b, 1_000_000).expect("artifact DAG");
            assert_eq!(da, db, "{} N={n}", path.display());
            assert!(!da.tasks.is_empty(), "{} N={n} has tasks", path.display());
            bound += 1;
        }
        assert!(
            bound >= 10,
            "{}: only {bound} instances bound",
            path.display()
        );
    }
}

#[test]
fn query_on_the_artifact_prints_what_the_source_does() {
    let dir = tmp_dir("query");
    for path in examples() {
        let rel = format!("examples/{}.lpk", stem(&path));
        let out = dir.join(format!("{}.lpka", stem(&path)));
        let out_s = out.display().to_string();
        let (code, _, err) = lpkc(&["compile", &rel, "-o", &out_s]);
        assert_eq!(code, 0, "{rel}: {err}");
        let art = compile(&path);
        let p = &art.program;
        let given: Vec<(String, i64)> = p.params.iter().map(|q| (q.name.clone(), 4)).collect();
        let mut args: Vec<String> = vec!["query".into(), "FILE".into()];
        for (n, v) in &given {
            args.extend(["-p".into(), format!("{n}={v}")]);
        }
        args.extend(["--format".into(), "json".into()]);
        let inst = p.bind(&given).expect("binds with 4");
        let tasks = inst.tasks().expect("walks");
        args.extend(["-e".into(), "tasks".into()]);
        for t in tasks.iter().take(40) {
            let name = p.task_name(t).to_string();
            args.extend(["-e".into(), format!("children {name}")]);
            args.extend(["-e".into(), format!("parents {name}")]);
        }
        args[1] = rel.clone();
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let (c1, from_source, e1) = lpkc(&argv);
        args[1] = out_s.clone();
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let (c2, from_artifact, e2) = lpkc(&argv);
        assert_eq!((c1, c2), (0, 0), "{rel}: {e1} {e2}");
        assert!(from_source.lines().count() > 2);
        assert_eq!(from_source, from_artifact, "{rel}");
        // Task names still cite source lines.
        assert!(from_artifact.contains("\"line\":"), "{rel}");
        let (c3, human, _) = lpkc(&["inspect", &out_s]);
        assert_eq!(c3, 0);
        assert!(human.contains(&format!("program {}", p.name)), "{human}");
        assert!(human.contains("CRC-32 0x"), "{human}");
    }
}

/// `lpkc inspect` shows a zero matrix in its summary and its `zero` flag in
/// the JSON twin; an artifact of format 1 (the model's fixtures) is shown
/// as such, with no zero matrix.
#[test]
fn inspect_shows_zero_matrices() {
    let dir = tmp_dir("zero");
    let out = dir.join("gemm_tree_zero.lpka").display().to_string();
    let (code, _, err) = lpkc(&["compile", "examples/gemm_tree_zero.lpk", "-o", &out]);
    assert_eq!(code, 0, "{err}");
    let (code, human, err) = lpkc(&["inspect", &out]);
    assert_eq!(code, 0, "{err}");
    assert!(human.contains("format   lpka 2.1 (CBOR)"), "{human}");
    assert!(
        human.contains(
            "  matrix P[ceil(log2(K)) + 1, M, N, 2 * K] = 0  (zero matrix: unwritten tiles read as zeros)\n"
        ),
        "{human}"
    );
    assert!(human.contains("  output C[M, N]\n"), "{human}");
    let (code, json, err) = lpkc(&["inspect", &out, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(
        v["version"],
        serde_json::json!([
            lpk_model::artifact::FORMAT_MAJOR,
            lpk_model::artifact::FORMAT_MINOR
        ])
    );
    let flags: Vec<(String, bool)> = v["artifact"]["program"]["matrices"]
        .as_array()
        .expect("matrices")
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap_or("?").to_string(),
                m["zero"].as_bool().expect("a zero flag on every matrix"),
            )
        })
        .collect();
    let names = |z: bool| -> Vec<&str> {
        flags
            .iter()
            .filter(|f| f.1 == z)
            .map(|f| f.0.as_str())
            .collect()
    };
    assert_eq!(names(true), ["P"]);
    assert_eq!(names(false), ["A", "B", "C"]);

    let old = root().join("runtime-interp/model/tests/fixtures/tsqr.lpka");
    let (code, human, err) = lpkc(&["inspect", &old.display().to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(human.contains("format   lpka 1.0 (CBOR)"), "{human}");
    assert!(!human.contains("= 0"), "{human}");
}

fn cholesky_bytes() -> Vec<u8> {
    artifact::encode(&compile(&root().join("examples/cholesky.lpk"))).expect("encodes")
}

fn lpkc_on(bytes: &[u8], name: &str) -> (i32, String) {
    let dir = tmp_dir("cli");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("written");
    let p = path.display().to_string();
    let (code, _, err) = lpkc(&["query", &p, "-p", "N=3", "-e", "tasks"]);
    let (icode, _, ierr) = lpkc(&["inspect", &p]);
    assert_eq!(code, icode, "query and inspect agree on {name}");
    assert_eq!(err, ierr, "{name}");
    (code, err)
}

#[test]
fn broken_files_are_reported_with_their_codes() {
    let good = cholesky_bytes();
    let changed = |change: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = good.clone();
        change(&mut bytes);
        bytes
    };
    let minor = lpk_model::artifact::FORMAT_MINOR;
    // (the file, its name, what the error says)
    let cases = [
        (
            good[..good.len() - 10].to_vec(),
            "truncated.lpka",
            "error[E0403]: the artifact is truncated: the payload needs".to_string(),
        ),
        (
            changed(&|b| b[1] = b'X'),
            "magic.lpka",
            "error[E0401]: not an lpk artifact".to_string(),
        ),
        (
            changed(&|b| *b.last_mut().expect("a last byte") ^= 0x10),
            "flip.lpka",
            "error[E0406]: checksum mismatch".to_string(),
        ),
        (
            changed(&|b| b[8] = 3),
            "v3.lpka",
            format!(
                "error[E0402]: artifact format version 3.{minor} is not supported: \
                 this reader supports versions 1.x to 2.x"
            ),
        ),
        (
            changed(&|b| b[8] = 0),
            "v0.lpka",
            format!("error[E0402]: artifact format version 0.{minor} is not supported"),
        ),
        (
            changed(&|b| b.extend_from_slice(b"tail")),
            "long.lpka",
            "error[E0404]: payload length mismatch".to_string(),
        ),
    ];
    for (bytes, name, says) in cases {
        let (code, err) = lpkc_on(&bytes, name);
        assert_eq!(code, 1, "{name}");
        assert!(err.contains(&says), "{name}: {err}");
    }
}

#[test]
fn a_newer_minor_version_is_accepted() {
    let mut bytes = cholesky_bytes();
    bytes[10] = 7;
    let loaded = artifact::decode(&bytes).expect("minor 7 loads");
    assert_eq!((loaded.major, loaded.minor), (artifact::FORMAT_MAJOR, 7));
    // Unknown fields are ignored too (checked on the JSON twin).
    let art = compile(&root().join("examples/lu.lpk"));
    let json = artifact::encode_json(&art).expect("JSON");
    let mut v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    v["version"] = serde_json::json!([1, 3]);
    v["artifact"]["future_field"] = serde_json::json!({"x": 1});
    v["artifact"]["program"]["statements"][0]["hint"] = serde_json::json!("new");
    let loaded = artifact::decode(v.to_string().as_bytes()).expect("loads");
    assert_eq!(loaded.artifact, art);
    assert_eq!(loaded.minor, 3);
}

/// Wraps CBOR bytes in a valid container (right lengths and checksum).
fn wrap(cbor: &[u8]) -> Vec<u8> {
    let payload = miniz_oxide::deflate::compress_to_vec_zlib(cbor, 1);
    let mut out = artifact::MAGIC.to_vec();
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&(cbor.len() as u32).to_le_bytes());
    out.extend_from_slice(&artifact::crc32(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

fn cbor_of(art: &impl serde::Serialize) -> Vec<u8> {
    let mut v = Vec::new();
    ciborium::into_writer(art, &mut v).expect("encodes");
    v
}

fn invalid(art: &ArtifactParts) -> ValidationError {
    match artifact::decode(&wrap(&cbor_of(art))) {
        Err(ArtifactError::Invalid(v)) => v,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

/// The Cholesky artifact's parts, for a test to break (an `Artifact` holds
/// a validated program, which nothing changes).
fn base() -> ArtifactParts {
    compile(&root().join("examples/cholesky.lpk")).into_parts()
}

fn with_pool(art: &mut ArtifactParts, f: impl FnOnce(&mut Vec<Node>)) {
    let mut nodes = art.program.exprs.nodes().to_vec();
    f(&mut nodes);
    art.program.exprs = ExprPool::from(nodes);
}

#[test]
fn hostile_programs_are_rejected_with_the_reason() {
    // A plan assigning a slot past its end.
    let mut a = base();
    let plan = &mut a.program.plans[0].writes[0].inverse;
    let slots = plan.slots;
    let step = plan
        .steps
        .iter_mut()
        .find(|s| matches!(s, PlanStep::Set { .. }))
        .expect("a Set step");
    if let PlanStep::Set { slot, .. } = step {
        *slot = slots + 5;
    }
    let e = invalid(&a);
    assert!(
        matches!(e, ValidationError::OutOfRange { what: "slot", .. }),
        "{e}"
    );

    // A plan reading a temporary it never assigned.
    let mut a = base();
    let plan = &mut a.program.plans[2].reads[0].inverse;
    plan.slots += 1;
    let unassigned = plan.slots - 1;
    let mut nodes = a.program.exprs.nodes().to_vec();
    nodes.push(Node::Slot(unassigned));
    let r = ExprRef(nodes.len() as u32 - 1);
    a.program.exprs = ExprPool::from(nodes);
    a.program.plans[2].reads[0]
        .inverse
        .steps
        .insert(0, PlanStep::Check { cond: r });
    let e = invalid(&a);
    assert_eq!(
        e.to_string(),
        format!(
            "statement 2 (line 44), read 0, plan step 0: slot {unassigned} is read before it is bound"
        )
    );

    // A self-referencing expression.
    let mut a = base();
    with_pool(&mut a, |nodes| {
        let i = nodes
            .iter()
            .position(|n| matches!(n, Node::Binary(..)))
            .expect("a binary node");
        if let Node::Binary(op, x, _) = nodes[i] {
            nodes[i] = Node::Binary(op, x, ExprRef(i as u32));
        }
    });
    let e = invalid(&a);
    assert!(matches!(e, ValidationError::ForwardReference { .. }), "{e}");

    // An expression too deep, and one that unfolds too large.
    let mut a = base();
    with_pool(&mut a, |nodes| {
        nodes.push(Node::Int(1));
        for _ in 0..2000 {
            let k = nodes.len() as u32 - 1;
            nodes.push(Node::Unary(lpk_model::expr::UnOp::Neg, ExprRef(k)));
        }
    });
    assert!(matches!(invalid(&a), ValidationError::ExprTooDeep { .. }));
    let mut a = base();
    with_pool(&mut a, |nodes| {
        nodes.push(Node::Int(1));
        for _ in 0..64 {
            let k = ExprRef(nodes.len() as u32 - 1);
            nodes.push(Node::Binary(lpk_model::expr::BinOp::Add, k, k));
        }
    });
    assert!(matches!(invalid(&a), ValidationError::ExprTooLarge { .. }));

    // An enumeration over something other than the statement's loop.
    let mut a = base();
    let mut nodes = a.program.exprs.nodes().to_vec();
    nodes.push(Node::Int(i64::MAX));
    let huge = ExprRef(nodes.len() as u32 - 1);
    a.program.exprs = ExprPool::from(nodes);
    let mut changed = false;
    for sp in &mut a.program.plans {
        for ap in sp.writes.iter_mut().chain(sp.reads.iter_mut()) {
            for s in &mut ap.inverse.steps {
                if let PlanStep::Range(r) = s {
                    r.hi = huge;
                    changed = true;
                }
            }
        }
    }
    assert!(changed);
    let e = invalid(&a);
    assert!(
        e.to_string()
            .contains("is not over one of the statement's loops"),
        "{e}"
    );

    // Zero denominators and log bases below 2.
    for (step, constant) in [
        (
            PlanStep::SetDiv {
                slot: 0,
                num: ExprRef(0),
                den: 0,
            },
            0,
        ),
        (
            PlanStep::SetLog {
                slot: 0,
                value: ExprRef(0),
                base: 1,
            },
            1,
        ),
    ] {
        let mut a = base();
        a.program.plans[0].writes[0].inverse.steps.insert(0, step);
        assert!(matches!(
            invalid(&a),
            ValidationError::BadConstant { value, .. } if value == constant
        ));
    }

    // A loop tree that disagrees with the statements.
    let mut a = base();
    if let Some(TreeNode::Loop(l)) = a.program.tree.first_mut() {
        l.slot = 3;
    }
    assert!(invalid(&a)
        .to_string()
        .contains("loop over slot 3 at nesting depth 0"));
    let mut a = base();
    a.program.statements[1].domain.pop();
    assert!(matches!(invalid(&a), ValidationError::Inconsistent { .. }));
    // Kernel arity.
    let mut a = base();
    a.program.kernels[0].results.push("extra".into());
    assert!(invalid(&a)
        .to_string()
        .contains("kernel `chol` takes 1 arguments and gives 2 results"));
    // A matrix id out of range.
    let mut a = base();
    a.program.statements[0].reads[0].matrix =
        lpk_model::MatrixId::from_index(99).expect("a small index");
    assert!(matches!(
        invalid(&a),
        ValidationError::OutOfRange {
            what: "matrix",
            index: 99,
            ..
        }
    ));
    // A partner out of range.
    let mut a = base();
    a.program.plans[0].writes[0].partners[0].access = 40;
    assert!(matches!(
        invalid(&a),
        ValidationError::OutOfRange {
            what: "partner access",
            ..
        }
    ));
}

#[test]
fn huge_extents_and_loops_stay_bounded() {
    // Huge but valid numbers: loading works, and queries end (an error or
    // an answer) within the work budget.
    let mut a = base();
    let mut nodes = a.program.exprs.nodes().to_vec();
    nodes.push(Node::Int(1 << 62));
    let huge = ExprRef(nodes.len() as u32 - 1);
    a.program.exprs = ExprPool::from(nodes);
    for m in &mut a.program.matrices {
        for e in &mut m.extents {
            *e = huge;
        }
    }
    // The loop over i in the trsm statements runs to 2^62: in the tree, the
    // domain and the plans alike, so the artifact stays consistent.
    let old_hi = match a.program.statements[2].domain.get(1) {
        Some(DomainItem::Loop { hi, .. }) => *hi,
        _ => panic!("trsm has two loops"),
    };
    fn swap(r: &mut ExprRef, old: ExprRef, new: ExprRef) {
        if *r == old {
            *r = new;
        }
    }
    for st in &mut a.program.statements {
        for d in &mut st.domain {
            if let DomainItem::Loop { slot: 1, hi, .. } = d {
                swap(hi, old_hi, huge);
            }
        }
    }
    fn tree(nodes: &mut [TreeNode], old: ExprRef, new: ExprRef) {
        for n in nodes {
            match n {
                TreeNode::Loop(l) => {
                    if l.slot == 1 {
                        swap(&mut l.hi, old, new);
                    }
                    tree(&mut l.body, old, new);
                }
                TreeNode::If {
                    branches,
                    else_body,
                    ..
                } => {
                    for (_, b) in branches {
                        tree(b, old, new);
                    }
                    tree(else_body, old, new);
                }
                TreeNode::Call(_) => {}
            }
        }
    }
    tree(&mut a.program.tree, old_hi, huge);
    for sp in &mut a.program.plans {
        for ap in sp.writes.iter_mut().chain(sp.reads.iter_mut()) {
            for s in &mut ap.inverse.steps {
                if let PlanStep::Range(r @ RangeStep { slot: 1, .. }) = s {
                    swap(&mut r.hi, old_hi, huge);
                }
            }
        }
    }
    let loaded = artifact::decode(&wrap(&cbor_of(&a)))
        .expect("huge numbers are valid")
        .artifact
        .program;
    let inst = loaded.bind(&[("N".into(), 2)]).expect("binds");
    let mut engine = lpk_model::query::Engine::new(&inst);
    engine.budget = 100_000;
    let chol = lpk_model::task::Task {
        stmt: lpk_model::StmtId::from_index(0).expect("a small index"),
        vars: vec![0].into(),
    };
    // children(chol k=0) enumerates the trsm loop over i up to 2^62: the
    // budget stops it.
    let r = engine.children(&chol);
    assert!(
        matches!(
            r,
            Err(lpk_model::query::QueryError::Plan(
                lpk_model::plan::PlanError::Budget
            ))
        ),
        "{r:?}"
    );
}

fn valid_bytes() -> &'static [Vec<u8>] {
    static CELL: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    CELL.get_or_init(|| {
        examples()
            .iter()
            .map(|p| artifact::encode(&compile(p)).expect("encodes"))
            .collect()
    })
}

fn valid_cbor() -> &'static [Vec<u8>] {
    static CELL: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    CELL.get_or_init(|| examples().iter().map(|p| cbor_of(&compile(p))).collect())
}

/// Uses a loaded program the way a runtime would, within small budgets.
fn exercise(program: &Program) {
    let given: Vec<(String, i64)> = program.params.iter().map(|p| (p.name.clone(), 3)).collect();
    let Ok(inst) = program.bind(&given) else {
        return;
    };
    let mut engine = lpk_model::query::Engine::new(&inst);
    engine.budget = 20_000;
    for (s, st) in program.statements.iter().enumerate() {
        let task = lpk_model::task::Task {
            stmt: lpk_model::StmtId::from_index(s).expect("a small index"),
            vars: vec![1; st.depth()].into(),
        };
        let _ = program.task_name(&task).to_string();
        if engine.check_task(&task).is_ok() {
            let _ = engine.children(&task);
            let _ = engine.parents(&task);
        }
        let _ = engine.for_each_child(&task, &mut |_, _, _, _| {});
    }
}

fn arb_cbor() -> impl Strategy<Value = ciborium::Value> {
    use ciborium::Value;
    let leaf = prop_oneof![
        any::<i64>().prop_map(|i| Value::Integer(i.into())),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        "[a-z_]{0,12}".prop_map(Value::Text),
        any::<f64>().prop_map(Value::Float),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,10}".prop_map(Value::Text), inner), 0..8)
                .prop_map(Value::Map),
        ]
    })
}

/// Replaces the `k`th integer (in document order) of a CBOR value.
fn replace_int(v: &mut ciborium::Value, k: &mut usize, new: i64) -> bool {
    use ciborium::Value;
    match v {
        Value::Integer(_) => {
            if *k == 0 {
                *v = Value::Integer(new.into());
                return true;
            }
            *k -= 1;
            false
        }
        Value::Array(items) => items.iter_mut().any(|i| replace_int(i, k, new)),
        Value::Map(items) => items.iter_mut().any(|(_, i)| replace_int(i, k, new)),
        _ => false,
    }
}

fn interesting_int() -> impl Strategy<Value = i64> {
    prop_oneof![
        -3i64..40,
        Just(i64::MAX),
        Just(i64::MIN),
        Just(1 << 40),
        Just(u32::MAX as i64),
        any::<i64>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn single_bit_flips_are_always_caught(which in 0usize..7, at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let bytes = &valid_bytes()[which % valid_bytes().len()];
        let mut b = bytes.clone();
        let i = at.index(b.len());
        b[i] ^= 1 << bit;
        // CRC-32 detects every single-bit error in the payload; in the
        // header, a flip breaks the magic, the major version or a length.
        // Only the minor version (bytes 10 and 11) may change: a reader
        // accepts any minor version of its major version.
        match artifact::decode(&b) {
            Ok(l) => {
                prop_assert!(i == 10 || i == 11, "flip at {i} went unnoticed");
                let original = artifact::decode(bytes).expect("valid");
                prop_assert_eq!(l.artifact, original.artifact);
            }
            Err(e) => prop_assert!(i != 10 && i != 11, "minor version flip rejected: {e}"),
        }
    }

    #[test]
    fn truncations_are_reported(which in 0usize..7, at in any::<prop::sample::Index>()) {
        let bytes = &valid_bytes()[which % valid_bytes().len()];
        let len = at.index(bytes.len());
        let e = artifact::decode(&bytes[..len]).expect_err("a prefix is not an artifact");
        prop_assert!(matches!(e, ArtifactError::Truncated { .. }), "{e:?}");
    }

    #[test]
    fn random_bytes_are_rejected(mut bytes in prop::collection::vec(any::<u8>(), 0..300), magic in any::<bool>()) {
        if magic && bytes.len() >= HEADER_LEN {
            bytes[..8].copy_from_slice(&artifact::MAGIC);
            bytes[8] = 1;
            bytes[9] = 0;
        }
        prop_assert!(artifact::decode(&bytes).is_err());
    }

    #[test]
    fn random_cbor_in_a_valid_container_is_rejected(v in arb_cbor()) {
        let mut cbor = Vec::new();
        ciborium::into_writer(&v, &mut cbor).expect("encodes");
        let e = artifact::decode(&wrap(&cbor)).expect_err("random CBOR is no artifact");
        prop_assert!(matches!(e, ArtifactError::Decode(_)), "{e:?}");
    }

    #[test]
    fn mutated_programs_load_or_fail_cleanly(which in 0usize..7, k in 0usize..4000, new in interesting_int(), flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 0..3)) {
        let cbor = &valid_cbor()[which % valid_cbor().len()];
        let mut value: ciborium::Value = ciborium::from_reader(cbor.as_slice()).expect("decodes");
        let mut k = k;
        replace_int(&mut value, &mut k, new);
        let mut bytes = Vec::new();
        ciborium::into_writer(&value, &mut bytes).expect("encodes");
        for (at, bit) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
        }
        if let Ok(loaded) = artifact::decode(&wrap(&bytes)) {
            exercise(&loaded.artifact.program);
        }
    }
}

#[test]
fn small_limits_are_enforced() {
    let a = compile(&root().join("examples/cholesky.lpk"));
    let limits = Limits {
        exprs: 10,
        ..Limits::default()
    };
    let e = artifact::decode_with(&artifact::encode(&a).expect("encodes"), &limits)
        .expect_err("too many nodes");
    assert!(
        e.to_string()
            .starts_with("invalid artifact: too many expression nodes:"),
        "{e}"
    );
    assert_eq!(e.code(), "E0408");
}

/// The model crate tests its loader and plan evaluator on artifacts checked
/// in under `runtime-interp/model/tests/fixtures/`; they must be what
/// `lpkc compile` writes today, or those tests check stale plans.
#[test]
fn model_fixtures_are_what_lpkc_compiles_today() {
    let dir = root().join("runtime-interp/model/tests/fixtures");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir)
        .expect("the model's fixtures")
        .flatten()
    {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = file
            .strip_suffix(".lpka")
            .or_else(|| file.strip_suffix(".lpka.json"))
        else {
            continue;
        };
        let stale = format!(
            "runtime-interp/model/tests/fixtures/{file} is stale; regenerate it as the README there says"
        );
        let bytes = std::fs::read(entry.path()).expect("readable");
        let loaded = artifact::decode(&bytes).unwrap_or_else(|e| panic!("{stale}: {e}"));
        let source = format!("examples/{stem}.lpk");
        let fresh = crate::compile(Path::new(&source));
        assert_eq!(loaded.artifact.source.file, source, "{stale}");
        assert!(loaded.artifact.program == fresh, "{stale}");
        assert_eq!(
            loaded.artifact.source,
            SourceInfo::of_program(
                &fresh,
                &source,
                loaded
                    .artifact
                    .source
                    .text
                    .as_ref()
                    .map(|_| lpk_test_support::read(&source))
            ),
            "{stale}"
        );
        checked += 1;
    }
    assert!(checked >= 5, "{checked} fixtures in {}", dir.display());
}
