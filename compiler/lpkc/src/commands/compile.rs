//! `lpkc compile`: check and lint a source file, then write its program
//! artifact (`docs/artifact.md`) as CBOR or as the JSON twin.

use crate::args::{Format, GlobalOpts, ProgramArg};
use crate::error::CliError;
use crate::{load, report};
use clap::ValueEnum;
use lpk_compiler::diag::SourceMap;
use lpk_compiler::pipeline::{compile_source, LintGate};
use lpk_model::artifact::{self, Artifact, SourceInfo};
use std::path::{Path, PathBuf};

/// Arguments of `lpkc compile`.
#[derive(clap::Args, Debug)]
pub(crate) struct CompileArgs {
    /// The `.lpk` source file.
    pub(crate) file: PathBuf,
    /// Where to write.
    ///
    /// [default: FILE.lpka, or FILE.lpka.json with `--encoding json`]
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub(crate) output: Option<PathBuf>,
    /// The artifact encoding.
    ///
    /// [default: cbor, or json when OUT ends in `.json`]
    #[arg(long, value_enum)]
    pub(crate) encoding: Option<ArtifactEncoding>,
    /// Do not include the source text in the artifact.
    #[arg(long)]
    pub(crate) no_source: bool,
    #[command(flatten)]
    pub(crate) program: ProgramArg,
    /// Diagnostics as text on stderr or as JSON on stdout.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) format: Format,
}

/// How `compile` encodes the artifact.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub(crate) enum ArtifactEncoding {
    /// The binary container with a CBOR payload.
    Cbor,
    /// The JSON twin.
    Json,
}

/// What `lpkc` writes as the artifact's `compiler` field.
const COMPILER: &str = concat!("lpkc ", env!("CARGO_PKG_VERSION"));

/// The default output path: `FILE.lpka`, or `FILE.lpka.json` for the JSON
/// twin (the source's extension replaced).
fn default_output(file: &Path, encoding: ArtifactEncoding) -> PathBuf {
    let ext = match encoding {
        ArtifactEncoding::Cbor => "lpka",
        ArtifactEncoding::Json => "lpka.json",
    };
    file.with_extension(ext)
}

/// Runs `lpkc compile`.
pub(crate) fn run(args: &CompileArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let file = &args.file;
    let text = load::read_source(file, "compile")?;
    let mut sources = SourceMap::new();
    let name = file.display().to_string();
    // Lint errors block compiling too: an artifact must never describe a
    // program that breaks the language's rules. Warnings are `lint`'s job.
    let compiled = match compile_source(
        &mut sources,
        &name,
        &text,
        args.program.program.as_deref(),
        LintGate::DenyErrors,
    ) {
        Ok(c) => c,
        Err(e) => {
            return Err(report::compile_failure(
                &sources,
                e,
                args.format,
                global.color,
            ))
        }
    };
    report::diagnostics(
        &sources,
        &compiled.checked.diagnostics,
        args.format,
        global.color,
    );
    let out = args.output.as_deref();
    let encoding = args.encoding.unwrap_or_else(|| match out {
        Some(o) if o.extension().is_some_and(|e| e == "json") => ArtifactEncoding::Json,
        _ => ArtifactEncoding::Cbor,
    });
    let program = compiled.program;
    let source = SourceInfo::of_program(&program, &name, (!args.no_source).then_some(text));
    let art = Artifact {
        compiler: COMPILER.to_string(),
        source,
        program,
        lint: compiled.lint,
    };
    let bytes = match encoding {
        ArtifactEncoding::Cbor => artifact::encode(&art),
        ArtifactEncoding::Json => artifact::encode_json(&art).map(String::into_bytes),
    }
    .map_err(|e| report::artifact_error(file, &e, args.format, global.color))?;
    let path = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_output(file, encoding));
    std::fs::write(&path, &bytes)
        .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", path.display())))?;
    // Without -o the user did not name the file: say where it went.
    if out.is_none() {
        eprintln!("wrote {} ({})", path.display(), size_text(bytes.len()));
    }
    Ok(())
}

/// A file size for people: `812 B`, `4.1 KiB`, `2.3 MiB`.
fn size_text(bytes: usize) -> String {
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1 << 20 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{:.1} MiB", b / f64::from(1u32 << 20))
    }
}
