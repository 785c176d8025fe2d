//! The `locality` policy's placement: a multi-constraint METIS partition of
//! the task/tile graph, coarsened to fit.
//!
//! *Coarsening.* Every task belongs to the node of the first tile it writes,
//! with each index of that tile shifted right by `shift` bits: one node per
//! block of `2^shift` tiles per dimension of each matrix (the tasks that
//! write them). `shift` is the smallest that keeps the graph within
//! `max_nodes` nodes; a walk that exceeds it stops at once and starts again
//! with the next shift.
//!
//! *Weights.* A node weighs its tasks' compute seconds (constraint 0) and
//! the bytes of the tiles they write, i.e. the bytes its worker holds
//! (constraint 1); an edge weighs the bytes of the tiles that flow along the
//! DAG edges between its two nodes. A block of input tiles (coarsened the
//! same way) that tasks of two nodes or more read is a node too, weightless
//! but for METIS's minimum, joined to each reader node by the bytes its
//! tasks read of it: cutting it means another worker reads those tiles
//! from the store (without these nodes the GEMM tree's products were
//! placed with no regard for the A and B tiles they share). METIS
//! (`METIS_PartGraphKway`) splits the nodes into one part per worker slot,
//! balancing both constraints and minimising the bytes cut.
//!
//! The walk runs in sequential order with the children plans (one pass over
//! the DAG, memory = the coarse graph), before the simulation.

use crate::cost::StatementCost;
use crate::error::SimError;
use lpk_model::program::{Instance, Role};
use lpk_model::query::Engine;
use lpk_model::task::Task;
use rustc_hash::FxHashMap;
use std::ops::ControlFlow;

type Key = (lpk_model::MatrixId, Vec<i64>);

/// A placement of tasks on worker slots.
pub struct Partition {
    /// Nodes of the coarsened graph.
    pub nodes: usize,
    /// Bits each tile index was shifted by.
    pub shift: u32,
    part: FxHashMap<Key, usize>,
}

impl Partition {
    /// The part (worker slot) of a task.
    pub fn part_of(&self, engine: &Engine<'_, '_>, task: &Task) -> Result<usize, SimError> {
        let key = key(engine, task, self.shift)?;
        Ok(key.and_then(|k| self.part.get(&k).copied()).unwrap_or(0))
    }
}

fn key(engine: &Engine<'_, '_>, task: &Task, shift: u32) -> Result<Option<Key>, SimError> {
    let writes = engine.writes(task)?;
    Ok(writes
        .into_iter()
        .next()
        .map(|t| shifted(t.matrix, &t.index, shift)))
}

/// The block of tile `matrix[index]`: each index shifted right.
fn shifted(matrix: lpk_model::MatrixId, index: &[i64], shift: u32) -> Key {
    (matrix, index.iter().map(|&i| i >> shift).collect())
}

struct Graph {
    ids: FxHashMap<Key, u32>,
    secs: Vec<f64>,
    bytes: Vec<f64>,
    edges: FxHashMap<(u32, u32), f64>,
}

fn walk(
    inst: &Instance<'_>,
    costs: &[StatementCost],
    shift: u32,
    max_nodes: usize,
) -> Result<Option<Graph>, SimError> {
    let mut engine = Engine::new(inst);
    let mut g = Graph {
        ids: FxHashMap::default(),
        secs: Vec::new(),
        bytes: Vec::new(),
        edges: FxHashMap::default(),
    };
    let mut over = false;
    // Input tile blocks: the bytes each node reads of them.
    let mut inputs: FxHashMap<Key, FxHashMap<u32, f64>> = FxHashMap::default();
    let mut children: Vec<(Task, lpk_model::MatrixId)> = Vec::new();
    let node_of = |g: &mut Graph, k: Key| -> u32 {
        let n = g.ids.len() as u32;
        *g.ids.entry(k).or_insert_with(|| {
            g.secs.push(0.0);
            g.bytes.push(0.0);
            n
        })
    };
    inst.try_for_each_task::<SimError>(&mut |t| {
        let Some(k) = key(&engine, t, shift)? else {
            return Ok(ControlFlow::Continue(()));
        };
        let a = node_of(&mut g, k);
        if let Some(c) = costs.get(t.stmt.index()) {
            g.secs[a as usize] += c.seconds;
            g.bytes[a as usize] += c.write_bytes.iter().sum::<u64>() as f64;
        }
        let read_bytes = costs.get(t.stmt.index()).map(|c| &c.read_bytes[..]);
        for (i, r) in engine.reads(t)?.into_iter().enumerate() {
            if inst.program.matrices[r.matrix.index()].role != Role::Input {
                continue;
            }
            let bytes = read_bytes.and_then(|b| b.get(i)).copied().unwrap_or(0) as f64;
            *inputs
                .entry(shifted(r.matrix, &r.index, shift))
                .or_default()
                .entry(a)
                .or_insert(0.0) += bytes;
        }
        children.clear();
        engine.for_each_child(t, &mut |stmt, vars, matrix, _| {
            children.push((
                Task {
                    stmt,
                    vars: vars.into(),
                },
                matrix,
            ))
        })?;
        for (c, _) in children.drain(..) {
            let Some(kc) = key(&engine, &c, shift)? else {
                continue;
            };
            let b = node_of(&mut g, kc);
            if a != b {
                let bytes = costs
                    .get(c.stmt.index())
                    .and_then(|s| s.read_bytes.first())
                    .copied()
                    .unwrap_or(0) as f64;
                *g.edges.entry((a.min(b), a.max(b))).or_insert(0.0) += bytes;
            }
        }
        if g.ids.len() > max_nodes {
            over = true;
            return Ok(ControlFlow::Break(()));
        }
        Ok(ControlFlow::Continue(()))
    })?;
    if over {
        return Ok(None);
    }
    // An input block read by two nodes or more is a node of its own,
    // joined to its readers by the bytes they read of it: METIS keeps
    // readers of the same inputs together. One read by a single node
    // would be a pendant node and change nothing but METIS's luck.
    let mut inputs: Vec<(Key, FxHashMap<u32, f64>)> =
        inputs.into_iter().filter(|(_, r)| r.len() > 1).collect();
    inputs.sort_by(|x, y| x.0.cmp(&y.0));
    for (k, readers) in inputs {
        let b = node_of(&mut g, k);
        let mut readers: Vec<(u32, f64)> = readers.into_iter().collect();
        readers.sort_by_key(|r| r.0);
        for (a, bytes) in readers {
            *g.edges.entry((a.min(b), a.max(b))).or_insert(0.0) += bytes;
        }
    }
    Ok((g.ids.len() <= max_nodes).then_some(g))
}

