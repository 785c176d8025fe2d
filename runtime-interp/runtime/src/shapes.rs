//! Input shapes against the kernels' shape rules, checked when a run binds
//! its inputs, before any task runs.
//!
//! The tile grids of the inputs are checked by `dense::check_grids`; this
//! module checks the sizes inside the grids. With block `B`, every tile of
//! a dimension is `B` long except the last, which holds the rest (the
//! *edge*). Two tiles that a kernel ties (`gemm`: a's columns and b's
//! rows) can differ only if one of them is not `B` long, and every size
//! that is not `B` comes from an input's edge tile, from a 1-D input's
//! full width, or from a kernel that changes sizes (QR). So the check
//! starts from the readers of the inputs' short tiles (plan queries, no
//! expansion), follows the children of every task that writes a tile with
//! a size other than `B`, and evaluates each task's tile shapes with the
//! kernel's rule (from the [`crate::kernels::Registry`]); the shapes of intermediate
//! tiles come from their writers, memoised. Every size remembers which
//! input dimension it comes from, so a disagreement names both inputs.
//!
//! The work is bounded ([`TASK_BUDGET`] tasks): past it the check stops
//! and the kernels' own checks remain the backstop. Instances whose
//! dimensions are multiples of the block have no short tile and cost
//! nothing. Kernels without a standard shape rule are not checked, and
//! their results have unknown shapes.

use crate::kernels::rules::Dim;
use crate::kernels::Registry;
use lpk_model::program::{Arg, Instance, ParamKind, Role};
use lpk_model::query::{Engine, QueryError};
use lpk_model::task::{Task, TileRef};
use lpk_model::MatrixId;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;

/// Tasks whose shapes the check evaluates at most (writers of
/// intermediate tiles included).
pub(crate) const TASK_BUDGET: usize = 50_000;

/// One dimension of an input matrix, as a disagreement names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputDim {
    /// The matrix's name.
    pub matrix: String,
    /// Its shape (rows, columns).
    pub shape: (usize, usize),
    /// Whether it is a 1-D matrix of row blocks (its columns are not cut).
    pub one_d: bool,
    /// The dimension.
    pub dim: Dim,
    /// The block size.
    pub block: usize,
}

impl InputDim {
    fn len(&self) -> usize {
        match self.dim {
            Dim::Rows => self.shape.0,
            Dim::Cols => self.shape.1,
        }
    }
}

impl fmt::Display for InputDim {
    /// `B's rows (100, 2 tiles of 64 with an edge tile of 36)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (n, b) = (self.len(), self.block.max(1));
        write!(f, "{}'s {} ({n}, ", self.matrix, self.dim.plural())?;
        if self.one_d && self.dim == Dim::Cols {
            return write!(f, "not cut into tiles)");
        }
        let tiles = n.div_ceil(b);
        let edge = n - (tiles.saturating_sub(1)) * b;
        match tiles {
            0 => write!(f, "no tiles)"),
            1 => write!(f, "1 tile of {n})"),
            _ if edge == b => write!(f, "{tiles} tiles of {b})"),
            _ => write!(f, "{tiles} tiles of {b} with an edge tile of {edge})"),
        }
    }
}

/// Two input dimensions that a kernel ties but whose tiles differ.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {first} and {second} meet in kernel `{kernel}` (line {line}) as `{}`'s {} and `{}`'s {} (first in task {task}, where `{}` is {}×{} and `{}` is {}×{})",
    inputs_text(first, second),
    first_arg.0, first_arg.1.plural(), second_arg.0, second_arg.1.plural(),
    first_arg.0, first_tile.0, first_tile.1, second_arg.0, second_tile.0, second_tile.1)]
pub struct Disagreement {
    /// The first input dimension.
    pub first: InputDim,
    /// The second (possibly of the same input).
    pub second: InputDim,
    /// The kernel that ties them.
    pub kernel: String,
    /// The line of the statement.
    pub line: u32,
    /// The kernel parameter and dimension the first meets it as.
    pub first_arg: (String, Dim),
    /// The same for the second.
    pub second_arg: (String, Dim),
    /// The first task found that would fail, e.g. `gemm_acc@40(m=0, n=1)`.
    pub task: String,
    /// The shape of the first argument's tile in that task.
    pub first_tile: (usize, usize),
    /// The shape of the second argument's tile.
    pub second_tile: (usize, usize),
}

