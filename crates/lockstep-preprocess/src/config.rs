//! `[preprocess]`: defaults of `lockstep preprocess`.

use std::time::Duration;

use lockstep_core::config::{de, Section};
use serde::Deserialize;

/// `[preprocess]`: defaults of `lockstep preprocess`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct PreprocessConfig {
    /// Steps used when no `--with` is given (tool paths relative to
    /// lockstep.toml's directory).
    pub with: Vec<String>,
    /// Run `with` steps through `sh -c` (as `--with-shell`).
    pub with_shell: bool,
    /// Concurrency limit when no `-j` is given (default: every core).
    pub jobs: Option<usize>,
    /// Per tool process when no `--timeout` is given (default: none).
    #[serde(default, deserialize_with = "de::optional_duration")]
    pub timeout: Option<Duration>,
}

impl Section for PreprocessConfig {
    const NAME: &'static str = "preprocess";
    const DOCS: &'static str = "preprocess.md";
}
