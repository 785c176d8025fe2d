//! `lpkc lint`: runs the front end, then the lint analyses of the chosen
//! program, and prints the diagnostics and a one-line-per-rule summary
//! (proved / checked / violated). Exit code 1 on errors, or on warnings
//! with `--deny warnings`.

use crate::args::{Format, GlobalOpts, InstanceArgs};
use crate::error::CliError;
use crate::load::{self, Input};
use crate::{instance, output, report};
use lpk_compiler::diag::{Diagnostic, Severity, SourceMap};
use lpk_compiler::explore::limit::TaskLimit;
use lpk_compiler::lint::{lint_program, LintOptions, RuleLine, DEFAULT_BOUND, DEFAULT_TASK_BUDGET};
use lpk_compiler::pipeline::{compile_source, CompileError, LintGate};

/// Arguments of `lpkc lint`.
#[derive(clap::Args, Debug)]
pub(crate) struct LintArgs {
    #[command(flatten)]
    pub(crate) instance: InstanceArgs,
    /// `--deny warnings`: exit with 1 on warnings too.
    #[arg(long, value_name = "warnings")]
    pub(crate) deny: Vec<String>,
    /// Do not report this code (repeatable).
    #[arg(long, value_name = "CODE")]
    pub(crate) allow: Vec<String>,
    /// Largest parameter value of the exhaustive check.
    #[arg(long, value_name = "B", default_value_t = DEFAULT_BOUND)]
    pub(crate) bound: i64,
    /// Tasks the exhaustive check may expand over all instances.
    #[arg(long, value_name = "TASKS", default_value_t = DEFAULT_TASK_BUDGET)]
    pub(crate) budget: usize,
    /// Diagnostics as text on stderr or as JSON on stdout.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) format: Format,
}

/// Runs `lpkc lint`.
pub(crate) fn run(args: &LintArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let (deny_warnings, allowed) = levels(args)?;
    if args.bound < 0 {
        return Err(CliError::Usage("--bound must be at least 0".into()));
    }
    let opts = LintOptions {
        bound: args.bound,
        task_budget: args.budget,
        ..LintOptions::default()
    };
    let text = match load::read_input(&args.instance.file)? {
        Input::Source(text) => text,
        Input::Artifact(bytes) => {
            let report = lint_artifact(args, global, &bytes, &opts)?;
            return finish(args, global, report, &allowed, deny_warnings);
        }
    };
    let report = lint_source(args, global, &text, &opts)?;
    finish(args, global, report, &allowed, deny_warnings)
}

/// `--deny warnings` and the codes of `--allow`.
fn levels(args: &LintArgs) -> Result<(bool, Vec<&'static str>), CliError> {
    let mut deny_warnings = false;
    for d in &args.deny {
        if d == "warnings" {
            deny_warnings = true;
        } else {
            return Err(CliError::Usage(format!(
                "--deny takes `warnings`, found `{d}`"
            )));
        }
    }
    let mut allowed: Vec<&'static str> = Vec::new();
    for a in &args.allow {
        match lpk_compiler::diag::codes::lookup(a) {
            Some(info) => allowed.push(info.code),
            None => {
                return Err(CliError::Usage(format!(
                    "--allow: unknown diagnostic code `{a}`; `lpkc explain --list` lists every code"
                )))
            }
        }
    }
    Ok((deny_warnings, allowed))
}

/// Compiles and lints a source: its diagnostics (compile errors, or the
/// lint's) and rule summary.
fn lint_source(
    args: &LintArgs,
    global: &GlobalOpts,
    text: &str,
    opts: &LintOptions,
) -> Result<Report, CliError> {
    let mut sources = SourceMap::new();
    let mut summary = Vec::new();
    let mut program_name = String::new();
    let mut checked_instance = None;
    // A source with errors still gets its report (and, as JSON, an empty
    // lint summary); only a program that cannot be chosen is a usage error.
    let diagnostics = match compile_source(
        &mut sources,
        &args.instance.file.display().to_string(),
        text,
        args.instance.program.program.as_deref(),
        LintGate::Off,
    ) {
        Err(CompileError::Diagnostics(d)) => d,
        Err(e @ (CompileError::Select(_) | CompileError::Internal(_))) => {
            return Err(report::compile_failure(
                &sources,
                e,
                args.format,
                global.color,
            ))
        }
        Ok(compiled) => {
            let hir = compiled.hir();
            program_name = hir.name.clone();
            let mut given = if args.instance.params.is_empty() {
                None
            } else {
                Some(instance::bind(&compiled.program, &args.instance)?)
            };
            let refused = refuse_large(&mut given, opts);
            let report = lint_program(
                &compiled.checked.module,
                hir,
                &compiled.program,
                compiled.checked.file,
                opts,
                given.as_ref(),
            );
            checked_instance = given.as_ref().map(instance_of);
            summary = report.summary;
            if let Some(why) = refused {
                summary.push(RuleLine {
                    code: "",
                    rule: "the instance given with -p",
                    status: "not checked",
                    detail: why,
                });
            }
            let mut diagnostics = compiled.checked.diagnostics;
            diagnostics.extend(report.diagnostics);
            diagnostics
        }
    };
    Ok(Report {
        sources,
        diagnostics,
        summary,
        program_name,
        instance: checked_instance,
        skipped: None,
    })
}

