fn main() {
    // The grammar is generated into OUT_DIR so no generated code is committed.
    lalrpop::Configuration::new()
        .use_cargo_dir_conventions()
        .emit_rerun_directives(true)
        .process()
        .expect("the lalrpop grammar must compile");
}
