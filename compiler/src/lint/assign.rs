//! Single assignment and writes to inputs, proved over all parameter
//! values by integer feasibility: two write accesses of one matrix can
//! name the same tile at two different tasks only if their system (both
//! domains, the `require`s, the index equations and "the tasks differ") is
//! feasible.

use super::system::{Form, Key, System};
use runtime_interp::model::Program;

/// Whether no two tasks can ever write one tile (proved when true).
pub(crate) fn single_assignment_proved(p: &Program) -> bool {
    let pool = &p.exprs;
    let writes: Vec<(usize, usize)> = p
        .statements
        .iter()
        .enumerate()
        .flat_map(|(s, st)| (0..st.writes.len()).map(move |a| (s, a)))
        .collect();
    for (i, &(s1, a1)) in writes.iter().enumerate() {
        for &(s2, a2) in writes.iter().skip(i) {
            let (Some(st1), Some(st2)) = (p.statements.get(s1), p.statements.get(s2)) else {
                continue;
            };
            let (Some(w1), Some(w2)) = (st1.writes.get(a1), st2.writes.get(a2)) else {
                continue;
            };
            if w1.matrix != w2.matrix {
                continue;
            }
            let same_access = s1 == s2 && a1 == a2;
            if same_access && st1.depth() == 0 {
                continue;
            }
            let mut sys = System::new();
            sys.requires(p);
            sys.domain(pool, 0, st1);
            sys.domain(pool, 1, st2);
            for (&x, &y) in w1.indices.iter().zip(&w2.indices) {
                if let (Some(fx), Some(fy)) = (sys.form(pool, 0, x), sys.form(pool, 1, y)) {
                    sys.eq(&fx, &fy);
                }
            }
            if same_access {
                // Two different iterations: the first differing loop
                // variable is smaller on side 0 (without loss of generality).
                let mut alternatives = Vec::new();
                for k in 0..st1.depth() as u32 {
                    let mut alt = System::new();
                    for j in 0..k {
                        alt.eq(&Form::key(Key::Slot(0, j)), &Form::key(Key::Slot(1, j)));
                    }
                    alt.ge_by(&Form::key(Key::Slot(1, k)), &Form::key(Key::Slot(0, k)), 1);
                    alternatives.push(alt.into_conjunction());
                }
                sys.any(alternatives);
            }
            if sys.feasible() {
                return false;
            }
        }
    }
    true
}

/// Whether no task can ever write a tile of an input (proved when true).
pub(crate) fn no_input_write_proved(p: &Program) -> bool {
    for st in &p.statements {
        for w in &st.writes {
            if super::exhaustive::is_input(p, w.matrix) {
                let mut sys = System::new();
                sys.requires(p);
                sys.domain(&p.exprs, 0, st);
                if sys.feasible() {
                    return false;
                }
            }
        }
    }
    true
}
