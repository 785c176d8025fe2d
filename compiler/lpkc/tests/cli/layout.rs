//! The layout's promises that Cargo cannot check: inside each crate, no
//! module imports another that imports it back, directly or through
//! others (ARCHITECTURE.md), at file level: `crate::`, `super::` and
//! `self::` paths are all followed; and ARCHITECTURE.md's codemap names
//! every module file of every crate, in that crate's section.

use crate::binary::scratch_dir;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, by module path (`plan::solve`; a `mod.rs`,
/// `lib.rs` or `main.rs` names its folder).
fn modules(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("readable source folder") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(dir)
                    .expect("under dir")
                    .with_extension("");
                let mut parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    parts.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    parts.pop();
                }
                out.insert(parts.join("::"), path);
            }
        }
    }
    out
}

/// The modules each module imports through `crate::`, `super::` and
/// `self::` paths in code (doc comments and unit-test modules left out);
/// a module's own submodules and parents are not counted (declaring `mod
/// x;` is no import).
fn imports(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, path) in mods {
        let text = std::fs::read_to_string(path).expect("readable source");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let here: Vec<&str> = name.split("::").filter(|p| !p.is_empty()).collect();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (base, rest) in paths_in(line, &here) {
                // `x::{a, b::c}` names several modules.
                let group: Vec<&str> = if let Some(inner) = rest.strip_prefix('{') {
                    inner
                        .split('}')
                        .next()
                        .unwrap_or("")
                        .split(',')
                        .map(str::trim)
                        .collect()
                } else {
                    vec![rest]
                };
                for item in group {
                    let mut path: Vec<String> = base.iter().map(|s| s.to_string()).collect();
                    path.extend(
                        item.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                            .next()
                            .unwrap_or("")
                            .split("::")
                            .filter(|p| !p.is_empty())
                            .map(str::to_string),
                    );
                    // The longest prefix that is a module.
                    let target = (1..=path.len())
                        .rev()
                        .map(|k| path[..k].join("::"))
                        .find(|m| mods.contains_key(m));
                    if let Some(t) = target {
                        let nested = name.starts_with(&format!("{t}::"))
                            || t.starts_with(&format!("{name}::"));
                        if t != *name && !nested {
                            edges.entry(name.clone()).or_default().insert(t);
                        }
                    }
                }
            }
        }
    }
    edges
}

/// The paths of `line` that start at `crate::`, `self::` or `super::`
/// (repeated), as (the module path they start from, the rest).
fn paths_in<'l>(line: &'l str, here: &[&'l str]) -> Vec<(Vec<&'l str>, &'l str)> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < line.len() {
        let word_start = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':');
        let rest = &line[i..];
        if word_start {
            if let Some(r) = rest.strip_prefix("crate::") {
                out.push((Vec::new(), r));
                i += "crate::".len();
                continue;
            }
            if let Some(r) = rest.strip_prefix("self::") {
                out.push((here.to_vec(), r));
                i += "self::".len();
                continue;
            }
            if rest.starts_with("super::") {
                let mut up = 0;
                let mut r = rest;
                while let Some(next) = r.strip_prefix("super::") {
                    up += 1;
                    r = next;
                }
                let base = here[..here.len().saturating_sub(up)].to_vec();
                out.push((base, r));
                i += rest.len() - r.len();
                continue;
            }
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    out
}

/// The import circles of `edges`: every strongly connected component of
/// more than one module (Tarjan's algorithm), each sorted.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'e> {
        edges: &'e BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'e str, usize>,
        low: BTreeMap<&'e str, usize>,
        stack: Vec<&'e str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'e>(w: &mut Walk<'e>, v: &'e str) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        for t in w.edges.get(v).into_iter().flatten() {
            if !w.index.contains_key(t.as_str()) {
                visit(w, t);
                let lt = w.low[t.as_str()];
                let lv = w.low[v];
                w.low.insert(v, lv.min(lt));
            } else if w.stack.contains(&t.as_str()) {
                let it = w.index[t.as_str()];
                let lv = w.low[v];
                w.low.insert(v, lv.min(it));
            }
        }
        if w.low[v] == w.index[v] {
            let mut c = Vec::new();
            while let Some(x) = w.stack.pop() {
                c.push(x.to_string());
                if x == v {
                    break;
                }
            }
            if c.len() > 1 {
                c.sort();
                w.found.push(c);
            }
        }
    }
    let mut w = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.found
}

/// The source folders of the workspace's crates.
const CRATES: [&str; 8] = [
    "grammar/src",
    "compiler/src",
    "compiler/lpkc/src",
    "runtime-interp/model/src",
    "runtime-interp/runtime/src",
    "runtime-interp/cluster/src",
    "runtime-interp/sim/src",
    "python/src",
];

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let root = lpk_test_support::workspace_root();
    let mut found = Vec::new();
    for krate in CRATES {
        let mods = modules(&root.join(krate));
        assert!(mods.len() >= 4, "{krate}: {} modules", mods.len());
        for c in circles(&imports(&mods)) {
            found.push(format!("{krate}: {}", c.join(" -> ")));
        }
    }
    assert!(found.is_empty(), "import circles: {found:#?}");
}

