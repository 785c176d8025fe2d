//! Loading the fixtures, and refusing corrupted ones with the error (and
//! code) that names what is wrong.

use crate::{bytes, load, FIXTURES};
use lpk_model::artifact::{
    self, validate, ArtifactError, Encoding, Limits, ValidationError, FORMAT_MAJOR, HEADER_LEN,
    MAGIC, OLDEST_MAJOR,
};
use lpk_model::program::Role;

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
    for (file, program, params, major) in FIXTURES {
        let loaded = load(file);
        let p = &loaded.artifact.program;
        assert_eq!(&p.name, program, "{file}");
        let names: Vec<&str> = p.params.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(&names, params, "{file}");
        assert_eq!(loaded.major, *major, "{file}");
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
        let again = validate(loaded.artifact.clone().into_parts(), &Limits::default())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(again, loaded.artifact, "{file}");
    }
}

#[test]
fn a_loaded_artifact_encodes_to_what_loads_back_the_same() {
    for (file, _, _, _) in FIXTURES {
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

#[test]
fn both_format_versions_are_among_the_fixtures() {
    for major in OLDEST_MAJOR..=FORMAT_MAJOR {
        assert!(
            FIXTURES.iter().any(|f| f.3 == major),
            "no fixture of format {major}: keep one of each version this reader loads"
        );
    }
}

/// Format 2 added the `zero` flag: the fixture of gemm_tree_zero has one
/// zero matrix, every matrix of a format 1 fixture loads as not zero, and
/// the flag survives both encodings.
#[test]
fn the_zero_flag_round_trips_and_format_1_has_none() {
    let loaded = load("gemm_tree_zero.lpka");
    let zero: Vec<&str> = loaded
        .artifact
        .program
        .matrices
        .iter()
        .filter(|m| m.zero)
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(zero, ["P"]);
    let cbor = artifact::encode(&loaded.artifact).expect("encodes");
    assert_eq!(cbor[8..10], FORMAT_MAJOR.to_le_bytes());
    let json = artifact::encode_json(&loaded.artifact).expect("encodes");
    for bytes in [cbor.as_slice(), json.as_bytes()] {
        let back = artifact::decode(bytes).expect("decodes");
        assert_eq!(back.artifact, loaded.artifact);
        assert_eq!(back.major, FORMAT_MAJOR);
    }
    for (file, _, _, major) in FIXTURES {
        if *major == 1 {
            assert!(
                load(file).artifact.program.matrices.iter().all(|m| !m.zero),
                "{file}"
            );
        }
    }
}

/// A version 1 reader ignores fields it does not know, so a `zero` field
/// in a version 1 artifact means nothing: it loads as not zero.
#[test]
fn a_zero_field_in_a_format_1_artifact_is_ignored() {
    let mut cbor = bytes("gemm_tree_zero.lpka");
    // The CRC covers the payload only, so the header's version can change.
    cbor[8..10].copy_from_slice(&1u16.to_le_bytes());
    let loaded = artifact::decode(&cbor).expect("a version 1 container loads");
    assert_eq!(loaded.major, 1);
    assert!(loaded.artifact.program.matrices.iter().all(|m| !m.zero));

    let json = artifact::encode_json(&load("gemm_tree_zero.lpka").artifact).expect("encodes");
    let mut v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["artifact"]["program"]["matrices"][3]["zero"], true);
    v["version"] = serde_json::json!([1, 0]);
    let loaded = artifact::decode(&serde_json::to_vec(&v).expect("JSON")).expect("loads");
    assert_eq!(loaded.major, 1);
    assert!(loaded.artifact.program.matrices.iter().all(|m| !m.zero));
    // In version 2 the field is read, and a missing one is `false`.
    v["version"] = serde_json::json!([2, 0]);
    let loaded = artifact::decode(&serde_json::to_vec(&v).expect("JSON")).expect("loads");
    assert!(loaded.artifact.program.matrices[3].zero);
    if let Some(m) = v["artifact"]["program"]["matrices"][3].as_object_mut() {
        m.remove("zero");
    }
    let loaded = artifact::decode(&serde_json::to_vec(&v).expect("JSON")).expect("loads");
    assert!(!loaded.artifact.program.matrices[3].zero);
}

#[test]
fn only_a_temporary_matrix_may_be_a_zero_matrix() {
    let mut art = load("gemm_tree_zero.lpka").artifact.into_parts();
    let input = art
        .program
        .matrices
        .iter()
        .position(|m| m.role == Role::Input)
        .expect("an input");
    art.program.matrices[input].zero = true;
    let e = validate(art.clone(), &Limits::default()).expect_err("refused");
    assert_eq!(
        e.to_string(),
        "matrix `A`: only a temporary matrix may be a zero matrix"
    );
    // The writer takes only a validated artifact (the type says so); the
    // loader refuses such bytes with the code of an invalid artifact.
    let twin = serde_json::json!({"format": "lpka", "version": [2, 1], "artifact": art});
    assert_eq!(refused(twin.to_string().as_bytes()).code(), "E0408");
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

    for major in [OLDEST_MAJOR - 1, FORMAT_MAJOR + 1] {
        let mut version = good.clone();
        version[8..10].copy_from_slice(&major.to_le_bytes());
        let e = refused(&version);
        assert_eq!(e.code(), "E0402", "{e}");
        assert!(
            matches!(e, ArtifactError::UnsupportedVersion { major: m, .. } if m == major),
            "{e}"
        );
    }

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
