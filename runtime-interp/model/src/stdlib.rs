//! The standard tile kernels' signatures (`docs/kernels.md`): the contract a
//! program's declaration of a standard kernel must match, shared by the
//! compiler's checks and the runtime's kernel registry.

/// A scalar parameter's type in a kernel signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarKind {
    /// `int`
    Int,
    /// `real`
    Real,
}

/// A standard kernel's signature.
#[derive(Clone, Copy, Debug)]
pub struct Signature {
    /// The kernel's name.
    pub name: &'static str,
    /// Parameter names with their scalar type (`None` for a tile).
    pub params: &'static [(&'static str, Option<ScalarKind>)],
    /// Result names.
    pub results: &'static [&'static str],
}

impl Signature {
    /// The declaration a program writes for this kernel.
    pub fn declaration(&self) -> String {
        let params = self.params.iter().copied();
        format!("{};", declaration_text(self.name, params, self.results))
    }
}

/// `kernel NAME(a, alpha: real) -> (b)`, without the `;`, from the
/// parameters (each with its scalar type, `None` for a tile) and the
/// results: the text of a [`Signature`] and of a program's kernel alike.
pub(crate) fn declaration_text<'a>(
    name: &str,
    params: impl Iterator<Item = (&'a str, Option<ScalarKind>)>,
    results: &[impl AsRef<str>],
) -> String {
    let params: Vec<String> = params
        .map(|(n, t)| match t {
            None => n.to_string(),
            Some(ScalarKind::Int) => format!("{n}: int"),
            Some(ScalarKind::Real) => format!("{n}: real"),
        })
        .collect();
    let results: Vec<&str> = results.iter().map(AsRef::as_ref).collect();
    format!(
        "kernel {name}({}) -> ({})",
        params.join(", "),
        results.join(", ")
    )
}

const T: Option<ScalarKind> = None;

/// The parameters of `qr_apply_pair` and `lq_apply_pair`: a factor (v, t)
/// and the two tiles it is applied to.
const APPLY_PAIR: &[(&str, Option<ScalarKind>)] = &[("v", T), ("t", T), ("c0", T), ("c1", T)];

/// The signature of kernel `name`, one line of [`STANDARD`].
const fn sig(
    name: &'static str,
    params: &'static [(&'static str, Option<ScalarKind>)],
    results: &'static [&'static str],
) -> Signature {
    Signature {
        name,
        params,
        results,
    }
}

/// Every standard kernel, in the order of `docs/kernels.md`.
pub const STANDARD: &[Signature] = &[
    sig("copy", &[("a", T)], &["b"]),
    sig("add", &[("a", T), ("b", T)], &["c"]),
    sig("add4", &[("a", T), ("b", T), ("c", T), ("d", T)], &["e"]),
    sig(
        "scale",
        &[("a", T), ("alpha", Some(ScalarKind::Real))],
        &["b"],
    ),
    sig("gemm", &[("a", T), ("b", T)], &["c"]),
    sig("gemm_acc", &[("c", T), ("a", T), ("b", T)], &["d"]),
    sig("gemm_sub", &[("c", T), ("a", T), ("b", T)], &["d"]),
    sig("chol", &[("a", T)], &["l"]),
    sig("trsm", &[("l", T), ("b", T)], &["x"]),
    sig("syrk", &[("c", T), ("a", T), ("b", T)], &["d"]),
    sig("lu", &[("a", T)], &["l", "u"]),
    sig("trsm_ll", &[("l", T), ("b", T)], &["x"]),
    sig("trsm_ru", &[("u", T), ("b", T)], &["x"]),
    // The pivoted tile LU (incremental pivoting) and the left solves.
    sig("getrf", &[("a", T)], &["l", "u", "p"]),
    sig("gessm", &[("p", T), ("l", T), ("a", T)], &["b"]),
    sig("tstrf", &[("u", T), ("a", T)], &["u2", "l", "p"]),
    sig(
        "ssssm",
        &[("l", T), ("p", T), ("c0", T), ("c1", T)],
        &["d0", "d1"],
    ),
    sig("trsm_lu", &[("u", T), ("b", T)], &["x"]),
    sig("trsm_ln", &[("l", T), ("b", T)], &["x"]),
    sig("trsm_lt", &[("l", T), ("b", T)], &["x"]),
    sig("gemm_sub_t", &[("c", T), ("a", T), ("b", T)], &["d"]),
    sig("qr_factor", &[("a", T)], &["v", "t", "r"]),
    sig("qr_pair", &[("r0", T), ("r1", T)], &["v", "t", "r"]),
    sig("qr_apply", &[("v", T), ("t", T), ("c", T)], &["d"]),
    sig("qr_apply_pair", APPLY_PAIR, &["d0", "d1"]),
    sig("lq_factor", &[("a", T)], &["v", "t", "l"]),
    sig("lq_pair", &[("l0", T), ("l1", T)], &["v", "t", "l"]),
    sig("lq_apply", &[("v", T), ("t", T), ("c", T)], &["d"]),
    sig("lq_apply_pair", APPLY_PAIR, &["d0", "d1"]),
    sig("trtri", &[("l", T)], &["x"]),
];

/// Looks a standard kernel up by name.
pub fn standard(name: &str) -> Option<&'static Signature> {
    STANDARD.iter().find(|s| s.name == name)
}
