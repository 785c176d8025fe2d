//! Expressions of the program model: a flat pool of nodes referring to each
//! other by index (children always before parents, so evaluation depth is
//! bounded by the pool's validation), and their exact evaluation.
//!
//! Semantics follow `docs/language.md`: ints are 64-bit with checked
//! arithmetic (overflow is an evaluation error), `//` and `%` are floor
//! division and its remainder, `/`, `log` and `log2` give reals, and the
//! compiler lowers `ceil`/`floor` of `log2(int)`, of `int / int` and of
//! `log(int) / log(int)` to the exact integer operations [`Func::CeilLog2`],
//! [`Func::CeilDiv`], [`Func::CeilLogB`] and their `floor` twins.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Index of a node in an [`ExprPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ExprRef(pub u32);

/// Prefix operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnOp {
    /// Arithmetic negation.
    Neg,
    /// Boolean negation.
    Not,
}

/// Infix operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (real division)
    Div,
    /// `//` (floor division)
    FloorDiv,
    /// `%` (remainder of floor division)
    Mod,
    /// `**`
    Pow,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `and` (short-circuit)
    And,
    /// `or` (short-circuit)
    Or,
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
}

impl BinOp {
    /// The operator's spelling in `.lpk` (functions by name).
    pub fn text(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Min => "min",
            BinOp::Max => "max",
        }
    }

    /// Whether the operator gives a bool: a comparison, `and` or `or`.
    pub fn gives_bool(self) -> bool {
        matches!(
            self,
            BinOp::Eq
                | BinOp::Ne
                | BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
                | BinOp::And
                | BinOp::Or
        )
    }

    fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Mul | BinOp::Div | BinOp::FloorDiv | BinOp::Mod => 6,
            BinOp::Pow => 8,
            BinOp::Min | BinOp::Max => 10,
        }
    }

    /// Whether the operator gives an integer from integer operands (every
    /// arithmetic operator but `/`): what the pool's typing and the
    /// evaluator's integer path agree on.
    fn keeps_int(self) -> bool {
        matches!(
            self,
            BinOp::Add
                | BinOp::Sub
                | BinOp::Mul
                | BinOp::FloorDiv
                | BinOp::Mod
                | BinOp::Pow
                | BinOp::Min
                | BinOp::Max
        )
    }
}

/// Unary built-in functions, including the exact integer forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Func {
    /// `ceil(x)`
    Ceil,
    /// `floor(x)`
    Floor,
    /// `log2(x)` (real)
    Log2,
    /// `log(x)` (natural, real)
    Log,
    /// `abs(x)`
    Abs,
    /// Exact `ceil(log2(x))` of an int.
    CeilLog2,
    /// Exact `floor(log2(x))` of an int.
    FloorLog2,
}

/// Binary exact integer functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Func2 {
    /// Exact `ceil(a / b)` of ints.
    CeilDiv,
    /// Exact `ceil(log(a) / log(b))` of ints.
    CeilLogB,
    /// Exact `floor(log(a) / log(b))` of ints.
    FloorLogB,
}

/// One expression node.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Node {
    /// Integer constant.
    Int(i64),
    /// Real constant.
    Real(f64),
    /// Boolean constant.
    Bool(bool),
    /// The `i`th program parameter.
    Param(u32),
    /// The `i`th slot of the evaluation environment (loop variables of the
    /// statement being evaluated, then a plan's inputs and temporaries).
    Slot(u32),
    /// Prefix operator.
    Unary(UnOp, ExprRef),
    /// Infix operator or two-argument min/max.
    Binary(BinOp, ExprRef, ExprRef),
    /// Unary function.
    Call(Func, ExprRef),
    /// Binary exact integer function.
    Call2(Func2, ExprRef, ExprRef),
}

impl Node {
    /// The node with each operand `x` replaced by `f(x)`, first operand
    /// first; `None` as soon as `f` gives none. Leaves come back as they
    /// are.
    pub fn try_map_operands(self, mut f: impl FnMut(ExprRef) -> Option<ExprRef>) -> Option<Node> {
        Some(match self {
            Node::Unary(op, a) => Node::Unary(op, f(a)?),
            Node::Binary(op, a, b) => {
                let a = f(a)?;
                Node::Binary(op, a, f(b)?)
            }
            Node::Call(g, a) => Node::Call(g, f(a)?),
            Node::Call2(g, a, b) => {
                let a = f(a)?;
                Node::Call2(g, a, f(b)?)
            }
            Node::Int(_) | Node::Real(_) | Node::Bool(_) | Node::Param(_) | Node::Slot(_) => self,
        })
    }
}

