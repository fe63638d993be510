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
    /// The Pythons test jobs run under: `"all"` of `[pkg] python` (a job
    /// per Python and shard; the default) or `"first"`.
    pub test_pythons: TestPythons,
    pub build_timeout_minutes: u32,
    pub test_timeout_minutes: u32,
    /// `uses:` by commit SHA with the version as a comment (default), or by
    /// major tag (`false`).
    pub pin_actions: bool,
    /// `[ci.pins]`: newer commits for actions lockstep knows, by name
    /// (`"actions/checkout" = { version = "v6.2.0", sha = "..." }`).
    pub pins: std::collections::BTreeMap<String, PinConfig>,
    /// `[ci.release]`: the scheduled release workflow.
    pub release: Option<CiReleaseConfig>,
    /// `[ci.integrate]`: the scheduled integrate workflow.
    pub integrate: Option<CiIntegrateConfig>,
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
            test_pythons: TestPythons::All,
            build_timeout_minutes: 60,
            test_timeout_minutes: 60,
            pin_actions: true,
            pins: Default::default(),
            release: None,
            integrate: None,
        }
    }
}

/// `[ci.pins] "OWNER/REPO"`: the commit (and its release) to pin a known
/// action to instead of lockstep's own table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinConfig {
    pub version: String,
    pub sha: String,
}

/// `[ci.release]`: `lockstep-release.yml`, a scheduled (and dispatchable)
/// bump -> cut -> build -> test -> publish -> deploy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct CiReleaseConfig {
    /// When it runs: a 5-field cron expression, UTC (GitHub's `schedule`).
    pub schedule: String,
    /// The channel scheduled runs cut (`snapshot` or `candidate`).
    pub channel: String,
    /// Deploy the release index to GitHub Pages.
    pub pages: bool,
    /// Create a GitHub Release per cut with its files and SHA256SUMS.
    pub github_release: bool,
    /// A manual `promote` run uploads the final to PyPI (trusted publishing,
    /// environment `pypi`).
    pub pypi: bool,
    /// Minutes the cut and publish jobs may take.
    pub timeout_minutes: u32,
}

impl Default for CiReleaseConfig {
    fn default() -> Self {
        CiReleaseConfig {
            schedule: "0 5 * * *".into(),
            channel: "snapshot".into(),
            pages: true,
            github_release: true,
            pypi: true,
            timeout_minutes: 60,
        }
    }
}

/// `[ci.integrate]`: `lockstep-integrate.yml`, a scheduled `integrate loop
/// --publish` that ends in a draft pull request.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct CiIntegrateConfig {
    /// When it runs: a 5-field cron expression, UTC.
    pub schedule: Option<String>,
    /// Minutes the integrate job may take.
    pub timeout_minutes: u32,
    /// The name of the repository secret holding a token that may push and
    /// open pull requests and whose pushes start CI (a GitHub App token or a
    /// fine-grained PAT); unset: the job's own `GITHUB_TOKEN`, whose pushes
    /// start no workflow runs.
    pub token_secret: Option<String>,
    /// The submodules the integrate job checks out (paths in the
    /// superproject) and how much of each one's history: `"full"`,
    /// `"blobless"` (every commit, file contents fetched when read) or a
    /// depth (`1`). Unset: the integrated submodule blobless, the
    /// followers' and `[integrate] smoke-submodules` at depth 1; no other
    /// submodule is fetched (an LLVM submodule with full history is
    /// gigabytes).
    pub submodules: Option<std::collections::BTreeMap<String, SubmoduleHistory>>,
}

/// How much of a submodule's history a workflow fetches.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum SubmoduleHistory {
    /// The last N commits.
    Depth(i64),
    /// `"full"` or `"blobless"`.
    Named(String),
}

impl Default for CiIntegrateConfig {
    fn default() -> Self {
        CiIntegrateConfig {
            schedule: None,
            timeout_minutes: 360,
            token_secret: None,
            submodules: None,
        }
    }
}

/// `[ci] test-pythons`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestPythons {
    All,
    First,
}

/// `[ci] lockstep`: where the runners install lockstep from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum CiLockstep {
    /// `cargo install --locked --git URL --rev REV lockstep`.
    Git { git: String, rev: String },
    /// `cargo install --locked --path DIR` inside the checked-out repository.
    Path { path: String },
    /// lockstep's release: `lockstep-cli==VERSION` pinned by its wheels'
    /// sha256 (one, or a list), from PyPI or `index`.
    Release {
        version: String,
        sha256: Sha256s,
        #[serde(default)]
        index: Option<String>,
    },
}

/// One sha256, or several (one per wheel of the release).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Sha256s {
    One(String),
    Many(Vec<String>),
}

impl Sha256s {
    pub fn list(&self) -> Vec<String> {
        match self {
            Sha256s::One(one) => vec![one.clone()],
            Sha256s::Many(many) => many.clone(),
        }
    }
}

impl Section for CiConfig {
    const NAME: &'static str = "ci";
    const DOCS: &'static str = "ci.md";
}
