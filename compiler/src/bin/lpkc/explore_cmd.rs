//! `lpkc dot` and the helpers `stats` shares with it: reading the
//! instance, enforcing `--max-tasks`, and writing the DOT text.

use runtime_interp::model::Instance;

/// `N=4, M=2`: the bound parameters, for titles.
pub fn params_text(inst: &Instance<'_>) -> String {
    inst.program
        .params
        .iter()
        .zip(&inst.params)
        .map(|(d, v)| format!("{}={v}", d.name))
        .collect::<Vec<_>>()
        .join(", ")
}