/// Integer weights for METIS: each in 1..=scale, proportional.
fn scaled(xs: &[f64], scale: f64) -> Vec<metis::Idx> {
    let top = xs.iter().cloned().fold(0.0f64, f64::max);
    xs.iter()
        .map(|&x| {
            if top > 0.0 {
                1 + (x / top * scale) as metis::Idx
            } else {
                1
            }
        })
        .collect()
}

/// Builds the coarsened graph of `inst` and partitions it into `parts`.
pub fn build(
    inst: &Instance<'_>,
    costs: &[StatementCost],
    parts: usize,
    max_nodes: usize,
) -> Result<Partition, SimError> {
    let max_nodes = max_nodes.max(parts).max(1);
    let mut shift = 0;
    let g = loop {
        if let Some(g) = walk(inst, costs, shift, max_nodes)? {
            break g;
        }
        shift += 1;
        if shift > 62 {
            return Err(SimError::Partition(
                "the coarsened graph does not fit at any shift".into(),
            ));
        }
    };
    let n = g.ids.len();
    let mut assignment = vec![0 as metis::Idx; n];
    // More parts than nodes leaves METIS parts to cut out of nothing: it
    // prints "Cannot bisect a graph with 0 vertices" on stdout (into a
    // JSON report) and fails. A part per node is the finest there is.
    let parts = parts.min(n);
    if parts > 1 && n > 1 {
        // CSR of the undirected graph.
        let mut adj: Vec<Vec<(u32, f64)>> = vec![Vec::new(); n];
        for (&(a, b), &w) in &g.edges {
            adj[a as usize].push((b, w));
            adj[b as usize].push((a, w));
        }
        let all: Vec<f64> = g.edges.values().copied().collect();
        let top = all.iter().cloned().fold(0.0f64, f64::max);
        let mut xadj = Vec::with_capacity(n + 1);
        let mut adjncy = Vec::new();
        let mut adjwgt = Vec::new();
        xadj.push(0 as metis::Idx);
        for list in &mut adj {
            list.sort_by_key(|&(b, _)| b);
            for &(b, w) in list.iter() {
                adjncy.push(b as metis::Idx);
                adjwgt.push(if top > 0.0 {
                    1 + (w / top * 1000.0) as metis::Idx
                } else {
                    1
                });
            }
            xadj.push(adjncy.len() as metis::Idx);
        }
        // Two constraints per node, interleaved.
        let (s, b) = (scaled(&g.secs, 1000.0), scaled(&g.bytes, 1000.0));
        let vwgt: Vec<metis::Idx> = s.iter().zip(&b).flat_map(|(&x, &y)| [x, y]).collect();
        let nparts = metis::Idx::try_from(parts)
            .map_err(|_| SimError::Partition(format!("{parts} parts")))?;
        metis::Graph::new(2, nparts, &xadj, &adjncy)
            .map_err(|e| SimError::Partition(e.to_string()))?
            .set_vwgt(&vwgt)
            .set_adjwgt(&adjwgt)
            .part_kway(&mut assignment)
            .map_err(|e| SimError::Partition(e.to_string()))?;
    }
    let part = g
        .ids
        .into_iter()
        .map(|(k, i)| (k, assignment[i as usize].max(0) as usize))
        .collect();
    Ok(Partition {
        nodes: n,
        shift,
        part,
    })
}
