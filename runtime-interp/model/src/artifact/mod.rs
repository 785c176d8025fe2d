//! The program artifact: one file holding a compiled [`Program`] that any
//! runtime can load and answer `children`/`parents` from, without a parser,
//! a solver or the source. This module owns the container (magic bytes,
//! format version, payload length, CRC-32), the CBOR payload and its JSON
//! twin, and the loader, which validates everything ([`validate`]) before
//! handing the program out. `docs/artifact.md` is the specification; this
//! code must do exactly what it says.
//!
//! A loaded artifact is safe to use: every id is in range, every expression
//! refers only to earlier nodes and is depth- and size-limited, every plan
//! reads a slot only after assigning it and enumerates only over one of its
//! statement's loops, and the loop tree agrees with the statements. A
//! hostile file is an [`ArtifactError`], never a panic or a hang.

pub mod validate;

use crate::program::{Program, ProgramParts};
use serde::{Deserialize, Serialize};
use validate::check;
pub use validate::{validate, Limits, ValidationError};

/// The eight magic bytes every CBOR artifact starts with: `LPKA`, then a NUL
/// (so text tools see a binary file), CR LF (so a newline conversion is
/// detected) and `0x1A`.
pub const MAGIC: [u8; 8] = *b"LPKA\0\r\n\x1a";

/// The major format version this code writes. Version 2 added zero
/// matrices (`zero` on a matrix), which change what a read of an unwritten
/// tile means, so a reader of version 1 must not load them.
pub const FORMAT_MAJOR: u16 = 2;

/// The oldest major format version this code reads. Readers reject any
/// major version outside `OLDEST_MAJOR..=FORMAT_MAJOR`. A version 1
/// artifact has no zero matrices: it loads with every `zero` flag false,
/// whatever its fields say, since a version 1 reader ignores the field.
pub const OLDEST_MAJOR: u16 = 1;

/// The minor format version this code writes. Readers accept any minor
/// version of a major version they read, ignoring fields they do not know.
/// Version 2.1 added the optional `lint` record.
pub const FORMAT_MINOR: u16 = 1;

/// Size of the container header in bytes: magic (8), major (2), minor (2),
/// payload length (4), CBOR length (4), CRC-32 (4).
pub const HEADER_LEN: usize = 24;

/// The largest payload, and the largest CBOR it may inflate to, that a
/// reader accepts, in bytes (16 MiB).
pub const MAX_PAYLOAD: u32 = 16 << 20;

/// The value of the JSON twin's `format` field.
pub(crate) const JSON_FORMAT: &str = "lpka";

/// A compiled program with what a runtime needs to report errors. An
/// `Artifact` holds a validated [`Program`]; an [`ArtifactParts`] (what
/// bytes decode to, or what a test changes) holds its unvalidated
/// [`ProgramParts`] until [`validate`] checks them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Artifact<P = Program> {
    /// The tool that wrote it, e.g. `lpkc 0.1.0`.
    pub compiler: String,
    /// Where the program came from.
    pub source: SourceInfo,
    /// The program, with its plans.
    pub program: P,
    /// What the writer's lint found (format 2.1; absent when the writer
    /// did not lint). A runtime does not lint a program that carries one
    /// again; it still checks while running what it can cheaply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lint: Option<LintRecord>,
}

/// An artifact as decoded, before [`validate`]: its program is
/// [`ProgramParts`].
pub type ArtifactParts = Artifact<ProgramParts>;

impl Artifact {
    /// Its parts, to change them; [`validate`] makes an artifact of them
    /// again.
    pub fn into_parts(self) -> ArtifactParts {
        Artifact {
            compiler: self.compiler,
            source: self.source,
            program: self.program.into_parts(),
            lint: self.lint,
        }
    }
}

/// The lint result an artifact carries: `lpkc compile` writes an artifact
/// only when lint found no error, and records how each rule stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LintRecord {
    /// One entry per error rule.
    pub rules: Vec<LintRule>,
}

/// How one rule stood when the artifact was written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LintRule {
    /// The rule's diagnostic code, e.g. `E0501`.
    pub code: String,
    /// `proved` (for every parameter value) or `checked` (for the values
    /// up to lint's bound).
    pub status: String,
}

/// The source map: the file and, per statement, where it stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceInfo {
    /// The source file's name as given to the compiler.
    pub file: String,
    /// One entry per statement of the program, in the same order.
    pub statements: Vec<SourceLocation>,
    /// The source text, when the compiler was asked to keep it.
    #[serde(default)]
    pub text: Option<String>,
}

/// Where a statement stands in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLocation {
    /// 1-based line of the statement's first token.
    pub line: u32,
    /// 1-based column (in characters) of that token.
    pub column: u32,
    /// Byte offsets `[start, end)` of the statement in the source text.
    pub span: (u32, u32),
}

