//! One function per subcommand. Each returns the process exit code; usage
//! problems (missing file, bad flag values) are exit code 2, problems in the
//! input are diagnostics and exit code 1.

use crate::output;
use crate::{Cli, Color, Command, DagFormat, Format, InstanceArgs, Method, ProgramArg};
use compiler::diag::codes;
use compiler::diag::SourceMap;
use compiler::pipeline::{check_source, Checked};
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

/// Exit code: the input has errors.
pub const EXIT_ERRORS: u8 = 1;
/// Exit code: usage error.
pub const EXIT_USAGE: u8 = 2;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    let color = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal(),
    };
    match cli.command {
        Command::Check { file, format } => check(&file, format, color),
        Command::Fmt {
            file,
            check,
            stdout,
        } => fmt(&file, check, stdout, color),
        Command::Plans { file, program } => plans(&file, &program, color),
        Command::Query {
            file,
            instance,
            commands,
            format,
        } => query(&file, &instance, &commands, format, color),
        Command::Dag {
            file,
            instance,
            format,
            method,
            max_tasks,
        } => dag(&file, &instance, format, method, max_tasks, color),
        Command::Bench {
            workload,
            n,
            cols,
            block,
            workers,
            seed,
            format,
        } => crate::bench::bench(&crate::bench::BenchArgs {
            workload,
            n,
            cols,
            block,
            workers,
            seed,
            format,
        }),
        Command::Compile {
            file,
            output,
            encoding,
            no_source,
            program,
            format,
        } => crate::artifact_cmd::compile(
            &file,
            output.as_deref(),
            encoding,
            no_source,
            &program,
            format,
            color,
        ),
        Command::Inspect { file, format } => crate::artifact_cmd::inspect(&file, format, color),
        Command::Lint {
            file,
            instance,
            deny,
            allow,
            bound,
            budget,
            format,
        } => crate::lint_cmd::lint(
            &file,
            &crate::lint_cmd::LintArgs {
                instance: &instance,
                deny: &deny,
                allow: &allow,
                bound,
                budget,
                format,
            },
            color,
        ),
        Command::Stats {
            file,
            instance,
            format,
            max_tasks,
            block,
            svg,
        } => stats(
            &file,
            &instance,
            format,
            max_tasks,
            block,
            svg.as_deref(),
            color,
        ),
        Command::Explain { code, list } => explain(code.as_deref(), list),
        Command::Dot {
            file,
            instance,
            cluster,
            max_tasks,
        } => crate::explore_cmd::dot(&file, &instance, cluster.as_deref(), max_tasks, color),
        Command::Repl {
            file,
            instance,
            history,
            no_history,
        } => crate::repl_cmd::repl(&file, &instance, history, no_history, color),
        Command::Run {
            file,
            instance,
            block,
            inputs,
            output_dir,
            tile_store,
            workers,
            seed,
            verify,
            kernels,
            no_progress,
            format,
        } => {
            let (_, program) = match load(&file, &instance.program, color) {
                Ok(p) => p,
                Err(code) => return code,
            };
            crate::run::run(
                &program,
                &crate::run::RunArgs {
                    instance: &instance,
                    block,
                    inputs: &inputs,
                    output_dir: output_dir.as_deref(),
                    tile_store: tile_store.as_deref(),
                    workers,
                    seed,
                    verify,
                    kernels,
                    progress: !no_progress,
                    format,
                },
            )
        }
    }
}

/// Reports a usage error and returns exit code 2.
pub fn usage_error(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_USAGE)
}

/// Reads a source file, or explains why it cannot be read.
pub fn read_source(path: &Path) -> Result<String, ExitCode> {
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) => Err(usage_error(&format!(
                "{} is not valid UTF-8 (byte {})",
                path.display(),
                e.utf8_error().valid_up_to()
            ))),
        },
        Err(e) => Err(usage_error(&format!("cannot read {}: {e}", path.display()))),
    }
}

