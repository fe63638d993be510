//! `[toolchain]`: which IREE tools commands use (see [`crate::toolchain`] for the precedence).

use std::path::PathBuf;

use lockstep_core::config::Section;
use serde::Deserialize;

/// The IREE version lockstep provisions when no tools are given.
pub const DEFAULT_IREE_VERSION: &str = "3.13.0";

/// `[toolchain]`: which IREE tools commands use.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ToolchainConfig {
    /// Version of iree-base-compiler / iree-base-runtime to provision.
    pub iree: String,
    /// A directory of IREE tools to use instead of a provisioned toolchain
    /// (relative to lockstep.toml).
    pub iree_bin: Option<PathBuf>,
    /// A PEP 751 manifest of built wheels the toolchain is installed from
    /// (relative to lockstep.toml); `$LOCKSTEP_IREE_MANIFEST` wins.
    pub manifest: Option<PathBuf>,
}

impl Default for ToolchainConfig {
    fn default() -> Self {
        ToolchainConfig {
            iree: DEFAULT_IREE_VERSION.into(),
            iree_bin: None,
            manifest: None,
        }
    }
}

impl Section for ToolchainConfig {
    const NAME: &'static str = "toolchain";
    const DOCS: &'static str = "test.md";
}
