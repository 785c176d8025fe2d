//! `lpkc dot`: Graphviz DOT of the program-level graph (without `-p`) or
//! of one instance's expanded DAG, refused above `--max-tasks` with the
//! instance's task count.

use crate::args::{GlobalOpts, InstanceArgs};
use crate::error::CliError;
use crate::{instance, load, output};
use std::ops::ControlFlow;
use std::path::PathBuf;

/// Arguments of `lpkc dot`.
#[derive(clap::Args, Debug)]
pub struct DotArgs {
    /// The `.lpk` source file.
    pub file: PathBuf,
    #[command(flatten)]
    pub instance: InstanceArgs,
    /// Group the expanded DAG's tasks by the value of this loop
    /// variable (needs `-p`).
    #[arg(long, value_name = "VAR")]
    pub cluster: Option<String>,
    /// Refuse to draw an expanded DAG with more tasks than this.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub max_tasks: usize,
}

/// Runs `lpkc dot`.
pub fn run(args: &DotArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let (_, program) = load::program(&args.file, &args.instance.program, global)?;
    let max_tasks = args.max_tasks;
    if args.instance.params.is_empty() {
        if args.cluster.is_some() {
            return Err(CliError::Usage(
                "`--cluster` needs an instance: give its parameters with -p".into(),
            ));
        }
        output::out(&compiler::explore::dot::program_dot(&program));
        return Ok(());
    }
    let inst = instance::bind(&program, &args.instance)?;
    // Count first, so that the message can say how many tasks there are.
    // The count itself stops at a far larger bound so it cannot run long.
    let count_limit = max_tasks.saturating_mul(1000).max(1_000_000);
    let mut count = 0usize;
    inst.for_each_task(&mut |_| {
        count += 1;
        if count > count_limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .map_err(|e| CliError::Input(e.to_string()))?;
    if count > max_tasks {
        // Counting stops far above the limit: then the count is a lower
        // bound; the one limit that applies is --max-tasks.
        let how_many = if count > count_limit {
            format!("more than {count_limit} tasks")
        } else {
            format!("{count} tasks")
        };
        return Err(CliError::Input(format!(
            "the instance {}({}) has {how_many}, and `dot` draws at most --max-tasks \
             {max_tasks}; Graphviz is slow on big graphs, so raise --max-tasks if you mean it, \
             or use smaller parameters",
            program.name,
            instance::params_text(&inst)
        )));
    }
    let dag =
        model::dag::from_plans(&inst, max_tasks).map_err(|e| CliError::Input(e.to_string()))?;
    let text = compiler::explore::dot::expanded_dot(&inst, &dag, args.cluster.as_deref())
        .map_err(|e| CliError::Usage(e.to_string()))?;
    output::out(&text);
    Ok(())
}
