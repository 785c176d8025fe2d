//! The UI corpus: every `.lpk` file under `tests/ui/` is one test, which
//! runs it through the real `lpkc` binary (text with `--color never`, then
//! `--format json`) and compares the outputs with an insta snapshot in
//! `tests/snapshots/ui/`.
//!
//! A first line `# lpkc: SUBCOMMAND ARGS...` picks the command (default
//! `check`); the file path is appended. Files under `tests/ui/ok/` must
//! produce no diagnostics at all; any other file's name starts with the
//! code it demonstrates, and that code must be among its diagnostics.
//!
//! The files are listed in [`ui_tests!`] below, so that
//! `cargo test -p lpkc --test cli ui::lint::W0501_dead_write` runs one;
//! `every_ui_file_is_listed` fails when a file on disk is missing from the
//! list (or the list names a file that is gone).

use crate::binary::lpkc;
use crate::strings_of;

/// One `#[test]` per file: `dir { name ... }` stands for
/// `tests/ui/dir/name.lpk`.
macro_rules! ui_tests {
    ($($dir:ident { $($name:ident)* })*) => {
        $(
            #[allow(non_snake_case)]
            mod $dir {
                $(
                    #[test]
                    fn $name() {
                        super::check_file(concat!(
                            "tests/ui/", stringify!($dir), "/", stringify!($name), ".lpk"
                        ));
                    }
                )*
            }
        )*

        /// Every file listed, as a path from the workspace root.
        const LISTED: &[&str] = &[
            $($(concat!("tests/ui/", stringify!($dir), "/", stringify!($name), ".lpk"),)*)*
        ];
    };
}

ui_tests! {
    cli {
        E0601_require_not_met
        E0602_unknown_parameter
        E0603_log_of_zero
    }
    lint {
        E0501_double_write_trsm
        E0501_double_write_with_instance
        E0502_write_to_input
        E0503_duplicate_read
        E0503_read_unwritten
        E0504_read_before_write
        E0504_zero_matrix_read_before_write
        E0505_checked_power
        E0505_out_of_bounds
        E0506_unsatisfiable_require
        W0501_dead_write
        W0502_never_runs
        W0503_unused_kernel
        W0504_unused_matrix
        W0505_unused_parameter
        W0506_unused_loop_variable
        W0507_unused_let
        W0508_output_never_written
        W0509_two_calls_on_one_line
    }
    ok {
        builtin_names_as_variables
        else_if_chain
        kernels_after_program
        operator_corners
        zero_matrix_read_unwritten
    }
    parse {
        E0001_recovery_two_statements
        E0001_unknown_char
        E0002_keyword_as_name
        E0002_missing_semicolon
        E0002_recovery_items
        E0002_recovery_many
        E0003_unexpected_eof
        E0003_unfinished_kernel
        E0004_int_too_large
        E0004_two_literals
        E0005_nesting_too_deep
        E0006_statement_too_complex
        E0007_chained_comparison
        E0007_chained_in_if
        E0007_chained_in_require
    }
    resolve {
        E0101_did_you_mean
        E0101_let_out_of_scope
        E0101_loop_var_out_of_scope
        E0101_undefined_name
        E0102_similar_kernel
        E0102_standard_kernel_hint
        E0102_undeclared_kernel
        E0103_did_you_mean
        E0103_undefined_matrix
        E0104_kernel_declared_twice
        E0105_program_declared_twice
        E0106_duplicate_parameter
        E0106_let_shadows_parameter
        E0106_matrix_named_like_parameter
        E0106_nested_loop_variable
        E0107_duplicate_kernel_param
        E0107_param_and_result
        E0108_require_after_statement
        E0108_require_in_loop
        E0109_decl_after_statement
        E0109_decl_in_if
        E0110_kernel_in_expression
        E0110_unknown_function
        E0111_range_arity
        E0111_range_no_arguments
        E0112_builtin_arity
        E0112_min_one_argument
        E0113_matrix_as_value
        E0114_index_not_matrix
        E0114_write_to_loop_variable
        E0115_bad_default
        E0115_real_default
        E0116_param_not_int
        E0117_call_arity
        E0117_no_arguments
        E0117_standard_kernel_wrong_arity
        E0118_result_count
        E0118_too_many_results
        E0119_scalar_for_tile
        E0120_tile_for_scalar
        E0120_tile_in_expression
        E0121_rank_mismatch
        E0121_too_many_indices_on_output
        E0122_zero_input_and_output
        E0123_nonzero_initialiser
    }
    types {
        E0201_real_extent_log2
        E0201_real_for_int_kernel_param
        E0201_real_index
        E0201_real_loop_bound
        E0202_condition_not_bool
        E0202_not_of_int
        E0202_require_not_bool
        E0203_bool_for_number
        E0203_bool_index
        E0204_bool_with_int
        E0204_ordering_bools
        E0205_negative_step
        E0205_zero_step
        E0206_negative_extent
        E0207_standard_kernel_results
        E0207_standard_kernel_scalar_type
        E0207_standard_kernel_wrong_arity
        E0208_let_chain_too_large
        W0201_near_standard_kernel
    }
}

