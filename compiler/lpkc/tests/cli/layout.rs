//! The layout's promises that Cargo cannot check: inside each crate, no
//! module imports another that imports it back (ARCHITECTURE.md).

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

/// The modules each module imports through `crate::` paths in code (doc
/// comments and unit-test modules left out).
fn imports(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, path) in mods {
        let text = std::fs::read_to_string(path).expect("readable source");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            let mut rest = line;
            while let Some(at) = rest.find("crate::") {
                rest = &rest[at + "crate::".len()..];
                // `crate::{a, b::c}` names several modules.
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
                    let path: Vec<&str> = item
                        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                        .next()
                        .unwrap_or("")
                        .split("::")
                        .collect();
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

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let root = test_support::workspace_root();
    let mut mutual = Vec::new();
    for krate in [
        "grammar/src",
        "compiler/src",
        "compiler/lpkc/src",
        "runtime-interp/model/src",
        "runtime-interp/runtime/src",
    ] {
        let mods = modules(&root.join(krate));
        assert!(mods.len() >= 5, "{krate}: {} modules", mods.len());
        let edges = imports(&mods);
        for (a, targets) in &edges {
            for b in targets {
                if a < b && edges.get(b).is_some_and(|t| t.contains(a)) {
                    mutual.push(format!("{krate}: {a} <-> {b}"));
                }
            }
        }
    }
    assert!(mutual.is_empty(), "import circles: {mutual:#?}");
}

#[test]
fn the_import_scan_sees_a_circle() {
    // The scan itself: two modules that name each other are found.
    let dir = std::env::temp_dir().join(format!("lpk-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
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
