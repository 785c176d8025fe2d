//! A fast pre-scan for the exhaustive check: walks one instance in
//! sequential order and decides whether it is certainly clean, with dense
//! per-tile arrays instead of the oracle's hash maps, and without building
//! the DAG.
//!
//! The scan only ever answers "clean" or "not sure". Whenever it sees
//! anything the oracle ([`model::dag::expand`]) would report (an
//! index outside the extents, a write to an input, a second write, a read
//! of a tile not written yet) or anything unusual (an evaluation error, a
//! tile space too large for the arrays), it stops and the caller runs the
//! oracle, so every finding and counterexample still comes from the
//! oracle. A clean answer means the oracle would report no violation: the
//! oracle's violations are exactly those events (a read of a tile not yet
//! written is a read before write or a read of an unwritten tile).

use model::expr::Env;
use model::program::{Instance, Role};
use std::ops::ControlFlow;

/// Most tiles (over all matrices of one instance) the scan keeps arrays
/// for; larger instances go to the oracle directly.
const MAX_TILES: usize = 1 << 24;

/// The scan's verdict on one instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No violation; the instance has this many tasks.
    Clean(usize),
    /// More than the allowed number of tasks (exactly when the oracle
    /// would stop with "too large").
    TooLarge,
    /// Possibly a violation or an error: ask the oracle.
    Unsure,
}

/// Arrays reused from one instance to the next.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Per tile: the generation of the instance that wrote it.
    written: Vec<u32>,
    generation: u32,
}

/// Scans one instance; when it is clean, `ran` also marks the statements
/// that have tasks in it.
pub(crate) fn scan(
    inst: &Instance<'_>,
    max_tasks: usize,
    ran: &mut [bool],
    scratch: &mut Scratch,
) -> Verdict {
    let p = inst.program;
    // Dense layout: matrix m's tiles start at base[m], row-major.
    let mut base = Vec::with_capacity(p.matrices.len());
    let mut total: usize = 0;
    for e in &inst.extents {
        base.push(total);
        let mut size: usize = 1;
        for &n in e {
            let Ok(n) = usize::try_from(n) else {
                return Verdict::Unsure;
            };
            size = match size.checked_mul(n) {
                Some(s) if s <= MAX_TILES => s,
                _ => return Verdict::Unsure,
            };
        }
        total = match total.checked_add(size) {
            Some(t) if t <= MAX_TILES => t,
            _ => return Verdict::Unsure,
        };
    }
    if scratch.written.len() < total {
        scratch.written.resize(total, 0);
    }
    scratch.generation = scratch.generation.wrapping_add(1);
    if scratch.generation == 0 {
        scratch.written.iter_mut().for_each(|w| *w = 0);
        scratch.generation = 1;
    }
    let generation = scratch.generation;
    let input: Vec<bool> = p.matrices.iter().map(|m| m.role == Role::Input).collect();
    let mut tasks = 0usize;
    let mut verdict = None;
    let written = &mut scratch.written;
    let mut seen = vec![false; p.statements.len()];
    // The tile an access names, as a dense index; `None` when it is out of
    // bounds or fails to evaluate.
    let tile = |env: Env<'_>, acc: &model::program::Access| -> Option<usize> {
        let extents = inst.extents.get(acc.matrix.index())?;
        if extents.len() != acc.indices.len() {
            return None;
        }
        let mut at: usize = 0;
        for (&i, &n) in acc.indices.iter().zip(extents) {
            let v = p.exprs.eval_int(i, env).ok()?;
            if v < 0 || v >= n {
                return None;
            }
            at = at * (n as usize) + v as usize;
        }
        Some(base.get(acc.matrix.index())? + at)
    };
    let walked = inst.for_each_task(&mut |task| {
        if tasks >= max_tasks {
            verdict = Some(Verdict::TooLarge);
            return ControlFlow::Break(());
        }
        tasks += 1;
        let Some(st) = p.get_statement(task.stmt) else {
            verdict = Some(Verdict::Unsure);
            return ControlFlow::Break(());
        };
        if let Some(r) = seen.get_mut(task.stmt.index()) {
            *r = true;
        }
        let env = Env {
            params: &inst.params,
            slots: &task.vars,
        };
        // Reads first, as the oracle does: a read of a tile this task
        // writes is a read before write.
        for acc in &st.reads {
            let Some(t) = tile(env, acc) else {
                verdict = Some(Verdict::Unsure);
                return ControlFlow::Break(());
            };
            if input.get(acc.matrix.index()).copied().unwrap_or(false) {
                continue;
            }
            if written.get(t).copied() != Some(generation) {
                verdict = Some(Verdict::Unsure);
                return ControlFlow::Break(());
            }
        }
        for acc in &st.writes {
            let Some(t) = tile(env, acc) else {
                verdict = Some(Verdict::Unsure);
                return ControlFlow::Break(());
            };
            if input.get(acc.matrix.index()).copied().unwrap_or(true) {
                verdict = Some(Verdict::Unsure);
                return ControlFlow::Break(());
            }
            match written.get_mut(t) {
                Some(w) if *w != generation => *w = generation,
                _ => {
                    verdict = Some(Verdict::Unsure);
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    });
    if walked.is_err() {
        return Verdict::Unsure;
    }
    let v = verdict.unwrap_or(Verdict::Clean(tasks));
    if let Verdict::Clean(_) = v {
        for (r, s) in ran.iter_mut().zip(seen) {
            *r |= s;
        }
    }
    v
}