/// A value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// Integer.
    Int(i64),
    /// Real.
    Real(f64),
    /// Boolean.
    Bool(bool),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Real(v) => write!(f, "{v:?}"),
            Value::Bool(v) => write!(f, "{v}"),
        }
    }
}

/// Why an expression could not be evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// Division or `%` by zero.
    #[error("division by zero")]
    DivisionByZero,
    /// `log`/`log2` of a value that is not positive.
    #[error("logarithm of a value that is not positive")]
    LogOfNonPositive,
    /// `**` with a negative exponent.
    #[error("negative exponent")]
    NegativeExponent,
    /// An integer result outside 64 bits.
    #[error("integer overflow")]
    Overflow,
    /// An operand of the wrong type (only possible in unchecked artifacts).
    #[error("operand of the wrong type")]
    Type,
    /// A real that is not finite or too large to round to an int.
    #[error("real value cannot be converted to an integer")]
    NotFinite,
    /// A slot or parameter outside the environment.
    #[error("reference outside the environment")]
    BadReference,
}

/// A pool of expression nodes.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(from = "Vec<Node>", into = "Vec<Node>")]
pub struct ExprPool {
    /// The nodes; a node refers only to nodes before it.
    nodes: Vec<Node>,
    /// Per node: whether it is int-valued by construction (picks the fast
    /// evaluation path; derived, never stored).
    int_typed: Vec<bool>,
}

impl PartialEq for ExprPool {
    fn eq(&self, o: &ExprPool) -> bool {
        self.nodes == o.nodes
    }
}

impl From<Vec<Node>> for ExprPool {
    fn from(nodes: Vec<Node>) -> ExprPool {
        let mut pool = ExprPool::default();
        for n in nodes {
            pool.push(n);
        }
        pool
    }
}

impl From<ExprPool> for Vec<Node> {
    fn from(pool: ExprPool) -> Vec<Node> {
        pool.nodes
    }
}

/// The environment an expression is evaluated in.
#[derive(Clone, Copy, Debug)]
pub struct Env<'a> {
    /// Program parameter values.
    pub params: &'a [i64],
    /// Slot values.
    pub slots: &'a [i64],
}

impl ExprPool {
    /// Adds a node (deduplicating structurally equal nodes) and returns it.
    pub fn add(&mut self, node: Node) -> ExprRef {
        // Sharing identical nodes keeps inlined `let`s and repeated
        // subterms from growing the pool.
        if let Some(pos) = self.nodes.iter().rposition(|n| same_node(n, &node)) {
            return ExprRef(pos as u32);
        }
        self.push(node)
    }

    /// Appends a node without looking for an equal one: for callers that
    /// keep their own index of the pool (sharing is then theirs to do).
    pub fn add_unshared(&mut self, node: Node) -> ExprRef {
        self.push(node)
    }

    /// Appends a node without sharing.
    fn push(&mut self, node: Node) -> ExprRef {
        let int = |r: ExprRef, t: &[bool]| t.get(r.0 as usize).copied().unwrap_or(false);
        let t = &self.int_typed;
        let is_int = match node {
            Node::Int(_) | Node::Param(_) | Node::Slot(_) | Node::Call2(..) => true,
            Node::Real(_) | Node::Bool(_) => false,
            Node::Unary(UnOp::Neg, a) => int(a, t),
            Node::Unary(UnOp::Not, _) => false,
            Node::Binary(op, a, b) => op.keeps_int() && int(a, t) && int(b, t),
            Node::Call(Func::Ceil | Func::Floor | Func::CeilLog2 | Func::FloorLog2, _) => true,
            Node::Call(Func::Abs, a) => int(a, t),
            Node::Call(Func::Log | Func::Log2, _) => false,
        };
        self.nodes.push(node);
        self.int_typed.push(is_int);
        ExprRef((self.nodes.len() - 1) as u32)
    }

    /// The nodes, in order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node behind a reference.
    pub fn get(&self, r: ExprRef) -> Option<&Node> {
        self.nodes.get(r.0 as usize)
    }

