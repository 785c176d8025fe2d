//! `lpkc inspect`: print an artifact's contents, as a readable summary
//! or as the JSON twin. A broken artifact is an `error[E04xx]`
//! diagnostic.

use crate::args::{Format, GlobalOpts};
use crate::error::CliError;
use crate::{load, output, report};
use lpk_model::artifact::{self, Encoding, Loaded};
use lpk_model::plan::PlanStep;
use lpk_model::program::{Arg, DomainItem, ParamKind, Program, Role};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Arguments of `lpkc inspect`.
#[derive(clap::Args, Debug)]
pub(crate) struct InspectArgs {
    /// The artifact (CBOR or its JSON twin).
    pub(crate) file: PathBuf,
    /// A readable summary, or the JSON twin on stdout.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) format: Format,
}

/// Runs `lpkc inspect`.
pub(crate) fn run(args: &InspectArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let path = &args.file;
    let loaded = load::read_artifact(path)?
        .map_err(|e| report::artifact_error(path, &e, args.format, global.color))?;
    match args.format {
        Format::Json => {
            let text = artifact::encode_json(&loaded.artifact)
                .map_err(|e| report::artifact_error(path, &e, args.format, global.color))?;
            output::line(&text);
        }
        Format::Human => {
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            output::out(&summary(path, size, &loaded));
        }
    }
    Ok(())
}

fn role(r: Role) -> &'static str {
    match r {
        Role::Input => "input",
        Role::Output => "output",
        Role::Temporary => "matrix",
    }
}

/// The human summary of `lpkc inspect`.
fn summary(path: &Path, size: u64, loaded: &Loaded) -> String {
    let p = &loaded.artifact.program;
    let mut o = String::new();
    container(&mut o, path, size, loaded);
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
    declarations(&mut o, p);
    let _ = writeln!(o, "\nstatements");
    for (s, st) in p.statements.iter().enumerate() {
        statement(&mut o, p, s, st);
    }
    let _ = writeln!(
        o,
        "\n{}, {}",
        count(
            p.exprs.nodes().len() as u64,
            "expression node",
            "expression nodes"
        ),
        count(p.tree.len() as u64, "loop tree root", "loop tree roots")
    );
    o
}

/// The artifact's container: format, size, compiler, source, lint record.
fn container(o: &mut String, path: &Path, size: u64, loaded: &Loaded) {
    let a = &loaded.artifact;
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
    let _ = match loaded.header {
        Some(h) => writeln!(
            o,
            "  size     {size} bytes ({} header + {} payload), CRC-32 {:#010x}",
            artifact::HEADER_LEN,
            h.payload_len,
            h.crc32
        ),
        None => writeln!(o, "  size     {}", count(size, "byte", "bytes")),
    };
    let _ = writeln!(o, "  compiler {}", a.compiler);
    let _ = writeln!(
        o,
        "  source   {}{}",
        a.source.file,
        match &a.source.text {
            Some(t) => format!(
                " ({} of source text included)",
                count(t.len() as u64, "byte", "bytes")
            ),
            None => " (source text not included)".to_string(),
        }
    );
    let lint = match &a.lint {
        Some(l) => {
            let rules: Vec<String> = l
                .rules
                .iter()
                .map(|r| format!("{} {}", r.code, r.status))
                .collect();
            format!("no errors when written ({})", rules.join(", "))
        }
        None => "not recorded (a run lints the program first)".to_string(),
    };
    let _ = writeln!(o, "  lint     {lint}");
}

/// The matrices and kernels.
fn declarations(o: &mut String, p: &Program) {
    let _ = writeln!(o, "\nmatrices");
    for m in &p.matrices {
        let ext: Vec<String> = m.extents.iter().map(|&e| p.expr_text(e, &[])).collect();
        let zero = if m.zero {
            " = 0  (zero matrix: unwritten tiles read as zeros)"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "  {:<6} {}[{}]{zero}",
            role(m.role),
            m.name,
            ext.join(", ")
        );
    }
    let _ = writeln!(o, "\nkernels");
    for k in &p.kernels {
        let params: Vec<String> = k
            .params
            .iter()
            .map(|(n, kind)| {
                let kind = match kind {
                    ParamKind::Tile => "tile",
                    ParamKind::Int => "int",
                    ParamKind::Real => "real",
                };
                format!("{n}: {kind}")
            })
            .collect();
        let _ = writeln!(
            o,
            "  {}({}) -> ({})",
            k.name,
            params.join(", "),
            k.results.join(", ")
        );
    }
}

/// Statement `s`: its call, its loops and guards, its plans' size.
fn statement(o: &mut String, p: &Program, s: usize, st: &lpk_model::program::Statement) {
    let kernel = p.get_kernel(st.kernel).map_or("?", |k| &k.name);
    let acc = |a: &lpk_model::program::Access| {
        let name = p.get_matrix(a.matrix).map_or("?", |m| &m.name);
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
    let Some(sp) = p.plans.get(s) else {
        return;
    };
    let all: Vec<_> = sp.writes.iter().chain(&sp.reads).collect();
    let steps: usize = all.iter().map(|ap| ap.inverse.steps.len()).sum();
    let ranges: usize = all
        .iter()
        .map(|ap| {
            ap.inverse
                .steps
                .iter()
                .filter(|s| matches!(s, PlanStep::Range(_)))
                .count()
        })
        .sum();
    let partners: usize = all.iter().map(|ap| ap.partners.len()).sum();
    let _ = writeln!(
        o,
        "       plans: {} write + {} read, {}, {}, {}",
        sp.writes.len(),
        sp.reads.len(),
        count(steps as u64, "step", "steps"),
        count(ranges as u64, "enumeration", "enumerations"),
        count(partners as u64, "partner", "partners"),
    );
}

/// `1 step`, `2 steps`: a count with its noun in the right number.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