#[test]
fn the_import_scan_sees_a_circle() {
    // The scan itself: two modules that name each other are found.
    let dir = scratch_dir("layout");
    std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").expect("write");
    std::fs::write(dir.join("a.rs"), "use crate::{b::X, c};\n").expect("write");
    std::fs::write(
        dir.join("b.rs"),
        "// crate::c in a comment\nfn f() { crate::a::g() }\n",
    )
    .expect("write");
    std::fs::write(dir.join("c.rs"), "pub struct Y;\n").expect("write");
    let edges = imports(&modules(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        edges.get("a").cloned().unwrap_or_default(),
        BTreeSet::from(["b".to_string(), "c".to_string()])
    );
    assert_eq!(
        edges.get("b").cloned().unwrap_or_default(),
        BTreeSet::from(["a".to_string()])
    );
}

#[test]
fn the_import_scan_sees_a_circle_through_super_and_three_modules() {
    // x/a.rs -> x/b.rs (super::b) -> c.rs (crate::c) -> x/a.rs
    // (crate::x::a): one circle of three, found at file level.
    let dir = scratch_dir("layout3");
    std::fs::create_dir_all(dir.join("x")).expect("temp dir");
    std::fs::write(dir.join("lib.rs"), "mod x;\nmod c;\n").expect("write");
    std::fs::write(dir.join("x/mod.rs"), "mod a;\nmod b;\n").expect("write");
    std::fs::write(dir.join("x/a.rs"), "use super::b::Y;\n").expect("write");
    std::fs::write(dir.join("x/b.rs"), "pub fn f() { crate::c::g() }\n").expect("write");
    std::fs::write(dir.join("c.rs"), "use crate::x::a;\n").expect("write");
    let found = circles(&imports(&modules(&dir)));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        found,
        vec![vec![
            "c".to_string(),
            "x::a".to_string(),
            "x::b".to_string()
        ]]
    );
}

/// `a/{b,c}.rs` as `a/b.rs` and `a/c.rs` (one brace group, as the
/// codemap writes them).
fn expand(token: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (token.find('{'), token.find('}')) else {
        return vec![token.to_string()];
    };
    if close < open {
        return vec![token.to_string()];
    }
    let (head, tail) = (&token[..open], &token[close + 1..]);
    token[open + 1..close]
        .split(',')
        .flat_map(|alt| expand(&format!("{head}{}{tail}", alt.trim())))
        .collect()
}

/// The section of ARCHITECTURE.md about the crate in `folder` (from its
/// `### \`folder/\`` heading to the next heading), as the code spans in it.
fn codemap_names(architecture: &str, folder: &str) -> Option<BTreeSet<String>> {
    let heading = format!("### `{folder}/`");
    let start = architecture.find(&heading)?;
    let body = &architecture[start + heading.len()..];
    let end = body.find("\n#").unwrap_or(body.len());
    let spans = body[..end].split('`').skip(1).step_by(2);
    Some(spans.flat_map(expand).collect())
}

/// Whether `names` name the module file `rel` (relative to its crate's
/// `src/`): by a path it ends with (`finish.rs`, `job/finish.rs`), or, for
/// a folder's `mod.rs`, by the folder (`job/`). A crate's `lib.rs` or
/// `main.rs` is its section itself.
fn named(rel: &str, names: &BTreeSet<String>) -> bool {
    if rel == "lib.rs" || rel == "main.rs" {
        return true;
    }
    let ends = |n: &str| !n.is_empty() && (rel == n || rel.ends_with(&format!("/{n}")));
    if let Some(folder) = rel.strip_suffix("/mod.rs") {
        let folder_named = |n: &str| {
            let n = n.trim_end_matches('/');
            folder == n || folder.ends_with(&format!("/{n}")) || ends(&format!("{n}/mod.rs"))
        };
        return names.iter().any(|n| n.ends_with('/') && folder_named(n))
            || names.iter().any(|n| ends(n));
    }
    names.iter().any(|n| ends(n))
}

#[test]
fn the_codemap_names_every_module_file() {
    let root = lpk_test_support::workspace_root();
    let architecture =
        std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut missing = Vec::new();
    for krate in CRATES {
        let folder = krate.strip_suffix("/src").expect("a src folder");
        let names = codemap_names(&architecture, folder)
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no section `### `{folder}/``"));
        for path in modules(&root.join(krate)).values() {
            let rel = path
                .strip_prefix(root.join(krate))
                .expect("under the crate")
                .to_string_lossy()
                .replace('\\', "/");
            if !named(&rel, &names) {
                missing.push(format!("{krate}/{rel}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "module files ARCHITECTURE.md's codemap does not name (in their crate's section): {missing:#?}"
    );
}

#[test]
fn the_codemap_check_reads_braces_and_folders() {
    let names: BTreeSet<String> = ["store/{mod,memory}.rs", "job/", "finish.rs"]
        .iter()
        .flat_map(|t| expand(t))
        .collect();
    assert!(named("store/memory.rs", &names));
    assert!(named("store/mod.rs", &names));
    assert!(named("job/mod.rs", &names));
    assert!(named("job/finish.rs", &names));
    assert!(!named("job/sink.rs", &names));
    assert!(!named("store/object.rs", &names));
    assert!(!named("refinish.rs", &names));
}