fn inputs_text(a: &InputDim, b: &InputDim) -> String {
    let shape = |d: &InputDim| format!("{}×{}", d.shape.0, d.shape.1);
    if a.matrix == b.matrix {
        format!("input `{}` ({}) disagrees with itself", a.matrix, shape(a))
    } else {
        format!(
            "inputs `{}` ({}) and `{}` ({}) disagree",
            a.matrix,
            shape(a),
            b.matrix,
            shape(b)
        )
    }
}

/// Why the check could not finish (a plan query failed). Runs go on: the
/// executor reports such failures with the task at hand.
#[derive(Debug)]
enum Stop {
    Found(Box<Disagreement>),
    Query,
    Budget,
}

impl From<QueryError> for Stop {
    fn from(_: QueryError) -> Self {
        Stop::Query
    }
}

/// Where a tile size comes from: a dimension of an input matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Origin {
    matrix: MatrixId,
    dim: Dim,
}

/// One dimension of a tile: its size and, when known, its origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Size {
    len: usize,
    origin: Option<Origin>,
}

/// A tile's shape; `None` dimensions are unknown.
type Shape = [Option<Size>; 2];

struct Checker<'a, 'p> {
    inst: &'a Instance<'p>,
    registry: &'a Registry,
    engine: Engine<'a, 'p>,
    inputs: &'a BTreeMap<MatrixId, (usize, usize)>,
    block: usize,
    shapes: FxHashMap<TileRef, Shape>,
    evaluated: FxHashSet<Task>,
    work: usize,
}

impl<'a, 'p> Checker<'a, 'p> {
    /// A checker with nothing evaluated yet, `work` tasks of its
    /// [`TASK_BUDGET`] already spent.
    fn new(
        inst: &'a Instance<'p>,
        registry: &'a Registry,
        inputs: &'a BTreeMap<MatrixId, (usize, usize)>,
        block: usize,
        work: usize,
    ) -> Self {
        Checker {
            inst,
            registry,
            engine: Engine::new(inst),
            inputs,
            block,
            shapes: FxHashMap::default(),
            evaluated: FxHashSet::default(),
            work,
        }
    }
}

/// Checks that no task would meet two tiles of different sizes where its
/// kernel's shape rule ties them. `inputs` holds the shape (rows, columns)
/// of every input matrix, whose tile grids already fit the instance.
pub fn check(
    inst: &Instance<'_>,
    registry: &Registry,
    inputs: &BTreeMap<MatrixId, (usize, usize)>,
    block: usize,
) -> Result<(), Box<Disagreement>> {
    if block == 0 {
        return Ok(());
    }
    let mut checker = Checker::new(inst, registry, inputs, block, 0);
    match checker.run() {
        Ok(()) | Err(Stop::Query) | Err(Stop::Budget) => Ok(()),
        Err(Stop::Found(d)) => Err(d),
    }
}

/// Tasks evaluated at most to predict one output's shape.
const PREDICT_BUDGET: usize = 10_000;