    /// Evaluates a node.
    pub fn eval(&self, r: ExprRef, env: Env<'_>) -> Result<Value, EvalError> {
        let node = self.get(r).ok_or(EvalError::BadReference)?;
        Ok(match *node {
            Node::Int(v) => Value::Int(v),
            Node::Real(v) => Value::Real(v),
            Node::Bool(v) => Value::Bool(v),
            Node::Param(i) => {
                Value::Int(*env.params.get(i as usize).ok_or(EvalError::BadReference)?)
            }
            Node::Slot(i) => Value::Int(*env.slots.get(i as usize).ok_or(EvalError::BadReference)?),
            Node::Unary(UnOp::Neg, a) => match self.eval(a, env)? {
                Value::Int(v) => Value::Int(v.checked_neg().ok_or(EvalError::Overflow)?),
                Value::Real(v) => Value::Real(-v),
                Value::Bool(_) => return Err(EvalError::Type),
            },
            Node::Unary(UnOp::Not, a) => Value::Bool(!self.eval_bool(a, env)?),
            Node::Binary(BinOp::And, a, b) => {
                Value::Bool(self.eval_bool(a, env)? && self.eval_bool(b, env)?)
            }
            Node::Binary(BinOp::Or, a, b) => {
                Value::Bool(self.eval_bool(a, env)? || self.eval_bool(b, env)?)
            }
            Node::Binary(op, a, b) => binary(op, self.eval(a, env)?, self.eval(b, env)?)?,
            Node::Call(f, a) => call(f, self.eval(a, env)?)?,
            Node::Call2(f, a, b) => {
                let a = self.eval_int_value(self.eval(a, env)?)?;
                let b = self.eval_int_value(self.eval(b, env)?)?;
                Value::Int(call2(f, a, b)?)
            }
        })
    }

    fn eval_int_value(&self, v: Value) -> Result<i64, EvalError> {
        match v {
            Value::Int(v) => Ok(v),
            _ => Err(EvalError::Type),
        }
    }

    /// Evaluates an int expression. Integer arithmetic takes a fast path
    /// that never builds [`Value`]s; anything involving reals goes through
    /// [`ExprPool::eval`] with the same semantics.
    pub fn eval_int(&self, r: ExprRef, env: Env<'_>) -> Result<i64, EvalError> {
        let node = self.get(r).ok_or(EvalError::BadReference)?;
        match *node {
            Node::Int(v) => Ok(v),
            Node::Param(i) => env
                .params
                .get(i as usize)
                .copied()
                .ok_or(EvalError::BadReference),
            Node::Slot(i) => env
                .slots
                .get(i as usize)
                .copied()
                .ok_or(EvalError::BadReference),
            Node::Unary(UnOp::Neg, a) if self.is_int(a) => self
                .eval_int(a, env)?
                .checked_neg()
                .ok_or(EvalError::Overflow),
            Node::Binary(op, a, b) if op.keeps_int() && self.is_int(a) && self.is_int(b) => {
                let (x, y) = (self.eval_int(a, env)?, self.eval_int(b, env)?);
                match op {
                    BinOp::Add => x.checked_add(y).ok_or(EvalError::Overflow),
                    BinOp::Sub => x.checked_sub(y).ok_or(EvalError::Overflow),
                    BinOp::Mul => x.checked_mul(y).ok_or(EvalError::Overflow),
                    BinOp::FloorDiv => floor_div(x, y),
                    BinOp::Mod => floor_mod(x, y),
                    BinOp::Pow => int_pow(x, y),
                    BinOp::Min => Ok(x.min(y)),
                    _ => Ok(x.max(y)),
                }
            }
            Node::Call(Func::CeilLog2, a) => ceil_log(self.eval_int(a, env)?, 2),
            Node::Call(Func::FloorLog2, a) => floor_log(self.eval_int(a, env)?, 2),
            Node::Call2(f, a, b) => call2(f, self.eval_int(a, env)?, self.eval_int(b, env)?),
            _ => match self.eval(r, env)? {
                Value::Int(v) => Ok(v),
                _ => Err(EvalError::Type),
            },
        }
    }

    /// Whether a node is int-valued by construction.
    fn is_int(&self, r: ExprRef) -> bool {
        self.int_typed.get(r.0 as usize).copied().unwrap_or(false)
    }

