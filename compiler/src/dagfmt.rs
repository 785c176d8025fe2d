//! Renderings of an expanded DAG: the JSON of spec/cli.md and Graphviz DOT
//! (nodes coloured by kernel, edges labelled with their tile).

use runtime_interp::dag::Dag;
use runtime_interp::model::Instance;

/// `{"program", "params", "tasks": [{"id", "kernel", "line", "vars"}],
/// "edges": [{"from", "to", "tile"}]}`.
pub fn dag_json(inst: &Instance<'_>, dag: &Dag) -> serde_json::Value {
    let p = inst.program;
    let mut params = serde_json::Map::new();
    for (d, v) in p.params.iter().zip(&inst.params) {
        params.insert(d.name.clone(), serde_json::Value::from(*v));
    }
    let tasks: Vec<serde_json::Value> = dag
        .tasks
        .iter()
        .enumerate()
        .map(|(id, t)| {
            let mut v = crate::query::task_json(p, t);
            v["id"] = serde_json::Value::from(id);
            v
        })
        .collect();
    let edges: Vec<serde_json::Value> = dag
        .edges
        .iter()
        .map(|e| {
            let tile = format!(
                "{}[{}]",
                p.matrices
                    .get(e.tile.matrix as usize)
                    .map(|m| m.name.as_str())
                    .unwrap_or("?"),
                e.tile
                    .index
                    .iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            );
            serde_json::json!({"from": e.from, "to": e.to, "tile": tile})
        })
        .collect();
    serde_json::json!({
        "program": p.name,
        "params": params,
        "tasks": tasks,
        "edges": edges,
    })
}

const PALETTE: [&str; 10] = [
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
    "#d9d9d9", "#bc80bd",
];

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Graphviz DOT of the expanded DAG.
pub fn dag_dot(inst: &Instance<'_>, dag: &Dag) -> String {
    let p = inst.program;
    let mut out = String::new();
    out.push_str(&format!("digraph {} {{\n", quote(&p.name)));
    out.push_str("  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for (id, t) in dag.tasks.iter().enumerate() {
        let kernel = p
            .statements
            .get(t.stmt as usize)
            .map(|s| s.kernel as usize)
            .unwrap_or(0);
        let color = PALETTE[kernel % PALETTE.len()];
        out.push_str(&format!(
            "  t{id} [label={}, fillcolor=\"{color}\"];\n",
            quote(&p.task_name(t).to_string())
        ));
    }
    for e in &dag.edges {
        out.push_str(&format!(
            "  t{} -> t{} [label={}];\n",
            e.from,
            e.to,
            quote(&p.tile_name(&e.tile))
        ));
    }
    out.push_str("}\n");
    out
}