/// Prints diagnostics in the chosen format.
pub fn report(sources: &SourceMap, checked: &Checked, format: Format, color: bool) {
    match format {
        Format::Json => output::json(&sources.to_json(&checked.diagnostics)),
        Format::Human => sources.emit_stderr(&checked.diagnostics, color),
    }
}

fn check(path: &Path, format: Format, color: bool) -> ExitCode {
    let text = match read_source(path) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, &path.display().to_string(), &text);
    report(&sources, &checked, format, color);
    if checked.has_errors() {
        ExitCode::from(EXIT_ERRORS)
    } else {
        ExitCode::SUCCESS
    }
}

fn explain(code: Option<&str>, list: bool) -> ExitCode {
    if list || code.is_none() {
        for c in codes::CODES {
            output::line(&format!("{}  {}", c.code, c.summary));
        }
        return ExitCode::SUCCESS;
    }
    let code = code.unwrap_or_default();
    match codes::lookup(code) {
        Some(info) => {
            output::out(info.doc);
            ExitCode::SUCCESS
        }
        None => usage_error(&format!(
            "unknown diagnostic code `{code}`; `lpkc explain --list` lists every code"
        )),
    }
}

/// Loads a source file and compiles the chosen program (diagnostics are
/// printed; errors give the exit code). A compiled artifact (told apart
/// by its first bytes, not its name) is loaded and validated instead.
pub fn load(
    path: &Path,
    program: &ProgramArg,
    color: bool,
) -> Result<(SourceMap, model::program::Program), ExitCode> {
    if let Some(loaded) = crate::artifact_cmd::try_load(path, program, color) {
        return loaded;
    }
    let text = read_source(path)?;
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, &path.display().to_string(), &text);
    if checked.has_errors() {
        sources.emit_stderr(&checked.diagnostics, color);
        return Err(ExitCode::from(EXIT_ERRORS));
    }
    let hir = compiler::pipeline::select_program(&checked.module, program.program.as_deref())
        .map_err(|e| usage_error(&e.to_string()))?;
    let compiled = compiler::pipeline::compile_program(&checked.module, hir, &sources);
    Ok((sources, compiled))
}

/// Binds the parameters of `-p` (usage errors for unknown names, input
/// errors for unmet `require`s).
pub fn bind<'p>(
    program: &'p model::program::Program,
    args: &InstanceArgs,
) -> Result<model::program::Instance<'p>, ExitCode> {
    use model::program::BindError;
    program.bind(&args.params).map_err(|e| match e {
        BindError::Unknown { .. } | BindError::Missing(_) => usage_error(&e.to_string()),
        other => {
            eprintln!("error: {other}");
            ExitCode::from(EXIT_ERRORS)
        }
    })
}

fn fmt(path: &Path, check_only: bool, to_stdout: bool, color: bool) -> ExitCode {
    let text = match read_source(path) {
        Ok(t) => t,
        Err(code) => return code,
    };
    match grammar::fmt::format_source(&text) {
        Ok(formatted) => {
            if to_stdout {
                output::out(&formatted);
                ExitCode::SUCCESS
            } else if check_only {
                if formatted == text {
                    ExitCode::SUCCESS
                } else {
                    eprintln!(
                        "{} is not formatted; run `lpkc fmt {}`",
                        path.display(),
                        path.display()
                    );
                    ExitCode::from(EXIT_ERRORS)
                }
            } else if formatted == text {
                ExitCode::SUCCESS
            } else {
                match std::fs::write(path, formatted) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => usage_error(&format!("cannot write {}: {e}", path.display())),
                }
            }
        }
        Err(_) => {
            // Report the syntax errors the way `check` does.
            let mut sources = SourceMap::new();
            let checked = check_source(&mut sources, &path.display().to_string(), &text);
            sources.emit_stderr(&checked.diagnostics, color);
            ExitCode::from(EXIT_ERRORS)
        }
    }
}

