//! `lpkc repl`: the rustyline glue around `lpk_compiler::explore::repl::Session`.
//! With a terminal: a prompt, history (loaded at start, saved at exit),
//! Tab completion, Ctrl-C clearing the line at the prompt and cancelling a
//! running command (a SIGINT handler sets the session's cancel flag), and
//! Ctrl-D leaving. Without one: commands are read from stdin one a line,
//! like `lpkc query`, with no prompt.

use crate::args::{GlobalOpts, InstanceArgs};
use crate::error::CliError;
use crate::{instance, load, output};
use lpk_compiler::explore::repl::{Completions, Reply, Session};
use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{CompletionType, Config, Context, Editor, Helper};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// Arguments of `lpkc repl`.
#[derive(clap::Args, Debug)]
pub(crate) struct ReplArgs {
    #[command(flatten)]
    pub(crate) instance: InstanceArgs,
    /// The history file.
    ///
    /// [default: $XDG_STATE_HOME/lpkc/history, else ~/.lpkc_history]
    #[arg(long, value_name = "FILE", conflicts_with = "no_history")]
    pub(crate) history: Option<PathBuf>,
    /// Keep no history file.
    #[arg(long)]
    pub(crate) no_history: bool,
    /// The most tasks an answer may hold, and the most an instance may
    /// have for `critical-path`, `path` and `tasks --all` (refused at once
    /// above it, before any expansion).
    #[arg(long, value_name = "N", default_value_t = lpk_compiler::explore::query::DEFAULT_MAX_TASKS)]
    pub(crate) max_tasks: u64,
}

/// The rustyline helper: completion only.
struct LpkHelper {
    completions: Completions,
}

impl Completer for LpkHelper {
    type Candidate = String;
    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(self.completions.complete(line, pos))
    }
}
impl Hinter for LpkHelper {
    type Hint = String;
}
impl Highlighter for LpkHelper {}
impl Validator for LpkHelper {}
impl Helper for LpkHelper {}

/// The history file: `--history`, else `$XDG_STATE_HOME/lpkc/history`,
/// else `~/.lpkc_history` (none without a home).
fn history_path(given: Option<&PathBuf>) -> Option<PathBuf> {
    if let Some(given) = given {
        return Some(given.clone());
    }
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|s| !s.is_empty()) {
        return Some(PathBuf::from(state).join("lpkc").join("history"));
    }
    std::env::var_os("HOME")
        .filter(|s| !s.is_empty())
        .map(|h| PathBuf::from(h).join(".lpkc_history"))
}

/// Runs `lpkc repl`.
pub(crate) fn run(args: &ReplArgs, global: &GlobalOpts) -> Result<(), CliError> {
    let (sources, program) = load::program_of(&args.instance, global, load::Rules::Warn)?;
    // The source text comes from the load, so an artifact (which carries
    // its source unless compiled with --no-source) works too.
    let source = sources.source(lpk_grammar::ast::FileId(0)).to_string();
    // Report a bad binding the way every other command does; a missing
    // parameter is fine here (`set` binds it later).
    if !args.instance.params.is_empty() {
        instance::bind(&program, &args.instance)?;
    }
    let mut session = Session::new(program, source, &args.instance.params)
        .map_err(|e| CliError::Input(e.to_string()))?;
    session.set_max_tasks(args.max_tasks);
    if std::io::stdin().is_terminal() {
        interactive(
            &mut session,
            if args.no_history {
                None
            } else {
                history_path(args.history.as_ref())
            },
        )
    } else {
        batch(&mut session)
    }
}

/// Stdin is not a terminal: one command a line, answers on stdout, errors
/// on stderr, exit code 1 if any command failed.
fn batch(session: &mut Session) -> Result<(), CliError> {
    use std::io::BufRead;
    let mut failed = false;
    let mut stream = output::Stream::new();
    let mut reader = std::io::BufReader::new(std::io::stdin().lock());
    let mut bytes = Vec::new();
    for number in 1.. {
        // About to wait for input: the last answer goes out first.
        if reader.buffer().is_empty() {
            stream.flush();
        }
        bytes.clear();
        match reader.read_until(b'\n', &mut bytes) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                stream.flush();
                eprintln!("error: cannot read stdin: {e}");
                failed = true;
                break;
            }
        }
        // A line that is not UTF-8 is one bad command, not the end of the
        // session: report it and read on.
        let Ok(line) = std::str::from_utf8(&bytes) else {
            stream.flush();
            eprintln!(
                "error: line {number} is not valid UTF-8: {}",
                String::from_utf8_lossy(&bytes).trim_end()
            );
            failed = true;
            continue;
        };
        let line = line.trim_end_matches(['\n', '\r']);
        match session.execute(line) {
            Ok(Reply::Output(text)) => stream.write(text.as_bytes()),
            Ok(Reply::Quit) => break,
            Err(e) => {
                failed = true;
                stream.flush();
                eprintln!("error: {}: {e}", line.trim());
            }
        }
    }
    stream.flush();
    if failed {
        Err(CliError::Reported)
    } else {
        Ok(())
    }
}

fn interactive(session: &mut Session, history: Option<PathBuf>) -> Result<(), CliError> {
    let config = Config::builder()
        .completion_type(CompletionType::List)
        .auto_add_history(false)
        .build();
    let mut editor: Editor<LpkHelper, rustyline::history::DefaultHistory> =
        Editor::with_config(config)
            .map_err(|e| CliError::Input(format!("cannot start the line editor: {e}")))?;
    editor.set_helper(Some(LpkHelper {
        completions: session.completions(),
    }));
    if let Some(h) = &history {
        // A missing history file is the normal first run.
        if h.exists() {
            if let Err(e) = editor.load_history(h) {
                eprintln!("warning: cannot read the history {}: {e}", h.display());
            }
        }
    }
    let flag = session.cancel_flag();
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)) {
        eprintln!("warning: Ctrl-C will not cancel commands: {e}");
    }
    output::out(&session.banner());
    let prompt = format!("{}> ", session.program().name);
    loop {
        match editor.readline(&prompt) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                match session.execute(&line) {
                    Ok(Reply::Output(text)) => output::out(&text),
                    Ok(Reply::Quit) => break,
                    Err(e) => eprintln!("error: {e}"),
                }
            }
            // Ctrl-C at the prompt: rustyline has dropped the line.
            Err(ReadlineError::Interrupted) => continue,
            // Bytes that are not UTF-8 (a paste from a binary file): one
            // bad line, not the end of the session.
            Err(ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                eprintln!("error: the line is not valid UTF-8; type it again");
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("error: cannot read a line: {e}");
                break;
            }
        }
    }
    if let Some(h) = &history {
        if let Some(dir) = h.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Err(e) = editor.save_history(h) {
            eprintln!("warning: cannot write the history {}: {e}", h.display());
        }
    }
    Ok(())
}
