//! The generator of valid `.lpk` programs: a list of choices (what a
//! proptest strategy draws) turns deterministically into a program text.
//! Small choices give simple programs, so shrinking the list shrinks the
//! program. The compiler's tests run its programs against the brute-force
//! oracle (plans in `generated`, lint in `lint_honesty`).
//!
//! What the generator covers: several top-level loop nests 1–3 deep, with
//! rectangular, triangular, windowed, strided (`range(1, N, 2)`,
//! `range(0, N, 3)`), logarithmic (`range(ceil(log2(N)))`,
//! `range(ceil(log(N) / log(4)))`, `let t = ceil(log2(N - i))`) and
//! power-stepped (`range(0, N, 2 ** (level + 1))`) loops; lets at program
//! level and inside loops; affine indices with coefficients, offsets and
//! parameters (`X[2 * i + 1, j - i + N]`), coupled indices (`[i + j, j]`),
//! `2 ** level` terms, non-affine reads (`i // 2`, `min(..)`, `max(..)`,
//! `% 3`); guards with `%`, `==`, `!=`, comparisons, `and`, `or`, `not`,
//! `else` and `else if`; several kernels results; scalar arguments; several
//! statements writing one matrix (if/else branches writing the same tile,
//! and writers of disjoint slices of a shared matrix); reads of earlier
//! nests, of earlier statements of the same nest, and of earlier iterations
//! of the same statement; and hand-made motifs (binary and 4-ary reduction
//! trees, a tree per panel as in CAQR, a butterfly, a wavefront, a
//! triangular sweep, a scan).
//!
//! Validity by construction:
//! - every call writes tiles through an index map that is injective in its
//!   loop variables (a triangular integer map with a non-zero diagonal, the
//!   off-diagonal terms being any function of the earlier variables), into
//!   a fresh matrix or into a disjoint slice of a shared one (an offset on
//!   the first dimension), or into the same tile from exclusive branches;
//! - offsets and extents come from lower and upper bounds computed by
//!   substituting loop bounds innermost first (sound for all `N >= 1`);
//! - a read of a written tile picks the writer's iteration `p` (as
//!   expressions of the reader's variables) so that it comes earlier in
//!   sequential order (equal on the common loops and the writer earlier in
//!   the text, or smaller at the first differing common loop), and guards
//!   the call with "`p` is an iteration of the writer" (loop bounds, steps,
//!   guards), leaving out each conjunct it can prove;
//! - reads of `input` matrices extend the inputs' extents.
//!
//! A generated program that does not compile, or whose expansion reports a
//! violation, is a generator bug and fails the test with the program text.

use std::collections::{BTreeMap, HashMap};

// ---------------------------------------------------------------------------
// Choices.

/// The choice list a program is generated from; past its end every choice
/// is 0, the simplest option.
struct Choices {
    data: Vec<u32>,
    pos: usize,
}

impl Choices {
    fn raw(&mut self) -> u32 {
        let v = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        v
    }

    /// `0..n` (0 when `n <= 1`).
    fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        (self.raw() as usize) % n
    }

    /// True with `pct` percent; a 0 choice gives false.
    fn chance(&mut self, pct: u32) -> bool {
        pct > 0 && self.raw() % 100 >= 100 - pct.min(100)
    }

    /// An index drawn with the given weights; a 0 choice gives the first
    /// option with a non-zero weight.
    fn weighted(&mut self, w: &[u32]) -> usize {
        let total: u32 = w.iter().sum();
        if total == 0 {
            return 0;
        }
        let mut r = self.raw() % total;
        for (i, &x) in w.iter().enumerate() {
            if r < x {
                return i;
            }
            r -= x;
        }
        0
    }

    fn pick<T: Clone>(&mut self, xs: &[T]) -> Option<T> {
        if xs.is_empty() {
            None
        } else {
            Some(xs[self.below(xs.len())].clone())
        }
    }
}

// ---------------------------------------------------------------------------
// Expressions.

