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
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(n, t)| match t {
                None => (*n).to_string(),
                Some(ScalarKind::Int) => format!("{n}: int"),
                Some(ScalarKind::Real) => format!("{n}: real"),
            })
            .collect();
        format!(
            "kernel {}({}) -> ({});",
            self.name,
            params.join(", "),
            self.results.join(", ")
        )
    }
}

const T: Option<ScalarKind> = None;

/// Every standard kernel, in the order of `docs/kernels.md`.
pub const STANDARD: &[Signature] = &[
    Signature {
        name: "copy",
        params: &[("a", T)],
        results: &["b"],
    },
    Signature {
        name: "add",
        params: &[("a", T), ("b", T)],
        results: &["c"],
    },
    Signature {
        name: "add4",
        params: &[("a", T), ("b", T), ("c", T), ("d", T)],
        results: &["e"],
    },
    Signature {
        name: "scale",
        params: &[("a", T), ("alpha", Some(ScalarKind::Real))],
        results: &["b"],
    },
    Signature {
        name: "gemm",
        params: &[("a", T), ("b", T)],
        results: &["c"],
    },
    Signature {
        name: "gemm_acc",
        params: &[("c", T), ("a", T), ("b", T)],
        results: &["d"],
    },
    Signature {
        name: "gemm_sub",
        params: &[("c", T), ("a", T), ("b", T)],
        results: &["d"],
    },
    Signature {
        name: "chol",
        params: &[("a", T)],
        results: &["l"],
    },
    Signature {
        name: "trsm",
        params: &[("l", T), ("b", T)],
        results: &["x"],
    },
    Signature {
        name: "syrk",
        params: &[("c", T), ("a", T), ("b", T)],
        results: &["d"],
    },
    Signature {
        name: "lu",
        params: &[("a", T)],
        results: &["l", "u"],
    },
    Signature {
        name: "trsm_ll",
        params: &[("l", T), ("b", T)],
        results: &["x"],
    },
    Signature {
        name: "trsm_ru",
        params: &[("u", T), ("b", T)],
        results: &["x"],
    },
    // The pivoted tile LU (incremental pivoting) and the left solves.
    Signature {
        name: "getrf",
        params: &[("a", T)],
        results: &["l", "u", "p"],
    },
    Signature {
        name: "gessm",
        params: &[("p", T), ("l", T), ("a", T)],
        results: &["b"],
    },
    Signature {
        name: "tstrf",
        params: &[("u", T), ("a", T)],
        results: &["u2", "l", "p"],
    },
    Signature {
        name: "ssssm",
        params: &[("l", T), ("p", T), ("c0", T), ("c1", T)],
        results: &["d0", "d1"],
    },
    Signature {
        name: "trsm_lu",
        params: &[("u", T), ("b", T)],
        results: &["x"],
    },
    Signature {
        name: "trsm_ln",
        params: &[("l", T), ("b", T)],
        results: &["x"],
    },
    Signature {
        name: "trsm_lt",
        params: &[("l", T), ("b", T)],
        results: &["x"],
    },
    Signature {
        name: "gemm_sub_t",
        params: &[("c", T), ("a", T), ("b", T)],
        results: &["d"],
    },
    Signature {
        name: "qr_factor",
        params: &[("a", T)],
        results: &["v", "t", "r"],
    },
    Signature {
        name: "qr_pair",
        params: &[("r0", T), ("r1", T)],
        results: &["v", "t", "r"],
    },
    Signature {
        name: "qr_apply",
        params: &[("v", T), ("t", T), ("c", T)],
        results: &["d"],
    },
    Signature {
        name: "qr_apply_pair",
        params: &[("v", T), ("t", T), ("c0", T), ("c1", T)],
        results: &["d0", "d1"],
    },
    Signature {
        name: "trtri",
        params: &[("l", T)],
        results: &["x"],
    },
];

/// Looks a standard kernel up by name.
pub fn standard(name: &str) -> Option<&'static Signature> {
    STANDARD.iter().find(|s| s.name == name)
}
