//! What the plans say about one statement or one access, for hover and
//! navigation: the statement under a position, its task count (as the
//! set of its iteration domain, as a polynomial of the parameter when the
//! program has one and the counts fit one, and at the parameter values of
//! the document), and the program-level dependence relations it takes part
//! in, as `lpkc dot` draws them (`compiler::explore::dot`).

use compiler::explore::dot::{domain_text, relation_text, statement_name};
use model::program::{Access, Instance, Program};
use model::StmtId;

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

/// The task count as a polynomial of the program's one parameter, when
/// the counts fit one of degree at most the loop depth: the fit uses
/// `depth + 1` consecutive values from the smallest the `require`s allow
/// and is checked on three more. Returns the text and the values used.
pub(crate) fn count_polynomial(p: &Program, stmt: StmtId) -> Option<(String, i64, i64)> {
    let [param] = p.params.as_slice() else {
        return None;
    };
    let depth = p.get_statement(stmt)?.depth();
    let first = (0..=16).find(|&n| p.bind_values(vec![n]).is_ok())?;
    let points = depth + 4;
    let mut values = Vec::with_capacity(points);
    for n in first..first + points as i64 {
        let inst = p.bind_values(vec![n]).ok()?;
        values.push(i128::from(count(&inst, stmt)?));
    }
    let diffs = forward_differences(&values);
    if diffs.iter().skip(depth + 1).any(|&d| d != 0) {
        return None;
    }
    let text = newton_to_text(&diffs[..=depth], first, &param.name)?;
    Some((text, first, first + points as i64 - 1))
}

/// The leading forward differences Δ^j f(first), j = 0.. of `values`.
fn forward_differences(values: &[i128]) -> Vec<i128> {
    let mut row = values.to_vec();
    let mut out = Vec::with_capacity(values.len());
    while let Some(&head) = row.first() {
        out.push(head);
        row = row.windows(2).map(|w| w[1] - w[0]).collect();
    }
    out
}

/// Σ_j Δ^j · C(N − first, j) as `(a N^2 + b N + c) / d`, reduced.
fn newton_to_text(diffs: &[i128], first: i64, var: &str) -> Option<String> {
    let degree = diffs.len().checked_sub(1)?;
    let scale: i128 = (1..=degree as i128).product();
    // coefficients[k] is the coefficient of N^k, times `scale`.
    let mut coefficients = vec![0i128; degree + 1];
    for (j, &d) in diffs.iter().enumerate() {
        let mut term = vec![d.checked_mul(scale / (1..=j as i128).product::<i128>())?];
        for m in 0..j as i128 {
            // Multiply by (N − first − m).
            let shift = -(i128::from(first) + m);
            let mut next = vec![0i128; term.len() + 1];
            for (k, &c) in term.iter().enumerate() {
                next[k + 1] = next[k + 1].checked_add(c)?;
                next[k] = next[k].checked_add(c.checked_mul(shift)?)?;
            }
            term = next;
        }
        for (k, c) in term.into_iter().enumerate() {
            coefficients[k] = coefficients[k].checked_add(c)?;
        }
    }
    let g = coefficients.iter().fold(scale, |g, &c| gcd(g, c));
    let scale = scale / g.max(1);
    let terms: Vec<String> = coefficients
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, &c)| c != 0)
        .map(|(k, &c)| (k, c / g.max(1)))
        .enumerate()
        .map(|(i, (k, c))| monomial(i == 0, c, k, var))
        .collect();
    let poly = if terms.is_empty() {
        "0".to_string()
    } else {
        terms.concat()
    };
    Some(if scale == 1 {
        poly
    } else if terms.len() > 1 {
        format!("({poly}) / {scale}")
    } else {
        format!("{poly} / {scale}")
    })
}

fn monomial(first: bool, c: i128, k: usize, var: &str) -> String {
    let sign = match (first, c < 0) {
        (true, true) => "-",
        (true, false) => "",
        (false, true) => " - ",
        (false, false) => " + ",
    };
    let a = c.abs();
    let power = match k {
        0 => String::new(),
        1 => var.to_string(),
        _ => format!("{var}^{k}"),
    };
    let coefficient = if a == 1 && k > 0 {
        String::new()
    } else {
        a.to_string()
    };
    format!("{sign}{coefficient}{power}")
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newton_form_becomes_a_reduced_polynomial() {
        // N (N + 1) (N + 2) / 6 at N = 1, 2, 3, 4: 1, 4, 10, 20.
        let d = forward_differences(&[1, 4, 10, 20]);
        assert_eq!(
            newton_to_text(&d, 1, "N").as_deref(),
            Some("(N^3 + 3N^2 + 2N) / 6")
        );
        let d = forward_differences(&[0, 0, 1, 3]);
        assert_eq!(
            newton_to_text(&d[..3], 0, "N").as_deref(),
            Some("(N^2 - N) / 2")
        );
        assert_eq!(newton_to_text(&[5], 3, "N").as_deref(), Some("5"));
    }
}
