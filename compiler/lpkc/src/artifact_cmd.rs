//! `lpkc compile` (source → artifact) and `lpkc inspect` (artifact →
//! summary or JSON twin), and loading an artifact wherever a command takes
//! a source. Artifact errors become `error[E04xx]` diagnostics with no
//! source label (an artifact has no source position for a broken header).

use crate::commands::{read_source, usage_error, EXIT_ERRORS};
use crate::output;
use crate::{ArtifactEncoding, Format, ProgramArg};
use compiler::diag::{Diagnostic, Severity, SourceMap};
use compiler::pipeline::{check_source, Checked};
use model::artifact::{self, Artifact, ArtifactError, Encoding, Loaded, SourceInfo};
use model::plan::PlanStep;
use model::program::{Arg, DomainItem, Program, Role};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What `lpkc` writes as the artifact's `compiler` field.
pub const COMPILER: &str = concat!("lpkc ", env!("CARGO_PKG_VERSION"));

/// The diagnostics of `check` that keep a program from being compiled
/// (lint errors are checked after lowering, in [`compile`]).
pub fn compile_gate(checked: &Checked) -> Vec<Diagnostic> {
    checked
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .cloned()
        .collect()
}

/// The diagnostic of an artifact error, with the file in a note.
pub fn artifact_diagnostic(path: &Path, e: &ArtifactError) -> Diagnostic {
    Diagnostic {
        severity: Severity::Error,
        code: e.into(),
        message: e.to_string(),
        labels: Vec::new(),
        notes: vec![format!("in {}", path.display())],
    }
}

fn report_artifact_error(path: &Path, e: &ArtifactError, format: Format, color: bool) -> ExitCode {
    let d = artifact_diagnostic(path, e);
    let sources = SourceMap::new();
    match format {
        Format::Json => output::json(&sources.to_json(&[d])),
        Format::Human => sources.emit_stderr(&[d], color),
    }
    ExitCode::from(EXIT_ERRORS)
}

/// The default output path: `FILE.lpka`, or `FILE.lpka.json` for the JSON
/// twin (the source's extension replaced).
pub fn default_output(file: &Path, encoding: ArtifactEncoding) -> PathBuf {
    let ext = match encoding {
        ArtifactEncoding::Cbor => "lpka",
        ArtifactEncoding::Json => "lpka.json",
    };
    file.with_extension(ext)
}

/// `lpkc compile`.
pub fn compile(
    file: &Path,
    out: Option<&Path>,
    encoding: Option<ArtifactEncoding>,
    no_source: bool,
    program: &ProgramArg,
    format: Format,
    color: bool,
) -> ExitCode {
    let text = match read_source(file) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let mut sources = SourceMap::new();
    let name = file.display().to_string();
    let checked = check_source(&mut sources, &name, &text);
    let emit = |diagnostics: &[Diagnostic]| match format {
        Format::Json => output::json(&sources.to_json(diagnostics)),
        Format::Human => sources.emit_stderr(diagnostics, color),
    };
    if !compile_gate(&checked).is_empty() {
        emit(&checked.diagnostics);
        return ExitCode::from(EXIT_ERRORS);
    }
    let hir = match compiler::pipeline::select_program(&checked.module, program.program.as_deref())
    {
        Ok(h) => h,
        Err(e) => return usage_error(&e.to_string()),
    };
    let compiled = compiler::pipeline::compile_program(&checked.module, hir, &sources);
    // Lint errors block compiling too: an artifact must never describe a
    // program that breaks the language's rules. Warnings are `lint`'s job.
    let lint = compiler::lint::lint_errors(&checked.module, hir, &compiled, checked.file);
    let mut diagnostics = checked.diagnostics.clone();
    diagnostics.extend(lint.iter().cloned());
    emit(&diagnostics);
    if !lint.is_empty() {
        return ExitCode::from(EXIT_ERRORS);
    }
    let encoding = encoding.unwrap_or_else(|| match out {
        Some(o) if o.extension().is_some_and(|e| e == "json") => ArtifactEncoding::Json,
        _ => ArtifactEncoding::Cbor,
    });
    let source = SourceInfo::of_program(&compiled, &name, (!no_source).then_some(text));
    let art = Artifact {
        compiler: COMPILER.to_string(),
        source,
        program: compiled,
    };
    let bytes = match encoding {
        ArtifactEncoding::Cbor => artifact::encode(&art),
        ArtifactEncoding::Json => artifact::encode_json(&art).map(String::into_bytes),
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => return report_artifact_error(file, &e, format, color),
    };
    let out = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_output(file, encoding));
    match std::fs::write(&out, &bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => usage_error(&format!("cannot write {}: {e}", out.display())),
    }
}

