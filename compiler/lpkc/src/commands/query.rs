//! `lpkc query`: answer dependency queries (children, parents, writer,
//! readers, tasks) given with `-e` or read from stdin one a line. A bad
//! command is reported on its line and the next one runs; the exit code
//! says whether any failed.

use crate::args::{Format, GlobalOpts, InstanceArgs};
use crate::error::CliError;
use crate::{instance, load, output};
use compiler::explore::query::{answer, answer_json, answer_text, parse_command};
use std::path::PathBuf;

/// Arguments of `lpkc query`.
#[derive(clap::Args, Debug)]
pub struct QueryArgs {
    /// The `.lpk` source file.
    pub file: PathBuf,
    #[command(flatten)]
    pub instance: InstanceArgs,
    /// A command to run (repeatable).
    #[arg(short = 'e', long = "eval", value_name = "CMD")]
    pub commands: Vec<String>,
    /// Answers as text, or one JSON object a line.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `lpkc query`.
pub fn run(args: &QueryArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let (_, program) = load::program(&args.file, &args.instance.program, global)?;
    let inst = instance::bind(&program, &args.instance)?;
    let mut engine = model::query::Engine::new(&inst);
    let mut failed = false;
    let mut run_one = |line: &str| {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return;
        }
        let result = parse_command(&program, line).and_then(|q| answer(&mut engine, &q));
        match (result, args.format) {
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
    if args.commands.is_empty() {
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
        for c in &args.commands {
            run_one(c);
        }
    }
    if failed {
        Err(CliError::Reported)
    } else {
        Ok(())
    }
}
