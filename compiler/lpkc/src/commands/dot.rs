//! `lpkc dot`: Graphviz DOT of the program-level graph (without `-p`) or
//! of one instance's expanded DAG, refused above `--max-tasks` with the
//! instance's task count.

use crate::args::{GlobalOpts, InstanceArgs};
use crate::error::CliError;
use crate::{instance, load, output};
use lpk_compiler::explore::limit::TaskLimit;

/// Arguments of `lpkc dot`.
#[derive(clap::Args, Debug)]
pub(crate) struct DotArgs {
    #[command(flatten)]
    pub(crate) instance: InstanceArgs,
    /// Group the expanded DAG's tasks by the value of this loop
    /// variable (needs `-p`).
    #[arg(long, value_name = "VAR")]
    pub(crate) cluster: Option<String>,
    /// Refuse to draw an expanded DAG with more tasks than this.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub(crate) max_tasks: usize,
}

/// Runs `lpkc dot`.
pub(crate) fn run(args: &DotArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let program = load::explored(&args.instance, global)?;
    let max_tasks = args.max_tasks;
    if args.instance.params.is_empty() {
        if args.cluster.is_some() {
            return Err(CliError::Usage(
                "`--cluster` needs an instance: give its parameters with -p".into(),
            ));
        }
        output::out(&lpk_compiler::explore::dot::program_dot(&program));
        return Ok(());
    }
    let inst = instance::bind(&program, &args.instance)?;
    // Count first (flat memory, bounded work), so that the refusal is
    // immediate and says how many tasks there are.
    TaskLimit {
        max: max_tasks as u64,
        flag: "--max-tasks",
    }
    .check(&inst)
    .map_err(|e| {
        CliError::Input(
            e.with_advice(
                "Graphviz is slow on big graphs, so raise the limit with --max-tasks N if you mean it, \
                 or use smaller parameters",
            )
            .to_string(),
        )
    })?;
    let dag =
        lpk_model::dag::from_plans(&inst, max_tasks).map_err(|e| CliError::Input(e.to_string()))?;
    let text = lpk_compiler::explore::dot::expanded_dot(&inst, &dag, args.cluster.as_deref())
        .map_err(|e| CliError::Usage(e.to_string()))?;
    output::out(&text);
    Ok(())
}
