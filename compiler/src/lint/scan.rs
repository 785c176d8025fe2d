//! A fast pre-scan for the exhaustive check: walks one instance in
//! sequential order and decides whether it is certainly clean, with dense
//! per-tile arrays instead of the oracle's hash maps, and without building
//! the DAG.
//!
//! The scan only ever answers "clean" or "not sure". Whenever it sees
//! anything the oracle ([`lpk_model::dag::expand`]) would report (an
//! index outside the extents, a write to an input, a second write, a read
//! of a tile not written yet) or anything unusual (an evaluation error, a
//! tile space too large for the arrays), it stops and the caller runs the
//! oracle, so every finding and counterexample still comes from the
//! oracle. A clean answer means the oracle would report no violation: the
//! oracle's violations are exactly those events (a read of a tile not yet
//! written is a read before write or a read of an unwritten tile).

use lpk_model::expr::Env;
use lpk_model::program::{Instance, Role};
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
    let Some((base, total)) = dense_layout(inst) else {
        return Verdict::Unsure;
    };
    let generation = scratch.next_generation(total);
    let tiles = Tiles {
        inst,
        base,
        input: p.matrices.iter().map(|m| m.role == Role::Input).collect(),
    };
    let mut tasks = 0usize;
    let mut verdict = None;
    let written = &mut scratch.written;
    let mut seen = vec![false; p.statements.len()];
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
        if !tiles.task_clean(st, env, written, generation) {
            verdict = Some(Verdict::Unsure);
            return ControlFlow::Break(());
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

/// The dense layout of `inst`'s tiles: matrix m's tiles start at
/// `base[m]`, row-major, out of `total`; `None` for a negative extent or
/// past [`MAX_TILES`] tiles.
fn dense_layout(inst: &Instance<'_>) -> Option<(Vec<usize>, usize)> {
    let mut base = Vec::with_capacity(inst.program.matrices.len());
    let mut total: usize = 0;
    for e in &inst.extents {
        base.push(total);
        let mut size: usize = 1;
        for &n in e {
            let n = usize::try_from(n).ok()?;
            size = match size.checked_mul(n) {
                Some(s) if s <= MAX_TILES => s,
                _ => return None,
            };
        }
        total = match total.checked_add(size) {
            Some(t) if t <= MAX_TILES => t,
            _ => return None,
        };
    }
    Some((base, total))
}

impl Scratch {
    /// Makes room for `total` tiles and starts a new generation, in which
    /// no tile is written yet; returns it.
    fn next_generation(&mut self, total: usize) -> u32 {
        if self.written.len() < total {
            self.written.resize(total, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.written.iter_mut().for_each(|w| *w = 0);
            self.generation = 1;
        }
        self.generation
    }
}

/// The dense tile indices of one instance.
struct Tiles<'a, 'p> {
    inst: &'a Instance<'p>,
    /// Where each matrix's tiles start.
    base: Vec<usize>,
    /// Whether each matrix is an input.
    input: Vec<bool>,
}

impl Tiles<'_, '_> {
    /// The tile an access names, as a dense index; `None` when it is out of
    /// bounds or fails to evaluate.
    fn tile(&self, env: Env<'_>, acc: &lpk_model::program::Access) -> Option<usize> {
        let extents = self.inst.extents.get(acc.matrix.index())?;
        if extents.len() != acc.indices.len() {
            return None;
        }
        let mut at: usize = 0;
        for (&i, &n) in acc.indices.iter().zip(extents) {
            let v = self.inst.program.exprs.eval_int(i, env).ok()?;
            if v < 0 || v >= n {
                return None;
            }
            at = at * (n as usize) + v as usize;
        }
        Some(self.base.get(acc.matrix.index())? + at)
    }

    /// Checks the accesses of a task of `st` at `env` and marks its writes
    /// in `written`; `false` when the oracle must look (an access out of
    /// bounds, a read of a tile not written yet, a write to an input or a
    /// second write).
    fn task_clean(
        &self,
        st: &lpk_model::program::Statement,
        env: Env<'_>,
        written: &mut [u32],
        generation: u32,
    ) -> bool {
        // Reads first, as the oracle does: a read of a tile this task
        // writes is a read before write.
        for acc in &st.reads {
            let Some(t) = self.tile(env, acc) else {
                return false;
            };
            if self.input.get(acc.matrix.index()).copied().unwrap_or(false) {
                continue;
            }
            if written.get(t).copied() != Some(generation) {
                return false;
            }
        }
        for acc in &st.writes {
            let Some(t) = self.tile(env, acc) else {
                return false;
            };
            if self.input.get(acc.matrix.index()).copied().unwrap_or(true) {
                return false;
            }
            match written.get_mut(t) {
                Some(w) if *w != generation => *w = generation,
                _ => return false,
            }
        }
        true
    }
}
