//! `lpkc dag`: the expanded task DAG of one instance as JSON or DOT, from
//! the dependence plans or by brute force (which also reports rule
//! violations).

use crate::args::{GlobalOpts, InstanceArgs};
use crate::error::CliError;
use crate::{instance, load, output};
use clap::ValueEnum;
use lpk_compiler::explore::limit::TaskLimit;
use lpk_model::dag::{expand, from_plans};

/// Arguments of `lpkc dag`.
#[derive(clap::Args, Debug)]
pub(crate) struct DagArgs {
    #[command(flatten)]
    pub(crate) instance: InstanceArgs,
    /// JSON (docs/cli.md) or Graphviz DOT.
    #[arg(long, value_enum, default_value_t = DagFormat::Json)]
    pub(crate) format: DagFormat,
    /// `plans`: edges from the dependence plans; `expand`: brute force,
    /// running the program sequentially (the oracle), which also reports
    /// rule violations.
    #[arg(long, value_enum, default_value_t = Method::Plans)]
    pub(crate) method: Method,
    /// Refuse instances with more tasks than this (counted first, so the
    /// refusal is immediate).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub(crate) max_tasks: usize,
}

/// Output format of `dag`.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub(crate) enum DagFormat {
    /// `{"program", "params", "tasks", "edges"}`.
    Json,
    /// Graphviz DOT.
    Dot,
}

/// How `dag` finds the edges.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub(crate) enum Method {
    /// From the dependence plans.
    Plans,
    /// By running the program sequentially (brute force).
    Expand,
}

/// Runs `lpkc dag`.
pub(crate) fn run(args: &DagArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let program = load::explored(&args.instance, global)?;
    let inst = instance::bind(&program, &args.instance)?;
    // Count before expanding: an instance over the limit is refused
    // before any task is kept.
    TaskLimit {
        max: args.max_tasks as u64,
        flag: "--max-tasks",
    }
    .check(&inst)
    .map_err(|e| CliError::Input(e.to_string()))?;
    let (dag, violations) = match args.method {
        Method::Plans => from_plans(&inst, args.max_tasks).map(|d| (d, Vec::new())),
        Method::Expand => expand(&inst, args.max_tasks),
    }
    .map_err(|e| CliError::Input(e.to_string()))?;
    for v in &violations {
        eprintln!("error: {}", v.describe(&inst));
    }
    match args.format {
        DagFormat::Json => output::json(&lpk_compiler::explore::dagfmt::dag_json(&inst, &dag)),
        DagFormat::Dot => output::out(&lpk_compiler::explore::dagfmt::dag_dot(&inst, &dag)),
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(CliError::Reported)
    }
}