fn plans(path: &Path, program: &ProgramArg, color: bool) -> ExitCode {
    match load(path, program, color) {
        Ok((_, p)) => {
            output::out(&compiler::explore::plans_text::plans_text(&p));
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

fn query(
    path: &Path,
    args: &InstanceArgs,
    commands: &[String],
    format: Format,
    color: bool,
) -> ExitCode {
    use compiler::explore::query::{answer, answer_json, answer_text, parse_command};
    let (_, program) = match load(path, &args.program, color) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let inst = match bind(&program, args) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let mut engine = model::query::Engine::new(&inst);
    let mut failed = false;
    let mut run_one = |line: &str| {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return;
        }
        let result = parse_command(&program, line).and_then(|q| answer(&mut engine, &q));
        match (result, format) {
            (Ok(a), Format::Json) => output::json(&answer_json(&program, line, &a)),
            (Ok(a), Format::Human) => output::out(&answer_text(&program, &a)),
            (Err(e), Format::Json) => {
                failed = true;
                output::json(&serde_json::json!({"cmd": line, "error": e.to_string()}));
            }
            (Err(e), Format::Human) => {
                failed = true;
                eprintln!("error: {line}: {e}");
            }
        }
    };
    if commands.is_empty() {
        use std::io::BufRead;
        for line in std::io::stdin().lock().lines() {
            match line {
                Ok(l) => run_one(&l),
                Err(e) => {
                    eprintln!("error: cannot read stdin: {e}");
                    failed = true;
                    break;
                }
            }
        }
    } else {
        for c in commands {
            run_one(c);
        }
    }
    if failed {
        ExitCode::from(EXIT_ERRORS)
    } else {
        ExitCode::SUCCESS
    }
}

fn dag(
    path: &Path,
    args: &InstanceArgs,
    format: DagFormat,
    method: Method,
    max_tasks: usize,
    color: bool,
) -> ExitCode {
    use model::dag::{expand, from_plans};
    let (_, program) = match load(path, &args.program, color) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let inst = match bind(&program, args) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let (dag, violations) = match method {
        Method::Plans => match from_plans(&inst, max_tasks) {
            Ok(d) => (d, Vec::new()),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(EXIT_ERRORS);
            }
        },
        Method::Expand => match expand(&inst, max_tasks) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(EXIT_ERRORS);
            }
        },
    };
    for v in &violations {
        eprintln!("error: {}", v.describe(&inst));
    }
    match format {
        DagFormat::Json => output::json(&compiler::explore::dagfmt::dag_json(&inst, &dag)),
        DagFormat::Dot => output::out(&compiler::explore::dagfmt::dag_dot(&inst, &dag)),
    }
    if violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_ERRORS)
    }
}

#[allow(clippy::too_many_arguments)]
fn stats(
    path: &Path,
    args: &InstanceArgs,
    format: Format,
    max_tasks: u64,
    block: u64,
    svg: Option<&Path>,
    color: bool,
) -> ExitCode {
    let (_, program) = match load(path, &args.program, color) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let inst = match bind(&program, args) {
        Ok(i) => i,
        Err(code) => return code,
    };
    if block == 0 || block > 1 << 20 {
        return usage_error(&format!(
            "--block must be between 1 and 1048576, found {block}"
        ));
    }
    let opts = compiler::explore::stats::StatsOptions {
        max_tasks,
        block,
        ..Default::default()
    };
    match compiler::explore::stats::analyse(&inst, &opts) {
        Ok(a) => {
            let s = a.stats;
            if let Some(out) = svg {
                let title = format!(
                    "{} {}: tasks ready per step",
                    program.name,
                    crate::explore_cmd::params_text(&inst)
                );
                let written = compiler::explore::stats::profile_svg(&s, &title)
                    .map_err(|e| e.to_string())
                    .and_then(|text| {
                        std::fs::write(out, text)
                            .map_err(|e| format!("cannot write {}: {e}", out.display()))
                    });
                if let Err(e) = written {
                    eprintln!("error: {e}");
                    return ExitCode::from(EXIT_ERRORS);
                }
            }
            match format {
                Format::Json => output::json(&serde_json::to_value(&s).unwrap_or_default()),
                Format::Human => output::out(&compiler::explore::stats::stats_text(&s)),
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_ERRORS)
        }
    }
}
