//! The bounded exhaustive check: every parameter combination up to the
//! bound is expanded with the brute-force oracle
//! ([`lpk_model::dag::expand`]) and each violation it reports becomes
//! a finding, grouped by the accesses involved. Counterexamples therefore
//! always come from a real expansion and reproduce.
//!
//! Order: combinations are visited cube by cube, `[0, c]^k` for
//! `c = 0, 1, ..., bound`, each new cube's combinations (those with largest
//! value `c`) in lexicographic order, so the first failing combination has
//! the smallest largest value, then the smallest values in parameter order.
//! Combinations the `require`s (or extents) reject are skipped. A task
//! budget shared by all instances keeps the check bounded; the coverage
//! says up to which cube every combination was checked.

use super::rules;
use super::scan::{scan, Scratch, Verdict};
use crate::diag::Code;
use lpk_model::dag::{expand, ExpandError, Violation};
use lpk_model::program::{Instance, Program};
use lpk_model::task::{Task, TileRef};
use lpk_model::StmtId;
use std::ops::ControlFlow;

/// The lint error a violation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorKind {
    /// Two tasks (or one task twice) write one tile.
    DoubleWrite,
    /// A task writes a tile of an `input` matrix.
    WriteToInput,
    /// A tile no task writes is read.
    ReadUnwritten,
    /// A tile is read before the task that writes it.
    ReadBeforeWrite,
    /// An index outside the extents.
    OutOfBounds,
}

impl ErrorKind {
    /// Every kind, in code order.
    pub const ALL: [ErrorKind; 5] = [
        ErrorKind::DoubleWrite,
        ErrorKind::WriteToInput,
        ErrorKind::ReadUnwritten,
        ErrorKind::ReadBeforeWrite,
        ErrorKind::OutOfBounds,
    ];

    /// The kind of an oracle violation.
    pub fn of(v: &Violation) -> ErrorKind {
        match v {
            Violation::DoubleWrite { .. } => ErrorKind::DoubleWrite,
            Violation::WriteToInput { .. } => ErrorKind::WriteToInput,
            Violation::ReadUnwritten { .. } => ErrorKind::ReadUnwritten,
            Violation::ReadBeforeWrite { .. } => ErrorKind::ReadBeforeWrite,
            Violation::OutOfBounds { .. } => ErrorKind::OutOfBounds,
        }
    }

    /// Its diagnostic code.
    pub fn code(self) -> Code {
        self.error_rule().code
    }

    /// The rule, as a noun phrase.
    pub fn rule(self) -> &'static str {
        self.error_rule().name
    }

    /// Its rule, with what a finding of this kind says at its accesses.
    pub(crate) fn error_rule(self) -> &'static rules::ErrorRule {
        match self {
            ErrorKind::DoubleWrite => &rules::single_assignment::RULE,
            ErrorKind::WriteToInput => &rules::write_to_input::RULE,
            ErrorKind::ReadUnwritten => &rules::read_unwritten::RULE,
            ErrorKind::ReadBeforeWrite => &rules::read_before_write::RULE,
            ErrorKind::OutOfBounds => &rules::out_of_bounds::RULE,
        }
    }
}

/// One access of one statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Site {
    /// The statement.
    pub stmt: StmtId,
    /// Whether it is one of the statement's writes (else a read).
    pub write: bool,
    /// Its index among the statement's writes or reads.
    pub access: u32,
}

/// A rule violation seen in a real expansion, with the smallest parameter
/// values it was seen for.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// Which rule.
    pub kind: ErrorKind,
    /// The access the finding is reported at (the later task's).
    pub primary: Site,
    /// The other access involved (the first writer, the later writer).
    pub secondary: Option<Site>,
    /// The parameter values of the counterexample, in declaration order.
    pub params: Vec<i64>,
    /// The counterexample, as the oracle reported it.
    pub violation: Violation,
    /// Every checked combination it happens for (at most
    /// [`MAX_FAILING`]), in visiting order.
    pub failing: Vec<Vec<i64>>,
    /// How many checked combinations it happens for.
    pub failing_count: usize,
    /// Whether it was seen in the instance given with `-p`.
    pub in_given_instance: bool,
}