impl SourceInfo {
    /// The source map of a program compiled from `file`: each statement's
    /// line, column and span.
    pub fn of_program(program: &Program, file: &str, text: Option<String>) -> SourceInfo {
        SourceInfo {
            file: file.to_string(),
            statements: program
                .statements
                .iter()
                .map(|s| SourceLocation {
                    line: s.line,
                    column: s.column,
                    span: s.span,
                })
                .collect(),
            text,
        }
    }
}

/// The fixed-size header of a CBOR artifact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Major format version.
    pub major: u16,
    /// Minor format version.
    pub minor: u16,
    /// Payload length in bytes (the zlib stream as stored).
    pub payload_len: u32,
    /// Length in bytes of the CBOR the payload inflates to.
    pub cbor_len: u32,
    /// CRC-32 (zlib polynomial) of the payload.
    pub crc32: u32,
}

/// How an artifact was encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// The binary container with a CBOR payload.
    Cbor,
    /// The JSON twin.
    Json,
}

/// A validated artifact and how it was stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// The artifact.
    pub artifact: Artifact,
    /// CBOR or JSON.
    pub encoding: Encoding,
    /// The format version it declares.
    pub major: u16,
    /// The minor version it declares (may be newer than [`FORMAT_MINOR`]).
    pub minor: u16,
    /// The container header (CBOR only).
    pub header: Option<Header>,
}

/// The JSON twin: the same data model, with the format and version that
/// the CBOR container keeps in its header.
#[derive(Serialize, Deserialize)]
struct JsonTwin<A> {
    format: String,
    version: (u16, u16),
    artifact: A,
}

/// Why an artifact could not be written or loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArtifactError {
    /// The file does not start with [`MAGIC`].
    #[error(
        "not an lpk artifact: the file does not start with the magic bytes `LPKA\\0\\r\\n\\x1a`"
    )]
    BadMagic,
    /// A major version this reader does not know.
    #[error(
        "artifact format version {major}.{minor} is not supported: this reader supports \
         versions {oldest}.x to {supported}.x (minor versions up to \
         {supported}.{supported_minor} are known, newer minors are accepted)"
    )]
    UnsupportedVersion {
        /// The file's major version.
        major: u16,
        /// The file's minor version.
        minor: u16,
        /// The oldest supported major version.
        oldest: u16,
        /// The newest supported major version.
        supported: u16,
        /// The newest minor version this reader knows.
        supported_minor: u16,
    },
    /// The file ends before the header or the payload does.
    #[error("the artifact is truncated: {what} needs {needed} bytes, the file has {actual}")]
    Truncated {
        /// The header or the payload.
        what: &'static str,
        /// Bytes needed.
        needed: u64,
        /// Bytes present.
        actual: u64,
    },
    /// Bytes after the payload.
    #[error(
        "payload length mismatch: the header declares {declared} payload bytes, \
         but {actual} follow the header"
    )]
    LengthMismatch {
        /// Declared payload length.
        declared: u64,
        /// Bytes after the header.
        actual: u64,
    },
    /// A payload larger than [`MAX_PAYLOAD`].
    #[error("the artifact payload is too large: {declared} bytes declared, at most {limit}")]
    TooLarge {
        /// Declared payload length.
        declared: u64,
        /// The limit.
        limit: u64,
    },
    /// The payload's CRC-32 differs from the header's.
    #[error(
        "checksum mismatch: the header says CRC-32 {stored:#010x}, the payload has \
         {computed:#010x} (the file is corrupt)"
    )]
    Checksum {
        /// The CRC in the header.
        stored: u32,
        /// The CRC of the payload.
        computed: u32,
    },
    /// CBOR or JSON that does not decode into the data model.
    #[error("cannot decode the artifact payload: {0}")]
    Decode(String),
    /// A decoded program that fails validation.
    #[error("invalid artifact: {0}")]
    Invalid(#[from] ValidationError),
    /// The artifact could not be encoded.
    #[error("cannot encode the artifact: {0}")]
    Encode(String),
}

impl ArtifactError {
    /// The stable diagnostic code (see `docs/errors/`).
    pub fn code(&self) -> &'static str {
        match self {
            ArtifactError::BadMagic => "E0401",
            ArtifactError::UnsupportedVersion { .. } => "E0402",
            ArtifactError::Truncated { .. } => "E0403",
            ArtifactError::LengthMismatch { .. } => "E0404",
            ArtifactError::TooLarge { .. } => "E0405",
            ArtifactError::Checksum { .. } => "E0406",
            ArtifactError::Decode(_) => "E0407",
            ArtifactError::Invalid(_) => "E0408",
            ArtifactError::Encode(_) => "E0409",
        }
    }
}

