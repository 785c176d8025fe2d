//! The registry of diagnostic codes: one table mapping each stable code to
//! its one-line summary and its documentation page `docs/errors/CODE.md`,
//! which `lpkc explain CODE` prints. Codes are never reused; a retired code
//! stays in the table marked retired.
//!
//! [`Code`] is the typed code every [`crate::diag::Diagnostic`] carries: the
//! enum and the table come from one list below, so a code that is not in
//! the registry (or has no page) does not compile. It prints as its text,
//! `E0101`.

/// One diagnostic code's entry in the registry.
#[derive(Clone, Copy, Debug)]
pub struct CodeInfo {
    /// The code's text, e.g. `E0101`.
    pub code: &'static str,
    /// The typed code.
    pub id: Code,
    /// One line on what it means.
    pub summary: &'static str,
    /// The documentation page (Markdown): a paragraph, a wrong and a right
    /// example.
    pub doc: &'static str,
}

macro_rules! codes {
    ($($code:ident => $summary:literal,)*) => {
        /// A stable diagnostic code (E00xx parse, E01xx resolve, E02xx
        /// types, E03xx lower/solve, E04xx artifacts, E05xx/W05xx lint, E06xx
        /// a command's own failures: instances, usage, runs).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $(
                #[doc = $summary]
                $code,
            )*
        }

        /// Every code, in order.
        pub const CODES: &[CodeInfo] = &[
            $(CodeInfo {
                code: stringify!($code),
                id: Code::$code,
                summary: $summary,
                doc: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/errors/", stringify!($code), ".md")),
            },)*
        ];

        impl Code {
            /// The code's text, e.g. `E0101`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$code => stringify!($code),)*
                }
            }

            /// Its registry entry (summary and documentation page).
            pub fn info(self) -> &'static CodeInfo {
                match self {
                    $(Code::$code => &CodeInfo {
                        code: stringify!($code),
                        id: Code::$code,
                        summary: $summary,
                        doc: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/errors/", stringify!($code), ".md")),
                    },)*
                }
            }
        }
    };
}

codes! {
    E0001 => "unknown character",
    E0002 => "unexpected token",
    E0003 => "unexpected end of file",
    E0004 => "integer literal too large",
    E0005 => "brackets nested too deeply",
    E0006 => "statement too complex",
    E0007 => "chained comparison",
    E0008 => "source file too large",
    E0101 => "undefined name",
    E0102 => "undeclared kernel",
    E0103 => "undefined matrix",
    E0104 => "kernel declared twice",
    E0105 => "program declared twice",
    E0106 => "name already defined (no shadowing)",
    E0107 => "duplicate kernel parameter or result",
    E0108 => "`require` after the first statement",
    E0109 => "matrix declaration after the first statement",
    E0110 => "unknown function",
    E0111 => "`range` with the wrong number of arguments",
    E0112 => "built-in function with the wrong number of arguments",
    E0113 => "matrix used as a value",
    E0114 => "indexing something that is not a matrix",
    E0115 => "parameter default is not an integer literal",
    E0116 => "program parameter is not `int`",
    E0117 => "kernel call with the wrong number of arguments",
    E0118 => "kernel call with the wrong number of results",
    E0119 => "scalar expression where a tile is expected",
    E0120 => "tile reference where a number is expected",
    E0121 => "wrong number of indices for a matrix",
    E0122 => "`= 0` on an `input` or `output` declaration",
    E0123 => "matrix initialiser other than `0`",
    E0201 => "`real` where an `int` is required",
    E0202 => "condition is not `bool`",
    E0203 => "`bool` where a number is required",
    E0204 => "invalid comparison",
    E0205 => "loop step is not positive",
    E0206 => "negative matrix extent",
    E0207 => "standard kernel declared with a different signature",
    E0208 => "expression too large once `let`s are substituted",
    W0201 => "kernel named one letter away from a standard kernel",
    E0401 => "not an artifact (bad magic bytes)",
    E0402 => "unsupported artifact format version",
    E0403 => "truncated artifact",
    E0404 => "artifact length mismatch",
    E0405 => "artifact payload too large",
    E0406 => "artifact checksum mismatch",
    E0407 => "artifact payload does not decode",
    E0408 => "invalid artifact",
    E0409 => "artifact cannot be encoded",
    E0501 => "two tasks write one tile (single assignment)",
    E0502 => "write to an `input` matrix",
    E0503 => "read of a tile that no task writes",
    E0504 => "read of a tile before the task that writes it",
    E0505 => "tile index outside the declared extents",
    E0506 => "no parameter value satisfies the `require`s",
    W0501 => "dead write: tiles written but never read, not an output",
    W0502 => "statement that runs for no parameter value",
    W0503 => "unused kernel",
    W0504 => "unused matrix",
    W0505 => "unused parameter",
    W0506 => "unused loop variable",
    W0507 => "unused `let`",
    W0508 => "output that is never written",
    W0509 => "two kernel calls on one line",
    E0601 => "parameters that make no valid instance",
    E0602 => "usage error",
    E0603 => "the command failed on this input",
}

impl Code {
    /// The code with this text (case-insensitive).
    pub fn parse(text: &str) -> Option<Code> {
        lookup(text).map(|info| info.id)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl From<&lpk_model::artifact::ArtifactError> for Code {
    /// The code of an artifact error (the model crate names its codes as
    /// text, since it knows nothing of this registry; the match keeps the
    /// two in step).
    fn from(e: &lpk_model::artifact::ArtifactError) -> Code {
        use lpk_model::artifact::ArtifactError as A;
        match e {
            A::BadMagic => Code::E0401,
            A::UnsupportedVersion { .. } => Code::E0402,
            A::Truncated { .. } => Code::E0403,
            A::LengthMismatch { .. } => Code::E0404,
            A::TooLarge { .. } => Code::E0405,
            A::Checksum { .. } => Code::E0406,
            A::Decode(_) => Code::E0407,
            A::Invalid(_) => Code::E0408,
            A::Encode(_) => Code::E0409,
        }
    }
}

/// Looks a code up (case-insensitive).
pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
    CODES.iter().find(|c| c.code.eq_ignore_ascii_case(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table and the enum agree, and the model's text codes of artifact
    /// errors name the same codes.
    #[test]
    fn the_table_and_the_enum_agree() {
        for info in CODES {
            assert_eq!(info.id.as_str(), info.code);
            assert_eq!(info.id.info().summary, info.summary);
            assert_eq!(Code::parse(&info.code.to_lowercase()), Some(info.id));
        }
        assert_eq!(Code::parse("E9999"), None);
        let e = lpk_model::artifact::ArtifactError::BadMagic;
        assert_eq!(Code::from(&e).as_str(), e.code());
    }
}
