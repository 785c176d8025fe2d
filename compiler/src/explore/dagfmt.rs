//! Renderings of an expanded DAG: the JSON of docs/cli.md and Graphviz DOT
//! (nodes coloured by kernel, edges labelled with their tile; see
//! [`crate::explore::dot`]).

use lpk_model::dag::Dag;
use lpk_model::program::Instance;

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
            let mut v = crate::explore::query::task_json(p, t);
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
                p.get_matrix(e.tile.matrix)
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

/// Graphviz DOT of the expanded DAG: the drawing of `lpkc dot -p`
/// without clusters (nodes coloured by kernel, a legend, edges labelled
/// with their tile).
pub fn dag_dot(inst: &Instance<'_>, dag: &Dag) -> String {
    // Without a cluster variable the drawing cannot fail.
    crate::explore::dot::expanded_dot(inst, dag, None).unwrap_or_default()
}