#[derive(Clone, Debug, PartialEq)]
enum Ex {
    Int(i64),
    Real(&'static str),
    Var(usize),
    Add(Box<Ex>, Box<Ex>),
    Sub(Box<Ex>, Box<Ex>),
    Mul(Box<Ex>, Box<Ex>),
    Div(Box<Ex>, Box<Ex>),
    FloorDiv(Box<Ex>, Box<Ex>),
    Mod(Box<Ex>, Box<Ex>),
    Pow(Box<Ex>, Box<Ex>),
    Neg(Box<Ex>),
    Min(Vec<Ex>),
    Max(Vec<Ex>),
    /// `ceil(log2(e))` (base 2) or `ceil(log(e) / log(b))`.
    CeilLog(Box<Ex>, i64),
    /// `log2(e)` (real).
    Log2(Box<Ex>),
}

fn bx(e: Ex) -> Box<Ex> {
    Box::new(e)
}

fn add(a: Ex, b: Ex) -> Ex {
    match (&a, &b) {
        (_, Ex::Int(0)) => a,
        (Ex::Int(0), _) => b,
        (_, Ex::Int(k)) if *k < 0 => Ex::Sub(bx(a), bx(Ex::Int(-k))),
        _ => Ex::Add(bx(a), bx(b)),
    }
}

fn sub(a: Ex, b: Ex) -> Ex {
    match (&a, &b) {
        (_, Ex::Int(0)) => a,
        (_, Ex::Int(k)) if *k < 0 => Ex::Add(bx(a), bx(Ex::Int(-k))),
        _ => Ex::Sub(bx(a), bx(b)),
    }
}

fn mul(k: i64, e: Ex) -> Ex {
    match k {
        0 => Ex::Int(0),
        1 => e,
        _ => Ex::Mul(bx(Ex::Int(k)), bx(e)),
    }
}

fn pow(b: i64, e: Ex) -> Ex {
    Ex::Pow(bx(Ex::Int(b)), bx(e))
}

#[derive(Clone, Debug, PartialEq)]
enum Co {
    Bool(bool),
    /// A comparison, with its operator as written (`==`, `<`, ...).
    Cmp(&'static str, Ex, Ex),
    And(Box<Co>, Box<Co>),
    Or(Box<Co>, Box<Co>),
    Not(Box<Co>),
}

fn cmp(op: &'static str, a: Ex, b: Ex) -> Co {
    Co::Cmp(op, a, b)
}

fn and(a: Co, b: Co) -> Co {
    Co::And(Box::new(a), Box::new(b))
}

fn or(a: Co, b: Co) -> Co {
    Co::Or(Box::new(a), Box::new(b))
}

fn not(a: Co) -> Co {
    Co::Not(Box::new(a))
}

// ---------------------------------------------------------------------------
// Affine forms for bounds and proofs.

/// An atom of an affine form: a symbol, or `base ** v` of a level loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    S(usize),
    P(usize),
}

/// Elimination order: later symbols first, `b ** v` just after `v`.
fn key(a: Atom) -> usize {
    match a {
        Atom::S(s) => 2 * s,
        Atom::P(s) => 2 * s + 1,
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Lin {
    c: i64,
    t: BTreeMap<Atom, i64>,
}

impl Lin {
    fn k(c: i64) -> Lin {
        Lin {
            c,
            t: BTreeMap::new(),
        }
    }

    fn atom(a: Atom) -> Lin {
        let mut t = BTreeMap::new();
        t.insert(a, 1);
        Lin { c: 0, t }
    }

    /// `self + k · o`.
    fn plus(&self, o: &Lin, k: i64) -> Lin {
        let mut r = self.clone();
        r.c += o.c * k;
        for (a, v) in &o.t {
            let e = r.t.entry(*a).or_insert(0);
            *e += v * k;
            if *e == 0 {
                r.t.remove(a);
            }
        }
        r
    }

    fn scaled(&self, k: i64) -> Lin {
        Lin::k(0).plus(self, k)
    }

    fn as_const(&self) -> Option<i64> {
        self.t.is_empty().then_some(self.c)
    }

    /// Componentwise maximum: not smaller than either (atoms are >= 0).
    fn max(&self, o: &Lin) -> Lin {
        let mut r = Lin::k(self.c.max(o.c));
        for a in self.t.keys().chain(o.t.keys()) {
            let v = self
                .t
                .get(a)
                .copied()
                .unwrap_or(0)
                .max(o.t.get(a).copied().unwrap_or(0));
            if v != 0 {
                r.t.insert(*a, v);
            }
        }
        r
    }

    /// Negative coefficients raised to 0: not smaller (atoms are >= 0).
    fn clamped(&self) -> Lin {
        let mut r = Lin::k(self.c.max(0));
        for (a, v) in &self.t {
            if *v > 0 {
                r.t.insert(*a, *v);
            }
        }
        r
    }
}

// ---------------------------------------------------------------------------
// Symbols, program structure.

#[derive(Clone, Debug)]
enum Kind {
    /// A parameter with the largest value tested.
    Param(i64),
    /// A loop variable.
    Loop(LoopSym),
    /// `ceil(log_base(arg))`, with `arg >= 1` wherever it is evaluated.
    /// `inline`: written out where used (no `let`); `global`: depends on
    /// parameters only and is visible everywhere.
    Log {
        arg: Ex,
        base: i64,
        global: bool,
        inline: bool,
    },
    /// `let name = def;`
    Alias { def: Ex, global: bool },
}

/// A loop variable: `range(lo, hi, step)`. `lo_b <= v < hi_b` on every
/// iteration; `pow`: `base ** v <= e - 1` on every iteration.
#[derive(Clone, Debug)]
struct LoopSym {
    lo: Ex,
    hi: Ex,
    step: Ex,
    lo_b: Lin,
    hi_b: Lin,
    pow: Option<(i64, Lin)>,
}

impl LoopSym {
    /// A loop with no power bound.
    fn unpowered(lo: Ex, hi: Ex, step: Ex, lo_b: Lin, hi_b: Lin) -> LoopSym {
        LoopSym {
            lo,
            hi,
            step,
            lo_b,
            hi_b,
            pow: None,
        }
    }

    /// `for LEVEL in range(count)`, symbol `count` being a level count
    /// `ceil(log_base(..))` with `base ** LEVEL <= bound - 1`.
    fn level(count: usize, base: i64, bound: Lin) -> LoopSym {
        LoopSym {
            lo: Ex::Int(0),
            hi: Ex::Var(count),
            step: Ex::Int(1),
            lo_b: Lin::k(0),
            hi_b: Lin::atom(Atom::S(count)),
            pow: Some((base, bound)),
        }
    }
}

impl Kind {
    /// `ceil(log_base(arg))` as a `let`.
    fn let_log(arg: Ex, base: i64, global: bool) -> Kind {
        Kind::Log {
            arg,
            base,
            global,
            inline: false,
        }
    }

    /// `ceil(log_base(arg))` written out where used.
    fn inline_log(arg: Ex, base: i64, global: bool) -> Kind {
        Kind::Log {
            arg,
            base,
            global,
            inline: true,
        }
    }
}

#[derive(Clone, Debug)]
struct Sym {
    name: String,
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Item {
    Loop(usize),
    Guard(Co, bool),
    Let(usize),
}

/// Tiles some statements write: `matrix[rows(x)]` for every `x` of the
/// domain `path`; the map is injective and `owner` names the call site
/// (both branches of an if/else writing one tile share it).
#[derive(Clone, Debug)]
struct Record {
    matrix: usize,
    rows: Vec<Ex>,
    path: Vec<Item>,
    owner: usize,
    nest: usize,
}

#[derive(Clone, Debug)]
struct Mat {
    name: String,
    role: &'static str,
    ext: Vec<Lin>,
    joinable: bool,
}

#[derive(Clone, Debug)]
struct Acc {
    matrix: usize,
    idx: Vec<Ex>,
}

#[derive(Clone, Debug)]
enum Arg {
    Tile(Acc),
    Scalar(Ex),
}

#[derive(Clone, Debug)]
enum St {
    For {
        var: usize,
        form: u8,
        body: Vec<St>,
    },
    If {
        cond: Co,
        then: Vec<St>,
        els: Vec<St>,
    },
    Let(usize),
    Call {
        kernel: String,
        outs: Vec<Acc>,
        args: Vec<Arg>,
    },
    Comment(String),
}

fn has_call(b: &[St]) -> bool {
    b.iter().any(|s| match s {
        St::Call { .. } => true,
        St::For { body, .. } => has_call(body),
        St::If { then, els, .. } => has_call(then) || has_call(els),
        _ => false,
    })
}

/// Iterations of one statement at the largest instance.
const PATH_LIMIT: f64 = 300.0;
/// Tasks of a program at the largest instance (estimate).
const PROGRAM_LIMIT: f64 = 1200.0;

struct Gen<'c> {
    ch: &'c mut Choices,
    syms: Vec<Sym>,
    n: usize,
    m: Option<usize>,
    /// `L = ceil(log2(N))` when declared.
    global_l: Option<usize>,
    /// Program-level lets, in order.
    globals: Vec<usize>,
    path: Vec<Item>,
    records: Vec<Record>,
    matrices: Vec<Mat>,
    inputs: BTreeMap<usize, usize>,
    kernels: BTreeMap<String, String>,
    owners: usize,
    nest: usize,
    /// Iterations of the current path (estimate at the largest instance).
    est: f64,
    total: f64,
    lets: usize,
    ifs: usize,
}

impl<'c> Gen<'c> {
    fn new(ch: &'c mut Choices, two_params: bool) -> Self {
        let mut syms = vec![Sym {
            name: "N".into(),
            kind: Kind::Param(6),
        }];
        let m = two_params.then(|| {
            syms.push(Sym {
                name: "M".into(),
                kind: Kind::Param(4),
            });
            1
        });
        Gen {
            ch,
            syms,
            n: 0,
            m,
            global_l: None,
            globals: Vec::new(),
            path: Vec::new(),
            records: Vec::new(),
            matrices: Vec::new(),
            inputs: BTreeMap::new(),
            kernels: BTreeMap::new(),
            owners: 0,
            nest: 0,
            est: 1.0,
            total: 0.0,
            lets: 0,
            ifs: 0,
        }
    }

    fn sym(&mut self, name: String, kind: Kind) -> usize {
        self.syms.push(Sym { name, kind });
        self.syms.len() - 1
    }

    fn n(&self) -> Ex {
        Ex::Var(self.n)
    }

    // --- analysis ---------------------------------------------------------

    fn lin(&self, e: &Ex) -> Option<Lin> {
        Some(match e {
            Ex::Int(v) => Lin::k(*v),
            Ex::Var(s) => match &self.syms[*s].kind {
                Kind::Alias { def, .. } => self.lin(def)?,
                _ => Lin::atom(Atom::S(*s)),
            },
            Ex::Add(a, b) => self.lin(a)?.plus(&self.lin(b)?, 1),
            Ex::Sub(a, b) => self.lin(a)?.plus(&self.lin(b)?, -1),
            Ex::Neg(a) => self.lin(a)?.scaled(-1),
            Ex::Mul(a, b) => {
                let (la, lb) = (self.lin(a)?, self.lin(b)?);
                match (la.as_const(), lb.as_const()) {
                    (Some(k), _) => lb.scaled(k),
                    (_, Some(k)) => la.scaled(k),
                    _ => return None,
                }
            }
            Ex::Pow(b, x) => {
                let Ex::Int(base) = **b else { return None };
                if base < 2 {
                    return None;
                }
                let lx = self.lin(x)?;
                if let Some(k) = lx.as_const() {
                    if !(0..=16).contains(&k) {
                        return None;
                    }
                    return Some(Lin::k(base.pow(k as u32)));
                }
                if lx.t.len() != 1 || !(0..=6).contains(&lx.c) {
                    return None;
                }
                let (&a, &coef) = lx.t.iter().next()?;
                let Atom::S(v) = a else { return None };
                if coef != 1 {
                    return None;
                }
                match &self.syms[v].kind {
                    Kind::Loop(LoopSym {
                        pow: Some((pb, _)), ..
                    }) if *pb == base => Lin::atom(Atom::P(v)).scaled(base.pow(lx.c as u32)),
                    _ => return None,
                }
            }
            _ => return None,
        })
    }

    fn eliminable(&self, a: Atom, keep_global: bool) -> bool {
        match a {
            Atom::P(_) => true,
            Atom::S(s) => match &self.syms[s].kind {
                Kind::Param(_) | Kind::Alias { .. } => false,
                Kind::Log { global, .. } => !(keep_global && *global),
                Kind::Loop(_) => true,
            },
        }
    }

    fn atom_bound(&self, a: Atom, up: bool) -> Option<Lin> {
        match a {
            Atom::P(v) => match &self.syms[v].kind {
                Kind::Loop(LoopSym {
                    pow: Some((_, e)), ..
                }) => Some(if up {
                    e.plus(&Lin::k(1), -1)
                } else {
                    Lin::k(1)
                }),
                _ => None,
            },
            Atom::S(s) => match &self.syms[s].kind {
                Kind::Loop(LoopSym { lo_b, hi_b, .. }) => Some(if up {
                    hi_b.plus(&Lin::k(1), -1)
                } else {
                    lo_b.clone()
                }),
                Kind::Log { arg, .. } => {
                    if up {
                        Some(self.lin(arg)?.plus(&Lin::k(1), -1))
                    } else {
                        Some(Lin::k(0))
                    }
                }
                _ => None,
            },
        }
    }

    /// An upper (or lower) bound of `l` over every point of the current
    /// domains, in parameters (and global logs when `keep_global`).
    fn bound(&self, l: &Lin, upper: bool, keep_global: bool) -> Option<Lin> {
        let mut l = l.clone();
        loop {
            let pick =
                l.t.keys()
                    .filter(|a| self.eliminable(**a, keep_global))
                    .max_by_key(|a| key(**a))
                    .copied();
            let Some(a) = pick else { return Some(l) };
            let c = l.t.remove(&a)?;
            let r = self.atom_bound(a, (c > 0) == upper)?;
            l = l.plus(&r, c);
        }
    }

    /// `l >= 0` wherever it is evaluated, for every parameter value >= 1.
    fn nonneg(&self, l: &Lin) -> bool {
        let Some(b) = self.bound(l, false, false) else {
            return false;
        };
        b.t.values().all(|&c| c >= 0) && b.c + b.t.values().sum::<i64>() >= 0
    }

    /// `l >= 0` never holds.
    fn never(&self, l: &Lin) -> bool {
        self.nonneg(&l.scaled(-1).plus(&Lin::k(1), -1))
    }

    /// Whether `d` is a multiple of `s` (`s` a positive constant or
    /// `c · base ** v`) wherever evaluated.
    fn divisible(&self, d: &Lin, s: &Lin) -> bool {
        let (sc, sp) = if let Some(c) = s.as_const() {
            if c <= 0 {
                return false;
            }
            (c, None)
        } else if s.c == 0 && s.t.len() == 1 {
            match s.t.iter().next() {
                Some((&Atom::P(v), &c)) if c > 0 => (c, Some(v)),
                _ => return false,
            }
        } else {
            return false;
        };
        let mut d = d.clone();
        for _ in 0..64 {
            let Some(&a) = d.t.keys().max_by_key(|a| key(**a)) else {
                return if sp.is_none() {
                    d.c % sc == 0
                } else {
                    d.c == 0
                };
            };
            let k = d.t[&a];
            if sp.is_none() && k % sc == 0 {
                d.t.remove(&a);
                continue;
            }
            if let (Atom::P(v), Some(w)) = (a, sp) {
                if v == w && k % sc == 0 {
                    d.t.remove(&a);
                    continue;
                }
            }
            if let Atom::S(u) = a {
                if let Kind::Loop(LoopSym { lo, step, .. }) = &self.syms[u].kind {
                    if let (Some(llo), Some(lst)) = (self.lin(lo), self.lin(step)) {
                        if self.divisible(&lst.scaled(k), s) {
                            d.t.remove(&a);
                            d = d.plus(&llo, k);
                            continue;
                        }
                    }
                }
            }
            return false;
        }
        false
    }

    /// Value of an expression over parameters at the largest instance.
    fn eval_max(&self, e: &Ex) -> Option<i64> {
        Some(match e {
            Ex::Int(v) => *v,
            Ex::Var(s) => match &self.syms[*s].kind {
                Kind::Param(v) => *v,
                Kind::Alias { def, .. } => self.eval_max(def)?,
                Kind::Log { arg, base, .. } => ceil_log(self.eval_max(arg)?, *base),
                Kind::Loop(_) => return None,
            },
            Ex::Add(a, b) => self.eval_max(a)? + self.eval_max(b)?,
            Ex::Sub(a, b) => self.eval_max(a)? - self.eval_max(b)?,
            Ex::Mul(a, b) => self.eval_max(a)? * self.eval_max(b)?,
            Ex::FloorDiv(a, b) => self.eval_max(a)?.div_euclid(self.eval_max(b)?),
            Ex::CeilLog(a, b) => ceil_log(self.eval_max(a)?, *b),
            _ => return None,
        })
    }

    fn lin_max(&self, l: &Lin) -> Option<i64> {
        let mut v = l.c;
        for (a, c) in &l.t {
            let Atom::S(s) = a else { return None };
            v += c * self.eval_max(&Ex::Var(*s))?;
        }
        Some(v)
    }

    /// Iterations of a loop at the largest instance (an over-estimate).
    fn width(&self, lo_b: &Lin, hi_b: &Lin, step: &Ex) -> f64 {
        let ub = self
            .bound(&hi_b.plus(&Lin::k(1), -1), true, true)
            .and_then(|l| self.lin_max(&l));
        let lb = self.bound(lo_b, false, true).and_then(|l| self.lin_max(&l));
        let w = match (lb, ub) {
            (Some(l), Some(u)) => (u - l + 1).max(0) as f64,
            _ => 100.0,
        };
        match self.lin(step).and_then(|s| s.as_const()) {
            Some(s) if s > 1 => (w / s as f64).ceil(),
            Some(_) => w,
            None => (w / 2.0).ceil(),
        }
    }

    fn subst(&self, e: &Ex, p: &HashMap<usize, Ex>) -> Ex {
        let r = |x: &Ex| bx(self.subst(x, p));
        match e {
            Ex::Var(s) => {
                if let Some(x) = p.get(s) {
                    return x.clone();
                }
                match &self.syms[*s].kind {
                    Kind::Alias { def, global: false } => self.subst(def, p),
                    Kind::Log {
                        arg,
                        base,
                        global: false,
                        ..
                    } => Ex::CeilLog(r(arg), *base),
                    _ => e.clone(),
                }
            }
            Ex::Int(_) | Ex::Real(_) => e.clone(),
            Ex::Add(a, b) => Ex::Add(r(a), r(b)),
            Ex::Sub(a, b) => Ex::Sub(r(a), r(b)),
            Ex::Mul(a, b) => Ex::Mul(r(a), r(b)),
            Ex::Div(a, b) => Ex::Div(r(a), r(b)),
            Ex::FloorDiv(a, b) => Ex::FloorDiv(r(a), r(b)),
            Ex::Mod(a, b) => Ex::Mod(r(a), r(b)),
            Ex::Pow(a, b) => Ex::Pow(r(a), r(b)),
            Ex::Neg(a) => Ex::Neg(r(a)),
            Ex::Min(xs) => Ex::Min(xs.iter().map(|x| self.subst(x, p)).collect()),
            Ex::Max(xs) => Ex::Max(xs.iter().map(|x| self.subst(x, p)).collect()),
            Ex::CeilLog(a, b) => Ex::CeilLog(r(a), *b),
            Ex::Log2(a) => Ex::Log2(r(a)),
        }
    }

    fn subst_co(&self, c: &Co, p: &HashMap<usize, Ex>) -> Co {
        match c {
            Co::Bool(_) => c.clone(),
            Co::Cmp(op, a, b) => Co::Cmp(op, self.subst(a, p), self.subst(b, p)),
            Co::And(a, b) => and(self.subst_co(a, p), self.subst_co(b, p)),
            Co::Or(a, b) => or(self.subst_co(a, p), self.subst_co(b, p)),
            Co::Not(a) => not(self.subst_co(a, p)),
        }
    }

    /// The expression of an affine form.
    fn lin_ex(&self, l: &Lin) -> Ex {
        let mut terms: Vec<(Ex, i64)> = Vec::new();
        for (a, &c) in &l.t {
            match *a {
                Atom::S(s) => terms.push((Ex::Var(s), c)),
                Atom::P(v) => {
                    let base = self.base_of(v);
                    let mut k = 0;
                    let mut q = c.abs();
                    while q % base == 0 && q > 1 {
                        q /= base;
                        k += 1;
                    }
                    let p = pow(base, add(Ex::Var(v), Ex::Int(k)));
                    terms.push((mul(q, p), c.signum()));
                }
            }
        }
        // Loop variables (latest last) before parameters.
        terms.sort_by_key(|(e, _)| match e {
            Ex::Var(s) if matches!(self.syms[*s].kind, Kind::Param(_)) => 1,
            _ => 0,
        });
        let mut out: Option<Ex> = None;
        for (e, c) in terms.iter().filter(|(_, c)| *c > 0) {
            let t = if matches!(e, Ex::Mul(..)) {
                e.clone()
            } else {
                mul(*c, e.clone())
            };
            out = Some(match out {
                None => t,
                Some(o) => add(o, t),
            });
        }
        if l.c > 0 {
            out = Some(match out {
                None => Ex::Int(l.c),
                Some(o) => add(o, Ex::Int(l.c)),
            });
        }
        for (e, c) in terms.iter().filter(|(_, c)| *c < 0) {
            let t = if matches!(e, Ex::Mul(..)) {
                e.clone()
            } else {
                mul(-c, e.clone())
            };
            out = Some(match out {
                None => Ex::Neg(bx(t)),
                Some(o) => sub(o, t),
            });
        }
        if l.c < 0 {
            out = Some(match out {
                None => Ex::Int(l.c),
                Some(o) => sub(o, Ex::Int(-l.c)),
            });
        }
        out.unwrap_or(Ex::Int(0))
    }

    // --- scope ------------------------------------------------------------

    fn loop_vars(&self) -> Vec<usize> {
        self.path
            .iter()
            .filter_map(|i| match i {
                Item::Loop(v) => Some(*v),
                _ => None,
            })
            .collect()
    }

    fn level_vars(&self) -> Vec<usize> {
        self.loop_vars()
            .into_iter()
            .filter(|v| matches!(self.syms[*v].kind, Kind::Loop(LoopSym { pow: Some(_), .. })))
            .collect()
    }

    /// Int values in scope: loop variables and lets of the current path.
    fn values(&self) -> Vec<usize> {
        self.path
            .iter()
            .filter_map(|i| match i {
                Item::Loop(v) | Item::Let(v) => Some(*v),
                _ => None,
            })
            .filter(|v| self.lin(&Ex::Var(*v)).is_some())
            .collect()
    }

    fn base_of(&self, lv: usize) -> i64 {
        match &self.syms[lv].kind {
            Kind::Loop(LoopSym {
                pow: Some((b, _)), ..
            }) => *b,
            _ => 2,
        }
    }

    fn in_scope(&self, name: &str) -> bool {
        self.path.iter().any(|i| match i {
            Item::Loop(v) | Item::Let(v) => self.syms[*v].name == name,
            _ => false,
        }) || name == "N"
            || name == "M"
    }

    fn fresh_loop_name(&mut self, level: bool) -> String {
        let pool: &[&str] = if level {
            &["level", "lv", "lw", "lx"]
        } else {
            &["i", "j", "k", "p", "q", "r", "u", "w"]
        };
        let start = if level { 0 } else { self.ch.below(3) };
        for k in 0..pool.len() {
            let name = pool[(start + k) % pool.len()];
            if !self.in_scope(name) {
                return name.to_string();
            }
        }
        format!("v{}", self.syms.len())
    }

    fn fresh_let_name(&mut self) -> String {
        self.lets += 1;
        format!("t{}", self.lets)
    }

    fn path_has_guard(&self, g: &Co) -> bool {
        self.path.iter().any(|i| match i {
            Item::Guard(c, true) => c == g,
            Item::Guard(c, false) => matches!(g, Co::Not(x) if **x == *c),
            _ => false,
        })
    }

    fn push_loop(&mut self, name: String, l: LoopSym) -> usize {
        let v = self.sym(name, Kind::Loop(l));
        self.path.push(Item::Loop(v));
        v
    }

    // --- matrices and kernels --------------------------------------------

    fn new_matrix(&mut self, rank: usize, joinable: bool) -> usize {
        let role = if self.ch.chance(40) {
            "output"
        } else {
            "matrix"
        };
        self.matrices.push(Mat {
            name: format!("X{}", self.matrices.len() + 1),
            role,
            ext: vec![Lin::k(0); rank],
            joinable,
        });
        self.matrices.len() - 1
    }

    fn input_matrix(&mut self, rank: usize) -> usize {
        if let Some(&m) = self.inputs.get(&rank) {
            return m;
        }
        self.matrices.push(Mat {
            name: format!("A{rank}"),
            role: "input",
            ext: vec![Lin::k(0); rank],
            joinable: false,
        });
        let m = self.matrices.len() - 1;
        self.inputs.insert(rank, m);
        m
    }

    /// The extent a row needs (an upper bound of it, plus one).
    fn row_extent(&self, row: &Ex) -> Lin {
        let ub = self
            .lin(row)
            .and_then(|l| self.bound(&l, true, true))
            .expect("bounded row");
        let e = ub.plus(&Lin::k(1), 1);
        if self.nonneg(&e) {
            e
        } else {
            e.clamped()
        }
    }

    fn grow(&mut self, m: usize, ext: &[Lin]) {
        for (d, e) in ext.iter().enumerate() {
            let cur = self.matrices[m].ext[d].clone();
            self.matrices[m].ext[d] = cur.max(e);
        }
    }

    fn kernel(&mut self, tiles: usize, results: usize, scalar: Option<&str>) -> String {
        let suffix = match scalar {
            Some("real") => "r",
            Some(_) => "i",
            None => "",
        };
        let name = format!("k{tiles}x{results}{suffix}");
        let mut params: Vec<String> = (0..tiles).map(|i| format!("a{i}")).collect();
        if let Some(t) = scalar {
            params.push(format!("s: {t}"));
        }
        let res: Vec<String> = (0..results).map(|i| format!("r{i}")).collect();
        self.kernels.insert(
            name.clone(),
            format!(
                "kernel {name}({}) -> ({});",
                params.join(", "),
                res.join(", ")
            ),
        );
        name
    }

    fn call(&mut self, outs: Vec<Acc>, args: Vec<Arg>) -> St {
        let tiles = args.iter().filter(|a| matches!(a, Arg::Tile(_))).count();
        let scalar = args.iter().find_map(|a| match a {
            Arg::Scalar(Ex::Real(_) | Ex::Div(..) | Ex::Log2(_)) => Some("real"),
            Arg::Scalar(_) => Some("int"),
            _ => None,
        });
        let kernel = self.kernel(tiles, outs.len(), scalar);
        self.total += self.est;
        St::Call { kernel, outs, args }
    }

    // --- writes -----------------------------------------------------------

    /// Rows of an injective write map of the current loop variables, each
    /// provably >= 0.
    fn write_rows(&mut self) -> Vec<Ex> {
        let vars = self.loop_vars();
        let mut order = vars.clone();
        if self.ch.chance(25) {
            for i in (1..order.len()).rev() {
                let j = self.ch.below(i + 1);
                order.swap(i, j);
            }
        }
        let mut rows: Vec<Lin> = Vec::new();
        for r in 0..order.len() {
            let v = order[r];
            let a = [1, 1, 1, 1, 2, 3, -1, -2][self.ch.below(8)];
            let mut l = Lin::atom(Atom::S(v)).scaled(a);
            for &w in &order[..r] {
                if self.ch.chance(25) {
                    l = l.plus(&Lin::atom(Atom::S(w)), [1, -1, 2][self.ch.below(3)]);
                }
                if matches!(self.syms[w].kind, Kind::Loop(LoopSym { pow: Some(_), .. }))
                    && self.ch.chance(20)
                {
                    l = l.plus(&Lin::atom(Atom::P(w)), 1);
                }
            }
            if self.ch.chance(8) {
                l = l.plus(&Lin::atom(Atom::S(self.n)), 1);
            }
            rows.push(l);
        }
        if rows.is_empty() || self.ch.chance(15) {
            let c = match self.ch.below(4) {
                0 => Lin::k(0),
                1 => Lin::k(1),
                2 => Lin::k(2),
                _ => Lin::atom(Atom::S(self.n)).plus(&Lin::k(1), -1),
            };
            let at = self.ch.below(rows.len() + 1);
            rows.insert(at, c);
        }
        if self.ch.chance(20) {
            for i in (1..rows.len()).rev() {
                let j = self.ch.below(i + 1);
                rows.swap(i, j);
            }
        }
        rows.iter()
            .map(|l| {
                let lb = self.bound(l, false, true).expect("bounded write row");
                let slack = if self.ch.chance(25) {
                    self.ch.below(3) as i64
                } else {
                    0
                };
                self.lin_ex(&l.plus(&lb, -1).plus(&Lin::k(slack), 1))
            })
            .collect()
    }

    /// A fresh owner, naming a new call site in its write records (the
    /// branches of an if/else that write one tile share theirs).
    fn new_owner(&mut self) -> usize {
        self.owners += 1;
        self.owners
    }

    /// A new write of the current call site: fresh matrix or a disjoint
    /// slice of a shared one.
    fn new_write(&mut self, owner: usize) -> Acc {
        let mut rows = self.write_rows();
        let mut ext: Vec<Lin> = rows.iter().map(|r| self.row_extent(r)).collect();
        let rank = rows.len();
        let joinable: Vec<usize> = (0..self.matrices.len())
            .filter(|&m| self.matrices[m].joinable && self.matrices[m].ext.len() == rank)
            .collect();
        let m = match self.ch.pick(&joinable) {
            Some(m) if self.ch.chance(25) => {
                let off = self.matrices[m].ext[0].clone();
                rows[0] = add(rows[0].clone(), self.lin_ex(&off));
                ext[0] = ext[0].plus(&off, 1);
                m
            }
            _ => self.new_matrix(rank, true),
        };
        self.record_write(m, rows, &ext, owner)
    }

    /// A write with fixed rows (motifs), recorded.
    fn fixed_write(&mut self, m: usize, rows: Vec<Ex>, owner: usize) -> Acc {
        let ext: Vec<Lin> = rows.iter().map(|r| self.row_extent(r)).collect();
        self.record_write(m, rows, &ext, owner)
    }

    /// Grows matrix `m` to `ext` and records the write of `rows` at the
    /// current call site (the one bookkeeping of new and fixed writes).
    fn record_write(&mut self, m: usize, rows: Vec<Ex>, ext: &[Lin], owner: usize) -> Acc {
        self.grow(m, ext);
        self.records.push(Record {
            matrix: m,
            rows: rows.clone(),
            path: self.path.clone(),
            owner,
            nest: self.nest,
        });
        Acc {
            matrix: m,
            idx: rows,
        }
    }

    // --- reads ------------------------------------------------------------

    /// A non-negative affine row over the values in scope, with its extent.
    fn affine_row(&mut self) -> (Ex, Lin) {
        let vals = self.values();
        let mut l = Lin::k(self.ch.below(3) as i64);
        let terms = if vals.is_empty() {
            0
        } else {
            1 + self.ch.below(2)
        };
        for _ in 0..terms {
            let v = self.ch.pick(&vals).expect("values");
            let c = [1, 1, 2, -1, 3][self.ch.below(5)];
            if let Some(lv) = self.lin(&Ex::Var(v)) {
                l = l.plus(&lv, c);
            }
        }
        let levels = self.level_vars();
        if !levels.is_empty() && self.ch.chance(20) {
            let v = self.ch.pick(&levels).expect("levels");
            l = l.plus(&Lin::atom(Atom::P(v)), 1);
        }
        if self.ch.chance(10) {
            l = l.plus(&Lin::atom(Atom::S(self.n)), 1);
        }
        let lb = self.bound(&l, false, true).expect("bounded read row");
        let row = l.plus(&lb, -1);
        let e = self.lin_ex(&row);
        let ext = self.row_extent(&e);
        (e, ext)
    }

    /// A read of an input matrix, in bounds.
    fn input_read(&mut self) -> Acc {
        let rank = self.ch.weighted(&[35, 45, 20]) + 1;
        let m = self.input_matrix(rank);
        let mut idx = Vec::new();
        let mut ext = Vec::new();
        for _ in 0..rank {
            let (e, x) = match self.ch.weighted(&[55, 20, 15]) {
                0 => self.affine_row(),
                1 => {
                    let (a, xa) = self.affine_row();
                    match self.ch.below(4) {
                        0 => (Ex::FloorDiv(bx(a), bx(Ex::Int(2))), xa),
                        1 => (Ex::Mod(bx(a), bx(Ex::Int(3))), Lin::k(3)),
                        2 => {
                            let (b, _) = self.affine_row();
                            (Ex::Min(vec![a, b]), xa)
                        }
                        _ => {
                            let (b, xb) = self.affine_row();
                            (Ex::Max(vec![a, b]), xa.max(&xb))
                        }
                    }
                }
                _ => {
                    if self.ch.chance(50) {
                        (sub(self.n(), Ex::Int(1)), Lin::atom(Atom::S(self.n)))
                    } else {
                        let c = self.ch.below(2) as i64;
                        (Ex::Int(c), Lin::k(c + 1))
                    }
                }
            };
            idx.push(e);
            ext.push(x);
        }
        self.grow(m, &ext);
        Acc { matrix: m, idx }
    }

    /// The conjuncts of "`p` is an iteration of the record's domain" that
    /// cannot be proven here; `None` when one never holds.
    fn membership(&self, rec: &Record, p: &HashMap<usize, Ex>) -> Option<Vec<Co>> {
        let mut out = Vec::new();
        for item in &rec.path {
            match item {
                Item::Loop(v) => {
                    let Kind::Loop(LoopSym { lo, hi, step, .. }) = &self.syms[*v].kind else {
                        continue;
                    };
                    let pv = p.get(v)?.clone();
                    let lo = self.subst(lo, p);
                    let hi = self.subst(hi, p);
                    let st = self.subst(step, p);
                    let lpv = self.lin(&pv);
                    let d_lo = lpv.clone().zip(self.lin(&lo)).map(|(a, b)| a.plus(&b, -1));
                    match &d_lo {
                        Some(d) if self.nonneg(d) => {}
                        Some(d) if self.never(d) => return None,
                        _ => out.push(cmp(">=", pv.clone(), lo.clone())),
                    }
                    let d_hi = lpv
                        .zip(self.lin(&hi))
                        .map(|(a, b)| b.plus(&a, -1).plus(&Lin::k(1), -1));
                    match &d_hi {
                        Some(d) if self.nonneg(d) => {}
                        Some(d) if self.never(d) => return None,
                        _ => out.push(cmp("<", pv.clone(), hi.clone())),
                    }
                    if st != Ex::Int(1) {
                        let ok = match (&d_lo, self.lin(&st)) {
                            (Some(d), Some(s)) => self.divisible(d, &s),
                            _ => false,
                        };
                        if !ok {
                            let diff = if lo == Ex::Int(0) {
                                pv.clone()
                            } else {
                                sub(pv.clone(), lo.clone())
                            };
                            out.push(cmp("==", Ex::Mod(bx(diff), bx(st)), Ex::Int(0)));
                        }
                    }
                }
                Item::Guard(c, pos) => {
                    let g = self.subst_co(c, p);
                    let g = if *pos { g } else { not(g) };
                    match g {
                        Co::Bool(true) => {}
                        Co::Bool(false) => return None,
                        Co::Not(ref x) if **x == Co::Bool(false) => {}
                        Co::Not(ref x) if **x == Co::Bool(true) => return None,
                        _ => {
                            if !self.path_has_guard(&g) && !out.contains(&g) {
                                out.push(g);
                            }
                        }
                    }
                }
                Item::Let(_) => {}
            }
        }
        Some(out)
    }

    /// A component of the writer's iteration for its loop variable `v`.
    fn free_component(
        &mut self,
        v: usize,
        idx: usize,
        p: &HashMap<usize, Ex>,
        mine: &[usize],
    ) -> Ex {
        let Kind::Loop(LoopSym { lo, hi, step, .. }) = self.syms[v].kind.clone() else {
            return Ex::Int(0);
        };
        let lo_s = self.subst(&lo, p);
        let u = self.ch.pick(mine).map(Ex::Var);
        match self.ch.weighted(&[45, 15, 10, 8, 8, 7, 7]) {
            0 => match mine.get(idx).or(mine.last()) {
                Some(&w) => Ex::Var(w),
                None => lo_s,
            },
            1 => lo_s,
            2 => match u {
                Some(u) => {
                    let c = 1 + self.ch.below(2) as i64;
                    if self.ch.chance(50) {
                        add(u, Ex::Int(c))
                    } else {
                        sub(u, Ex::Int(c))
                    }
                }
                None => lo_s,
            },
            3 => match self.ch.below(4) {
                0 => Ex::Int(0),
                1 => Ex::Int(1),
                2 => sub(self.n(), Ex::Int(1)),
                _ => Ex::FloorDiv(bx(self.n()), bx(Ex::Int(2))),
            },
            4 => match u {
                Some(u) => {
                    let w = self.ch.pick(mine).map(Ex::Var).unwrap_or(Ex::Int(0));
                    match self.ch.below(4) {
                        0 => Ex::FloorDiv(bx(u), bx(Ex::Int(2))),
                        1 => Ex::Min(vec![u, w]),
                        2 => Ex::Max(vec![sub(u, Ex::Int(1)), Ex::Int(0)]),
                        _ => Ex::Mod(bx(u), bx(Ex::Int(3))),
                    }
                }
                None => lo_s,
            },
            5 => match u {
                Some(u) => match self.ch.below(3) {
                    0 => sub(sub(self.n(), Ex::Int(1)), u),
                    1 => mul(2, u),
                    _ => add(mul(2, u), Ex::Int(1)),
                },
                None => lo_s,
            },
            _ => {
                let levels = self.level_vars();
                match (u, self.ch.pick(&levels)) {
                    (Some(u), Some(lv)) => add(u, pow(self.base_of(lv), Ex::Var(lv))),
                    _ if step == Ex::Int(1) => sub(self.subst(&hi, p), Ex::Int(1)),
                    _ => lo_s,
                }
            }
        }
    }

    /// An iteration of the record's writer, as expressions of the current
    /// variables, that is sequentially before the current point.
    fn choose_p(&mut self, rec: &Record, owner: usize) -> Option<HashMap<usize, Ex>> {
        let rloops: Vec<usize> = rec
            .path
            .iter()
            .filter_map(|i| match i {
                Item::Loop(v) => Some(*v),
                _ => None,
            })
            .collect();
        let mine = self.loop_vars();
        let common = rloops.iter().zip(&mine).take_while(|(a, b)| a == b).count();
        let dec = if rec.owner == owner {
            if common == 0 {
                return None;
            }
            Some(self.ch.below(common))
        } else if common > 0 && self.ch.chance(30) {
            Some(self.ch.below(common))
        } else {
            None
        };
        let mut p = HashMap::new();
        for (idx, &v) in rloops.iter().enumerate() {
            let e = if idx < common && dec.is_none_or(|k| idx < k) {
                Ex::Var(v)
            } else if Some(idx) == dec {
                let Kind::Loop(LoopSym { step, .. }) = self.syms[v].kind.clone() else {
                    return None;
                };
                let st = self.subst(&step, &p);
                let delta = match st {
                    Ex::Int(1) if self.ch.chance(20) => Ex::Int(2),
                    other => other,
                };
                sub(Ex::Var(v), delta)
            } else if idx < common && self.ch.chance(70) {
                Ex::Var(v)
            } else {
                self.free_component(v, idx, &p, &mine)
            };
            p.insert(v, e);
        }
        Some(p)
    }

    /// A read of a tile some earlier record wrote, with the conjuncts that
    /// guarantee it, and whether it reads the call's own record.
    fn record_read(&mut self, owner: usize, need_proven: bool) -> Option<(Acc, Vec<Co>, bool)> {
        for _ in 0..3 {
            let n = self.records.len();
            if n == 0 {
                return None;
            }
            let own: Vec<usize> = (0..n).filter(|&r| self.records[r].owner == owner).collect();
            let nest: Vec<usize> = (0..n)
                .filter(|&r| self.records[r].nest == self.nest && self.records[r].owner != owner)
                .collect();
            let ri = match self.ch.weighted(&[40, 30, 15, 15]) {
                0 => n - 1 - self.ch.below(n.min(3)),
                1 => self.ch.below(n),
                2 => match self.ch.pick(&own) {
                    Some(r) => r,
                    None => self.ch.below(n),
                },
                _ => match self.ch.pick(&nest) {
                    Some(r) => r,
                    None => self.ch.below(n),
                },
            };
            let rec = self.records[ri].clone();
            let Some(p) = self.choose_p(&rec, owner) else {
                continue;
            };
            let Some(conj) = self.membership(&rec, &p) else {
                continue;
            };
            if need_proven && !conj.is_empty() {
                continue;
            }
            let idx = rec.rows.iter().map(|r| self.subst(r, &p)).collect();
            return Some((
                Acc {
                    matrix: rec.matrix,
                    idx,
                },
                conj,
                rec.owner == owner,
            ));
        }
        None
    }

    /// Arguments that need no guard.
    fn plain_args(&mut self, owner: usize, count: usize) -> Vec<Arg> {
        (0..count)
            .map(|_| {
                if self.ch.chance(50) {
                    if let Some((acc, _, _)) = self.record_read(owner, true) {
                        return Arg::Tile(acc);
                    }
                }
                Arg::Tile(self.input_read())
            })
            .collect()
    }

    fn scalar_arg(&mut self) -> Ex {
        let vals = self.values();
        let u = self.ch.pick(&vals).map(Ex::Var).unwrap_or(self.n());
        match self.ch.below(7) {
            0 => Ex::Real("1.5"),
            1 => Ex::Div(bx(u), bx(Ex::Int(2))),
            2 => Ex::Log2(bx(self.n())),
            3 => add(u, Ex::Int(1)),
            4 => Ex::CeilLog(bx(self.n()), 2),
            5 => Ex::Real("0.25"),
            _ => u,
        }
    }

    /// A call site: the call, possibly guarded by what its reads need, with
    /// an `else` that writes the same tiles or other ones.
    fn call_site(&mut self, _depth: usize, nesting: usize) -> Vec<St> {
        let owner = self.new_owner();
        let nouts = self.ch.weighted(&[72, 20, 8]) + 1;
        let first_record = self.records.len();
        let outs: Vec<Acc> = (0..nouts).map(|_| self.new_write(owner)).collect();
        let nargs = self.ch.weighted(&[30, 40, 22, 8]) + 1;
        let mut args = Vec::new();
        let mut guard: Vec<Co> = Vec::new();
        let mut self_read = false;
        for _ in 0..nargs {
            if self.ch.chance(62) {
                if let Some((acc, conj, is_self)) = self.record_read(owner, false) {
                    for c in conj {
                        if !guard.contains(&c) {
                            guard.push(c);
                        }
                    }
                    self_read |= is_self;
                    args.push(Arg::Tile(acc));
                    continue;
                }
            }
            args.push(Arg::Tile(self.input_read()));
        }
        if self.ch.chance(8) {
            let s = self.scalar_arg();
            args.push(Arg::Scalar(s));
        }
        let call = self.call(outs.clone(), args);
        let Some(g) = guard.into_iter().reduce(and) else {
            return vec![call];
        };
        let variant = if self_read {
            1
        } else {
            self.ch
                .weighted(&[35, 35, if nesting < 2 { 30 } else { 0 }])
        };
        match variant {
            0 => {
                for r in first_record..self.records.len() {
                    self.records[r].path.push(Item::Guard(g.clone(), true));
                }
                vec![St::If {
                    cond: g,
                    then: vec![call],
                    els: vec![],
                }]
            }
            1 => {
                self.path.push(Item::Guard(g.clone(), false));
                let n = 1 + self.ch.below(2);
                let args = self.plain_args(owner, n);
                self.path.pop();
                let other = self.call(outs, args);
                vec![if_else(g, call, other)]
            }
            _ => {
                for r in first_record..self.records.len() {
                    self.records[r].path.push(Item::Guard(g.clone(), true));
                }
                self.path.push(Item::Guard(g.clone(), false));
                let els = self.call_site(_depth, nesting + 1);
                self.path.pop();
                vec![St::If {
                    cond: g,
                    then: vec![call],
                    els,
                }]
            }
        }
    }

    // --- conditions -------------------------------------------------------

    fn atom_cond(&mut self) -> Co {
        let vals = self.values();
        let n = self.n();
        if vals.is_empty() {
            return match self.ch.below(4) {
                0 => cmp(">", n, Ex::Int(2)),
                1 => cmp("==", Ex::Mod(bx(n), bx(Ex::Int(2))), Ex::Int(0)),
                2 => match self.m {
                    Some(m) => cmp(">=", Ex::Var(m), n),
                    None => cmp("<=", n, Ex::Int(4)),
                },
                _ => cmp("!=", n, Ex::Int(3)),
            };
        }
        let u = Ex::Var(self.ch.pick(&vals).expect("values"));
        let w = Ex::Var(self.ch.pick(&vals).expect("values"));
        let levels = self.level_vars();
        match self
            .ch
            .weighted(&[14, 6, 8, 5, 6, 6, 6, 5, 6, 5, 5, 4, 5, 4, 6, 4, 2])
        {
            0 => {
                let k = 2 + self.ch.below(2) as i64;
                let r = self.ch.below(k as usize) as i64;
                cmp("==", Ex::Mod(bx(u), bx(Ex::Int(k))), Ex::Int(r))
            }
            1 => {
                let k = 2 + self.ch.below(2) as i64;
                let r = self.ch.below(k as usize) as i64;
                cmp("!=", Ex::Mod(bx(u), bx(Ex::Int(k))), Ex::Int(r))
            }
            2 => cmp("<", u, w),
            3 => cmp("<=", u, add(w, Ex::Int(1))),
            4 => cmp(">", u, w),
            5 => cmp(">=", u, w),
            6 => cmp("==", u, w),
            7 => cmp("!=", u, w),
            8 => cmp("<", add(u, w), n),
            9 => cmp("==", u, Ex::Int(0)),
            10 => cmp(">=", u, Ex::Int(1)),
            11 => cmp("==", u, sub(n, Ex::Int(1))),
            12 => cmp("<", u, sub(n, Ex::Int(1))),
            13 => cmp("==", mul(2, u), w),
            14 => cmp("==", u, add(w, Ex::Int(1))),
            15 => match self.ch.pick(&levels) {
                Some(lv) if self.ch.chance(50) => {
                    cmp("<", add(u, pow(self.base_of(lv), Ex::Var(lv))), n)
                }
                Some(lv) => cmp(
                    "==",
                    Ex::Mod(
                        bx(Ex::FloorDiv(bx(u), bx(pow(self.base_of(lv), Ex::Var(lv))))),
                        bx(Ex::Int(2)),
                    ),
                    Ex::Int(0),
                ),
                None => cmp("<=", u, w),
            },
            _ => Co::Bool(self.ch.chance(70)),
        }
    }

    fn cond(&mut self) -> Co {
        let a = self.atom_cond();
        match self.ch.weighted(&[50, 22, 12, 8, 8]) {
            0 => a,
            1 => and(a, self.atom_cond()),
            2 => or(a, self.atom_cond()),
            3 => not(a),
            _ => {
                let b = self.atom_cond();
                let c = self.atom_cond();
                if self.ch.chance(50) {
                    not(or(a, b))
                } else {
                    and(or(a, b), c)
                }
            }
        }
    }

    // --- structure --------------------------------------------------------

    /// An extent: its expression and an upper bound.
    fn extent(&mut self) -> (Ex, Lin) {
        let n = self.n();
        let ln = Lin::atom(Atom::S(self.n));
        let mut opts: Vec<(Ex, Lin)> = vec![
            (n.clone(), ln.clone()),
            (n.clone(), ln.clone()),
            (add(n.clone(), Ex::Int(1)), ln.plus(&Lin::k(1), 1)),
            (mul(2, n.clone()), ln.scaled(2)),
            (sub(n.clone(), Ex::Int(1)), ln.plus(&Lin::k(1), -1)),
            (Ex::Int(3), Lin::k(3)),
            (
                Ex::FloorDiv(bx(add(n.clone(), Ex::Int(1))), bx(Ex::Int(2))),
                ln.clone(),
            ),
            (Ex::Min(vec![n.clone(), Ex::Int(4)]), ln.clone()),
            (
                Ex::Max(vec![sub(n.clone(), Ex::Int(2)), Ex::Int(1)]),
                ln.clone(),
            ),
        ];
        if let Some(m) = self.m {
            let lm = Lin::atom(Atom::S(m));
            opts.push((Ex::Var(m), lm.clone()));
            opts.push((Ex::Var(m), lm.clone()));
            opts.push((add(n.clone(), Ex::Var(m)), ln.plus(&lm, 1)));
        }
        for &g in &self.globals {
            if let Kind::Alias { def, .. } = &self.syms[g].kind {
                if let Some(l) = self.lin(def) {
                    opts.push((Ex::Var(g), l));
                }
            }
        }
        let i = self.ch.below(opts.len());
        opts.swap_remove(i)
    }

    /// An extent that is >= 1 for every parameter value.
    fn positive_extent(&mut self) -> (Ex, Lin) {
        for _ in 0..4 {
            let (e, _) = self.extent();
            if let Some(le) = self.lin(&e) {
                if self.nonneg(&le.plus(&Lin::k(1), -1)) {
                    return (e, le);
                }
            }
        }
        (self.n(), Lin::atom(Atom::S(self.n)))
    }

    /// A loop (with the lets it needs before it), or nothing when too large.
    fn gen_loop(&mut self, depth: usize) -> Vec<St> {
        let vals = self.values();
        let levels = self.level_vars();
        let kind = self.ch.weighted(&[
            30,
            if vals.is_empty() { 0 } else { 22 },
            12,
            if depth < 2 { 12 } else { 4 },
            if levels.is_empty() { 0 } else { 16 },
        ]);
        let level = kind == 3;
        let name = self.fresh_loop_name(level);
        let mut pre: Vec<St> = Vec::new();
        let mut form = self.ch.below(3) as u8;
        let (lo, hi, step, lo_b, hi_b, pw): (Ex, Ex, Ex, Lin, Lin, Option<(i64, Lin)>) = match kind
        {
            0 => {
                let (e, eb) = self.extent();
                if self.ch.chance(15) {
                    (Ex::Int(1), e, Ex::Int(1), Lin::k(1), eb, None)
                } else if self.ch.chance(8) {
                    (Ex::Int(-1), e, Ex::Int(1), Lin::k(-1), eb, None)
                } else {
                    (Ex::Int(0), e, Ex::Int(1), Lin::k(0), eb, None)
                }
            }
            1 => {
                let u = self.ch.pick(&vals).expect("values");
                let lu = self.lin(&Ex::Var(u)).expect("affine value");
                let uv = Ex::Var(u);
                let (e, eb) = self.extent();
                match self.ch.below(8) {
                    0 => (uv, e, Ex::Int(1), lu, eb, None),
                    1 => (
                        add(uv, Ex::Int(1)),
                        e,
                        Ex::Int(1),
                        lu.plus(&Lin::k(1), 1),
                        eb,
                        None,
                    ),
                    2 => (
                        Ex::Int(0),
                        add(uv, Ex::Int(1)),
                        Ex::Int(1),
                        Lin::k(0),
                        lu.plus(&Lin::k(1), 1),
                        None,
                    ),
                    3 => (Ex::Int(0), uv, Ex::Int(1), Lin::k(0), lu, None),
                    4 => (
                        uv,
                        add(Ex::Var(u), Ex::Int(3)),
                        Ex::Int(1),
                        lu.clone(),
                        lu.plus(&Lin::k(3), 1),
                        None,
                    ),
                    5 => (
                        Ex::Max(vec![sub(uv, Ex::Int(1)), Ex::Int(0)]),
                        Ex::Min(vec![add(Ex::Var(u), Ex::Int(2)), e]),
                        Ex::Int(1),
                        lu.plus(&Lin::k(1), -1),
                        lu.plus(&Lin::k(2), 1),
                        None,
                    ),
                    6 => (
                        mul(2, uv),
                        mul(2, e),
                        Ex::Int(1),
                        lu.scaled(2),
                        eb.scaled(2),
                        None,
                    ),
                    _ => (
                        sub(uv, Ex::Int(1)),
                        e,
                        Ex::Int(1),
                        lu.plus(&Lin::k(1), -1),
                        eb,
                        None,
                    ),
                }
            }
            2 => {
                form = 2;
                let (e, eb) = self.extent();
                let s = 2 + self.ch.below(2) as i64;
                match (self.ch.below(3), self.ch.pick(&vals)) {
                    (1, _) => (Ex::Int(1), e, Ex::Int(s), Lin::k(1), eb, None),
                    (2, Some(u)) => {
                        let lu = self.lin(&Ex::Var(u)).expect("affine value");
                        (Ex::Var(u), e, Ex::Int(s), lu, eb, None)
                    }
                    _ => (Ex::Int(0), e, Ex::Int(s), Lin::k(0), eb, None),
                }
            }
            3 => {
                // range(ceil(log_b(E))): a level loop.
                let base = if self.ch.chance(20) { 4 } else { 2 };
                let count: usize;
                let arg_lin: Lin;
                let pick_let = self.ch.below(4);
                if let (1, 2, Some(l)) = (pick_let, base, self.global_l) {
                    count = l;
                    arg_lin = Lin::atom(Atom::S(self.n));
                } else if pick_let == 2 && !vals.is_empty() {
                    // let t = ceil(log2(E - u)) or ceil(log2(u + 1))
                    let u = self.ch.pick(&vals).expect("values");
                    let lu = self.lin(&Ex::Var(u)).expect("affine value");
                    let (e, eb) = self.extent();
                    let cands = [
                        (
                            sub(e.clone(), Ex::Var(u)),
                            self.lin(&e).map(|l| l.plus(&lu, -1)),
                        ),
                        (add(Ex::Var(u), Ex::Int(1)), Some(lu.plus(&Lin::k(1), 1))),
                    ];
                    let _ = eb;
                    let c = &cands[self.ch.below(2)];
                    match &c.1 {
                        Some(l) if self.nonneg(&l.plus(&Lin::k(1), -1)) => {
                            let name = self.fresh_let_name();
                            let t = self.sym(name, Kind::let_log(c.0.clone(), base, false));
                            self.path.push(Item::Let(t));
                            pre.push(St::Let(t));
                            count = t;
                            arg_lin = l.clone();
                        }
                        _ => {
                            count = self.sym(String::new(), Kind::inline_log(self.n(), base, true));
                            arg_lin = Lin::atom(Atom::S(self.n));
                        }
                    }
                } else {
                    let (e, _) = self.positive_extent();
                    let le = self.lin(&e).expect("affine extent");
                    count = self.sym(String::new(), Kind::inline_log(e, base, true));
                    arg_lin = le;
                }
                form = 0;
                let l = LoopSym::level(count, base, arg_lin);
                (l.lo, l.hi, l.step, l.lo_b, l.hi_b, l.pow)
            }
            _ => {
                // range(lo, E, b ** (level + 1)) or b ** level
                form = 2;
                let lv = self.ch.pick(&levels).expect("levels");
                let base = self.base_of(lv);
                let (e, eb) = self.extent();
                let step = match self.ch.below(3) {
                    0 => pow(base, add(Ex::Var(lv), Ex::Int(1))),
                    1 => pow(base, Ex::Var(lv)),
                    _ => {
                        let name = self.fresh_let_name();
                        let s = self.sym(
                            name,
                            Kind::Alias {
                                def: pow(base, Ex::Var(lv)),
                                global: false,
                            },
                        );
                        self.path.push(Item::Let(s));
                        pre.push(St::Let(s));
                        mul(base, Ex::Var(s))
                    }
                };
                match self.ch.pick(&vals) {
                    Some(u) if self.ch.chance(25) && u != lv => {
                        let lu = self.lin(&Ex::Var(u)).expect("affine value");
                        (Ex::Var(u), e, step, lu, eb, None)
                    }
                    _ => (Ex::Int(0), e, step, Lin::k(0), eb, None),
                }
            }
        };
        let width = self.width(&lo_b, &hi_b, &step);
        if self.est * width > PATH_LIMIT || self.total + self.est * width > PROGRAM_LIMIT {
            // Too large: undo the lets and emit nothing.
            for _ in 0..pre.len() {
                self.path.pop();
            }
            return Vec::new();
        }
        let l = LoopSym {
            lo,
            hi,
            step,
            lo_b,
            hi_b,
            pow: pw,
        };
        let v = self.push_loop(name, l);
        let saved = self.est;
        self.est *= width.max(1.0);
        let body = self.block(depth + 1);
        // The loop and the lets before it.
        self.leave_loops(1 + pre.len(), saved);
        pre.push(St::For { var: v, form, body });
        pre
    }

    fn gen_let(&mut self) -> Option<St> {
        let vals = self.values();
        let levels = self.level_vars();
        let u = self.ch.pick(&vals)?;
        let name = self.fresh_let_name();
        let kind = match self.ch.below(5) {
            0 => Kind::Alias {
                def: add(Ex::Var(u), Ex::Int(1)),
                global: false,
            },
            1 => Kind::Alias {
                def: mul(2, Ex::Var(u)),
                global: false,
            },
            2 => match self.ch.pick(&levels) {
                Some(lv) => Kind::Alias {
                    def: pow(self.base_of(lv), Ex::Var(lv)),
                    global: false,
                },
                None => Kind::Alias {
                    def: sub(self.n(), Ex::Var(u)),
                    global: false,
                },
            },
            3 => Kind::Alias {
                def: sub(self.n(), Ex::Var(u)),
                global: false,
            },
            _ => {
                let arg = add(Ex::Var(u), Ex::Int(1));
                let l = self.lin(&arg)?;
                if !self.nonneg(&l.plus(&Lin::k(1), -1)) {
                    return None;
                }
                Kind::let_log(arg, 2, false)
            }
        };
        let t = self.sym(name, kind);
        self.path.push(Item::Let(t));
        Some(St::Let(t))
    }

    fn gen_if(&mut self, depth: usize) -> Vec<St> {
        self.ifs += 1;
        let c = self.cond();
        self.path.push(Item::Guard(c.clone(), true));
        let then = self.block(depth);
        self.path.pop();
        let els = if self.ch.chance(55) {
            self.path.push(Item::Guard(c.clone(), false));
            let b = if self.ch.chance(30) && self.ifs < 6 {
                self.gen_if(depth)
            } else {
                self.block(depth)
            };
            self.path.pop();
            b
        } else {
            Vec::new()
        };
        vec![St::If { cond: c, then, els }]
    }

    /// A block at loop depth `depth` with at least one call.
    fn block(&mut self, depth: usize) -> Vec<St> {
        let count = if depth == 0 {
            1
        } else {
            self.ch.weighted(&[50, 35, 15]) + 1
        };
        let mark = self.path.len();
        let mut out = Vec::new();
        for _ in 0..count {
            let w = self.ch.weighted(&[
                40,
                if depth < 3 { 35 } else { 0 },
                if self.ifs < 6 { 15 } else { 0 },
                10,
            ]);
            match w {
                0 => out.extend(self.call_site(depth, 0)),
                1 => out.extend(self.gen_loop(depth)),
                2 => out.extend(self.gen_if(depth)),
                _ => out.extend(self.gen_let()),
            }
        }
        if !has_call(&out) {
            out.extend(self.call_site(depth, 0));
        }
        self.path.truncate(mark);
        out
    }

    // --- motifs -----------------------------------------------------------

    fn motif(&mut self) -> Vec<St> {
        match self.ch.below(6) {
            0 => self.motif_tree(),
            1 => self.motif_panel_tree(),
            2 => self.motif_butterfly(),
            3 => self.motif_wavefront(),
            4 => self.motif_triangle(),
            _ => self.motif_scan(),
        }
    }

    /// Leaves the `count` innermost loops, the size estimate back at `est`
    /// (what it was outside them).
    fn leave_loops(&mut self, count: usize, est: f64) {
        self.est = est;
        for _ in 0..count {
            self.path.pop();
        }
    }

    /// `for NAME in range(lo, hi)`, a fresh name.
    fn simple_loop(&mut self, lo: Ex, hi: Ex, lo_b: Lin, hi_b: Lin) -> usize {
        let name = self.fresh_loop_name(false);
        let step = Ex::Int(1);
        self.push_loop(name, LoopSym::unpowered(lo, hi, step, lo_b, hi_b))
    }

    /// `for LEVEL in range(ceil(log_b(e)))` (see [`Gen::level_count`]), a
    /// fresh level name; `bound` bounds `b ** LEVEL`.
    fn level_loop(&mut self, e: &Ex, base: i64, global: bool, bound: Lin) -> usize {
        let count = self.level_count(e, base, global);
        let name = self.fresh_loop_name(true);
        let l = LoopSym::level(count, base, bound);
        self.push_loop(name, l)
    }

    /// `for NAME in range(lo, hi, base ** (level + 1))` inside level loop
    /// `level`, a fresh name: the nodes of one level of a tree.
    fn level_nodes_loop(
        &mut self,
        lo: Ex,
        hi: Ex,
        base: i64,
        level: usize,
        lo_b: Lin,
        hi_b: Lin,
    ) -> usize {
        let name = self.fresh_loop_name(false);
        let step = pow(base, add(Ex::Var(level), Ex::Int(1)));
        self.push_loop(name, LoopSym::unpowered(lo, hi, step, lo_b, hi_b))
    }

    /// Level count `ceil(log_b(E))` as a symbol (the global `L` when it fits).
    fn level_count(&mut self, e: &Ex, base: i64, global: bool) -> usize {
        if base == 2 && *e == self.n() && global {
            if let Some(l) = self.global_l {
                return l;
            }
        }
        self.sym(String::new(), Kind::inline_log(e.clone(), base, global))
    }

    /// A reduction tree over `E` leaves, binary (`2 ** level`) or 4-ary.
    fn motif_tree(&mut self) -> Vec<St> {
        let base = if self.ch.chance(25) { 4 } else { 2 };
        let (e, eb) = self.positive_extent();
        let m = self.new_matrix(2, false);
        let mut out = vec![St::Comment(format!("reduction tree, base {base}"))];
        // leaves
        let owner = self.new_owner();
        let jv = self.simple_loop(Ex::Int(0), e.clone(), Lin::k(0), eb.clone());
        let saved = self.est;
        self.est *= self.width(&Lin::k(0), &eb, &Ex::Int(1));
        let w = self.fixed_write(m, vec![Ex::Int(0), Ex::Var(jv)], owner);
        let n = 1 + self.ch.below(2);
        let args = self.plain_args(owner, n);
        let leaf = self.call(vec![w], args);
        self.leave_loops(1, saved);
        out.push(for_st(jv, self.ch.below(2) as u8, vec![leaf]));
        // levels
        let lv = self.level_loop(&e, base, true, eb.clone());
        let jv = self.level_nodes_loop(Ex::Int(0), e.clone(), base, lv, Lin::k(0), eb.clone());
        let saved = self.est;
        self.est *= 3.0 * self.width(&Lin::k(0), &eb, &Ex::Int(1));
        let owner = self.new_owner();
        let w = self.fixed_write(m, vec![add(Ex::Var(lv), Ex::Int(1)), Ex::Var(jv)], owner);
        let s = pow(base, Ex::Var(lv));
        let child = |k: i64| -> Acc {
            Acc {
                matrix: m,
                idx: vec![Ex::Var(lv), add(Ex::Var(jv), mul(k, s.clone()))],
            }
        };
        let extra = if self.ch.chance(30) {
            self.plain_args(owner, 1)
        } else {
            Vec::new()
        };
        let mut arms: Vec<(Option<Co>, St)> = Vec::new();
        for k in (1..base).rev() {
            let c = cmp("<", add(Ex::Var(jv), mul(k, s.clone())), e.clone());
            let mut args: Vec<Arg> = (0..=k).map(|x| Arg::Tile(child(x))).collect();
            args.extend(extra.iter().cloned());
            let st = self.call(vec![w.clone()], args);
            arms.push((Some(c), st));
        }
        let mut args = vec![Arg::Tile(child(0))];
        args.extend(extra.iter().cloned());
        let last = self.call(vec![w.clone()], args);
        arms.push((None, last));
        let body = chain(arms);
        self.leave_loops(2, saved);
        out.push(nest2((lv, 0), (jv, 2), body));
        out
    }

    /// A tree per panel, as in CAQR: `for p { leaves; for level in
    /// range(ceil(log2(N - p))) { for i in range(p, N, 2 ** (level + 1)) } }`.
    fn motif_panel_tree(&mut self) -> Vec<St> {
        let n = self.n();
        let ln = Lin::atom(Atom::S(self.n));
        let m = self.new_matrix(3, false);
        let p = self.simple_loop(Ex::Int(0), n.clone(), Lin::k(0), ln.clone());
        let lp = Lin::atom(Atom::S(p));
        let saved0 = self.est;
        self.est *= 6.0;
        // leaves
        let owner = self.new_owner();
        let iv = self.simple_loop(Ex::Var(p), n.clone(), lp.clone(), ln.clone());
        let saved = self.est;
        self.est *= 6.0;
        let w = self.fixed_write(m, vec![Ex::Var(p), Ex::Int(0), Ex::Var(iv)], owner);
        let args = self.plain_args(owner, 1);
        let leaf = self.call(vec![w], args);
        self.leave_loops(1, saved);
        let leaves = for_st(iv, 1, vec![leaf]);
        // levels
        let arg = sub(n.clone(), Ex::Var(p));
        let lv = self.level_loop(&arg, 2, false, ln.plus(&lp, -1));
        let iv = self.level_nodes_loop(Ex::Var(p), n.clone(), 2, lv, lp.clone(), ln.clone());
        self.est *= 8.0;
        let owner = self.new_owner();
        let w = self.fixed_write(
            m,
            vec![Ex::Var(p), add(Ex::Var(lv), Ex::Int(1)), Ex::Var(iv)],
            owner,
        );
        let s = pow(2, Ex::Var(lv));
        let at = |k: i64| Acc {
            matrix: m,
            idx: vec![Ex::Var(p), Ex::Var(lv), add(Ex::Var(iv), mul(k, s.clone()))],
        };
        let pair = self.call(vec![w.clone()], vec![Arg::Tile(at(0)), Arg::Tile(at(1))]);
        let single = self.call(vec![w], vec![Arg::Tile(at(0))]);
        self.leave_loops(3, saved0);
        vec![
            St::Comment("a tree per panel".into()),
            for_st(
                p,
                0,
                vec![
                    leaves,
                    nest2(
                        (lv, 0),
                        (iv, 2),
                        vec![if_else(cmp("<", add(Ex::Var(iv), s), n), pair, single)],
                    ),
                ],
            ),
        ]
    }

    /// A butterfly: every level pairs `j` with `j ± 2 ** level`.
    fn motif_butterfly(&mut self) -> Vec<St> {
        let (e, eb) = self.positive_extent();
        let m = self.new_matrix(2, false);
        let owner = self.new_owner();
        let jv = self.simple_loop(Ex::Int(0), e.clone(), Lin::k(0), eb.clone());
        let saved = self.est;
        self.est *= self.width(&Lin::k(0), &eb, &Ex::Int(1));
        let w = self.fixed_write(m, vec![Ex::Int(0), Ex::Var(jv)], owner);
        let args = self.plain_args(owner, 1);
        let leaf = self.call(vec![w], args);
        self.path.pop();
        let first = for_st(jv, 0, vec![leaf]);
        let lv = self.level_loop(&e, 2, true, eb.clone());
        let jv2 = self.simple_loop(Ex::Int(0), e.clone(), Lin::k(0), eb.clone());
        self.est *= 3.0;
        let owner = self.new_owner();
        let (l, x) = (Ex::Var(lv), Ex::Var(jv2));
        let w = self.fixed_write(m, vec![add(l.clone(), Ex::Int(1)), x.clone()], owner);
        let s = pow(2, l.clone());
        let at = |i: Ex| Acc {
            matrix: m,
            idx: vec![l.clone(), i],
        };
        let bit = Ex::Mod(
            bx(Ex::FloorDiv(bx(x.clone()), bx(s.clone()))),
            bx(Ex::Int(2)),
        );
        let c0 = and(
            cmp("==", bit.clone(), Ex::Int(0)),
            cmp("<", add(x.clone(), s.clone()), e.clone()),
        );
        let c1 = cmp("==", bit, Ex::Int(1));
        let a0 = self.call(
            vec![w.clone()],
            vec![
                Arg::Tile(at(x.clone())),
                Arg::Tile(at(add(x.clone(), s.clone()))),
            ],
        );
        let a1 = self.call(
            vec![w.clone()],
            vec![
                Arg::Tile(at(sub(x.clone(), s.clone()))),
                Arg::Tile(at(x.clone())),
            ],
        );
        let a2 = self.call(vec![w], vec![Arg::Tile(at(x.clone()))]);
        self.leave_loops(2, saved);
        vec![
            St::Comment("butterfly".into()),
            first,
            nest2(
                (lv, 0),
                (jv2, 0),
                chain(vec![(Some(c0), a0), (Some(c1), a1), (None, a2)]),
            ),
        ]
    }

    /// A 2-D wavefront: `W[i, j]` from `W[i - 1, j]`, `W[i, j - 1]`,
    /// `W[i - 1, j - 1]`.
    fn motif_wavefront(&mut self) -> Vec<St> {
        let (e1, b1) = self.positive_extent();
        let (e2, b2) = self.positive_extent();
        let m = self.new_matrix(2, false);
        let iv = self.simple_loop(Ex::Int(0), e1, Lin::k(0), b1.clone());
        let jv = self.simple_loop(Ex::Int(0), e2, Lin::k(0), b2.clone());
        let saved = self.est;
        self.est *=
            self.width(&Lin::k(0), &b1, &Ex::Int(1)) * self.width(&Lin::k(0), &b2, &Ex::Int(1));
        let owner = self.new_owner();
        let (i, j) = (Ex::Var(iv), Ex::Var(jv));
        let w = self.fixed_write(m, vec![i.clone(), j.clone()], owner);
        let at = |a: Ex, b: Ex| {
            Arg::Tile(Acc {
                matrix: m,
                idx: vec![a, b],
            })
        };
        let im = sub(i.clone(), Ex::Int(1));
        let jm = sub(j.clone(), Ex::Int(1));
        let first_args = self.plain_args(owner, 1);
        let s0 = self.call(vec![w.clone()], first_args);
        let s1 = self.call(vec![w.clone()], vec![at(i.clone(), jm.clone())]);
        let s2 = self.call(vec![w.clone()], vec![at(im.clone(), j.clone())]);
        let s3 = self.call(
            vec![w],
            vec![
                at(im.clone(), j.clone()),
                at(i.clone(), jm.clone()),
                at(im, jm),
            ],
        );
        self.leave_loops(2, saved);
        let z = |x: &Ex| cmp("==", x.clone(), Ex::Int(0));
        vec![
            St::Comment("wavefront".into()),
            nest2(
                (iv, 0),
                (jv, 1),
                chain(vec![
                    (Some(and(z(&i), z(&j))), s0),
                    (Some(z(&i)), s1),
                    (Some(z(&j)), s2),
                    (None, s3),
                ]),
            ),
        ]
    }

    /// A triangular sweep: `T[k, i]` for `i >= k` from `T[k - 1, i]` and
    /// `T[k - 1, k - 1]`.
    fn motif_triangle(&mut self) -> Vec<St> {
        let (e, eb) = self.positive_extent();
        let m = self.new_matrix(2, false);
        let kv = self.simple_loop(Ex::Int(0), e.clone(), Lin::k(0), eb.clone());
        let lk = Lin::atom(Atom::S(kv));
        let iv = self.simple_loop(Ex::Var(kv), e, lk, eb.clone());
        let saved = self.est;
        let wd = self.width(&Lin::k(0), &eb, &Ex::Int(1));
        self.est *= wd * wd;
        let owner = self.new_owner();
        let (k, i) = (Ex::Var(kv), Ex::Var(iv));
        let w = self.fixed_write(m, vec![k.clone(), i.clone()], owner);
        let km = sub(k.clone(), Ex::Int(1));
        let first_args = self.plain_args(owner, 1);
        let s0 = self.call(vec![w.clone()], first_args);
        let s1 = self.call(
            vec![w],
            vec![
                Arg::Tile(Acc {
                    matrix: m,
                    idx: vec![km.clone(), i.clone()],
                }),
                Arg::Tile(Acc {
                    matrix: m,
                    idx: vec![km.clone(), km],
                }),
            ],
        );
        self.leave_loops(2, saved);
        vec![
            St::Comment("triangular sweep".into()),
            nest2(
                (kv, 0),
                (iv, 1),
                vec![if_else(cmp("==", k, Ex::Int(0)), s0, s1)],
            ),
        ]
    }

    /// A scan: `S[i]` from `S[i - d]`.
    fn motif_scan(&mut self) -> Vec<St> {
        let (e, eb) = self.positive_extent();
        let d = 1 + self.ch.below(2) as i64;
        let m = self.new_matrix(1, false);
        let iv = self.simple_loop(Ex::Int(0), e, Lin::k(0), eb.clone());
        let saved = self.est;
        self.est *= self.width(&Lin::k(0), &eb, &Ex::Int(1));
        let owner = self.new_owner();
        let i = Ex::Var(iv);
        let w = self.fixed_write(m, vec![i.clone()], owner);
        let first_args = self.plain_args(owner, 1);
        let s0 = self.call(vec![w.clone()], first_args);
        let mut args = vec![Arg::Tile(Acc {
            matrix: m,
            idx: vec![sub(i.clone(), Ex::Int(d))],
        })];
        args.extend(self.plain_args(owner, 1));
        let s1 = self.call(vec![w], args);
        self.leave_loops(1, saved);
        vec![
            St::Comment("scan".into()),
            for_st(iv, 0, vec![if_else(cmp("<", i, Ex::Int(d)), s0, s1)]),
        ]
    }

    // --- program ----------------------------------------------------------

    /// A program-level `let NAME = ...` appended to `body`, in scope from
    /// there on.
    fn global_let(&mut self, name: &str, kind: Kind, body: &mut Vec<St>) -> usize {
        let v = self.sym(name.into(), kind);
        self.globals.push(v);
        self.path.push(Item::Let(v));
        body.push(St::Let(v));
        v
    }

    fn program(&mut self) -> Vec<St> {
        let mut body = Vec::new();
        // Program-level lets.
        if self.ch.chance(45) {
            let log = Kind::let_log(self.n(), 2, true);
            let l = self.global_let("L", log, &mut body);
            self.global_l = Some(l);
        }
        if self.ch.chance(20) {
            let alias = Kind::Alias {
                def: add(self.n(), Ex::Int(1)),
                global: true,
            };
            self.global_let("K", alias, &mut body);
        }
        if self.ch.chance(10) {
            let log = Kind::let_log(self.n(), 4, true);
            self.global_let("Q", log, &mut body);
        }
        let nests = 1 + self.ch.weighted(&[10, 25, 30, 20, 15]);
        for k in 0..nests {
            self.nest = k;
            if self.total >= PROGRAM_LIMIT {
                break;
            }
            let item = match self.ch.weighted(&[62, 22, 8, 8]) {
                0 => {
                    let l = self.gen_loop(0);
                    if l.is_empty() {
                        self.call_site(0, 0)
                    } else {
                        l
                    }
                }
                1 => self.motif(),
                2 => self.gen_if(0),
                _ => self.call_site(0, 0),
            };
            body.extend(item);
        }
        if !has_call(&body) {
            body.extend(self.call_site(0, 0));
        }
        body
    }

    // --- rendering --------------------------------------------------------

    fn ex(&self, e: &Ex, expand: bool) -> (String, u8) {
        let at = |x: &Ex, p: u8| {
            let (s, q) = self.ex(x, expand);
            if q < p {
                format!("({s})")
            } else {
                s
            }
        };
        match e {
            Ex::Int(v) if *v < 0 => (format!("-{}", -v), 7),
            Ex::Int(v) => (v.to_string(), 9),
            Ex::Real(s) => (s.to_string(), 9),
            Ex::Var(s) => {
                let sym = &self.syms[*s];
                match &sym.kind {
                    Kind::Log {
                        arg,
                        base,
                        inline,
                        global,
                        ..
                    } if *inline || (expand && *global) => {
                        self.ex(&Ex::CeilLog(bx(arg.clone()), *base), expand)
                    }
                    Kind::Alias { def, global: true } if expand => self.ex(def, expand),
                    _ => (sym.name.clone(), 9),
                }
            }
            Ex::Add(a, b) => (format!("{} + {}", at(a, 5), at(b, 6)), 5),
            Ex::Sub(a, b) => (format!("{} - {}", at(a, 5), at(b, 6)), 5),
            Ex::Mul(a, b) => (format!("{} * {}", at(a, 6), at(b, 8)), 6),
            Ex::Div(a, b) => (format!("{} / {}", at(a, 6), at(b, 8)), 6),
            Ex::FloorDiv(a, b) => (format!("{} // {}", at(a, 6), at(b, 8)), 6),
            Ex::Mod(a, b) => (format!("{} % {}", at(a, 6), at(b, 8)), 6),
            Ex::Neg(a) => (format!("-{}", at(a, 8)), 7),
            Ex::Pow(a, b) => (format!("{} ** {}", at(a, 9), at(b, 8)), 8),
            Ex::Min(xs) | Ex::Max(xs) => {
                let f = if matches!(e, Ex::Min(_)) {
                    "min"
                } else {
                    "max"
                };
                let args: Vec<String> = xs.iter().map(|x| at(x, 0)).collect();
                (format!("{f}({})", args.join(", ")), 9)
            }
            Ex::CeilLog(a, 2) => (format!("ceil(log2({}))", at(a, 0)), 9),
            Ex::CeilLog(a, b) => (format!("ceil(log({}) / log({b}))", at(a, 0)), 9),
            Ex::Log2(a) => (format!("log2({})", at(a, 0)), 9),
        }
    }

    fn exs(&self, e: &Ex) -> String {
        self.ex(e, false).0
    }

    fn co(&self, c: &Co) -> (String, u8) {
        let at = |x: &Co, p: u8| {
            let (s, q) = self.co(x);
            if q < p {
                format!("({s})")
            } else {
                s
            }
        };
        match c {
            Co::Bool(b) => (b.to_string(), 9),
            Co::Or(a, b) => (format!("{} or {}", at(a, 1), at(b, 2)), 1),
            Co::And(a, b) => (format!("{} and {}", at(a, 2), at(b, 3)), 2),
            Co::Not(a) => (format!("not {}", at(a, 3)), 3),
            Co::Cmp(o, a, b) => (format!("{} {o} {}", self.exs(a), self.exs(b)), 4),
        }
    }

    fn acc(&self, a: &Acc) -> String {
        let idx: Vec<String> = a.idx.iter().map(|e| self.exs(e)).collect();
        format!("{}[{}]", self.matrices[a.matrix].name, idx.join(", "))
    }

    fn render_block(&self, out: &mut String, body: &[St], ind: usize) {
        for s in body {
            out.push_str(&"    ".repeat(ind));
            self.render_st(out, s, ind);
        }
    }

    fn render_st(&self, out: &mut String, s: &St, ind: usize) {
        let pad = "    ".repeat(ind);
        match s {
            St::Comment(c) => out.push_str(&format!("# {c}\n")),
            St::Let(t) => {
                let def = match &self.syms[*t].kind {
                    Kind::Log { arg, base, .. } => self.exs(&Ex::CeilLog(bx(arg.clone()), *base)),
                    Kind::Alias { def, .. } => self.exs(def),
                    _ => String::new(),
                };
                out.push_str(&format!("let {} = {def};\n", self.syms[*t].name));
            }
            St::Call { kernel, outs, args } => {
                let o: Vec<String> = outs.iter().map(|a| self.acc(a)).collect();
                let a: Vec<String> = args
                    .iter()
                    .map(|a| match a {
                        Arg::Tile(t) => self.acc(t),
                        Arg::Scalar(e) => self.exs(e),
                    })
                    .collect();
                out.push_str(&format!("{} = {kernel}({});\n", o.join(", "), a.join(", ")));
            }
            St::For { var, form, body } => {
                let Kind::Loop(LoopSym { lo, hi, step, .. }) = &self.syms[*var].kind else {
                    return;
                };
                let range = if *step != Ex::Int(1) || *form == 2 {
                    format!("{}, {}, {}", self.exs(lo), self.exs(hi), self.exs(step))
                } else if *lo != Ex::Int(0) || *form == 1 {
                    format!("{}, {}", self.exs(lo), self.exs(hi))
                } else {
                    self.exs(hi)
                };
                out.push_str(&format!(
                    "for {} in range({range}) {{\n",
                    self.syms[*var].name
                ));
                self.render_block(out, body, ind + 1);
                out.push_str(&format!("{pad}}}\n"));
            }
            St::If { cond, then, els } => {
                out.push_str(&format!("if {} {{\n", self.co(cond).0));
                self.render_block(out, then, ind + 1);
                out.push_str(&pad);
                out.push('}');
                match els.as_slice() {
                    [] => out.push('\n'),
                    [one @ St::If { .. }] => {
                        out.push_str(" else ");
                        self.render_st(out, one, ind);
                    }
                    _ => {
                        out.push_str(" else {\n");
                        self.render_block(out, els, ind + 1);
                        out.push_str(&format!("{pad}}}\n"));
                    }
                }
            }
        }
    }

    fn render(&self, body: &[St], default: bool, kernels_last: bool) -> String {
        let mut out = String::from("# generated by lpk_test_support::gen\n");
        let kernels: String = self.kernels.values().map(|k| format!("{k}\n")).collect();
        if !kernels_last {
            out.push_str(&kernels);
        }
        let params = match self.m {
            Some(_) => "N: int, M: int".to_string(),
            None if default => "N: int = 4".to_string(),
            None => "N: int".to_string(),
        };
        out.push_str(&format!("program gen({params}) {{\n"));
        out.push_str("    require N >= 1;\n");
        if self.m.is_some() {
            out.push_str("    require M >= 1;\n");
        }
        for m in &self.matrices {
            let ext: Vec<String> = m
                .ext
                .iter()
                .map(|l| self.ex(&self.lin_ex(l), true).0)
                .collect();
            out.push_str(&format!("    {} {}[{}];\n", m.role, m.name, ext.join(", ")));
        }
        self.render_block(&mut out, body, 1);
        out.push_str("}\n");
        if kernels_last {
            out.push_str(&kernels);
        }
        out
    }
}

/// `for OUTER { for INNER { body } }`, each loop given as its variable
/// and its form.
fn nest2(outer: (usize, u8), inner: (usize, u8), body: Vec<St>) -> St {
    for_st(outer.0, outer.1, vec![for_st(inner.0, inner.1, body)])
}

/// `for var in ...` (the loop `form` of `var`) `{ body }`.
fn for_st(var: usize, form: u8, body: Vec<St>) -> St {
    St::For { var, form, body }
}

/// `if cond { then } else { els }`.
fn if_else(cond: Co, then: St, els: St) -> St {
    St::If {
        cond,
        then: vec![then],
        els: vec![els],
    }
}

/// `if c0 { s0 } else if c1 { s1 } ... else { last }`.
fn chain(mut arms: Vec<(Option<Co>, St)>) -> Vec<St> {
    let (c, s) = arms.remove(0);
    match c {
        None => vec![s],
        Some(c) => vec![St::If {
            cond: c,
            then: vec![s],
            els: if arms.is_empty() {
                Vec::new()
            } else {
                chain(arms)
            },
        }],
    }
}

fn ceil_log(x: i64, base: i64) -> i64 {
    let mut k = 0;
    let mut p = 1i64;
    while p < x {
        p *= base;
        k += 1;
    }
    k
}

/// Generates a program from a choice list.
pub fn generate(data: Vec<u32>, two_params: bool) -> String {
    let mut ch = Choices { data, pos: 0 };
    let mut g = Gen::new(&mut ch, two_params);
    let body = g.program();
    let default = g.ch.chance(20);
    let last = g.ch.chance(20);
    g.render(&body, default, last)
}

/// A small deterministic generator (xorshift) that draws the choice lists
/// of a corpus from one seed, so that a corpus is fixed by its seed.
pub struct Xorshift(u64);

impl Xorshift {
    /// Starts from `seed` (0, where xorshift would stay, is taken as 1).
    pub fn new(seed: u64) -> Xorshift {
        Xorshift(seed.max(1))
    }

    /// The next draw.
    pub fn next_u32(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }

    /// A draw in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.next_u32() as usize % n
        }
    }

    /// A choice list for [`generate`]: 16 to 599 draws.
    pub fn choices(&mut self) -> Vec<u32> {
        let len = 16 + self.below(584);
        (0..len).map(|_| self.next_u32()).collect()
    }
}