/// Most failing combinations a finding keeps.
pub(crate) const MAX_FAILING: usize = 4096;

/// How far the exhaustive check got.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// The bound asked for.
    pub bound: i64,
    /// The largest `c` such that every combination in `[0, c]^k` was
    /// checked (`None`: not even `c = 0`).
    pub complete_to: Option<i64>,
    /// Instances expanded.
    pub instances: usize,
    /// Tasks expanded in all.
    pub tasks: usize,
    /// Why the check stopped before the bound, if it did.
    pub stopped: Option<String>,
    /// Instances whose expansion failed with an evaluation error, with the
    /// first such error.
    pub eval_errors: Option<(Vec<i64>, String)>,
}

/// Limits of the exhaustive check.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Largest parameter value.
    pub bound: i64,
    /// Tasks over all instances.
    pub tasks: usize,
}

/// The accesses of a task that name `tile` (writes or reads).
fn sites(p: &Program, params: &[i64], task: &Task, tile: &TileRef, write: bool) -> Vec<Site> {
    let Some(st) = p.get_statement(task.stmt) else {
        return Vec::new();
    };
    let list = if write { &st.writes } else { &st.reads };
    list.iter()
        .enumerate()
        .filter(|(_, a)| p.tile_of(params, task, a).is_ok_and(|t| &t == tile))
        .map(|(i, _)| Site {
            stmt: task.stmt,
            write,
            access: i as u32,
        })
        .collect()
}

/// The primary and secondary access of a violation: for a read, one pair
/// per access of the reader that reads the tile (`k(M[j], M[2 * j])` at
/// `j = 0` reads `M[0]` through both), so each access's finding starts at
/// the first instance where it fails.
fn locate(p: &Program, params: &[i64], v: &Violation) -> Vec<(Site, Option<Site>)> {
    let fallback = |t: &Task, write| Site {
        stmt: t.stmt,
        write,
        access: 0,
    };
    let first = |t: &Task, tile: &TileRef, write: bool| {
        sites(p, params, t, tile, write)
            .first()
            .copied()
            .unwrap_or_else(|| fallback(t, write))
    };
    let every_read = |t: &Task, tile: &TileRef| {
        let s = sites(p, params, t, tile, false);
        let all = if s.is_empty() {
            vec![fallback(t, false)]
        } else {
            s
        };
        all.into_iter()
    };
    match v {
        Violation::DoubleWrite {
            tile,
            first: a,
            second: b,
        } => {
            if a == b {
                let s = sites(p, params, b, tile, true);
                let primary = s.get(1).copied().unwrap_or_else(|| fallback(b, true));
                vec![(primary, s.first().copied())]
            } else {
                vec![(first(b, tile, true), Some(first(a, tile, true)))]
            }
        }
        Violation::WriteToInput { tile, task } => vec![(first(task, tile, true), None)],
        Violation::ReadBeforeWrite {
            tile,
            reader,
            writer,
        } => {
            let writer = Some(first(writer, tile, true));
            every_read(reader, tile).map(|s| (s, writer)).collect()
        }
        Violation::ReadUnwritten { tile, reader } => {
            every_read(reader, tile).map(|s| (s, None)).collect()
        }
        Violation::OutOfBounds { tile, task, write } => {
            // Out-of-bounds accesses are found by value and bounds, the
            // first one of the task naming the tile.
            vec![(first(task, tile, *write), None)]
        }
    }
}

/// Every parameter combination of one cube's shell (largest value `c`),
/// in lexicographic order.
fn shell(k: usize, c: i64) -> Vec<Vec<i64>> {
    let mut out = Vec::new();
    if k == 0 {
        if c == 0 {
            out.push(Vec::new());
        }
        return out;
    }
    let mut t = vec![0i64; k];
    loop {
        if t.contains(&c) {
            out.push(t.clone());
        }
        let mut i = k;
        loop {
            if i == 0 {
                return out;
            }
            i -= 1;
            if t[i] < c {
                t[i] += 1;
                for x in t.iter_mut().skip(i + 1) {
                    *x = 0;
                }
                break;
            }
        }
    }
}

