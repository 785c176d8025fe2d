//! Count before you expand: every explore command that needs the whole
//! DAG of an instance (`dag`, an expanded `dot`, `stats`, the REPL's
//! `critical-path` and `path`) or lists its tasks (`tasks`) first counts
//! the tasks with [`Instance::count_tasks`] (flat memory, a bounded number
//! of loop iterations) and refuses at once, naming the count and the flag
//! that raises the limit, before it spends any memory on the tasks.

use lpk_model::program::Instance;
use lpk_model::task::{CountError, COUNT_BUDGET};

/// A task limit and the flag (or REPL option) that raises it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskLimit<'a> {
    /// The most tasks allowed.
    pub max: u64,
    /// How the user raises it, e.g. `--max-tasks`.
    pub flag: &'a str,
}

/// How many tasks were found when a limit refused an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// Exactly this many.
    Exact(u64),
    /// More than this many: counting stopped after this many loop
    /// iterations (the count's own budget).
    MoreThan {
        /// Tasks counted when counting stopped (a lower bound).
        counted: u64,
        /// The loop iterations counting may run.
        iterations: u64,
    },
    /// More than this many: collecting stopped there (an answer over the
    /// limit).
    Over(u64),
    /// More than 2^64 (a statement's count overflowed).
    Overflow,
}

/// Why an instance was refused before any expansion.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LimitError {
    /// More tasks than the limit allows.
    #[error("{}", too_many(.what, .size, .max, .flag, .advice.as_deref()))]
    TooMany {
        /// `the instance cholesky(N=1000)`, or `statement chol@39`.
        what: String,
        /// The count.
        size: Size,
        /// The limit.
        max: u64,
        /// The flag that raises it.
        flag: String,
        /// What to do instead of the default advice (raise the limit).
        advice: Option<String>,
    },
    /// The loop tree could not be run (an expression failed, a step that
    /// is not positive).
    #[error("{0}")]
    Count(CountError),
}

fn too_many(what: &str, size: &Size, max: &u64, flag: &str, advice: Option<&str>) -> String {
    let count = match size {
        Size::Exact(n) => format!("{n} tasks"),
        Size::MoreThan {
            counted,
            iterations,
        } if counted <= max => {
            // Too few counted to say it is over the limit: say it could
            // not be counted, and what the limit is.
            return format!(
                "{what} is too large to count: counting stopped after {iterations} loop \
                 iterations with {counted} tasks counted ({flag} {max}); {}",
                advice.unwrap_or("use smaller parameters")
            );
        }
        Size::MoreThan {
            counted,
            iterations,
        } => format!(
            "more than {counted} tasks (too many to count: counting stopped after {iterations} loop iterations)"
        ),
        Size::Over(n) => format!("more than {n} tasks"),
        Size::Overflow => "more than 2^64 tasks".to_string(),
    };
    // Raising the limit does not help an instance too large to count.
    let default_advice = match size {
        Size::MoreThan { .. } | Size::Overflow => "use smaller parameters".to_string(),
        _ => format!("raise the limit with {flag} N"),
    };
    format!(
        "{what} has {count}, more than {flag} {max}; {}",
        advice.unwrap_or(&default_advice)
    )
}

/// `cholesky(N=1000)`: the program and its binding.
pub(crate) fn instance_name(inst: &Instance<'_>) -> String {
    let params: Vec<String> = inst
        .program
        .params
        .iter()
        .zip(&inst.params)
        .map(|(d, v)| format!("{}={v}", d.name))
        .collect();
    format!("{}({})", inst.program.name, params.join(", "))
}

impl TaskLimit<'_> {
    /// Counts every task of `inst` and returns the count if it is within
    /// the limit.
    pub fn check(&self, inst: &Instance<'_>) -> Result<u64, LimitError> {
        let counts = inst
            .count_tasks(COUNT_BUDGET)
            .map_err(|e| self.uncounted(inst, e))?;
        let total = counts.total();
        self.check_count(inst, total)?;
        Ok(total)
    }

    /// Refuses a count above the limit.
    pub fn check_count(&self, inst: &Instance<'_>, count: u64) -> Result<(), LimitError> {
        if count > self.max {
            return Err(self.refuse(inst, Size::Exact(count)));
        }
        Ok(())
    }

    /// The refusal of `inst` at `size`.
    pub fn refuse(&self, inst: &Instance<'_>, size: Size) -> LimitError {
        LimitError::TooMany {
            what: format!("the instance {}", instance_name(inst)),
            size,
            max: self.max,
            flag: self.flag.to_string(),
            advice: None,
        }
    }

    /// A failed count as a refusal: too large to count is too large for
    /// any limit; an evaluation error stays what it is.
    pub fn uncounted(&self, inst: &Instance<'_>, e: CountError) -> LimitError {
        match e {
            CountError::TooLarge { budget, counted } => self.refuse(
                inst,
                Size::MoreThan {
                    counted,
                    iterations: budget,
                },
            ),
            CountError::Overflow { .. } => self.refuse(inst, Size::Overflow),
            other => LimitError::Count(other),
        }
    }
}

impl LimitError {
    /// Replaces the advice after the count (the default says to raise the
    /// limit with the flag).
    pub fn with_advice(self, text: &str) -> LimitError {
        match self {
            LimitError::TooMany {
                what,
                size,
                max,
                flag,
                ..
            } => LimitError::TooMany {
                what,
                size,
                max,
                flag,
                advice: Some(text.to_string()),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::example_program;

    #[test]
    fn a_refusal_names_the_count_and_the_flag() {
        let p = example_program("cholesky");
        let limit = TaskLimit {
            max: 1000,
            flag: "--max-tasks",
        };
        let small = p.bind(&[("N".to_string(), 10)]).expect("binds");
        assert_eq!(limit.check(&small), Ok(220));
        let big = p.bind(&[("N".to_string(), 1000)]).expect("binds");
        let e = limit.check(&big).expect_err("too many");
        assert_eq!(
            e.to_string(),
            "the instance cholesky(N=1000) has 167167000 tasks, more than --max-tasks 1000; \
             raise the limit with --max-tasks N"
        );
        let huge = p.bind(&[("N".to_string(), i64::MAX)]).expect("binds");
        let e = limit.check(&huge).expect_err("too many");
        assert!(
            e.to_string()
                .starts_with("the instance cholesky(N=9223372036854775807) has more than "),
            "{e}"
        );
        assert!(
            e.to_string()
                .ends_with("more than --max-tasks 1000; use smaller parameters"),
            "{e}"
        );
    }
}