    /// Evaluates a bool expression (comparisons of ints take a fast path).
    pub fn eval_bool(&self, r: ExprRef, env: Env<'_>) -> Result<bool, EvalError> {
        let node = self.get(r).ok_or(EvalError::BadReference)?;
        match *node {
            Node::Bool(v) => Ok(v),
            Node::Unary(UnOp::Not, a) => Ok(!self.eval_bool(a, env)?),
            Node::Binary(BinOp::And, a, b) => {
                Ok(self.eval_bool(a, env)? && self.eval_bool(b, env)?)
            }
            Node::Binary(BinOp::Or, a, b) => Ok(self.eval_bool(a, env)? || self.eval_bool(b, env)?),
            Node::Binary(op, a, b)
                if matches!(
                    op,
                    BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
                ) && self.is_int(a)
                    && self.is_int(b) =>
            {
                let (x, y) = (self.eval_int(a, env)?, self.eval_int(b, env)?);
                Ok(match op {
                    BinOp::Eq => x == y,
                    BinOp::Ne => x != y,
                    BinOp::Lt => x < y,
                    BinOp::Le => x <= y,
                    BinOp::Gt => x > y,
                    _ => x >= y,
                })
            }
            _ => match self.eval(r, env)? {
                Value::Bool(v) => Ok(v),
                _ => Err(EvalError::Type),
            },
        }
    }

    /// Renders an expression in `.lpk` syntax, naming parameters and slots
    /// with the given functions.
    pub fn display<'a>(
        &'a self,
        r: ExprRef,
        names: &'a dyn Fn(Node) -> String,
    ) -> impl fmt::Display + 'a {
        DisplayExpr {
            pool: self,
            r,
            names,
        }
    }

    /// Whether the expression mentions any slot in `slots`.
    pub fn mentions_slot(&self, r: ExprRef, pred: &dyn Fn(u32) -> bool) -> bool {
        let mut stack = vec![r];
        while let Some(r) = stack.pop() {
            match self.get(r) {
                Some(Node::Slot(s)) if pred(*s) => return true,
                Some(Node::Unary(_, a)) | Some(Node::Call(_, a)) => stack.push(*a),
                Some(Node::Binary(_, a, b)) | Some(Node::Call2(_, a, b)) => {
                    stack.push(*a);
                    stack.push(*b)
                }
                _ => {}
            }
        }
        false
    }

    /// Every slot an expression mentions.
    pub fn slots_of(&self, r: ExprRef, out: &mut Vec<u32>) {
        let mut stack = vec![r];
        while let Some(r) = stack.pop() {
            match self.get(r) {
                Some(Node::Slot(s)) if !out.contains(s) => out.push(*s),
                Some(Node::Unary(_, a)) | Some(Node::Call(_, a)) => stack.push(*a),
                Some(Node::Binary(_, a, b)) | Some(Node::Call2(_, a, b)) => {
                    stack.push(*a);
                    stack.push(*b)
                }
                _ => {}
            }
        }
    }
}