/// The visiting order of combinations up to `bound`, cube by cube.
pub fn combinations(k: usize, bound: i64) -> impl Iterator<Item = (i64, Vec<i64>)> {
    (0..=bound.max(0)).flat_map(move |c| shell(k, c).into_iter().map(move |t| (c, t)))
}

/// Adds the violations of one instance to the findings.
fn record(
    findings: &mut Vec<Finding>,
    inst: &Instance<'_>,
    violations: Vec<Violation>,
    given: bool,
) {
    let p = inst.program;
    let mut seen_here: Vec<usize> = Vec::new();
    for v in violations {
        let kind = ErrorKind::of(&v);
        for (primary, secondary) in locate(p, &inst.params, &v) {
            let existing = findings
                .iter()
                .position(|f| f.kind == kind && f.primary == primary && f.secondary == secondary);
            match existing {
                Some(i) => {
                    if seen_here.contains(&i) {
                        continue;
                    }
                    seen_here.push(i);
                    let Some(f) = findings.get_mut(i) else {
                        continue;
                    };
                    if given {
                        f.in_given_instance = true;
                    } else {
                        f.failing_count += 1;
                        if f.failing.len() < MAX_FAILING {
                            f.failing.push(inst.params.clone());
                        }
                    }
                }
                None => {
                    seen_here.push(findings.len());
                    findings.push(Finding {
                        kind,
                        primary,
                        secondary,
                        params: inst.params.clone(),
                        violation: v.clone(),
                        failing: if given {
                            Vec::new()
                        } else {
                            vec![inst.params.clone()]
                        },
                        failing_count: usize::from(!given),
                        in_given_instance: given,
                    });
                }
            }
        }
    }
}

/// Expands every combination up to the bound (within the task budget);
/// returns the findings, which statements ran in some instance, and the
/// coverage.
pub fn check(program: &Program, budget: Budget) -> (Vec<Finding>, Vec<bool>, Coverage) {
    let k = program.params.len();
    let mut findings = Vec::new();
    let mut ran = vec![false; program.statements.len()];
    let mut cov = Coverage {
        bound: budget.bound,
        ..Coverage::default()
    };
    let mut current = 0i64;
    let mut scratch = Scratch::default();
    for (c, tuple) in combinations(k, budget.bound) {
        if crate::cancel::cancelled() {
            cov.stopped = Some("the lint was cancelled".into());
            return (findings, ran, cov);
        }
        if c != current {
            cov.complete_to = Some(current);
            current = c;
        }
        let Ok(inst) = program.bind_values(tuple.clone()) else {
            continue;
        };
        let left = budget.tasks.saturating_sub(cov.tasks);
        // Clean instances (nearly all of them) take the fast scan; the
        // oracle runs only where the scan is not sure, so every finding
        // still comes from the oracle.
        let verdict = scan(&inst, left, &mut ran, &mut scratch);
        if let Verdict::Clean(tasks) = verdict {
            cov.instances += 1;
            cov.tasks += tasks;
            continue;
        }
        let expanded = if verdict == Verdict::TooLarge {
            Err(ExpandError::TooLarge(left))
        } else {
            expand(&inst, left)
        };
        match expanded {
            Ok((dag, violations)) => {
                cov.instances += 1;
                cov.tasks += dag.tasks.len();
                for t in &dag.tasks {
                    if let Some(r) = ran.get_mut(t.stmt.index()) {
                        *r = true;
                    }
                }
                record(&mut findings, &inst, violations, false);
            }
            Err(ExpandError::TooLarge(_)) => {
                cov.stopped = Some(format!(
                    "the task budget ({} tasks) ran out at {}",
                    budget.tasks,
                    params_text(program, &tuple)
                ));
                return (findings, ran, cov);
            }
            Err(e) => {
                if cov.eval_errors.is_none() {
                    cov.eval_errors = Some((tuple.clone(), e.to_string()));
                }
                // The expansion stopped at a tile index that does not
                // evaluate, but the statements whose loops admit tasks
                // still run (and fail): a statement is "never run" only if
                // its loops and guards admit no task.
                mark_running(&inst, left, &mut ran);
            }
        }
    }
    cov.complete_to = Some(current);
    (findings, ran, cov)
}

