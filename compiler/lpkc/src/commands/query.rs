//! `lpkc query`: answer dependency queries (children, parents, writer,
//! readers, tasks) given with `-e` or read from stdin one a line. A bad
//! command is reported on its line and the next one runs; the exit code
//! says whether any failed.
//!
//! Answers are written into one buffer on locked stdout for the whole
//! invocation ([`output::Stream`]), flushed before the command waits for
//! more input, so a script feeding commands one at a time still gets each
//! answer at once. No answer may hold more than `--max-tasks` tasks:
//! `tasks` is counted first and refused above it, the other commands stop
//! collecting as soon as they pass it.

use crate::args::{Format, GlobalOpts, InstanceArgs};
use crate::error::CliError;
use crate::{instance, load, output};
use lpk_compiler::explore::query::{parse_command, AnswerFormat, Answerer, DEFAULT_MAX_TASKS};
use std::io::BufRead;

/// Arguments of `lpkc query`.
#[derive(clap::Args, Debug)]
pub(crate) struct QueryArgs {
    #[command(flatten)]
    pub(crate) instance: InstanceArgs,
    /// A command to run (repeatable).
    #[arg(short = 'e', long = "eval", value_name = "CMD")]
    pub(crate) commands: Vec<String>,
    /// Answers as text, or one JSON object a line.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) format: Format,
    /// The most tasks one answer may hold; a larger answer is an error on
    /// its line (`tasks` is counted first and refused before it runs).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_TASKS)]
    pub(crate) max_tasks: u64,
}

/// Runs `lpkc query`.
pub(crate) fn run(args: &QueryArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let program = load::explored(&args.instance, global)?;
    let inst = instance::bind(&program, &args.instance)?;
    let mut answerer = Answerer::new(&inst, args.max_tasks, "--max-tasks");
    let format = match args.format {
        Format::Json => AnswerFormat::Json,
        Format::Human => AnswerFormat::Text,
    };
    let mut stream = output::Stream::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut failed = false;
    let mut run_one = |line: &str, stream: &mut output::Stream| {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return;
        }
        buf.clear();
        let result =
            parse_command(&program, line).and_then(|q| answerer.answer(&q, line, format, &mut buf));
        match result {
            Ok(_) => stream.write(&buf),
            Err(e) => {
                failed = true;
                match format {
                    AnswerFormat::Json => {
                        let v = serde_json::json!({"cmd": line, "error": e.to_string()});
                        buf.clear();
                        let _ = serde_json::to_writer(&mut buf, &v);
                        buf.push(b'\n');
                        stream.write(&buf);
                    }
                    AnswerFormat::Text => {
                        // Keep answers and errors in order on a shared
                        // terminal or file.
                        stream.flush();
                        eprintln!("error: {line}: {e}");
                    }
                }
            }
        }
        // An answer buffer grown by one huge answer is not kept.
        if buf.capacity() > 1 << 20 {
            buf = Vec::new();
        }
    };
    if args.commands.is_empty() {
        let mut reader = std::io::BufReader::with_capacity(1 << 16, std::io::stdin().lock());
        let mut line = String::new();
        loop {
            // About to wait for input: whoever sent the last command gets
            // its answer first.
            if reader.buffer().is_empty() {
                stream.flush();
            }
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) => break,
                Ok(_) => run_one(&line, &mut stream),
                Err(e) => {
                    stream.flush();
                    eprintln!("error: cannot read stdin: {e}");
                    failed = true;
                    break;
                }
            }
        }
    } else {
        for c in &args.commands {
            run_one(c, &mut stream);
        }
    }
    stream.flush();
    if failed {
        Err(CliError::Reported)
    } else {
        Ok(())
    }
}
