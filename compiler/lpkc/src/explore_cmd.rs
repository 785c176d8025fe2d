//! `lpkc dot` and the helpers `stats` shares with it: reading the
//! instance, enforcing `--max-tasks`, and writing the DOT text.

use crate::commands::{bind, load, usage_error, EXIT_ERRORS};
use crate::output;
use crate::InstanceArgs;
use model::program::Instance;
use std::ops::ControlFlow;
use std::path::Path;
use std::process::ExitCode;

/// `N=4, M=2`: the bound parameters, for titles.
pub fn params_text(inst: &Instance<'_>) -> String {
    inst.program
        .params
        .iter()
        .zip(&inst.params)
        .map(|(d, v)| format!("{}={v}", d.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `lpkc dot FILE [-p ..] [--cluster VAR] [--max-tasks N]`.
pub fn dot(
    path: &Path,
    args: &InstanceArgs,
    cluster: Option<&str>,
    max_tasks: usize,
    color: bool,
) -> ExitCode {
    let (_, program) = match load(path, &args.program, color) {
        Ok(x) => x,
        Err(code) => return code,
    };
    if args.params.is_empty() {
        if cluster.is_some() {
            return usage_error("`--cluster` needs an instance: give its parameters with -p");
        }
        output::out(&compiler::explore::dot::program_dot(&program));
        return ExitCode::SUCCESS;
    }
    let inst = match bind(&program, args) {
        Ok(i) => i,
        Err(code) => return code,
    };
    // Count first, so that the message can say how many tasks there are.
    // The count itself stops at a far larger bound so it cannot run long.
    let count_limit = max_tasks.saturating_mul(1000).max(1_000_000);
    let mut count = 0usize;
    let walked = inst.for_each_task(&mut |_| {
        count += 1;
        if count > count_limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    if let Err(e) = walked {
        eprintln!("error: {e}");
        return ExitCode::from(EXIT_ERRORS);
    }
    if count > max_tasks {
        let how_many = if count > count_limit {
            format!("more than {count_limit}")
        } else {
            count.to_string()
        };
        eprintln!(
            "error: the instance {}({}) has {how_many} tasks, more than --max-tasks {max_tasks}; \
             Graphviz is slow on big graphs, so raise the limit with --max-tasks N if you mean it, \
             or use smaller parameters",
            program.name,
            params_text(&inst)
        );
        return ExitCode::from(EXIT_ERRORS);
    }
    let dag = match model::dag::from_plans(&inst, max_tasks) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_ERRORS);
        }
    };
    match compiler::explore::dot::expanded_dot(&inst, &dag, cluster) {
        Ok(text) => {
            output::out(&text);
            ExitCode::SUCCESS
        }
        Err(e) => usage_error(&e.to_string()),
    }
}
