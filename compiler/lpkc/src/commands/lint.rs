//! `lpkc lint`: runs the front end, then the lint analyses of the chosen
//! program, and prints the diagnostics and a one-line-per-rule summary
//! (proved / checked / violated). Exit code 1 on errors, or on warnings
//! with `--deny warnings`.

use crate::args::{Format, GlobalOpts, InstanceArgs};
use crate::error::CliError;
use crate::{instance, load, output};
use compiler::diag::{Severity, SourceMap};
use compiler::explore::limit::TaskLimit;
use compiler::lint::{lint_program, LintOptions, RuleLine, DEFAULT_BOUND, DEFAULT_TASK_BUDGET};
use compiler::pipeline::{compile_source, CompileError, LintGate};
use std::path::PathBuf;

/// Arguments of `lpkc lint`.
#[derive(clap::Args, Debug)]
pub struct LintArgs {
    /// The `.lpk` source file.
    pub file: PathBuf,
    #[command(flatten)]
    pub instance: InstanceArgs,
    /// `--deny warnings`: exit with 1 on warnings too.
    #[arg(long, value_name = "warnings")]
    pub deny: Vec<String>,
    /// Do not report this code (repeatable).
    #[arg(long, value_name = "CODE")]
    pub allow: Vec<String>,
    /// Largest parameter value of the exhaustive check.
    #[arg(long, value_name = "B", default_value_t = DEFAULT_BOUND)]
    pub bound: i64,
    /// Tasks the exhaustive check may expand over all instances.
    #[arg(long, value_name = "TASKS", default_value_t = DEFAULT_TASK_BUDGET)]
    pub budget: usize,
    /// Diagnostics as text on stderr or as JSON on stdout.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `lpkc lint`.
pub fn run(args: &LintArgs, global: &GlobalOpts) -> Result<(), CliError> {
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
        match compiler::diag::codes::lookup(a) {
            Some(info) => allowed.push(info.code),
            None => {
                return Err(CliError::Usage(format!(
                    "--allow: unknown diagnostic code `{a}`; `lpkc explain --list` lists every code"
                )))
            }
        }
    }
    if args.bound < 0 {
        return Err(CliError::Usage("--bound must be at least 0".into()));
    }
    let text = load::read_source(&args.file)?;
    let mut sources = SourceMap::new();
    let mut summary = Vec::new();
    let mut program_name = String::new();
    // A source with errors still gets its report (and, as JSON, an empty
    // lint summary); only a program that cannot be chosen is a usage error.
    let mut diagnostics = match compile_source(
        &mut sources,
        &args.file.display().to_string(),
        &text,
        args.instance.program.program.as_deref(),
        LintGate::Off,
    ) {
        Err(CompileError::Diagnostics(d)) => d,
        Err(CompileError::Select(e)) => return Err(CliError::Usage(e.to_string())),
        Ok(compiled) => {
            let hir = compiled.hir();
            program_name = hir.name.clone();
            let opts = LintOptions {
                bound: args.bound,
                task_budget: args.budget,
                ..LintOptions::default()
            };
            let mut given = if args.instance.params.is_empty() {
                None
            } else {
                Some(instance::bind(&compiled.program, &args.instance)?)
            };
            // Count before expanding the instance of -p: one over the
            // limit is not expanded at all, and the summary says why.
            let mut refused = None;
            if let Some(inst) = &given {
                let limit = TaskLimit {
                    max: opts.instance_max_tasks as u64,
                    flag: "the lint limit of",
                };
                if let Err(e) = limit.check(inst) {
                    refused = Some(
                        e.with_advice("lint checks smaller instances only")
                            .to_string(),
                    );
                }
            }
            if refused.is_some() {
                given = None;
            }
            let report = lint_program(
                &compiled.checked.module,
                hir,
                &compiled.program,
                compiled.checked.file,
                &opts,
                given.as_ref(),
            );
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
    diagnostics.retain(|d| !allowed.contains(&d.code));
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
            if let Some(obj) = value.as_object_mut() {
                obj.insert(
                    "lint".into(),
                    serde_json::json!({"program": program_name, "rules": rules}),
                );
            }
            output::json(&value);
        }
        Format::Human => {
            sources.emit_stderr(&diagnostics, global.color);
            if !summary.is_empty() {
                let mut text = format!("lint of `{program_name}`:\n");
                for l in &summary {
                    if l.code.is_empty() {
                        text.push_str(&format!("  {}: {}: {}\n", l.rule, l.status, l.detail));
                    } else {
                        text.push_str(&format!("  {} {}: {}\n", l.code, l.rule, l.detail));
                    }
                }
                eprint!("{text}");
            }
        }
    }
    if errors || (deny_warnings && warnings) {
        Err(CliError::Reported)
    } else {
        Ok(())
    }
}