/// Marks the statements with a task in `inst` (its loops and guards only,
/// no tile index evaluated), walking at most `limit` tasks.
fn mark_running(inst: &lpk_model::program::Instance<'_>, limit: usize, ran: &mut [bool]) {
    let mut tasks = 0usize;
    let _ = inst.for_each_task(&mut |t| {
        tasks += 1;
        if let Some(r) = ran.get_mut(t.stmt.index()) {
            *r = true;
        }
        if tasks >= limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
}

/// Runs the instance given with `-p` and merges its violations.
pub fn check_instance(
    findings: &mut Vec<Finding>,
    inst: &Instance<'_>,
    max_tasks: usize,
) -> Result<(), ExpandError> {
    let mut ran = vec![false; inst.program.statements.len()];
    if let Verdict::Clean(_) = scan(inst, max_tasks, &mut ran, &mut Scratch::default()) {
        return Ok(());
    }
    let (_, violations) = expand(inst, max_tasks)?;
    record(findings, inst, violations, true);
    Ok(())
}

/// Which statements run in some combination up to the bound: walks the
/// instances in order and stops as soon as every statement was seen.
pub(crate) fn statements_that_run(program: &Program, budget: Budget) -> (Vec<bool>, Coverage) {
    let k = program.params.len();
    let n = program.statements.len();
    let mut ran = vec![false; n];
    let mut count = 0usize;
    let mut cov = Coverage {
        bound: budget.bound,
        ..Coverage::default()
    };
    let mut current = 0i64;
    for (c, tuple) in combinations(k, budget.bound) {
        if count == n {
            break;
        }
        if crate::cancel::cancelled() {
            cov.stopped = Some("the lint was cancelled".into());
            return (ran, cov);
        }
        if c != current {
            cov.complete_to = Some(current);
            current = c;
        }
        let Ok(inst) = program.bind_values(tuple.clone()) else {
            continue;
        };
        let mut tasks = 0usize;
        let limit = budget.tasks.saturating_sub(cov.tasks);
        let mut over = false;
        let walked = inst.for_each_task(&mut |t| {
            tasks += 1;
            if tasks > limit {
                over = true;
                return ControlFlow::Break(());
            }
            if let Some(r) = ran.get_mut(t.stmt.index()) {
                if !*r {
                    *r = true;
                    count += 1;
                }
            }
            if count == n {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        cov.tasks += tasks;
        cov.instances += 1;
        if over {
            cov.stopped = Some(format!(
                "the task budget ({} tasks) ran out at {}",
                budget.tasks,
                params_text(program, &tuple)
            ));
            return (ran, cov);
        }
        if let Err(e) = walked {
            if cov.eval_errors.is_none() {
                cov.eval_errors = Some((tuple.clone(), e.to_string()));
            }
        }
    }
    cov.complete_to = Some(current);
    (ran, cov)
}

/// Whether some parameter combination up to `bound` meets every
/// `require` (whatever its extents or indices then do).
pub(crate) fn requires_met_somewhere(program: &Program, bound: i64) -> bool {
    combinations(program.params.len(), bound).any(|(_, params)| {
        let env = lpk_model::expr::Env {
            params: &params,
            slots: &[],
        };
        program
            .requires
            .iter()
            .all(|&r| program.exprs.eval_bool(r, env) == Ok(true))
    })
}

/// `N = 4, M = 2`.
pub fn params_text(program: &Program, values: &[i64]) -> String {
    program
        .params
        .iter()
        .zip(values)
        .map(|(p, v)| format!("{} = {v}", p.name))
        .collect::<Vec<_>>()
        .join(", ")
}