/// The CRC-32 of `bytes` (zlib polynomial, as Python's `zlib.crc32`).
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Encodes an artifact as the binary container with a CBOR payload. The
/// artifact is validated first, so nothing is written that no reader would
/// load.
pub fn encode(artifact: &Artifact) -> Result<Vec<u8>, ArtifactError> {
    check(artifact, &Limits::default())?;
    let mut cbor = Vec::new();
    ciborium::into_writer(artifact, &mut cbor).map_err(|e| ArtifactError::Encode(e.to_string()))?;
    let fits = |n: usize| {
        u32::try_from(n)
            .ok()
            .filter(|&l| l <= MAX_PAYLOAD)
            .ok_or(ArtifactError::TooLarge {
                declared: n as u64,
                limit: u64::from(MAX_PAYLOAD),
            })
    };
    let cbor_len = fits(cbor.len())?;
    let payload = miniz_oxide::deflate::compress_to_vec_zlib(&cbor, 9);
    let len = fits(payload.len())?;
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_MAJOR.to_le_bytes());
    out.extend_from_slice(&FORMAT_MINOR.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&cbor_len.to_le_bytes());
    out.extend_from_slice(&crc32(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Encodes an artifact as its JSON twin (pretty-printed), after validating
/// it.
pub fn encode_json(artifact: &Artifact) -> Result<String, ArtifactError> {
    check(artifact, &Limits::default())?;
    let twin = JsonTwin {
        format: JSON_FORMAT.to_string(),
        version: (FORMAT_MAJOR, FORMAT_MINOR),
        artifact,
    };
    serde_json::to_string_pretty(&twin).map_err(|e| ArtifactError::Encode(e.to_string()))
}

fn le_u16(bytes: &[u8], at: usize) -> u16 {
    let mut b = [0u8; 2];
    if let Some(s) = bytes.get(at..at + 2) {
        b.copy_from_slice(s);
    }
    u16::from_le_bytes(b)
}

fn le_u32(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    if let Some(s) = bytes.get(at..at + 4) {
        b.copy_from_slice(s);
    }
    u32::from_le_bytes(b)
}

/// Reads and checks the container: magic, version, lengths and checksum,
/// then inflates the payload. Returns the header and the CBOR bytes.
pub fn read_container(bytes: &[u8]) -> Result<(Header, Vec<u8>), ArtifactError> {
    let magic_seen = bytes.len().min(MAGIC.len());
    if bytes.get(..magic_seen) != MAGIC.get(..magic_seen) {
        return Err(ArtifactError::BadMagic);
    }
    if bytes.len() < HEADER_LEN {
        return Err(ArtifactError::Truncated {
            what: "the header",
            needed: HEADER_LEN as u64,
            actual: bytes.len() as u64,
        });
    }
    let header = Header {
        major: le_u16(bytes, 8),
        minor: le_u16(bytes, 10),
        payload_len: le_u32(bytes, 12),
        cbor_len: le_u32(bytes, 16),
        crc32: le_u32(bytes, 20),
    };
    if !(OLDEST_MAJOR..=FORMAT_MAJOR).contains(&header.major) {
        return Err(ArtifactError::UnsupportedVersion {
            major: header.major,
            minor: header.minor,
            oldest: OLDEST_MAJOR,
            supported: FORMAT_MAJOR,
            supported_minor: FORMAT_MINOR,
        });
    }
    for declared in [header.payload_len, header.cbor_len] {
        if declared > MAX_PAYLOAD {
            return Err(ArtifactError::TooLarge {
                declared: u64::from(declared),
                limit: u64::from(MAX_PAYLOAD),
            });
        }
    }
    let rest = bytes.get(HEADER_LEN..).unwrap_or(&[]);
    let declared = header.payload_len as usize;
    if rest.len() < declared {
        return Err(ArtifactError::Truncated {
            what: "the payload",
            needed: (HEADER_LEN + declared) as u64,
            actual: bytes.len() as u64,
        });
    }
    if rest.len() > declared {
        return Err(ArtifactError::LengthMismatch {
            declared: declared as u64,
            actual: rest.len() as u64,
        });
    }
    let computed = crc32(rest);
    if computed != header.crc32 {
        return Err(ArtifactError::Checksum {
            stored: header.crc32,
            computed,
        });
    }
    // The limit bounds what a hostile stream can make the reader allocate.
    let cbor =
        miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(rest, header.cbor_len as usize)
            .map_err(|e| {
                ArtifactError::Decode(format!(
                    "the payload is not a zlib stream inflating to the {} bytes the header \
                     declares ({})",
                    header.cbor_len,
                    inflate_status_text(e.status)
                ))
            })?;
    if cbor.len() != header.cbor_len as usize {
        return Err(ArtifactError::Decode(format!(
            "the payload inflates to {} bytes, the header declares {}",
            cbor.len(),
            header.cbor_len
        )));
    }
    Ok((header, cbor))
}

/// Whether `bytes` look like an artifact rather than `.lpk` source: the
/// CBOR container starts with `LPKA` or has a NUL among its first eight
/// bytes (no source text does); the JSON twin starts with `{` (after
/// whitespace), which no `.lpk` source does.
pub fn looks_like_artifact(bytes: &[u8]) -> bool {
    bytes.starts_with(b"LPKA")
        || bytes.iter().take(MAGIC.len()).any(|&b| b == 0)
        || is_json_twin(bytes)
}

fn is_json_twin(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{')
}

/// Loads an artifact from its bytes (the CBOR container or the JSON twin,
/// told apart by the first byte) and validates it.
pub fn decode(bytes: &[u8]) -> Result<Loaded, ArtifactError> {
    decode_with(bytes, &Limits::default())
}

/// [`decode`] with explicit validation limits.
pub fn decode_with(bytes: &[u8], limits: &Limits) -> Result<Loaded, ArtifactError> {
    let (mut parts, major, minor, header) = if is_json_twin(bytes) {
        let (parts, major, minor) = decode_json(bytes)?;
        (parts, major, minor, None)
    } else {
        let (header, payload) = read_container(bytes)?;
        let parts: ArtifactParts = ciborium::from_reader(payload.as_slice())
            .map_err(|e| ArtifactError::Decode(cbor_error_text(&e)))?;
        (parts, header.major, header.minor, Some(header))
    };
    if major < 2 {
        // Version 1 has no zero matrices: a `zero` field there is one a
        // version 1 reader ignores, so it means nothing.
        for m in &mut parts.program.matrices {
            m.zero = false;
        }
    }
    Ok(Loaded {
        artifact: validate(parts, limits)?,
        encoding: if header.is_some() {
            Encoding::Cbor
        } else {
            Encoding::Json
        },
        major,
        minor,
        header,
    })
}

/// The JSON twin's artifact and the version it declares.
fn decode_json(bytes: &[u8]) -> Result<(ArtifactParts, u16, u16), ArtifactError> {
    if bytes.len() > MAX_PAYLOAD as usize * 4 {
        return Err(ArtifactError::TooLarge {
            declared: bytes.len() as u64,
            limit: u64::from(MAX_PAYLOAD) * 4,
        });
    }
    // The version is read first, so that a newer major version is reported
    // as such rather than as whatever field it no longer matches.
    #[derive(Deserialize)]
    struct Probe {
        format: Option<String>,
        version: Option<(u16, u16)>,
    }
    let probe: Probe =
        serde_json::from_slice(bytes).map_err(|e| ArtifactError::Decode(e.to_string()))?;
    if probe.format.as_deref() != Some(JSON_FORMAT) {
        return Err(ArtifactError::BadMagic);
    }
    let (major, minor) = probe.version.unwrap_or((0, 0));
    if !(OLDEST_MAJOR..=FORMAT_MAJOR).contains(&major) {
        return Err(ArtifactError::UnsupportedVersion {
            major,
            minor,
            oldest: OLDEST_MAJOR,
            supported: FORMAT_MAJOR,
            supported_minor: FORMAT_MINOR,
        });
    }
    let twin: JsonTwin<ArtifactParts> =
        serde_json::from_slice(bytes).map_err(|e| ArtifactError::Decode(e.to_string()))?;
    Ok((twin.artifact, major, minor))
}

/// Why inflating failed, in words (the status's `Debug` text is a Rust
/// name, not a message).
fn inflate_status_text(status: miniz_oxide::inflate::TINFLStatus) -> &'static str {
    use miniz_oxide::inflate::TINFLStatus;
    match status {
        TINFLStatus::HasMoreOutput => "it inflates to more bytes than declared",
        TINFLStatus::NeedsMoreInput | TINFLStatus::FailedCannotMakeProgress => {
            "the stream ends early"
        }
        TINFLStatus::Adler32Mismatch => "its Adler-32 checksum does not match",
        TINFLStatus::Failed | TINFLStatus::BadParam | TINFLStatus::Done => {
            "the stream is malformed"
        }
    }
}

fn cbor_error_text<T>(e: &ciborium::de::Error<T>) -> String {
    match e {
        ciborium::de::Error::Io(_) => "unexpected end of the CBOR data".to_string(),
        ciborium::de::Error::Syntax(at) => format!("malformed CBOR at payload byte {at}"),
        ciborium::de::Error::Semantic(at, msg) => match at {
            Some(at) => format!("{msg} (at payload byte {at})"),
            None => msg.clone(),
        },
        ciborium::de::Error::RecursionLimitExceeded => "CBOR nested too deeply".to_string(),
    }
}