/// Reads and validates an artifact file.
fn read_artifact(path: &Path) -> Result<Result<Loaded, ArtifactError>, ExitCode> {
    let bytes = std::fs::read(path)
        .map_err(|e| usage_error(&format!("cannot read {}: {e}", path.display())))?;
    Ok(artifact::decode(&bytes))
}

/// Loads `path` as an artifact if its first bytes say it is one (`None`
/// otherwise, so that the caller treats it as source).
pub fn try_load(
    path: &Path,
    program: &ProgramArg,
    color: bool,
) -> Option<Result<(SourceMap, Program), ExitCode>> {
    let bytes = std::fs::read(path).ok()?;
    if !artifact::looks_like_artifact(&bytes) {
        return None;
    }
    Some(match artifact::decode(&bytes) {
        Ok(loaded) => {
            let art = loaded.artifact;
            match program.program.as_deref() {
                Some(name) if name != art.program.name => Err(usage_error(&format!(
                    "no program named `{name}` (the artifact holds: {})",
                    art.program.name
                ))),
                _ => {
                    let mut sources = SourceMap::new();
                    sources.add(art.source.file, art.source.text.unwrap_or_default());
                    Ok((sources, art.program))
                }
            }
        }
        Err(e) => Err(report_artifact_error(path, &e, Format::Human, color)),
    })
}

/// `lpkc inspect`.
pub fn inspect(path: &Path, format: Format, color: bool) -> ExitCode {
    let loaded = match read_artifact(path) {
        Ok(Ok(l)) => l,
        Ok(Err(e)) => return report_artifact_error(path, &e, format, color),
        Err(code) => return code,
    };
    match format {
        Format::Json => match artifact::encode_json(&loaded.artifact) {
            Ok(text) => {
                output::line(&text);
                ExitCode::SUCCESS
            }
            Err(e) => report_artifact_error(path, &e, format, color),
        },
        Format::Human => {
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            output::out(&summary(path, size, &loaded));
            ExitCode::SUCCESS
        }
    }
}

fn role(r: Role) -> &'static str {
    match r {
        Role::Input => "input",
        Role::Output => "output",
        Role::Temporary => "matrix",
    }
}

