//! `[integrate]`: how `lockstep integrate` steps the upstream pin (the submodule or pin file,
//! the remotes, the smoke, export, notify and report settings).

use std::time::Duration;

use lockstep_core::config::{de, Section};
use serde::Deserialize;

/// `[integrate]`: stepping an upstream pin forward.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct IntegrateConfig {
    /// Path of the pinned upstream checkout (a git submodule), relative to
    /// the superproject; the pin when neither `pin-file` nor `pin` is set
    /// (default `third_party/llvm-project`, lockstep_pin::DEFAULT_SUBMODULE).
    pub submodule: Option<String>,
    /// Instead of a submodule: a file holding the pinned upstream revision (one
    /// 40-hex line), relative to the superproject. Upstream's history then lives
    /// in a bare clone of `upstream-url` under `.git/lockstep/`.
    pub pin_file: Option<String>,
    /// Instead of a submodule or a pin file: a pin inside a larger file,
    /// found by a pattern, maybe with its archive's checksum
    /// (`pin = { file, pattern, sha256 = { pattern, archive } }`, see
    /// lockstep-pin). Upstream's history lives as with `pin-file`.
    pub pin: Option<lockstep_pin::PinSpec>,
    /// Remote inside the submodule that tracks upstream.
    pub upstream_remote: String,
    /// When set, the upstream remote is created (or corrected) with this URL
    /// (never one starting with `-`: refused where the file says it).
    #[serde(deserialize_with = "upstream_url")]
    pub upstream_url: Option<String>,
    pub upstream_branch: String,
    /// How the upstream is named in messages ("Advance LLVM to ...").
    pub upstream_name: String,
    /// Superproject ref a new integrate branch starts from.
    pub base: String,
    /// Integrate branch name; `{date}` becomes YYYYMMDD.
    pub branch: String,
    /// Only commits touching these paths are stopping points; empty means all.
    pub track_paths: Vec<String>,
    /// Commits whose subject contains one of these are never stopping points.
    pub skip_subjects: Vec<String>,
    /// Smoke command (argv) run in the superproject: 0 good, 125 skip, other bad.
    #[serde(deserialize_with = "de::argv")]
    pub smoke: Vec<String>,
    /// A smoke that runs longer counts as bad.
    #[serde(deserialize_with = "de::duration")]
    pub smoke_timeout: Duration,
    /// Shell commands run in the superproject when a loop reaches upstream's
    /// head and at every halt (`lockstep test suites/lit`): they never halt
    /// the loop; their failures are listed in the pull request as "to fix
    /// before landing" and keep it a draft.
    pub final_checks: Vec<String>,
    /// A final check that runs longer fails.
    #[serde(deserialize_with = "de::duration")]
    pub final_check_timeout: Duration,
    /// Other submodules the smoke needs checked out (paths in the
    /// superproject): the generated integrate workflow fetches them (depth
    /// 1) beside the integrated one.
    pub smoke_submodules: Vec<String>,
    pub strategy: Strategy,
    /// Link to an upstream commit; `{sha}` is replaced.
    pub commit_url: Option<String>,
    pub export: ExportConfig,
    pub notify: NotifyConfig,
    pub report: ReportConfig,
    pub github: GithubConfig,
    /// `[[integrate.verdicts]]`: rules turning a smoke's (or bisect
    /// command's) exit code and output into good / bad / skip, first match
    /// wins; none matching: 0 good, 125 skip, anything else bad.
    pub verdicts: Vec<VerdictRule>,
    /// `[[integrate.follow]]`: other dependencies that pin the same upstream
    /// (StableHLO, Torch-MLIR pin LLVM), reported at each step and bumped
    /// with `loop --bump-followers`.
    pub follow: Vec<FollowConfig>,
}

/// One `[[integrate.follow]]`: a submodule of the superproject that carries
/// its own pin of the same upstream, in a file (`upstream-pin-file`, as
/// StableHLO's `build_tools/llvm_version.txt`) or a submodule of its own
/// (`upstream-submodule`, as Torch-MLIR's `externals/llvm-project`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FollowConfig {
    pub name: String,
    /// Its path in the superproject.
    pub submodule: String,
    #[serde(default)]
    pub upstream_pin_file: Option<String>,
    #[serde(default)]
    pub upstream_submodule: Option<String>,
    /// Or a pin inside a larger file of the follower (`{ file, pattern }`).
    #[serde(default)]
    pub upstream_pin: Option<lockstep_pin::PinSpec>,
    /// Where `--bump-followers` takes its head from (a remote of the
    /// follower's checkout), default `origin`.
    #[serde(default = "default_follow_remote")]
    pub remote: String,
    #[serde(default = "default_follow_branch")]
    pub branch: String,
}

fn default_follow_remote() -> String {
    "origin".into()
}

fn default_follow_branch() -> String {
    "main".into()
}

/// One `[[integrate.verdicts]]` rule. It matches when the exit code is one
/// of `exit` (when given; a signal N counts as 128 + N) and the output holds
/// `output` (when given).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct VerdictRule {
    /// Shown in the verdict's detail and the halt report.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub exit: Vec<i32>,
    /// A substring of the command's output (its log).
    #[serde(default)]
    pub output: Option<String>,
    pub verdict: RuleVerdict,
}

/// What a matching rule decides.
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RuleVerdict {
    Good,
    Bad,
    Skip,
}

/// `upstream-url`, refused at load when git would read it as an option.
fn upstream_url<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    de::not_an_option(d, "upstream-url").map(Some)
}

/// `[integrate]`'s pin when the configuration has that table (release,
/// pkg, history and ci read it; without the table there is none).
pub fn configured_pin(
    loaded: &lockstep_core::config::Loaded,
) -> Result<Option<lockstep_pin::Pin>, lockstep_core::Error> {
    if !loaded.has_section("integrate") {
        return Ok(None);
    }
    loaded.section::<IntegrateConfig>()?.pin().map(Some)
}

