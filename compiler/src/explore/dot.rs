//! Graphviz DOT of a program (`lpkc dot`): the program-level graph (one
//! node per statement with its kernel, line, iteration domain and guards;
//! one edge per dependence relation, i.e. per write access and each partner
//! read access of the plans, labelled with the matrix and the index
//! relation) and the expanded DAG of one instance (nodes coloured by
//! kernel with a legend, optionally clustered by a loop variable). A zero
//! matrix (`matrix P[..] = 0;`) is a note of its own, with a dashed edge
//! to each read that may take a zero tile: in the program graph every read
//! of it, in the expanded DAG each read of a tile no task writes (which is
//! no edge of the DAG).
//!
//! Every label and identifier goes through [`quote`], so the output renders
//! with `dot` without warnings whatever the names.

use crate::explore::limit::instance_name;
use lpk_model::dag::Dag;
use lpk_model::program::{Access, DomainItem, Instance, Program, Statement};
use lpk_model::task::TileRef;
use lpk_model::{KernelId, MatrixId, StmtId};
use std::collections::HashSet;

/// The fill colours of kernels, by kernel index (a qualitative palette
/// that stays readable with black text).
pub const PALETTE: [&str; 10] = [
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
    "#d9d9d9", "#bc80bd",
];

/// The fill colour of kernel `k`.
pub(crate) fn kernel_color(k: KernelId) -> &'static str {
    PALETTE
        .get(k.index() % PALETTE.len())
        .copied()
        .unwrap_or("#ffffff")
}

/// A DOT quoted string: backslashes and quotes escaped, line breaks as
/// `\n` (centred lines), other control characters dropped.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The iteration domain of a statement as text, one constraint per item:
/// `0 <= k < N`, `k + 1 <= i < N step 2`, guards as written (a skipped
/// branch as `not (cond)`).
pub fn domain_text(p: &Program, st: &Statement) -> Vec<String> {
    let mut out = Vec::new();
    for item in &st.domain {
        match item {
            DomainItem::Loop { slot, lo, hi, step } => {
                let var = st
                    .vars
                    .get(*slot as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("v{slot}"));
                let step = p.expr_text(*step, &st.vars);
                let mut text = format!(
                    "{} <= {var} < {}",
                    p.expr_text(*lo, &st.vars),
                    p.expr_text(*hi, &st.vars)
                );
                if step != "1" {
                    text.push_str(&format!(" step {step}"));
                }
                out.push(text);
            }
            DomainItem::Guard { cond, positive } => {
                let c = p.expr_text(*cond, &st.vars);
                out.push(if *positive { c } else { format!("not ({c})") });
            }
        }
    }
    out
}

/// The name of a statement as in task names: `kernel@LINE` (with `:COL`
/// when several calls share the line).
pub fn statement_name(p: &Program, stmt: StmtId) -> String {
    let Some(st) = p.get_statement(stmt) else {
        return "?".to_string();
    };
    let kernel = p.get_kernel(st.kernel).map_or("?", |k| k.name.as_str());
    let shared = p.statements.iter().filter(|o| o.line == st.line).count() > 1;
    if shared {
        format!("{kernel}@{}:{}", st.line, st.column)
    } else {
        format!("{kernel}@{}", st.line)
    }
}

fn access_text(p: &Program, acc: &Access, vars: &[String]) -> String {
    let name = p.get_matrix(acc.matrix).map_or("?", |m| m.name.as_str());
    let idx: Vec<String> = acc.indices.iter().map(|&i| p.expr_text(i, vars)).collect();
    format!("{name}[{}]", idx.join(", "))
}

/// The label of a dependence relation from a write access to a read
/// access: `L[i, k] → L[j', k'] (j' = i, k' = k)`. The reader's loop
/// variables that share a name with the writer's are primed; the relation
/// equates the two accesses' indices coordinate by coordinate (equations
/// that hold trivially are left out).
pub fn relation_text(
    p: &Program,
    writer: StmtId,
    write: &Access,
    reader: StmtId,
    read: &Access,
) -> String {
    let empty = Vec::new();
    let wvars = p.get_statement(writer).map_or(&empty, |s| &s.vars);
    let rvars: Vec<String> = p
        .get_statement(reader)
        .map_or(&empty, |s| &s.vars)
        .iter()
        .map(|v| {
            if wvars.contains(v) {
                format!("{v}'")
            } else {
                v.clone()
            }
        })
        .collect();
    let mut eqs: Vec<String> = Vec::new();
    for (&w, &r) in write.indices.iter().zip(&read.indices) {
        let (wt, rt) = (p.expr_text(w, wvars), p.expr_text(r, &rvars));
        let eq = format!("{rt} = {wt}");
        if wt != rt && !eqs.contains(&eq) {
            eqs.push(eq);
        }
    }
    let mut text = format!(
        "{} → {}",
        access_text(p, write, wvars),
        access_text(p, read, &rvars)
    );
    if !eqs.is_empty() {
        text.push_str(&format!(" ({})", eqs.join(", ")));
    }
    text
}

