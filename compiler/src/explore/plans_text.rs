//! The readable form of a program's dependence plans (`lpkc plans`): for
//! every access, its inverse plan as numbered steps, and for every write
//! the read accesses it feeds. Each plan says where it enumerates, so a
//! reviewer sees at once which answers cost a loop.

use lpk_model::expr::ExprRef;
use lpk_model::plan::{Plan, PlanStep};
use lpk_model::program::{Access, AccessPlans, Program, Statement};
use std::fmt::Write;

fn access_text(p: &Program, vars: &[String], a: &Access) -> String {
    let name = p
        .get_matrix(a.matrix)
        .map(|m| m.name.as_str())
        .unwrap_or("?");
    let idx: Vec<String> = a.indices.iter().map(|&i| p.expr_text(i, vars)).collect();
    format!("{name}[{}]", idx.join(", "))
}

fn slot_names(st_vars: &[String], plan: &Plan) -> Vec<String> {
    let mut names: Vec<String> = st_vars.to_vec();
    for k in 0..plan.inputs {
        names.push(format!("t{k}"));
    }
    for k in plan.depth + plan.inputs..plan.slots {
        names.push(format!("_{}", k - plan.depth - plan.inputs));
    }
    names
}

/// Renders one plan's steps, one per line, with `indent`.
pub(crate) fn plan_text(p: &Program, vars: &[String], plan: &Plan, indent: &str) -> String {
    let names = slot_names(vars, plan);
    let e = |r: ExprRef| p.expr_text(r, &names);
    let name = |s: u32| {
        names
            .get(s as usize)
            .cloned()
            .unwrap_or_else(|| format!("s{s}"))
    };
    let mut out = String::new();
    for (i, step) in plan.steps.iter().enumerate() {
        let line = match step {
            PlanStep::Set { slot, value } => format!("{} := {}", name(*slot), e(*value)),
            PlanStep::SetDiv { slot, num, den } => {
                format!(
                    "{} := ({}) / {den}  (exact, else none)",
                    name(*slot),
                    e(*num)
                )
            }
            PlanStep::SetLog { slot, value, base } => {
                format!(
                    "{} := log{base}({})  (exact power, else none)",
                    name(*slot),
                    e(*value)
                )
            }
            PlanStep::Check { cond } => format!("check {}", e(*cond)),
            PlanStep::CheckRange { slot, lo, hi } => {
                format!("check {} <= {} < {}", e(*lo), name(*slot), e(*hi))
            }
            PlanStep::Range(r) => {
                let mut lo_s = e(r.lo);
                for l in &r.lower {
                    lo_s = format!("max({lo_s}, {})", e(*l));
                }
                let mut hi_s = e(r.hi);
                for u in &r.upper {
                    hi_s = format!("min({hi_s}, {})", e(*u));
                }
                let step_s = if matches!(p.exprs.get(r.step), Some(lpk_model::expr::Node::Int(1))) {
                    String::new()
                } else {
                    format!(" step {} from {}", e(r.step), e(r.lo))
                };
                format!("ENUMERATE {} in [{lo_s}, {hi_s}){step_s}", name(r.slot))
            }
        };
        let _ = writeln!(out, "{indent}{}. {line}", i + 1);
    }
    if plan.steps.is_empty() {
        let _ = writeln!(out, "{indent}(no steps)");
    }
    out
}

/// Whether a plan enumerates.
pub fn enumerates(plan: &Plan) -> bool {
    plan.steps.iter().any(|s| matches!(s, PlanStep::Range(_)))
}

/// Renders every plan of a program.
pub fn plans_text(p: &Program) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "program {}", p.name);
    for (s, st) in p.statements.iter().enumerate() {
        let kernel = p
            .get_kernel(st.kernel)
            .map(|k| k.name.as_str())
            .unwrap_or("?");
        let _ = writeln!(
            out,
            "\nstatement {kernel}@{}:{} ({})",
            st.line,
            st.column,
            if st.vars.is_empty() {
                "no loop variables".to_string()
            } else {
                st.vars.join(", ")
            }
        );
        let Some(plans) = p.plans.get(s) else {
            continue;
        };
        let sections = [
            ("writes", &st.writes, &plans.writes),
            ("reads", &st.reads, &plans.reads),
        ];
        for (what, accesses, aps) in sections {
            for (acc, ap) in accesses.iter().zip(aps.iter()) {
                access_plans_text(&mut out, p, st, what, acc, ap);
            }
        }
    }
    out
}

/// Renders the plans of access `acc` of `st` (one of its `what`, "writes"
/// or "reads"): its inverse plan and its partners.
fn access_plans_text(
    out: &mut String,
    p: &Program,
    st: &Statement,
    what: &str,
    acc: &Access,
    ap: &AccessPlans,
) {
    let inputs: Vec<String> = (0..acc.indices.len()).map(|k| format!("t{k}")).collect();
    let tile = format!(
        "{}[{}]",
        p.get_matrix(acc.matrix)
            .map(|m| m.name.as_str())
            .unwrap_or("?"),
        inputs.join(", ")
    );
    let _ = writeln!(
        out,
        "  {what} {} — given tile {tile}, {}:",
        access_text(p, &st.vars, acc),
        if enumerates(&ap.inverse) {
            "enumerates"
        } else {
            "closed form, no enumeration"
        }
    );
    out.push_str(&plan_text(p, &st.vars, &ap.inverse, "      "));
    let partner_kind = if what == "writes" {
        "feeds"
    } else {
        "reads from"
    };
    let partners = partners_text(p, what, ap);
    let _ = writeln!(
        out,
        "    {partner_kind}: {}",
        if partners.is_empty() {
            if what == "writes" {
                "nothing (no access reads this matrix where it is written)".to_string()
            } else if p.is_zero(acc.matrix) {
                "nothing (a zero matrix: its tiles read as zero tiles)".to_string()
            } else {
                "nothing (an input, or no statement writes these tiles)".to_string()
            }
        } else if what != "writes" && p.is_zero(acc.matrix) {
            format!(
                "{} (a zero matrix: a tile none of them writes reads as a zero tile)",
                partners.join("; ")
            )
        } else {
            partners.join("; ")
        }
    );
}

/// The partner accesses of `ap` (an access of the kind `what`), each as
/// `kernel@LINE:COL M[...]`.
fn partners_text(p: &Program, what: &str, ap: &AccessPlans) -> Vec<String> {
    ap.partners
        .iter()
        .filter_map(|r| {
            let ps = p.get_statement(r.stmt)?;
            let list = if what == "writes" {
                &ps.reads
            } else {
                &ps.writes
            };
            let pa = list.get(r.access as usize)?;
            let k = p
                .get_kernel(ps.kernel)
                .map(|k| k.name.as_str())
                .unwrap_or("?");
            Some(format!(
                "{k}@{}:{} {}",
                ps.line,
                ps.column,
                access_text(p, &ps.vars, pa)
            ))
        })
        .collect()
}