/// Predicts the dense shape (rows, columns) of a 2-D output matrix before
/// the run, so its file can be written tile by tile in place: the shape of
/// one of its corner tiles is evaluated with the kernels' rules, and each
/// of its dimensions is taken to be as long as the input dimension that
/// tile's size comes from (with the same tile count). `None` when that
/// cannot be told (no rule, a size computed rather than copied, another
/// tile count, or more than a small budget of work); callers then collect
/// the tiles and assemble them at the end. A prediction holds for every
/// tile only if the output's tiles follow the uniform blocking, which the
/// writer checks as tiles arrive.
pub(crate) fn predict_output(
    inst: &Instance<'_>,
    registry: &Registry,
    inputs: &BTreeMap<MatrixId, (usize, usize)>,
    block: usize,
    matrix: MatrixId,
) -> Option<(usize, usize)> {
    let ext = inst.extents.get(matrix.index())?;
    let (&[tr, tc], true) = (ext.as_slice(), block > 0) else {
        return None;
    };
    if tr <= 0 || tc <= 0 {
        return None;
    }
    let mut checker = Checker::new(inst, registry, inputs, block, TASK_BUDGET - PREDICT_BUDGET);
    let corners = [(0, 0), (tr - 1, 0), (0, tc - 1), (tr - 1, tc - 1)];
    for (i, j) in corners {
        let tile = TileRef {
            matrix,
            index: vec![i, j],
        };
        let Some(writer) = checker.engine.writer(&tile).ok()?.into_iter().next() else {
            continue;
        };
        match checker.evaluate(&writer) {
            Ok(()) => {}
            Err(_) => return None,
        }
        let [Some(rows), Some(cols)] = checker.shape(&tile) else {
            return None;
        };
        let len = |size: Size, tiles: i64| -> Option<usize> {
            let o = size.origin?;
            let &(r, c) = inputs.get(&o.matrix)?;
            let n = match o.dim {
                Dim::Rows => r,
                // The columns of a 1-D input are one tile wide.
                Dim::Cols if checker.one_d(o.matrix) => return None,
                Dim::Cols => c,
            };
            (n.div_ceil(block) as i64 == tiles).then_some(n)
        };
        return Some((len(rows, tr)?, len(cols, tc)?));
    }
    None
}

impl Checker<'_, '_> {
    fn role(&self, m: MatrixId) -> Option<Role> {
        self.inst.program.get_matrix(m).map(|d| d.role)
    }

    fn one_d(&self, m: MatrixId) -> bool {
        self.inst
            .program
            .get_matrix(m)
            .is_some_and(|d| d.extents.len() == 1)
    }

    /// The size of tile `i` of a dimension of `n` elements.
    fn tile_len(&self, n: usize, i: i64) -> Option<usize> {
        let start = usize::try_from(i).ok()?.checked_mul(self.block)?;
        (start < n).then(|| self.block.min(n - start))
    }

    fn input_shape(&self, tile: &TileRef) -> Shape {
        let Some(&(rows, cols)) = self.inputs.get(&tile.matrix) else {
            return [None, None];
        };
        let size = |len: Option<usize>, dim| {
            len.map(|len| Size {
                len,
                origin: Some(Origin {
                    matrix: tile.matrix,
                    dim,
                }),
            })
        };
        let i = tile.index.first().copied().unwrap_or(0);
        let col_len = if self.one_d(tile.matrix) {
            Some(cols)
        } else {
            self.tile_len(cols, tile.index.get(1).copied().unwrap_or(0))
        };
        [
            size(self.tile_len(rows, i), Dim::Rows),
            size(col_len, Dim::Cols),
        ]
    }

    fn shape(&self, tile: &TileRef) -> Shape {
        if self.role(tile.matrix) == Some(Role::Input) {
            self.input_shape(tile)
        } else {
            self.shapes.get(tile).copied().unwrap_or([None, None])
        }
    }

    /// Whether a size differs from the block (so tasks meeting it may
    /// disagree).
    fn short(&self, s: &Shape) -> bool {
        s.iter().any(|d| d.is_some_and(|d| d.len != self.block))
    }