/// One dependence relation of the program-level graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relation {
    /// The writing statement.
    pub writer: StmtId,
    /// Its write access.
    pub write: u32,
    /// The reading statement.
    pub reader: StmtId,
    /// Its read access.
    pub read: u32,
    /// The label (see [`relation_text`]).
    pub label: String,
}

/// Every dependence relation of the plans, in statement and access order.
pub fn relations(p: &Program) -> Vec<Relation> {
    let mut out = Vec::new();
    for ((s, st), plans) in p.statement_ids().zip(&p.plans) {
        for (a, (acc, ap)) in st.writes.iter().zip(&plans.writes).enumerate() {
            for partner in &ap.partners {
                let Some(read) = p
                    .get_statement(partner.stmt)
                    .and_then(|r| r.reads.get(partner.access as usize))
                else {
                    continue;
                };
                out.push(Relation {
                    writer: s,
                    write: a as u32,
                    reader: partner.stmt,
                    read: partner.access,
                    label: relation_text(p, s, acc, partner.stmt, read),
                });
            }
        }
    }
    out
}

fn header(out: &mut String, title: &str) {
    out.push_str(&format!("digraph {} {{\n", quote(title)));
    out.push_str("  rankdir=TB;\n");
    out.push_str("  node [shape=box, style=\"filled,rounded\", fontsize=11];\n");
    out.push_str("  edge [fontsize=9];\n");
}

/// The legend: one node per kernel the program calls, in its colour.
fn legend(out: &mut String, p: &Program) {
    let mut used: Vec<KernelId> = p.statements.iter().map(|s| s.kernel).collect();
    used.sort_unstable();
    used.dedup();
    out.push_str("  subgraph cluster_legend {\n    label=\"kernels\";\n    style=dashed;\n");
    for k in &used {
        let name = p.get_kernel(*k).map_or("?", |k| k.name.as_str());
        out.push_str(&format!(
            "    {} [label={}, fillcolor={}];\n",
            quote(&format!("legend_{k}")),
            quote(name),
            quote(kernel_color(*k))
        ));
    }
    // Invisible edges keep the legend in one column.
    for w in used.windows(2) {
        if let [a, b] = w {
            out.push_str(&format!(
                "    {} -> {} [style=invis];\n",
                quote(&format!("legend_{a}")),
                quote(&format!("legend_{b}"))
            ));
        }
    }
    out.push_str("  }\n");
}

/// The zero matrices of a program, by id.
fn zero_matrices(p: &Program) -> Vec<MatrixId> {
    p.matrix_ids()
        .filter(|(_, m)| m.zero)
        .map(|(id, _)| id)
        .collect()
}

/// The note node of zero matrix `m`.
fn zero_note(out: &mut String, p: &Program, m: MatrixId) {
    let name = p.get_matrix(m).map_or("?", |x| x.name.as_str());
    out.push_str(&format!(
        "  {} [shape=note, style=filled, fillcolor=\"#ffffff\", label={}];\n",
        quote(&format!("zero_{m}")),
        quote(&format!(
            "{name} = 0\nzero matrix: a tile no task writes reads as zeros"
        ))
    ));
}

/// A dashed edge from zero matrix `m`'s note to `node`.
fn zero_edge(out: &mut String, m: MatrixId, node: &str, label: &str) {
    out.push_str(&format!(
        "  {} -> {} [style=dashed, label={}];\n",
        quote(&format!("zero_{m}")),
        quote(node),
        quote(label)
    ));
}

/// The program-level graph: statements and the symbolic dependence
/// relations between them.
pub fn program_dot(p: &Program) -> String {
    let mut out = String::new();
    header(&mut out, &p.name);
    for (s, st) in p.statement_ids() {
        let mut lines = vec![format!("{}", statement_name(p, s))];
        lines.extend(domain_text(p, st));
        out.push_str(&format!(
            "  {} [label={}, fillcolor={}];\n",
            quote(&format!("s{s}")),
            quote(&lines.join("\n")),
            quote(kernel_color(st.kernel))
        ));
    }
    for r in relations(p) {
        out.push_str(&format!(
            "  {} -> {} [label={}];\n",
            quote(&format!("s{}", r.writer)),
            quote(&format!("s{}", r.reader)),
            quote(&r.label)
        ));
    }
    for m in zero_matrices(p) {
        zero_note(&mut out, p, m);
        for (s, st) in p.statements.iter().enumerate() {
            for acc in st.reads.iter().filter(|a| a.matrix == m) {
                let label = format!("{} if unwritten", access_text(p, acc, &st.vars));
                zero_edge(&mut out, m, &format!("s{s}"), &label);
            }
        }
    }
    out.push_str("}\n");
    out
}

