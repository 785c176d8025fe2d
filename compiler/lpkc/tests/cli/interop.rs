//! The second, independent loader (`tests/interop/lpka.py`, Python 3 with
//! `cbor2`, written from `docs/artifact.md`) must answer `tasks`,
//! `children` and `parents` exactly as `lpkc query --format json` does, on
//! the artifact of every example, for several parameter values and every
//! task of each instance (up to a cap), in both encodings. A missing
//! `python3` or `cbor2` fails the test: CI must install them.

// The tests print the figures they measure (sizes, answer counts).
#![allow(clippy::print_stdout)]

use crate::binary::{lpkc_with_stdin, run, scratch_dir};

fn python(args: &[String], stdin: &str) -> (i32, String, String) {
    let mut a = vec!["tests/interop/lpka.py".to_string()];
    a.extend_from_slice(args);
    run("python3", &a, stdin)
}

#[test]
fn cbor2_is_installed() {
    let (code, _, err) = run("python3", &["-c", "import cbor2"], "");
    assert_eq!(
        code, 0,
        "python3 with cbor2 is required (pip install cbor2): {err}"
    );
}

#[test]
fn python_loader_answers_as_lpkc_does() {
    let dir = scratch_dir("interop");
    let examples = lpk_test_support::examples();
    assert!(examples.len() >= 7);
    let mut compared = 0usize;
    for path in &examples {
        let stem = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let rel = format!("examples/{stem}.lpk");
        let cbor = dir.join(format!("{stem}.lpka")).display().to_string();
        let json = dir.join(format!("{stem}.lpka.json")).display().to_string();
        for (out, enc) in [(&cbor, "cbor"), (&json, "json")] {
            let (code, _, err) = lpkc_with_stdin(
                &[
                    "compile".into(),
                    rel.clone(),
                    "-o".into(),
                    out.clone(),
                    "--encoding".into(),
                    enc.into(),
                ],
                "",
            );
            assert_eq!(code, 0, "{rel}: {err}");
        }
        let text = std::fs::read_to_string(path).expect("readable");
        let params: Vec<String> = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("program "))
            .and_then(|l| l.split_once('(').map(|(_, r)| r.to_string()))
            .map(|r| {
                r.split(')')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .filter_map(|p| p.split(':').next().map(|n| n.trim().to_string()))
                    .filter(|n| !n.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        assert!(!params.is_empty(), "{rel}: parameters");
        for n in [1i64, 2, 3, 5] {
            let mut pargs = Vec::new();
            for (i, p) in params.iter().enumerate() {
                let v = if i == 0 { n } else { (1 + n % 3).min(n) };
                pargs.extend(["-p".to_string(), format!("{p}={v}")]);
            }
            let mut base = vec!["query".to_string(), cbor.clone()];
            base.extend(pargs.iter().cloned());
            base.extend(["--format".into(), "json".into()]);
            let (code, tasks_out, err) = lpkc_with_stdin(&base, "tasks\n");
            if code != 0 {
                // A `require` this N does not meet: Python must refuse too.
                assert!(err.contains("requirement"), "{rel} {pargs:?}: {err}");
                let mut a = vec![cbor.clone()];
                a.extend(pargs.iter().cloned());
                let (pc, _, _) = python(&a, "tasks\n");
                assert_ne!(pc, 0, "{rel} {pargs:?}: Python accepted an unmet require");
                continue;
            }
            let tasks: serde_json::Value = serde_json::from_str(&tasks_out).expect("JSON");
            let mut cmds = vec!["tasks".to_string()];
            for t in tasks["tasks"].as_array().expect("tasks").iter().take(400) {
                let vars: Vec<String> = t["vars"]
                    .as_object()
                    .expect("vars")
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                let name = format!(
                    "{}@{}:{}({})",
                    t["kernel"].as_str().unwrap_or(""),
                    t["line"],
                    t["column"],
                    vars.join(", ")
                );
                cmds.push(format!("children {name}"));
                cmds.push(format!("parents {name}"));
            }
            let stdin = cmds.join("\n") + "\n";
            let (c1, expected, e1) = lpkc_with_stdin(&base, &stdin);
            assert_eq!(c1, 0, "{rel} {pargs:?}: {e1}");
            for file in [&cbor, &json] {
                let mut a = vec![file.clone()];
                a.extend(pargs.iter().cloned());
                let (c2, got, e2) = python(&a, &stdin);
                assert_eq!(c2, 0, "{rel} {pargs:?} {file}: python failed: {e2}");
                let exp: Vec<serde_json::Value> = expected
                    .lines()
                    .map(|l| serde_json::from_str(l).expect("lpkc JSON"))
                    .collect();
                let act: Vec<serde_json::Value> = got
                    .lines()
                    .map(|l| serde_json::from_str(l).expect("python JSON"))
                    .collect();
                assert_eq!(exp.len(), cmds.len());
                assert_eq!(act.len(), exp.len(), "{rel} {pargs:?}: {e2}");
                for (a, e) in act.iter().zip(&exp) {
                    assert_eq!(a, e, "{rel} {pargs:?} {file}");
                }
                compared += exp.len();
            }
        }
    }
    println!("compared {compared} answers");
    assert!(compared > 1000, "only {compared} answers compared");
}
