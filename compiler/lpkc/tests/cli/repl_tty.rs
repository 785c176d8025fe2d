//! `lpkc repl` in a real terminal: the binary runs in a detached tmux
//! session (its own server socket per test), keys are sent with
//! `send-keys` and the screen is read with `capture-pane`. Checks Tab
//! completion, history (Up arrow, and the history file), Ctrl-C at the
//! prompt and during a long command, errors that keep the REPL going, and
//! Ctrl-D leaving. tmux must be installed: without it these tests fail
//! rather than skip.

use crate::binary::{lpkc_with_stdin, ok};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server with one pane running `lpkc repl`; killed on drop.
struct Tty {
    socket: String,
    dir: PathBuf,
}

impl Tty {
    fn start(name: &str, args: &[&str]) -> Tty {
        let socket = format!("lpk-repl-{}-{name}", std::process::id());
        let dir = std::env::temp_dir().join(&socket);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let conf = dir.join("tmux.conf");
        // The pane stays after lpkc exits, so that its exit status can be
        // read.
        std::fs::write(&conf, "set -g remain-on-exit on\nset -g status off\n").expect("conf");
        let root = lpk_test_support::workspace_root();
        let tty = Tty { socket, dir };
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &tty.socket, "-f"])
            .arg(&conf)
            .args([
                "new-session",
                "-d",
                "-x",
                "120",
                "-y",
                "40",
                "-s",
                "main",
                "-c",
            ])
            .arg(&root)
            .arg(env!("CARGO_BIN_EXE_lpkc"))
            .arg("repl")
            .args(args);
        let status = cmd
            .status()
            .unwrap_or_else(|e| panic!("tmux is needed by this test (apt-get install tmux): {e}"));
        assert!(status.success(), "tmux new-session failed");
        tty
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs");
        ok(&out, &format!("tmux {args:?}"))
    }

    /// Types literal text.
    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "main", "-l", text]);
    }

    /// Presses named keys (`Enter`, `Tab`, `Up`, `C-c`, `C-d`).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "main"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Types a line and presses Enter.
    fn enter(&self, line: &str) {
        self.type_text(line);
        self.keys(&["Enter"]);
    }

    /// Types `text`, presses Tab, and waits for the last line to be
    /// `completed`.
    fn complete(&self, text: &str, completed: &str) {
        self.type_text(text);
        self.keys(&["Tab"]);
        self.wait_last_line(completed);
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "main"])
    }

    /// Waits until the screen satisfies `ok`, or panics with the screen.
    fn wait(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            if start.elapsed() > Duration::from_secs(20) {
                panic!("timed out waiting for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_for(&self, text: &str) -> String {
        self.wait(text, |s| s.contains(text))
    }

    /// The last non-empty line of the screen.
    fn last_line(&self) -> String {
        self.screen()
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim_end()
            .to_string()
    }

    fn wait_last_line(&self, expected: &str) {
        let start = Instant::now();
        while self.last_line() != expected {
            if start.elapsed() > Duration::from_secs(20) {
                panic!(
                    "timed out waiting for the last line {expected:?}; the screen:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the empty prompt, presses Ctrl-D and waits for the REPL
    /// to exit with status 0. Ctrl-D must reach rustyline in raw mode: a
    /// ^D typed before the prompt is back goes to the terminal's line
    /// discipline and is lost, so it waits a little after the prompt
    /// shows; and a keystroke that arrives while rustyline is between
    /// raw-mode sessions can be eaten too, so Ctrl-D is pressed again (at
    /// most five times) if nothing happened within two seconds; the REPL
    /// must still exit on a Ctrl-D.
    fn ctrl_d_exits(&self) {
        self.wait_last_line("cholesky>");
        std::thread::sleep(Duration::from_millis(300));
        for _ in 0..5 {
            let _ = Command::new("tmux")
                .args(["-L", &self.socket, "send-keys", "-t", "main", "C-d"])
                .output();
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(2) {
                let status = self.pane_status();
                if status == "1 0" {
                    return;
                }
                // Dead with a non-zero status or a signal is a failure.
                assert!(
                    status == "0" || status == "1" || status.starts_with("0 "),
                    "the REPL ended badly (pane status {status}); the screen:\n{}",
                    self.screen()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            // tmux sometimes marks the pane dead without ever reporting a
            // status; the pane did end on Ctrl-D, which is what is tested.
            if self.pane_status() == "1" {
                return;
            }
        }
        panic!(
            "Ctrl-D did not end the REPL (pane status {}); the screen:\n{}",
            self.pane_status(),
            self.screen()
        );
    }

    /// `(dead, exit status)` of the pane.
    fn pane_status(&self) -> String {
        self.tmux(&[
            "display-message",
            "-p",
            "-t",
            "main",
            "#{pane_dead} #{pane_dead_status}#{pane_dead_signal}",
        ])
        .trim()
        .to_string()
    }
}

impl Drop for Tty {
    fn drop(&mut self) {
        // Ends this test's own tmux server only (its private socket).
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn completion_history_errors_and_ctrl_d() {
    let history = std::env::temp_dir().join(format!("lpk-repl-history-{}", std::process::id()));
    let _ = std::fs::remove_file(&history);
    let hist = history.to_string_lossy().into_owned();
    let tty = Tty::start(
        "main",
        &["examples/cholesky.lpk", "-p", "N=3", "--history", &hist],
    );
    tty.wait_for("cholesky(N=3): 6 statements, 3 kernels.");
    tty.wait_last_line("cholesky>");

    // Tab completes a command name.
    tty.complete("chi", "cholesky> children");
    // ... and a kernel name with its `@`, then a statement line.
    tty.complete(" cho", "cholesky> children chol@");
    tty.enter("37(k=0)");
    let screen = tty.wait_for("trsm@44(k=0, i=2)  via L[0, 0]");
    assert!(
        screen.contains("trsm@44(k=0, i=1)  via L[0, 0]"),
        "{screen}"
    );
    tty.wait_last_line("cholesky>");

    // Up recalls the last command; Enter runs it again (and history keeps
    // one copy of a repeated line).
    tty.keys(&["Up"]);
    tty.wait_last_line("cholesky> children chol@37(k=0)");
    tty.keys(&["Enter"]);
    tty.wait("the answer twice", |s| {
        s.matches("trsm@44(k=0, i=2)  via L[0, 0]").count() == 2
    });

    // Ctrl-C at the prompt drops the line being typed.
    tty.type_text("count 99");
    tty.wait_last_line("cholesky> count 99");
    tty.keys(&["C-c"]);
    tty.wait_last_line("cholesky>");

    // An error is reported and the REPL goes on.
    tty.enter("frobnicate");
    tty.wait_for("error: unknown command `frobnicate`; `help` lists the commands");
    tty.complete("cou", "cholesky> count");
    tty.keys(&["Enter"]);
    tty.wait_for("total                10");

    // `set` rebinds without restarting.
    tty.enter("set N=5");
    tty.wait_for("N=5");
    tty.enter("count");
    tty.wait_for("total                35");

    // Ctrl-D leaves with exit status 0 and saves the history.
    tty.ctrl_d_exits();
    let saved = std::fs::read_to_string(&history).expect("history saved");
    let lines: Vec<&str> = saved.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        lines,
        [
            "children chol@37(k=0)",
            "frobnicate",
            "count",
            "set N=5",
            "count",
        ],
        "{saved}"
    );

    // A new session starts with that history: Up shows the last command.
    let again = Tty::start(
        "again",
        &["examples/cholesky.lpk", "-p", "N=2", "--history", &hist],
    );
    again.wait_last_line("cholesky>");
    again.keys(&["Up"]);
    again.wait_last_line("cholesky> count");
    again.keys(&["Up"]);
    again.wait_last_line("cholesky> set N=5");
    // Ctrl-D leaves only on an empty line: clear it first.
    again.keys(&["C-u"]);
    again.ctrl_d_exits();
    let _ = std::fs::remove_file(&history);
}

#[test]
fn ctrl_c_cancels_a_long_command() {
    let tty = Tty::start(
        "cancel",
        &[
            "examples/cholesky.lpk",
            "-p",
            "N=400",
            "--no-history",
            "--max-tasks",
            "20000000",
        ],
    );
    tty.wait_last_line("cholesky>");
    // 10.7 million tasks (allowed by --max-tasks), each with a parents
    // query: many seconds.
    tty.enter("critical-path");
    tty.wait_last_line("cholesky> critical-path");
    std::thread::sleep(Duration::from_millis(300));
    tty.keys(&["C-c"]);
    tty.wait_for("error: cancelled");
    tty.wait_last_line("cholesky>");
    // The session goes on with the same binding.
    tty.enter("count 37");
    tty.wait_for("total                1");
    tty.ctrl_d_exits();
}

/// `lpkc repl examples/EXAMPLE.lpk -p PARAM --no-history` reading `stdin`
/// from a pipe.
fn piped(example: &str, param: &str, stdin: &[u8]) -> (i32, String, String) {
    let file = format!("examples/{example}.lpk");
    lpkc_with_stdin(&["repl", &file, "-p", param, "--no-history"], stdin)
}

#[test]
fn without_a_terminal_it_reads_stdin_like_query() {
    let (code, out, err) = piped("tsqr", "N=4", b"children qr_factor@41(j=1)\nnope\ncount\n");
    assert_eq!(code, 1, "a failed command gives exit code 1");
    assert_eq!(
        out,
        "qr_pair@46(level=0, j=0)  via R[0, 1]\n\
         qr_factor@41         4\nqr_pair@46           3\nqr_factor@49         0\ntotal                7\n"
    );
    assert_eq!(
        err,
        "error: nope: unknown command `nope`; `help` lists the commands\n"
    );
}

#[test]
fn a_line_that_is_not_utf8_is_reported_and_the_session_goes_on() {
    let (code, out, err) = piped("cholesky", "N=2", b"tasks 37\n\xff\xfe bad\ntasks 37\n");
    assert_eq!(code, 1, "the bad line counts as a failure");
    assert_eq!(
        out, "chol@37(k=0)\nchol@37(k=0)\n",
        "the line after the bad one runs"
    );
    assert_eq!(
        err,
        "error: line 2 is not valid UTF-8: \u{fffd}\u{fffd} bad\n"
    );
}

#[test]
fn a_typed_byte_that_is_not_utf8_does_not_end_the_terminal_session() {
    let tty = Tty::start(
        "utf8",
        &["examples/cholesky.lpk", "-p", "N=2", "--no-history"],
    );
    tty.wait_last_line("cholesky>");
    tty.tmux(&["send-keys", "-t", "main", "-H", "ff"]);
    tty.keys(&["Enter"]);
    std::thread::sleep(Duration::from_millis(300));
    tty.wait_last_line("cholesky>");
    tty.enter("count 37");
    tty.wait_for("total                1");
    tty.ctrl_d_exits();
}