/// Counts the instance of `-p` before lint expands it: one over the limit
/// is dropped (not expanded at all) and the reason returned for the
/// summary.
fn refuse_large(
    given: &mut Option<lpk_model::program::Instance<'_>>,
    opts: &LintOptions,
) -> Option<String> {
    let inst = given.as_ref()?;
    let limit = TaskLimit {
        max: opts.instance_max_tasks as u64,
        flag: "the lint limit of",
    };
    let why = limit
        .check(inst)
        .err()?
        .with_advice("lint checks smaller instances only")
        .to_string();
    *given = None;
    Some(why)
}

/// What lint found, ready to print.
struct Report {
    /// The files the diagnostics point into.
    sources: SourceMap,
    diagnostics: Vec<Diagnostic>,
    summary: Vec<RuleLine>,
    program_name: String,
    /// The instance given with `-p`, checked too: its parameters.
    instance: Option<Vec<(String, i64)>>,
    /// Why some rules did not run, if some did not.
    skipped: Option<String>,
}

/// The parameters of an instance, for the report's title and JSON.
fn instance_of(inst: &lpk_model::program::Instance<'_>) -> Vec<(String, i64)> {
    inst.program
        .params
        .iter()
        .zip(&inst.params)
        .map(|(d, &v)| (d.name.clone(), v))
        .collect()
}

/// Prints the report in the chosen format; the exit status follows its
/// errors (and warnings with `--deny warnings`).
fn finish(
    args: &LintArgs,
    global: &GlobalOpts,
    report: Report,
    allowed: &[&str],
    deny_warnings: bool,
) -> Result<(), CliError> {
    let Report {
        sources,
        mut diagnostics,
        summary,
        program_name,
        instance,
        skipped,
    } = report;
    diagnostics.retain(|d| !allowed.contains(&d.code.as_str()));
    let errors = diagnostics.iter().any(|d| d.severity == Severity::Error);
    let warnings = diagnostics.iter().any(|d| d.severity == Severity::Warning);
    match args.format {
        Format::Json => {
            let mut value = sources.to_json(&diagnostics);
            let rules: Vec<serde_json::Value> = summary
                .iter()
                .map(|l| {
                    serde_json::json!({
                        "code": l.code,
                        "rule": l.rule,
                        "status": l.status,
                        "detail": l.detail,
                    })
                })
                .collect();
            let mut lint = serde_json::json!({"program": program_name, "rules": rules});
            if let Some(inst) = &instance {
                let params: serde_json::Map<String, serde_json::Value> =
                    inst.iter().map(|(n, v)| (n.clone(), (*v).into())).collect();
                lint["instance"] = params.into();
            }
            if let Some(why) = &skipped {
                lint["skipped"] = why.as_str().into();
            }
            if let Some(obj) = value.as_object_mut() {
                obj.insert("lint".into(), lint);
            }
            output::json(&value);
        }
        Format::Human => {
            // The diagnostics go to stderr, as `check`'s do; the rule
            // report is the command's output.
            sources.emit_stderr(&diagnostics, global.color);
            let mut text = String::new();
            if !summary.is_empty() {
                text = match &instance {
                    Some(inst) => {
                        let values: Vec<String> =
                            inst.iter().map(|(n, v)| format!("{n}={v}")).collect();
                        format!(
                            "lint of `{program_name}`, with the instance {program_name}({}):\n",
                            values.join(", ")
                        )
                    }
                    None => format!("lint of `{program_name}`:\n"),
                };
                for l in &summary {
                    if l.code.is_empty() {
                        text.push_str(&format!("  {}: {}: {}\n", l.rule, l.status, l.detail));
                    } else {
                        text.push_str(&format!("  {} {}: {}\n", l.code, l.rule, l.detail));
                    }
                }
            }
            if let Some(why) = &skipped {
                text.push_str(&format!("note: {why}\n"));
            }
            output::out(&text);
        }
    }
    if errors || (deny_warnings && warnings) {
        Err(CliError::Reported)
    } else {
        Ok(())
    }
}

/// Lints a compiled artifact: the rules that need only the plans
/// (`lpk_compiler::lint::artifact`); the unused-name warnings need the
/// source's names and are skipped, saying so.
fn lint_artifact(
    args: &LintArgs,
    global: &GlobalOpts,
    bytes: &[u8],
    opts: &LintOptions,
) -> Result<Report, CliError> {
    let path = &args.instance.file;
    let art = lpk_model::artifact::decode(bytes)
        .map_err(|e| report::artifact_error(path, &e, args.format, global.color))?
        .artifact;
    let p = &art.program;
    if let Some(name) = args.instance.program.program.as_deref() {
        if name != p.name {
            return Err(CliError::Usage(format!(
                "no program named `{name}` (the artifact holds: {})",
                p.name
            )));
        }
    }
    let mut given = if args.instance.params.is_empty() {
        None
    } else {
        Some(instance::bind(p, &args.instance)?)
    };
    let refused = refuse_large(&mut given, opts);
    let mut sources = SourceMap::new();
    let mut lint =
        lpk_compiler::lint::artifact::lint_artifact(&art, &mut sources, opts, given.as_ref());
    if let Some(why) = refused {
        lint.summary.push(RuleLine {
            code: "",
            rule: "the instance given with -p",
            status: "not checked",
            detail: why,
        });
    }
    Ok(Report {
        sources,
        diagnostics: lint.diagnostics,
        summary: lint.summary,
        program_name: p.name.clone(),
        instance: given.as_ref().map(instance_of),
        skipped: Some(format!(
            "{} is an artifact: the unused-name warnings (W0503 to W0507) need the source \
             and were not checked",
            path.display()
        )),
    })
}