fn same_node(a: &Node, b: &Node) -> bool {
    match (a, b) {
        // Compare reals bitwise so that NaN-free constants dedupe exactly.
        (Node::Real(x), Node::Real(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

fn to_f64(v: Value) -> Result<f64, EvalError> {
    match v {
        Value::Int(i) => Ok(i as f64),
        Value::Real(r) => Ok(r),
        Value::Bool(_) => Err(EvalError::Type),
    }
}

fn binary(op: BinOp, a: Value, b: Value) -> Result<Value, EvalError> {
    use Value::{Bool, Int, Real};
    Ok(match (op, a, b) {
        (BinOp::Eq, Bool(x), Bool(y)) => Bool(x == y),
        (BinOp::Ne, Bool(x), Bool(y)) => Bool(x != y),
        (_, Bool(_), _) | (_, _, Bool(_)) => return Err(EvalError::Type),
        (BinOp::Add, Int(x), Int(y)) => Int(x.checked_add(y).ok_or(EvalError::Overflow)?),
        (BinOp::Sub, Int(x), Int(y)) => Int(x.checked_sub(y).ok_or(EvalError::Overflow)?),
        (BinOp::Mul, Int(x), Int(y)) => Int(x.checked_mul(y).ok_or(EvalError::Overflow)?),
        (BinOp::FloorDiv, Int(x), Int(y)) => Int(floor_div(x, y)?),
        (BinOp::Mod, Int(x), Int(y)) => Int(floor_mod(x, y)?),
        (BinOp::Pow, Int(x), Int(y)) => Int(int_pow(x, y)?),
        (BinOp::Min, Int(x), Int(y)) => Int(x.min(y)),
        (BinOp::Max, Int(x), Int(y)) => Int(x.max(y)),
        (BinOp::Eq, Int(x), Int(y)) => Bool(x == y),
        (BinOp::Ne, Int(x), Int(y)) => Bool(x != y),
        (BinOp::Lt, Int(x), Int(y)) => Bool(x < y),
        (BinOp::Le, Int(x), Int(y)) => Bool(x <= y),
        (BinOp::Gt, Int(x), Int(y)) => Bool(x > y),
        (BinOp::Ge, Int(x), Int(y)) => Bool(x >= y),
        (BinOp::Min, x, y) => {
            // Python's min keeps the winning operand as it is.
            if to_f64(y)? < to_f64(x)? {
                y
            } else {
                x
            }
        }
        (BinOp::Max, x, y) => {
            if to_f64(y)? > to_f64(x)? {
                y
            } else {
                x
            }
        }
        (op, x, y) => {
            let (x, y) = (to_f64(x)?, to_f64(y)?);
            match op {
                BinOp::Add => Real(x + y),
                BinOp::Sub => Real(x - y),
                BinOp::Mul => Real(x * y),
                BinOp::Div => {
                    if y == 0.0 {
                        return Err(EvalError::DivisionByZero);
                    }
                    Real(x / y)
                }
                BinOp::FloorDiv => {
                    if y == 0.0 {
                        return Err(EvalError::DivisionByZero);
                    }
                    Real((x / y).floor())
                }
                BinOp::Mod => {
                    if y == 0.0 {
                        return Err(EvalError::DivisionByZero);
                    }
                    Real(x - y * (x / y).floor())
                }
                BinOp::Pow => {
                    if y < 0.0 && x == 0.0 {
                        return Err(EvalError::DivisionByZero);
                    }
                    Real(x.powf(y))
                }
                BinOp::Eq => Bool(x == y),
                BinOp::Ne => Bool(x != y),
                BinOp::Lt => Bool(x < y),
                BinOp::Le => Bool(x <= y),
                BinOp::Gt => Bool(x > y),
                BinOp::Ge => Bool(x >= y),
                BinOp::And | BinOp::Or | BinOp::Min | BinOp::Max => return Err(EvalError::Type),
            }
        }
    })
}

fn real_to_int(x: f64) -> Result<i64, EvalError> {
    if !x.is_finite() || x.abs() >= 9.2e18 {
        return Err(EvalError::NotFinite);
    }
    Ok(x as i64)
}

fn call(f: Func, v: Value) -> Result<Value, EvalError> {
    Ok(match (f, v) {
        (_, Value::Bool(_)) => return Err(EvalError::Type),
        (Func::Ceil | Func::Floor, Value::Int(i)) => Value::Int(i),
        (Func::Ceil, Value::Real(x)) => Value::Int(real_to_int(x.ceil())?),
        (Func::Floor, Value::Real(x)) => Value::Int(real_to_int(x.floor())?),
        (Func::Abs, Value::Int(i)) => Value::Int(i.checked_abs().ok_or(EvalError::Overflow)?),
        (Func::Abs, Value::Real(x)) => Value::Real(x.abs()),
        (Func::Log2 | Func::Log, v) => {
            let x = to_f64(v)?;
            if x <= 0.0 {
                return Err(EvalError::LogOfNonPositive);
            }
            Value::Real(if f == Func::Log2 { x.log2() } else { x.ln() })
        }
        (Func::CeilLog2, Value::Int(i)) => Value::Int(ceil_log(i, 2)?),
        (Func::FloorLog2, Value::Int(i)) => Value::Int(floor_log(i, 2)?),
        (Func::CeilLog2 | Func::FloorLog2, Value::Real(_)) => return Err(EvalError::Type),
    })
}

fn call2(f: Func2, a: i64, b: i64) -> Result<i64, EvalError> {
    match f {
        Func2::CeilDiv => ceil_div(a, b),
        Func2::CeilLogB => ceil_log(a, b),
        Func2::FloorLogB => floor_log(a, b),
    }
}

/// Floor division, as Python's `//` on ints.
pub fn floor_div(a: i64, b: i64) -> Result<i64, EvalError> {
    if b == 0 {
        return Err(EvalError::DivisionByZero);
    }
    let q = a.checked_div(b).ok_or(EvalError::Overflow)?;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        Ok(q - 1)
    } else {
        Ok(q)
    }
}

/// The remainder of floor division, as Python's `%` on ints (sign of `b`).
pub fn floor_mod(a: i64, b: i64) -> Result<i64, EvalError> {
    if b == 0 {
        return Err(EvalError::DivisionByZero);
    }
    let r = a.checked_rem(b).ok_or(EvalError::Overflow)?;
    if r != 0 && ((r < 0) != (b < 0)) {
        Ok(r + b)
    } else {
        Ok(r)
    }
}

/// Exact `ceil(a / b)`.
pub fn ceil_div(a: i64, b: i64) -> Result<i64, EvalError> {
    let q = floor_div(a, b)?;
    if floor_mod(a, b)? != 0 {
        q.checked_add(1).ok_or(EvalError::Overflow)
    } else {
        Ok(q)
    }
}

/// `a ** b` on ints; a negative exponent is an error.
pub fn int_pow(a: i64, b: i64) -> Result<i64, EvalError> {
    if b < 0 {
        return Err(EvalError::NegativeExponent);
    }
    match a {
        0 => return Ok(if b == 0 { 1 } else { 0 }),
        1 => return Ok(1),
        -1 => return Ok(if b % 2 == 0 { 1 } else { -1 }),
        _ => {}
    }
    let e = u32::try_from(b).map_err(|_| EvalError::Overflow)?;
    a.checked_pow(e).ok_or(EvalError::Overflow)
}

/// Checks that `log(a) / log(b)` is defined on ints: both positive, and
/// `b` not 1 (whose log, the divisor, is zero).
fn log_domain(a: i64, b: i64) -> Result<(), EvalError> {
    if a <= 0 || b <= 0 {
        return Err(EvalError::LogOfNonPositive);
    }
    if b == 1 {
        return Err(EvalError::DivisionByZero);
    }
    Ok(())
}

/// Exact `ceil(log(a) / log(b))`: the least `k >= 0` with `b ** k >= a` for
/// `a >= 1`, negative results for `0 < a < 1` cannot occur with ints.
pub fn ceil_log(a: i64, b: i64) -> Result<i64, EvalError> {
    log_domain(a, b)?;
    let mut k = 0i64;
    let mut p: i128 = 1;
    while p < a as i128 {
        p *= b as i128;
        k += 1;
    }
    Ok(k)
}

/// Exact `floor(log(a) / log(b))`: the greatest `k` with `b ** k <= a`.
pub fn floor_log(a: i64, b: i64) -> Result<i64, EvalError> {
    log_domain(a, b)?;
    let mut k = 0i64;
    let mut p: i128 = b as i128;
    while p <= a as i128 {
        p *= b as i128;
        k += 1;
    }
    Ok(k)
}

/// The exponent `k` with `base ** k == value` exactly, if there is one
/// (`base >= 2`).
pub fn exact_log(value: i64, base: i64) -> Option<i64> {
    if base < 2 || value < 1 {
        return None;
    }
    let mut k = 0;
    let mut v = value;
    while v % base == 0 {
        v /= base;
        k += 1;
    }
    (v == 1).then_some(k)
}

struct DisplayExpr<'a> {
    pool: &'a ExprPool,
    r: ExprRef,
    names: &'a dyn Fn(Node) -> String,
}

impl DisplayExpr<'_> {
    fn write(&self, f: &mut fmt::Formatter<'_>, r: ExprRef, parent: u8) -> fmt::Result {
        let Some(node) = self.pool.get(r) else {
            return f.write_str("?");
        };
        match *node {
            Node::Int(v) => write!(f, "{v}"),
            Node::Real(v) => write!(f, "{v:?}"),
            Node::Bool(v) => write!(f, "{v}"),
            Node::Param(_) | Node::Slot(_) => f.write_str(&(self.names)(*node)),
            Node::Unary(op, a) => {
                let (p, text) = match op {
                    UnOp::Neg => (7, "-"),
                    UnOp::Not => (3, "not "),
                };
                let paren = parent > p;
                if paren {
                    f.write_str("(")?;
                }
                f.write_str(text)?;
                self.write(f, a, p)?;
                if paren {
                    f.write_str(")")?;
                }
                Ok(())
            }
            Node::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => {
                write!(f, "{}(", op.text())?;
                self.write(f, a, 0)?;
                f.write_str(", ")?;
                self.write(f, b, 0)?;
                f.write_str(")")
            }
            Node::Binary(op, a, b) => {
                let p = op.precedence();
                let paren = parent > p || (parent == p && p == 4);
                if paren {
                    f.write_str("(")?;
                }
                // Left-associative except `**`.
                let (lp, rp) = if op == BinOp::Pow {
                    (p + 1, p)
                } else {
                    (p, p + 1)
                };
                self.write(f, a, lp)?;
                write!(f, " {} ", op.text())?;
                self.write(f, b, rp)?;
                if paren {
                    f.write_str(")")?;
                }
                Ok(())
            }
            Node::Call(func, a) => {
                let (pre, post) = match func {
                    Func::Ceil => ("ceil(", ")"),
                    Func::Floor => ("floor(", ")"),
                    Func::Log2 => ("log2(", ")"),
                    Func::Log => ("log(", ")"),
                    Func::Abs => ("abs(", ")"),
                    Func::CeilLog2 => ("ceil(log2(", "))"),
                    Func::FloorLog2 => ("floor(log2(", "))"),
                };
                f.write_str(pre)?;
                self.write(f, a, 0)?;
                f.write_str(post)
            }
            Node::Call2(func, a, b) => {
                let (pre, mid, post) = match func {
                    Func2::CeilDiv => ("ceil(", " / ", ")"),
                    Func2::CeilLogB => ("ceil(log(", ") / log(", "))"),
                    Func2::FloorLogB => ("floor(log(", ") / log(", "))"),
                };
                f.write_str(pre)?;
                self.write(f, a, 6)?;
                f.write_str(mid)?;
                self.write(f, b, 7)?;
                f.write_str(post)
            }
        }
    }
}

impl fmt::Display for DisplayExpr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, self.r, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_division_and_remainder_follow_python() {
        assert_eq!(floor_div(7, 2), Ok(3));
        assert_eq!(floor_div(-7, 2), Ok(-4));
        assert_eq!(floor_div(7, -2), Ok(-4));
        assert_eq!(floor_mod(-7, 2), Ok(1));
        assert_eq!(floor_mod(7, -2), Ok(-1));
        assert_eq!(floor_div(1, 0), Err(EvalError::DivisionByZero));
        assert_eq!(floor_div(i64::MIN, -1), Err(EvalError::Overflow));
    }

    #[test]
    fn exact_logs() {
        assert_eq!(ceil_log(8, 2), Ok(3));
        assert_eq!(ceil_log(9, 2), Ok(4));
        assert_eq!(ceil_log(1, 2), Ok(0));
        assert_eq!(ceil_log(1000, 10), Ok(3));
        assert_eq!(floor_log(1000, 10), Ok(3));
        assert_eq!(floor_log(999, 10), Ok(2));
        assert_eq!(ceil_log(i64::MAX, 2), Ok(63));
        assert_eq!(ceil_log(0, 2), Err(EvalError::LogOfNonPositive));
        assert_eq!(ceil_log(5, 1), Err(EvalError::DivisionByZero));
        assert_eq!(exact_log(64, 4), Some(3));
        assert_eq!(exact_log(48, 4), None);
        assert_eq!(ceil_div(7, 2), Ok(4));
        assert_eq!(ceil_div(-7, 2), Ok(-3));
    }

    #[test]
    fn powers_check_sign_and_overflow() {
        assert_eq!(int_pow(2, 10), Ok(1024));
        assert_eq!(int_pow(2, -1), Err(EvalError::NegativeExponent));
        assert_eq!(int_pow(2, 64), Err(EvalError::Overflow));
        assert_eq!(int_pow(-1, i64::MAX), Ok(-1));
        assert_eq!(int_pow(0, 0), Ok(1));
    }
}