/// The human summary of `lpkc inspect`.
pub fn summary(path: &Path, size: u64, loaded: &Loaded) -> String {
    let a = &loaded.artifact;
    let p = &a.program;
    let mut o = String::new();
    let _ = writeln!(o, "artifact {}", path.display());
    let enc = match loaded.encoding {
        Encoding::Cbor => "CBOR",
        Encoding::Json => "JSON twin",
    };
    let _ = writeln!(
        o,
        "  format   lpka {}.{} ({enc}){}",
        loaded.major,
        loaded.minor,
        if loaded.minor > artifact::FORMAT_MINOR {
            " (newer minor version: unknown fields ignored)"
        } else {
            ""
        }
    );
    match loaded.header {
        Some(h) => {
            let _ = writeln!(
                o,
                "  size     {size} bytes ({} header + {} payload), CRC-32 {:#010x}",
                artifact::HEADER_LEN,
                h.payload_len,
                h.crc32
            );
        }
        None => {
            let _ = writeln!(o, "  size     {size} bytes");
        }
    }
    let _ = writeln!(o, "  compiler {}", a.compiler);
    let _ = writeln!(
        o,
        "  source   {}{}",
        a.source.file,
        match &a.source.text {
            Some(t) => format!(" ({} bytes of source text included)", t.len()),
            None => " (source text not included)".to_string(),
        }
    );
    let _ = writeln!(o, "\nprogram {}", p.name);
    let params: Vec<String> = p
        .params
        .iter()
        .map(|q| match q.default {
            Some(d) => format!("{} = {d}", q.name),
            None => q.name.clone(),
        })
        .collect();
    let _ = writeln!(o, "  parameters  {}", params.join(", "));
    for &r in &p.requires {
        let _ = writeln!(o, "  require     {}", p.expr_text(r, &[]));
    }
    let _ = writeln!(o, "\nmatrices");
    for m in &p.matrices {
        let ext: Vec<String> = m.extents.iter().map(|&e| p.expr_text(e, &[])).collect();
        let _ = writeln!(o, "  {:<6} {}[{}]", role(m.role), m.name, ext.join(", "));
    }
    let _ = writeln!(o, "\nkernels");
    for k in &p.kernels {
        let params: Vec<String> = k
            .params
            .iter()
            .map(|(n, kind)| format!("{n}: {}", format!("{kind:?}").to_lowercase()))
            .collect();
        let _ = writeln!(
            o,
            "  {}({}) -> ({})",
            k.name,
            params.join(", "),
            k.results.join(", ")
        );
    }
    let _ = writeln!(o, "\nstatements");
    for (s, st) in p.statements.iter().enumerate() {
        let kernel = p.kernels.get(st.kernel as usize).map_or("?", |k| &k.name);
        let acc = |a: &model::program::Access| {
            let name = p.matrices.get(a.matrix as usize).map_or("?", |m| &m.name);
            let idx: Vec<String> = a
                .indices
                .iter()
                .map(|&i| p.expr_text(i, &st.vars))
                .collect();
            format!("{name}[{}]", idx.join(", "))
        };
        let writes: Vec<String> = st.writes.iter().map(acc).collect();
        let args: Vec<String> = st
            .args
            .iter()
            .map(|a| match a {
                Arg::Tile(i) => st.reads.get(*i as usize).map_or("?".into(), acc),
                Arg::Scalar(e) => p.expr_text(*e, &st.vars),
            })
            .collect();
        let _ = writeln!(
            o,
            "  {s}: {kernel}@{}:{}  {} = {kernel}({})",
            st.line,
            st.column,
            writes.join(", "),
            args.join(", ")
        );
        for d in &st.domain {
            match d {
                DomainItem::Loop { slot, lo, hi, step } => {
                    let var = st.vars.get(*slot as usize).map_or("?", String::as_str);
                    let _ = writeln!(
                        o,
                        "       for {var} in range({}, {}, {})",
                        p.expr_text(*lo, &st.vars),
                        p.expr_text(*hi, &st.vars),
                        p.expr_text(*step, &st.vars)
                    );
                }
                DomainItem::Guard { cond, positive } => {
                    let c = p.expr_text(*cond, &st.vars);
                    let _ = if *positive {
                        writeln!(o, "       if {c}")
                    } else {
                        writeln!(o, "       if not ({c})")
                    };
                }
            }
        }
        if let Some(sp) = p.plans.get(s) {
            let all: Vec<_> = sp.writes.iter().chain(&sp.reads).collect();
            let steps: usize = all.iter().map(|ap| ap.inverse.steps.len()).sum();
            let ranges: usize = all
                .iter()
                .map(|ap| {
                    ap.inverse
                        .steps
                        .iter()
                        .filter(|s| matches!(s, PlanStep::Range { .. }))
                        .count()
                })
                .sum();
            let partners: usize = all.iter().map(|ap| ap.partners.len()).sum();
            let _ = writeln!(
                o,
                "       plans: {} write + {} read, {steps} steps, {ranges} enumerations, \
                 {partners} partners",
                sp.writes.len(),
                sp.reads.len()
            );
        }
    }
    let _ = writeln!(
        o,
        "\n{} expression nodes, {} loop tree roots",
        p.exprs.nodes().len(),
        p.tree.len()
    );
    o
}
