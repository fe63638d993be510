//! `[ci]`: the GitHub Actions workflows `lockstep ci generate` writes.

use std::path::PathBuf;

use lockstep_core::config::Section;
use serde::Deserialize;

pub use lockstep_suite::config::RunsOn;

/// `[ci]`: the GitHub Actions workflows `lockstep ci generate` writes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct CiConfig {
    /// How the runners get lockstep: `{ git = URL, rev = REV }` or `{ path = DIR }`.
    pub lockstep: Option<CiLockstep>,
    /// Where workflows are written (relative to lockstep.toml's directory).
    pub out: PathBuf,
    /// Branches whose pushes run the workflow (pull requests always do).
    pub branches: Vec<String>,
    /// The runner of build jobs and of targets without their own `runs-on`.
    pub runs_on: RunsOn,
    /// Shards of the built-in `cpu` target when no `[test.targets]` are configured.
    pub shards: u32,
    /// The variant test jobs install (default `release`).
    pub test_variant: Option<String>,
    pub build_timeout_minutes: u32,
    pub test_timeout_minutes: u32,
}

impl Default for CiConfig {
    fn default() -> Self {
        CiConfig {
            lockstep: None,
            out: PathBuf::from(".github/workflows"),
            branches: vec!["main".into()],
            runs_on: RunsOn::default(),
            shards: 1,
            test_variant: None,
            build_timeout_minutes: 60,
            test_timeout_minutes: 60,
        }
    }
}

/// `[ci] lockstep`: where the runners install lockstep from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum CiLockstep {
    /// `cargo install --locked --git URL --rev REV lockstep`.
    Git { git: String, rev: String },
    /// `cargo install --locked --path DIR` inside the checked-out repository.
    Path { path: String },
}

impl Section for CiConfig {
    const NAME: &'static str = "ci";
    const DOCS: &'static str = "ci.md";
}