    /// The indices of an input's tiles with a size other than the block,
    /// from the corner (last row and column) inwards: the last tile row
    /// and column when they are short, every row block of a 1-D input
    /// whose width is not the block.
    fn short_tiles(&self, m: MatrixId, rows: usize, cols: usize) -> Vec<Vec<i64>> {
        let b = self.block;
        let tr = rows.div_ceil(b) as i64;
        let short_rows = !rows.is_multiple_of(b);
        if self.one_d(m) {
            return if cols != b {
                (0..tr).rev().map(|i| vec![i]).collect()
            } else if short_rows {
                vec![vec![tr - 1]]
            } else {
                Vec::new()
            };
        }
        let tc = cols.div_ceil(b) as i64;
        let short_cols = !cols.is_multiple_of(b);
        let mut out = Vec::new();
        if short_rows || short_cols {
            out.push(vec![tr - 1, tc - 1]);
        }
        // Then the rest of the last row and column, alternately.
        let row = (0..tc - 1)
            .rev()
            .filter(|_| short_rows)
            .map(|j| vec![tr - 1, j]);
        let col = (0..tr - 1)
            .rev()
            .filter(|_| short_cols)
            .map(|i| vec![i, tc - 1]);
        let (mut row, mut col) = (row.peekable(), col.peekable());
        while row.peek().is_some() || col.peek().is_some() {
            out.extend(row.next());
            out.extend(col.next());
        }
        out
    }