impl FollowConfig {
    /// The pin of upstream inside the follower (`upstream-pin-file`,
    /// `upstream-submodule` or `upstream-pin`, exactly one), checked.
    pub fn upstream_pin(&self) -> Result<lockstep_pin::Pin, lockstep_core::Error> {
        lockstep_pin::Pin::from_prefixed_settings(
            &format!("[[integrate.follow]] `{}`", self.name),
            "upstream-",
            self.upstream_submodule.as_deref(),
            self.upstream_pin_file.as_deref(),
            self.upstream_pin.as_ref(),
        )
    }

    /// The follower itself: a submodule of the superproject.
    pub fn pin(&self) -> Result<lockstep_pin::Pin, lockstep_core::Error> {
        lockstep_pin::Pin::submodule(
            &self.submodule,
            &format!("[[integrate.follow]] `{}` submodule", self.name),
        )
    }
}

impl IntegrateConfig {
    /// The pin this table describes (`submodule`, `pin-file` or `pin`, one
    /// at a time), checked: the one place `[integrate]` becomes a pin.
    pub fn pin(&self) -> Result<lockstep_pin::Pin, lockstep_core::Error> {
        lockstep_pin::Pin::from_settings(
            "[integrate]",
            self.submodule.as_deref(),
            self.pin_file.as_deref(),
            self.pin.as_ref(),
        )
    }
}

impl Default for IntegrateConfig {
    fn default() -> Self {
        IntegrateConfig {
            submodule: None,
            pin_file: None,
            pin: None,
            upstream_remote: "upstream".into(),
            upstream_url: None,
            upstream_branch: "main".into(),
            upstream_name: "LLVM".into(),
            base: "origin/main".into(),
            branch: "integrates/llvm-{date}".into(),
            track_paths: Vec::new(),
            skip_subjects: vec!["[Docs]".into(), "Apply clang-tidy fixes".into()],
            smoke: Vec::new(),
            smoke_timeout: Duration::from_secs(2 * 3600),
            final_checks: Vec::new(),
            final_check_timeout: Duration::from_secs(2 * 3600),
            smoke_submodules: Vec::new(),
            strategy: Strategy::Gallop,
            commit_url: None,
            export: ExportConfig::default(),
            notify: NotifyConfig::default(),
            report: ReportConfig::default(),
            github: GithubConfig::default(),
            verdicts: Vec::new(),
            follow: Vec::new(),
        }
    }
}

/// How `integrate loop` chooses which commits to smoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Probe upstream head, bisect to the first bad commit: logarithmic smokes.
    Gallop,
    /// One smoke and one commit per affecting commit (megabump's loop).
    Each,
}

impl std::str::FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "gallop" => Ok(Strategy::Gallop),
            "each" => Ok(Strategy::Each),
            other => Err(format!(
                "unknown strategy `{other}`: expected `gallop` or `each`"
            )),
        }
    }
}

/// `[integrate.export]`: where patched submodule heads are published.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ExportConfig {
    /// Remote inside the submodule that receives patched heads.
    pub remote: String,
    /// `{repo}` = superproject directory name, `{branch}` = integrate branch.
    pub branch: String,
}

impl Default for ExportConfig {
    fn default() -> Self {
        ExportConfig {
            remote: "origin".into(),
            branch: "sm-{repo}-{branch}".into(),
        }
    }
}

/// `[integrate.notify]`: where `integrate report --post` sends the report.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct NotifyConfig {
    pub kind: NotifyKind,
    /// Name of the environment variable holding the webhook URL (never printed).
    pub url_env: String,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            kind: NotifyKind::Discord,
            url_env: "LOCKSTEP_WEBHOOK_URL".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NotifyKind {
    Discord,
    Slack,
    Json,
}

/// `[integrate.github]`: where `integrate publish` (and `loop --publish`)
/// opens the integrate's pull request.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct GithubConfig {
    /// `OWNER/NAME`; default: `$GITHUB_REPOSITORY`, else parsed from the
    /// URL of the remote `base` names.
    pub repository: Option<String>,
    /// The environment variable holding the token (never printed).
    pub token_env: String,
    /// Open the pull request as a draft.
    pub draft: bool,
}

impl Default for GithubConfig {
    fn default() -> Self {
        GithubConfig {
            repository: None,
            token_env: "GITHUB_TOKEN".into(),
            draft: true,
        }
    }
}

/// `[integrate.report]`: how the error summary is cut from a smoke log.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ReportConfig {
    /// A log line is an error line when it contains one of these substrings
    /// (one starting with a space also matches at the start of a line).
    /// Unset: lockstep's recognizer of gcc/clang, rustc, CMake, ninja, make,
    /// linker, Python and pytest error lines (`lockstep_core::diagnostics`).
    pub error_patterns: Option<Vec<String>>,
    /// At most this many error lines, then `... and N more`.
    pub max_error_lines: usize,
}

impl Default for ReportConfig {
    fn default() -> Self {
        ReportConfig {
            error_patterns: None,
            max_error_lines: 20,
        }
    }
}

impl ReportConfig {
    /// How the error lines of a smoke log are told apart.
    pub fn error_lines(&self) -> lockstep_core::diagnostics::ErrorLines {
        match &self.error_patterns {
            Some(patterns) => lockstep_core::diagnostics::ErrorLines::Substrings(patterns.clone()),
            None => lockstep_core::diagnostics::ErrorLines::Default,
        }
    }
}

impl Section for IntegrateConfig {
    const NAME: &'static str = "integrate";
    const DOCS: &'static str = "integrate.md";
}
