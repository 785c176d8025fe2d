//! Loading the fixtures, and refusing corrupted ones with the error (and
//! code) that names what is wrong.

use crate::{bytes, load, FIXTURES};
use model::artifact::{
    self, validate, ArtifactError, Encoding, Limits, ValidationError, FORMAT_MAJOR, HEADER_LEN,
    MAGIC,
};

#[test]
fn every_fixture_loads_and_validates() {
    let on_disk: Vec<String> = std::fs::read_dir(crate::fixture_path(""))
        .expect("tests/fixtures/")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".lpka") || n.ends_with(".lpka.json"))
        .collect();
    assert_eq!(
        on_disk.len(),
        FIXTURES.len(),
        "fixtures on disk: {on_disk:?}"
    );
    for (file, program, params) in FIXTURES {
        let loaded = load(file);
        let p = &loaded.artifact.program;
        assert_eq!(&p.name, program, "{file}");
        let names: Vec<&str> = p.params.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(&names, params, "{file}");
        assert_eq!(loaded.major, FORMAT_MAJOR, "{file}");
        assert_eq!(
            loaded.artifact.source.file,
            format!("examples/{program}.lpk"),
            "{file}"
        );
        assert_eq!(
            loaded.artifact.source.statements.len(),
            p.statements.len(),
            "{file}: one source location per statement"
        );
        let json = file.ends_with(".json");
        assert_eq!(
            loaded.encoding,
            if json { Encoding::Json } else { Encoding::Cbor },
            "{file}"
        );
        assert_eq!(loaded.header.is_some(), !json, "{file}");
        // The JSON fixture was written with --no-source.
        assert_eq!(loaded.artifact.source.text.is_none(), json, "{file}");
        validate(&loaded.artifact, &Limits::default()).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}

#[test]
fn a_loaded_artifact_encodes_to_what_loads_back_the_same() {
    for (file, _, _) in FIXTURES {
        let loaded = load(file);
        let cbor = artifact::encode(&loaded.artifact).expect("encodes");
        assert_eq!(
            artifact::decode(&cbor).expect("decodes").artifact,
            loaded.artifact,
            "{file} through CBOR"
        );
        let json = artifact::encode_json(&loaded.artifact).expect("encodes");
        assert_eq!(
            artifact::decode(json.as_bytes()).expect("decodes").artifact,
            loaded.artifact,
            "{file} through JSON"
        );
    }
}

/// The error of decoding `bytes`, which must be refused.
fn refused(bytes: &[u8]) -> ArtifactError {
    match artifact::decode(bytes) {
        Ok(_) => panic!("a corrupted artifact was accepted"),
        Err(e) => e,
    }
}

#[test]
fn a_flipped_payload_byte_is_a_checksum_error() {
    let good = bytes("cholesky.lpka");
    let stored = u32::from_le_bytes(good[20..24].try_into().expect("4 bytes"));
    for at in [HEADER_LEN, HEADER_LEN + 17, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x40;
        let e = refused(&bad);
        assert_eq!(e.code(), "E0406", "byte {at}: {e}");
        match e {
            ArtifactError::Checksum {
                stored: s,
                computed,
            } => {
                assert_eq!(s, stored);
                assert_ne!(computed, stored);
            }
            other => panic!("byte {at}: {other}"),
        }
    }
}

#[test]
fn a_damaged_container_is_refused_with_what_is_wrong() {
    let good = bytes("tsqr.lpka");
    let mut magic = good.clone();
    magic[0] = b'X';
    assert_eq!(refused(&magic), ArtifactError::BadMagic);
    assert_eq!(refused(&magic).code(), "E0401");

    let mut version = good.clone();
    version[8..10].copy_from_slice(&(FORMAT_MAJOR + 1).to_le_bytes());
    let e = refused(&version);
    assert_eq!(e.code(), "E0402", "{e}");
    assert!(
        matches!(e, ArtifactError::UnsupportedVersion { major, .. } if major == FORMAT_MAJOR + 1),
        "{e}"
    );

    let cut = &good[..good.len() - 10];
    assert_eq!(
        refused(cut),
        ArtifactError::Truncated {
            what: "the payload",
            needed: good.len() as u64,
            actual: cut.len() as u64,
        }
    );
    assert_eq!(
        refused(&good[..HEADER_LEN - 1]),
        ArtifactError::Truncated {
            what: "the header",
            needed: HEADER_LEN as u64,
            actual: HEADER_LEN as u64 - 1,
        }
    );
    assert_eq!(refused(&good[..MAGIC.len() - 2]).code(), "E0403");

    let mut longer = good.clone();
    longer.push(0);
    assert_eq!(
        refused(&longer),
        ArtifactError::LengthMismatch {
            declared: (good.len() - HEADER_LEN) as u64,
            actual: (good.len() - HEADER_LEN + 1) as u64,
        }
    );
}

/// The JSON twin of trtri with `edit` applied to its program.
fn edited_json(edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v: serde_json::Value =
        serde_json::from_slice(&bytes("trtri.lpka.json")).expect("the fixture is JSON");
    edit(&mut v["artifact"]["program"]);
    serde_json::to_vec(&v).expect("serializes")
}

#[test]
fn an_inconsistent_program_is_refused_by_the_validator() {
    // A statement calling a kernel that is not declared.
    let e = refused(&edited_json(|p| p["statements"][0]["kernel"] = 99.into()));
    assert_eq!(e.code(), "E0408", "{e}");
    match e {
        ArtifactError::Invalid(ValidationError::OutOfRange {
            what, index, len, ..
        }) => {
            assert_eq!(what, "kernel");
            assert_eq!(index, 99);
            assert_eq!(
                len as usize,
                load("trtri.lpka.json").artifact.program.kernels.len()
            );
        }
        other => panic!("{other}"),
    }
    // A write into a matrix that does not exist.
    let e = refused(&edited_json(|p| {
        p["statements"][0]["writes"][0]["matrix"] = 7.into()
    }));
    assert!(
        matches!(
            e,
            ArtifactError::Invalid(ValidationError::OutOfRange {
                what: "matrix",
                index: 7,
                ..
            })
        ),
        "{e}"
    );
    // An expression referring to a node after it.
    let e = refused(&edited_json(|p| {
        let last = p["exprs"].as_array().map_or(0, Vec::len);
        p["statements"][0]["writes"][0]["indices"][0] = last.into();
    }));
    assert_eq!(e.code(), "E0408", "{e}");
    // A field that is not in the data model at all.
    let e = refused(&edited_json(|p| p["statements"] = "none".into()));
    assert_eq!(e.code(), "E0407", "{e}");
}

#[test]
fn tight_limits_refuse_what_the_defaults_accept() {
    let loaded = load("gemm_tree.lpka");
    let limits = Limits {
        statements: loaded.artifact.program.statements.len() - 1,
        ..Limits::default()
    };
    let e = artifact::decode_with(&bytes("gemm_tree.lpka"), &limits).expect_err("too many");
    assert!(
        matches!(
            e,
            ArtifactError::Invalid(ValidationError::TooMany { what, .. }) if what.contains("statement")
        ),
        "{e}"
    );
}
