//! `[tools]`: the programs lockstep would otherwise find or install itself,
//! named by the user.
//!
//! lockstep runs its own uv (a pinned version under the toolchains
//! directory, [`crate::uv::find_uv`]) and finds interpreters on PATH and in
//! the usual managed installs ([`crate::pythons`]). A team that must use its
//! own uv, or a Python that is installed elsewhere, says so here:
//!
//! ```toml
//! [tools]
//! uv = "/opt/uv/bin/uv"
//! python = ["/opt/python/3.12/bin/python3.12"]
//! ```
//!
//! The binary resolves the table once, when it loads lockstep.toml
//! ([`configure`]), so that every engine that reaches uv or an interpreter
//! (pkg, release, the IREE toolchain) sees the same choice without each
//! carrying it. `$LOCKSTEP_UV` names a uv too, and wins over the table.

use std::path::PathBuf;
use std::sync::OnceLock;

use lockstep_core::config::Section;
use serde::Deserialize;

/// `[tools]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ToolsConfig {
    /// A uv to run instead of lockstep's own (relative paths are relative
    /// to lockstep.toml's directory).
    pub uv: Option<PathBuf>,
    /// Interpreters to consider beside those found on PATH and in pyenv,
    /// asdf, mise and uv's managed installs (each one's version is asked).
    pub python: Vec<PathBuf>,
}

impl Section for ToolsConfig {
    const NAME: &'static str = "tools";
    const DOCS: &'static str = "pkg.md";
}

impl ToolsConfig {
    /// Relative paths made relative to `root` (lockstep.toml's directory).
    pub fn resolved(mut self, root: &std::path::Path) -> ToolsConfig {
        if let Some(uv) = &self.uv {
            self.uv = Some(root.join(uv));
        }
        self.python = self.python.iter().map(|p| root.join(p)).collect();
        self
    }
}

/// The variable naming a uv to use (before `[tools] uv`).
pub const ENV_UV: &str = "LOCKSTEP_UV";

static CONFIGURED: OnceLock<ToolsConfig> = OnceLock::new();

/// Sets the `[tools]` of this process (the first call wins).
pub fn configure(tools: ToolsConfig) {
    let _ = CONFIGURED.set(tools);
}

/// The `[tools]` of this process (empty until [`configure`]).
pub fn configured() -> ToolsConfig {
    CONFIGURED.get().cloned().unwrap_or_default()
}

/// The uv the user named, and where: `$LOCKSTEP_UV`, else `[tools] uv`.
pub fn user_uv() -> Option<(PathBuf, &'static str)> {
    match std::env::var_os(ENV_UV) {
        Some(v) if !v.is_empty() => Some((PathBuf::from(v), "$LOCKSTEP_UV")),
        _ => configured().uv.map(|p| (p, "[tools] uv")),
    }
}