/// Why the expanded DAG could not be drawn.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DotError {
    /// `--cluster` names no loop variable of the program.
    #[error(
        "`--cluster {name}`: no statement has a loop variable `{name}` (loop variables: {known})"
    )]
    UnknownVariable {
        /// The name given.
        name: String,
        /// The program's loop variables, comma-separated.
        known: String,
    },
}

/// The loop variables of a program, in first-seen order.
pub(crate) fn loop_variables(p: &Program) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for st in &p.statements {
        for v in &st.vars {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
    }
    out
}

/// The expanded DAG of an instance: one node per task, coloured by kernel,
/// a legend, and with `cluster` one subgraph per value of that loop
/// variable (tasks of statements without it stay outside).
pub fn expanded_dot(
    inst: &Instance<'_>,
    dag: &Dag,
    cluster: Option<&str>,
) -> Result<String, DotError> {
    let p = inst.program;
    if let Some(var) = cluster {
        if !p.statements.iter().any(|s| s.vars.iter().any(|v| v == var)) {
            return Err(DotError::UnknownVariable {
                name: var.to_string(),
                known: loop_variables(p).join(", "),
            });
        }
    }
    let mut out = String::new();
    header(&mut out, &instance_name(inst));
    legend(&mut out, p);
    let node = |id: usize| {
        let t = dag.tasks.get(id);
        let kernel = t.and_then(|t| p.get_statement(t.stmt)).map(|s| s.kernel);
        let label = t.map_or_else(|| "?".to_string(), |t| p.task_name(t).to_string());
        format!(
            "{} [label={}, fillcolor={}];\n",
            quote(&format!("t{id}")),
            quote(&label),
            quote(kernel.map_or(PALETTE[0], kernel_color))
        )
    };
    // Cluster values, in first-seen (sequential) order.
    let mut groups: Vec<(i64, Vec<usize>)> = Vec::new();
    let mut loose: Vec<usize> = Vec::new();
    for (id, t) in dag.tasks.iter().enumerate() {
        let value = cluster.and_then(|var| {
            let st = p.get_statement(t.stmt)?;
            let pos = st.vars.iter().position(|v| v == var)?;
            t.vars.get(pos).copied()
        });
        match value {
            Some(v) => match groups.iter_mut().find(|(g, _)| *g == v) {
                Some((_, ids)) => ids.push(id),
                None => groups.push((v, vec![id])),
            },
            None => loose.push(id),
        }
    }
    let var = cluster.unwrap_or_default();
    for (v, ids) in &groups {
        out.push_str(&format!(
            "  subgraph {} {{\n    label={};\n    style=rounded;\n",
            quote(&format!("cluster_{var}_{v}")),
            quote(&format!("{var} = {v}"))
        ));
        for &id in ids {
            out.push_str("    ");
            out.push_str(&node(id));
        }
        out.push_str("  }\n");
    }
    for &id in &loose {
        out.push_str("  ");
        out.push_str(&node(id));
    }
    for e in &dag.edges {
        out.push_str(&format!(
            "  {} -> {} [label={}];\n",
            quote(&format!("t{}", e.from)),
            quote(&format!("t{}", e.to)),
            quote(&p.tile_name(&e.tile))
        ));
    }
    zero_reads(&mut out, inst, dag);
    out.push_str("}\n");
    Ok(out)
}

/// The notes of the zero matrices and a dashed edge for each read of one
/// of their tiles that no edge of the DAG brings (a tile no task writes).
fn zero_reads(out: &mut String, inst: &Instance<'_>, dag: &Dag) {
    let p = inst.program;
    let zero = zero_matrices(p);
    if zero.is_empty() {
        return;
    }
    let fed: HashSet<(usize, &TileRef)> = dag.edges.iter().map(|e| (e.to, &e.tile)).collect();
    for &m in &zero {
        zero_note(out, p, m);
        for (id, t) in dag.tasks.iter().enumerate() {
            let Some(st) = p.get_statement(t.stmt) else {
                continue;
            };
            let mut seen: Vec<TileRef> = Vec::new();
            for acc in st.reads.iter().filter(|a| a.matrix == m) {
                // An index that fails to evaluate has no tile to draw; the
                // DAG itself was built from the same program.
                let Ok(tile) = p.tile_of(&inst.params, t, acc) else {
                    continue;
                };
                if fed.contains(&(id, &tile)) || seen.contains(&tile) {
                    continue;
                }
                zero_edge(out, m, &format!("t{id}"), &p.tile_name(&tile));
                seen.push(tile);
            }
        }
    }
}
