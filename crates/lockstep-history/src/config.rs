//! `[history]`: where `lockstep test`, `lockstep bench` and `lockstep
//! integrate loop` record their runs when no `--record DIR` is given, and
//! the directory `lockstep history list` reads by default.

use std::path::PathBuf;

use lockstep_core::config::Section;
use serde::Deserialize;

/// `[history]`: the results history (docs/history.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct HistoryConfig {
    /// The history directory, relative to lockstep.toml's directory. When
    /// set, every test, bench and integrate loop run is recorded there
    /// (`--record DIR` wins, `--no-record` skips one run).
    pub dir: Option<PathBuf>,
}

impl Section for HistoryConfig {
    const NAME: &'static str = "history";
    const DOCS: &'static str = "history.md";
}
