//! `[test]`: what `lockstep test` runs and on which targets.

use std::path::PathBuf;
use std::time::Duration;

use lockstep_core::config::{de, Section};
use serde::Deserialize;

/// `[test]`: regression tests.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct TestConfig {
    /// What `lockstep test` runs without PATH arguments (relative to lockstep.toml).
    pub paths: Vec<PathBuf>,
    /// Suite configs used when no --suite-config is given.
    pub suite_configs: Vec<PathBuf>,
    /// Targets used when no --target is given (default `["cpu"]`).
    pub default_targets: Vec<String>,
    /// Per-process timeouts.
    #[serde(deserialize_with = "de::duration")]
    pub compile_timeout: Duration,
    #[serde(deserialize_with = "de::duration")]
    pub run_timeout: Duration,
    /// Named targets (`[test.targets.NAME]`), beside the built-in `cpu` and `cpu-sync`.
    pub targets: std::collections::BTreeMap<String, TargetConfig>,
    /// URL prefix -> replacement for every file a test fetches by URL
    /// (`LOCKSTEP_TEST_MIRRORS="FROM=TO,..."` wins over it).
    pub mirrors: std::collections::BTreeMap<String, String>,
    /// `[[test.pytest]]`: pytest suites run against the packages built.
    pub pytest: Vec<crate::pytest::PytestConfig>,
}

impl Default for TestConfig {
    fn default() -> Self {
        TestConfig {
            paths: Vec::new(),
            suite_configs: Vec::new(),
            default_targets: Vec::new(),
            compile_timeout: Duration::from_secs(600),
            run_timeout: Duration::from_secs(300),
            targets: Default::default(),
            mirrors: Default::default(),
            pytest: Vec::new(),
        }
    }
}

/// One `[test.targets.NAME]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct TargetConfig {
    pub compile_flags: Vec<String>,
    pub run_flags: Vec<String>,
    pub markers: Vec<String>,
    /// The GitHub Actions runner of this target's test jobs (`lockstep ci
    /// generate`): a label or a list of self-hosted labels; default `[ci] runs-on`.
    pub runs_on: Option<RunsOn>,
    /// How many test jobs share this target's tests (`--shard i/N`); default 1.
    pub shards: Option<u32>,
}

/// A GitHub Actions `runs-on` value.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum RunsOn {
    /// One label (`ubuntu-24.04`).
    Label(String),
    /// Every label a self-hosted runner must carry (`["self-hosted", "mi300"]`).
    Labels(Vec<String>),
}

impl Default for RunsOn {
    fn default() -> Self {
        RunsOn::Label("ubuntu-24.04".into())
    }
}

impl Section for TestConfig {
    const NAME: &'static str = "test";
    const DOCS: &'static str = "test.md";
}
