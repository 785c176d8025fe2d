//! What the plans say about one statement or one access, for hover and
//! navigation: the statement under a position, its task count (as the
//! set of its iteration domain, as a polynomial of the parameter when the
//! program has one and the counts fit one, and at the parameter values of
//! the document), and the program-level dependence relations it takes part
//! in, as `lpkc dot` draws them (`lpk_compiler::explore::dot`).

use lpk_compiler::explore::dot::{domain_text, relation_text, statement_name};
use lpk_model::program::{Access, Instance, Program};
use lpk_model::StmtId;

/// A tile access of a compiled statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AccessAt {
    /// The statement.
    pub(crate) stmt: StmtId,
    /// Whether the access is a write (else a read).
    pub(crate) write: bool,
    /// Its index among the statement's writes or reads.
    pub(crate) index: u32,
}

/// The loop iterations counting may run for one hover.
const COUNT_BUDGET: u64 = 200_000;

/// The statement whose text holds byte `offset`.
pub(crate) fn statement_at(p: &Program, offset: usize) -> Option<StmtId> {
    p.statement_ids()
        .find(|(_, st)| st.span.0 as usize <= offset && offset <= st.span.1 as usize)
        .map(|(id, _)| id)
}

/// The tile access whose text holds byte `offset`.
pub(crate) fn access_at(p: &Program, offset: usize) -> Option<AccessAt> {
    let stmt = statement_at(p, offset)?;
    let st = p.get_statement(stmt)?;
    let holds = |a: &Access| a.span.0 as usize <= offset && offset <= a.span.1 as usize;
    let find = |accesses: &[Access], write: bool| {
        accesses.iter().position(holds).map(|i| AccessAt {
            stmt,
            write,
            index: i as u32,
        })
    };
    find(&st.writes, true).or_else(|| find(&st.reads, false))
}

/// The access's partners in the plans: the reads a write may feed, or the
/// writes a read may come from.
pub(crate) fn partners(p: &Program, at: AccessAt) -> Vec<AccessAt> {
    let Some(plans) = p.plans.get(at.stmt.index()) else {
        return Vec::new();
    };
    let list = if at.write {
        plans.writes.get(at.index as usize)
    } else {
        plans.reads.get(at.index as usize)
    };
    list.map_or_else(Vec::new, |ap| {
        ap.partners
            .iter()
            .map(|r| AccessAt {
                stmt: r.stmt,
                write: !at.write,
                index: r.access,
            })
            .collect()
    })
}

/// The access itself.
pub(crate) fn access(p: &Program, at: AccessAt) -> Option<&Access> {
    let st = p.get_statement(at.stmt)?;
    if at.write {
        st.writes.get(at.index as usize)
    } else {
        st.reads.get(at.index as usize)
    }
}

/// The relation between an access and one partner, `lpkc dot`'s label.
pub(crate) fn relation(p: &Program, at: AccessAt, partner: AccessAt) -> String {
    let (w, r) = if at.write {
        (at, partner)
    } else {
        (partner, at)
    };
    match (access(p, w), access(p, r)) {
        (Some(wa), Some(ra)) => relation_text(p, w.stmt, wa, r.stmt, ra),
        _ => String::new(),
    }
}

/// The statement's name as in task names, `chol@37`.
pub(crate) fn name(p: &Program, stmt: StmtId) -> String {
    statement_name(p, stmt)
}

/// The task count of a statement as the size of its iteration domain:
/// `#{ (k, i) | 0 <= k < N, k + 1 <= i < N }`.
pub(crate) fn count_set(p: &Program, stmt: StmtId) -> String {
    let Some(st) = p.get_statement(stmt) else {
        return String::new();
    };
    if st.vars.is_empty() && st.domain.is_empty() {
        return "1".into();
    }
    format!(
        "#{{ ({}) | {} }}",
        st.vars.join(", "),
        domain_text(p, st).join(", ")
    )
}

/// The statement's task count in the instance `params`, if it binds and
/// counts within budget.
pub(crate) fn count_at(p: &Program, stmt: StmtId, params: &[(String, i64)]) -> Option<u64> {
    let inst = p.bind(params).ok()?;
    count(&inst, stmt)
}

/// Every statement's task count in the instance `params` (by statement
/// index), and the instance's parameter values as `N = 8`, if it binds
/// and counts within budget.
pub(crate) fn counts_at(p: &Program, params: &[(String, i64)]) -> Option<(Vec<u64>, Vec<String>)> {
    let inst = p.bind(params).ok()?;
    let counts = inst.count_tasks_of(None, COUNT_BUDGET).ok()?;
    let at = p
        .params
        .iter()
        .zip(&inst.params)
        .map(|(d, v)| format!("{} = {v}", d.name))
        .collect();
    Some((counts.per_statement, at))
}

fn count(inst: &Instance<'_>, stmt: StmtId) -> Option<u64> {
    let counts = inst.count_tasks_of(Some(stmt), COUNT_BUDGET).ok()?;
    counts.per_statement.get(stmt.index()).copied()
}

/// The most parameter combinations [`count_polynomial`] counts.
const MOST_POINTS: usize = 1000;

/// The task count as a polynomial of the program's parameters, when the
/// counts fit one of degree at most the loop depth in each: the fit uses
/// a grid of `depth + 4` consecutive values per parameter, the same for
/// all, from the smallest that the `require`s allow for all of them at
/// once (the last three a check of the fit). `None` for a program without
/// parameters, a grid the `require`s cut, or one of over
/// [`MOST_POINTS`] points. Returns the text and the values used.
pub(crate) fn count_polynomial(p: &Program, stmt: StmtId) -> Option<(String, i64, i64)> {
    let k = p.params.len();
    if k == 0 {
        return None;
    }
    let depth = p.get_statement(stmt)?.depth();
    let len = depth + 4;
    if len.checked_pow(k as u32)? > MOST_POINTS {
        return None;
    }
    let first = (0..=16).find(|&n| p.bind_values(vec![n; k]).is_ok())?;
    let mut values = Vec::with_capacity(len.pow(k as u32));
    for flat in 0..len.pow(k as u32) {
        let point: Vec<i64> = (0..k)
            .map(|a| first + ((flat / len.pow((k - 1 - a) as u32)) % len) as i64)
            .collect();
        let inst = p.bind_values(point).ok()?;
        values.push(i128::from(count(&inst, stmt)?));
    }
    let poly = super::polynomial::fit(&values, &vec![first; k], len, depth)?;
    let names: Vec<&str> = p.params.iter().map(|q| q.name.as_str()).collect();
    Some((poly.text(&names), first, first + len as i64 - 1))
}
