//! `lpkc lint`: runs the front end, then the lint analyses of the chosen
//! program, and prints the diagnostics and a one-line-per-rule summary
//! (proved / checked / violated). Exit code 1 on errors, or on warnings
//! with `--deny warnings`.

use crate::commands::{read_source, usage_error, EXIT_ERRORS};
use crate::{output, Format, InstanceArgs};
use compiler::diag::{Severity, SourceMap};
use compiler::lint::{lint_program, LintOptions};
use compiler::pipeline::check_source;
use std::path::Path;
use std::process::ExitCode;

/// The options of `lpkc lint`.
pub struct LintArgs<'a> {
    /// Program and `-p` values.
    pub instance: &'a InstanceArgs,
    /// `--deny` values (only `warnings`).
    pub deny: &'a [String],
    /// `--allow` codes.
    pub allow: &'a [String],
    /// `--bound`.
    pub bound: i64,
    /// `--budget`.
    pub budget: usize,
    /// Output format.
    pub format: Format,
}

/// Runs `lpkc lint`.
pub fn lint(path: &Path, args: &LintArgs<'_>, color: bool) -> ExitCode {
    let mut deny_warnings = false;
    for d in args.deny {
        if d == "warnings" {
            deny_warnings = true;
        } else {
            return usage_error(&format!("--deny takes `warnings`, found `{d}`"));
        }
    }
    let mut allowed: Vec<&'static str> = Vec::new();
    for a in args.allow {
        match compiler::diag::codes::lookup(a) {
            Some(info) => allowed.push(info.code),
            None => {
                return usage_error(&format!(
                    "--allow: unknown diagnostic code `{a}`; `lpkc explain --list` lists every code"
                ))
            }
        }
    }
    if args.bound < 0 {
        return usage_error("--bound must be at least 0");
    }
    let text = match read_source(path) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let mut sources = SourceMap::new();
    let checked = check_source(&mut sources, &path.display().to_string(), &text);
    let mut diagnostics = checked.diagnostics.clone();
    let mut summary = Vec::new();
    let mut program_name = String::new();
    if !checked.has_errors() {
        let hir = match compiler::pipeline::select_program(
            &checked.module,
            args.instance.program.program.as_deref(),
        ) {
            Ok(h) => h,
            Err(e) => return usage_error(&e.to_string()),
        };
        program_name = hir.name.clone();
        let program = compiler::pipeline::compile_program(&checked.module, hir, &sources);
        let given = if args.instance.params.is_empty() {
            None
        } else {
            match crate::commands::bind(&program, args.instance) {
                Ok(i) => Some(i),
                Err(code) => return code,
            }
        };
        let opts = LintOptions {
            bound: args.bound,
            task_budget: args.budget,
            ..LintOptions::default()
        };
        let report = lint_program(
            &checked.module,
            hir,
            &program,
            checked.file,
            &opts,
            given.as_ref(),
        );
        diagnostics.extend(report.diagnostics);
        summary = report.summary;
    }
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
            if let Some(obj) = value.as_object_mut() {
                obj.insert(
                    "lint".into(),
                    serde_json::json!({"program": program_name, "rules": rules}),
                );
            }
            output::json(&value);
        }
        Format::Human => {
            sources.emit_stderr(&diagnostics, color);
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
        ExitCode::from(EXIT_ERRORS)
    } else {
        ExitCode::SUCCESS
    }
}