fn command_of(src: &str) -> Vec<String> {
    let first = src.lines().next().unwrap_or("");
    match first.strip_prefix("# lpkc:") {
        Some(rest) => rest.split_whitespace().map(String::from).collect(),
        None => vec!["check".to_string()],
    }
}

/// Runs one UI file (`rel`, from the workspace root) and compares its
/// outputs with the snapshot.
fn check_file(rel: &str) {
    let mut settings = lpk_test_support::snapshot_settings("ui");
    settings.set_omit_expression(true);
    let _guard = settings.bind_to_scope();
    let src = lpk_test_support::read(rel);
    let mut args = command_of(&src);
    args.push("--color".into());
    args.push("never".into());
    args.push(rel.to_string());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout_text, stderr_text) = lpkc(&argv);
    let mut json_args = argv.clone();
    json_args.extend(["--format", "json"]);
    let (json_code, json_out, _) = lpkc(&json_args);
    assert_eq!(code, json_code, "{rel}: exit codes differ between formats");
    let json: serde_json::Value = serde_json::from_str(&json_out)
        .unwrap_or_else(|e| panic!("{rel}: --format json is not JSON ({e}): {json_out}"));
    if rel.starts_with("tests/ui/ok/") {
        assert_eq!(code, 0, "{rel} must check clean:\n{stderr_text}");
        assert_eq!(
            json["diagnostics"].as_array().map(Vec::len),
            Some(0),
            "{rel}"
        );
    } else {
        // The file name starts with the code it demonstrates.
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let code_of_file = name.split('_').next().unwrap_or("");
        let codes = strings_of(&json["diagnostics"], "code");
        assert!(
            codes.contains(&code_of_file),
            "{rel}: expected a {code_of_file} diagnostic, got {codes:?}"
        );
    }
    let snapshot = format!(
        "command: lpkc {}\nexit: {code}\n--- stdout ---\n{stdout_text}--- stderr ---\n{stderr_text}--- json ---\n{}\n",
        args.join(" "),
        serde_json::to_string_pretty(&json).unwrap_or_default()
    );
    let snap_name = rel
        .trim_start_matches("tests/ui/")
        .trim_end_matches(".lpk")
        .replace('/', "__");
    insta::assert_snapshot!(snap_name, snapshot);
}

#[test]
fn every_ui_file_is_listed() {
    let on_disk = lpk_test_support::lpk_files_under("tests/ui");
    assert!(
        on_disk.len() >= 40,
        "the UI corpus has {} files",
        on_disk.len()
    );
    let mut listed: Vec<String> = LISTED.iter().map(|s| s.to_string()).collect();
    listed.sort();
    let missing: Vec<&String> = on_disk.iter().filter(|f| !listed.contains(f)).collect();
    let gone: Vec<&String> = listed.iter().filter(|f| !on_disk.contains(f)).collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "add these files to ui_tests! in compiler/lpkc/tests/cli/ui.rs: {missing:?}; \
         remove these, which no longer exist: {gone:?}"
    );
}

#[test]
fn every_code_has_documentation_and_a_ui_test() {
    let files = lpk_test_support::lpk_files_under("tests/ui");
    let names: Vec<&str> = files.iter().filter_map(|f| f.rsplit('/').next()).collect();
    let index = std::fs::read_to_string(lpk_test_support::workspace_root().join("docs/errors.md"))
        .unwrap_or_default();
    for info in lpk_compiler::diag::codes::CODES {
        assert!(
            info.doc.contains("Wrong") && info.doc.contains("Right"),
            "docs/errors/{}.md needs a wrong and a right example",
            info.code
        );
        assert!(
            index.contains(info.code),
            "docs/errors.md does not list {}",
            info.code
        );
        // A file over 16 MiB is not part of the corpus (grammar tests it).
        // Artifact errors (E04xx) come from binary files, not sources; they
        // are tested in the artifact module.
        if info.code != "E0008" && !info.code.starts_with("E04") {
            assert!(
                names.iter().any(|n| n.starts_with(info.code)),
                "no UI test for {}",
                info.code
            );
        }
    }
}