    fn run(&mut self) -> Result<(), Stop> {
        // The readers of every input tile with a size other than the block,
        // the inputs taken in turn and each from its corner tile, so that
        // when the readers exceed the budget the sample still holds the
        // tasks where the edges of different inputs meet.
        let program = self.inst.program;
        let mut lists: Vec<(MatrixId, std::vec::IntoIter<Vec<i64>>)> = self
            .inputs
            .iter()
            .filter(|(&m, _)| self.role(m) == Some(Role::Input))
            .map(|(&m, &(rows, cols))| (m, self.short_tiles(m, rows, cols).into_iter()))
            .collect();
        let mut start: Vec<Task> = Vec::new();
        'collect: loop {
            let mut any = false;
            for (m, tiles) in &mut lists {
                let Some(index) = tiles.next() else { continue };
                any = true;
                let tile = TileRef { matrix: *m, index };
                start.extend(self.engine.readers(&tile)?);
                if start.len() >= TASK_BUDGET {
                    break 'collect;
                }
            }
            if !any {
                break;
            }
        }
        start.sort_by(|a, b| program.sequential_cmp(a, b));
        start.dedup();
        let mut seen: FxHashSet<Task> = start.iter().cloned().collect();
        let mut queue: VecDeque<Task> = start.into();
        while let Some(task) = queue.pop_front() {
            self.evaluate(&task)?;
            let writes = self.engine.writes(&task)?;
            if !writes.iter().any(|w| self.short(&self.shape(w))) {
                continue;
            }
            let mut children: Vec<Task> = Vec::new();
            self.engine.for_each_child(&task, &mut |stmt, vars, _, _| {
                children.push(Task {
                    stmt,
                    vars: vars.into(),
                });
            })?;
            for child in children {
                if seen.len() >= TASK_BUDGET {
                    break;
                }
                if seen.insert(child.clone()) {
                    queue.push_back(child);
                }
            }
        }
        Ok(())
    }

    /// Evaluates the shapes of a task's results, after those of the
    /// writers of the intermediate tiles it reads (an explicit stack, so
    /// long chains cannot overflow the thread's stack).
    fn evaluate(&mut self, task: &Task) -> Result<(), Stop> {
        let mut stack = vec![task.clone()];
        while let Some(t) = stack.last().cloned() {
            if self.evaluated.contains(&t) {
                stack.pop();
                continue;
            }
            self.work += 1;
            if self.work > TASK_BUDGET {
                return Err(Stop::Budget);
            }
            let reads = self.engine.reads(&t)?;
            let mut pending = false;
            for r in &reads {
                if self.role(r.matrix) == Some(Role::Input) || self.shapes.contains_key(r) {
                    continue;
                }
                match self.engine.writer(r)?.into_iter().next() {
                    Some(w) if !self.evaluated.contains(&w) => {
                        stack.push(w);
                        pending = true;
                    }
                    // Unwritten (or a writer already evaluated that left
                    // it unknown): its shape stays unknown.
                    _ => {
                        self.shapes.insert(r.clone(), [None, None]);
                    }
                }
            }
            if pending {
                continue;
            }
            let results = self.apply(&t, &reads)?;
            let writes = self.engine.writes(&t)?;
            for (i, w) in writes.into_iter().enumerate() {
                let s = results
                    .as_ref()
                    .and_then(|r| r.get(i).copied())
                    .unwrap_or([None, None]);
                self.shapes.insert(w, s);
            }
            self.evaluated.insert(t);
            stack.pop();
        }
        Ok(())
    }

    /// Checks the kernel's ties on the task's tiles and returns its result
    /// shapes (`None` when the kernel has no standard rule).
    fn apply(&self, task: &Task, reads: &[TileRef]) -> Result<Option<Vec<Shape>>, Stop> {
        let program = self.inst.program;
        let Some(st) = program.get_statement(task.stmt) else {
            return Ok(None);
        };
        let Some(decl) = program.get_kernel(st.kernel) else {
            return Ok(None);
        };
        let Some(rule) = self.registry.shape_rule(&decl.name) else {
            return Ok(None);
        };
        let names: Vec<&str> = decl
            .params
            .iter()
            .filter(|(_, k)| *k == ParamKind::Tile)
            .map(|(n, _)| n.as_str())
            .collect();
        let args: Vec<(Shape, Option<&TileRef>)> = st
            .args
            .iter()
            .filter_map(|a| match a {
                Arg::Tile(i) => Some(reads.get(*i as usize)),
                Arg::Scalar(_) => None,
            })
            .map(|t| (t.map(|t| self.shape(t)).unwrap_or([None, None]), t))
            .collect();
        for (x, y) in rule.ties {
            let (Some((sx, _)), Some((sy, _))) = (args.get(x.arg), args.get(y.arg)) else {
                return Ok(None);
            };
            let (Some(dx), Some(dy)) = (sx[x.dim.index()], sy[y.dim.index()]) else {
                continue;
            };
            if dx.len == dy.len {
                continue;
            }
            let (Some(ox), Some(oy)) = (dx.origin, dy.origin) else {
                continue;
            };
            let dims = |s: &Shape| {
                (
                    s[0].map(|d| d.len).unwrap_or(0),
                    s[1].map(|d| d.len).unwrap_or(0),
                )
            };
            let name = |k: usize| names.get(k).copied().unwrap_or("?").to_string();
            return Err(Stop::Found(Box::new(Disagreement {
                first: self.input_dim(ox),
                second: self.input_dim(oy),
                kernel: decl.name.clone(),
                line: st.line,
                first_arg: (name(x.arg), x.dim),
                second_arg: (name(y.arg), y.dim),
                task: program.task_name(task).to_string(),
                first_tile: dims(sx),
                second_tile: dims(sy),
            })));
        }
        let sizes: Vec<(usize, usize)> = args
            .iter()
            .map(|(s, _)| (s[0].map_or(0, |d| d.len), s[1].map_or(0, |d| d.len)))
            .collect();
        let known = args.iter().all(|(s, _)| s[0].is_some() && s[1].is_some());
        let computed = if known {
            self.registry.result_shapes(&decl.name, &sizes)
        } else {
            None
        };
        let results = rule
            .results
            .iter()
            .enumerate()
            .map(|(k, dims)| {
                let mut shape: Shape = [None, None];
                for (d, src) in dims.iter().enumerate() {
                    shape[d] = match src {
                        Some(src) => args.get(src.arg).and_then(|(s, _)| s[src.dim.index()]),
                        None => computed
                            .as_ref()
                            .and_then(|c| c.get(k))
                            .map(|&(r, c)| Size {
                                len: if d == 0 { r } else { c },
                                origin: None,
                            }),
                    };
                }
                shape
            })
            .collect();
        Ok(Some(results))
    }

    fn input_dim(&self, o: Origin) -> InputDim {
        let program = self.inst.program;
        InputDim {
            matrix: program
                .get_matrix(o.matrix)
                .map(|m| m.name.clone())
                .unwrap_or_default(),
            shape: self.inputs.get(&o.matrix).copied().unwrap_or((0, 0)),
            one_d: self.one_d(o.matrix),
            dim: o.dim,
            block: self.block,
        }
    }
}
