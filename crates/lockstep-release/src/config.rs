//! `[release]`: snapshot versions, tags and the static package index (`lockstep release`).

use std::path::PathBuf;

use lockstep_core::config::Section;
use serde::Deserialize;

/// `[release]`: snapshot versions, tags, the static package index (`lockstep release`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ReleaseConfig {
    /// The project's name in tags and messages (default: the directory's name).
    pub name: Option<String>,
    /// The release being prepared (`3.14.0`); or read from `version-file`.
    pub version_base: Option<String>,
    /// A file holding the base version: plain text, or JSON with `package-version`.
    pub version_file: Option<PathBuf>,
    /// Template of snapshot versions: `{base}`, `{date}` (UTC `YYYYMMDD`), `{n}` / `{n:02}`.
    pub snapshot: String,
    /// Template of candidate versions (same placeholders).
    pub candidate: String,
    /// Template of tag names: `{version}`, `{name}`, `{channel}`.
    pub tag: String,
    /// Files holding one upstream revision each (40 hex digits).
    pub pin_files: Vec<PathBuf>,
    /// Where `release bump` reads upstream's head (never one starting with
    /// `-`: refused where the file says it).
    #[serde(deserialize_with = "upstream_url")]
    pub upstream_url: Option<String>,
    /// The upstream branch `release bump` follows.
    pub upstream_branch: String,
    /// The release store and static index (relative to lockstep.toml).
    pub index: PathBuf,
    /// A command `release publish` runs in the validation venv (`sh -c`).
    pub smoke: Option<String>,
    /// Where the set's dependencies (numpy, packaging ...) come from when
    /// `release publish` validates it: a PEP 503 simple index URL, or
    /// `"none"` (the set must install from its own index alone).
    pub dependency_index: String,
    /// Retention of `release prune` (default: keep everything).
    pub keep: KeepConfig,
    /// Branches whose manifests and pin files `release prune` never prunes a version of.
    pub branches: Vec<String>,
    /// Where the released files live: `pages` (in the store, deployed with
    /// the index) or `github-releases` (assets of each version's GitHub
    /// Release; the store and the Pages site keep only records and pages).
    pub hosting: Hosting,
    /// With `hosting = "pages"`: the largest index (store and pages) in MB
    /// that `release publish` makes; GitHub Pages refuses sites over 1 GB.
    pub pages_limit_mb: u64,
    /// The tag of a final release (`release promote --tag`): `{version}`,
    /// `{name}`.
    pub final_tag: String,
    /// The release branch `release promote --release-branch` creates at the
    /// candidate's commit: `{major}`, `{minor}`, `{patch}`, `{version}`.
    pub branch: String,
    /// Programs the GitHub Release also carries as standalone files, taken
    /// from the published wheels (`{ package, script }`: the wheel's
    /// `*.data/scripts/SCRIPT`), listed in its SHA256SUMS.
    pub binaries: Vec<BinaryConfig>,
}

/// One `[release] binaries` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BinaryConfig {
    /// The distribution whose wheels carry it (`lockstep-cli`).
    pub package: String,
    /// The program's file name in the wheel's scripts (`lockstep`).
    pub script: String,
}

impl Default for ReleaseConfig {
    fn default() -> Self {
        ReleaseConfig {
            name: None,
            version_base: None,
            version_file: None,
            snapshot: "{base}rc{date}{n:02}".into(),
            candidate: "{base}rc{date}{n:02}".into(),
            tag: "{name}-{version}".into(),
            pin_files: Vec::new(),
            upstream_url: None,
            upstream_branch: "main".into(),
            index: PathBuf::from("release/index"),
            smoke: None,
            dependency_index: DEFAULT_DEPENDENCY_INDEX.into(),
            keep: KeepConfig::default(),
            branches: vec!["main".into()],
            binaries: Vec::new(),
            hosting: Hosting::Pages,
            final_tag: "v{version}".into(),
            branch: "release/{major}.{minor}".into(),
            pages_limit_mb: DEFAULT_PAGES_LIMIT_MB,
        }
    }
}

/// `[release] hosting`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Hosting {
    /// The files sit in the store and go to Pages with the index (small
    /// projects: Pages refuses a site over 1 GB).
    #[default]
    Pages,
    /// The files are assets of each version's GitHub Release; the index
    /// links to them and `release sync --from-github` rebuilds the store.
    GithubReleases,
}

/// Below GitHub Pages' 1 GB site limit, with room for the pages themselves.
pub const DEFAULT_PAGES_LIMIT_MB: u64 = 900;

/// PyPI's simple API: where dependencies come from by default.
pub const DEFAULT_DEPENDENCY_INDEX: &str = "https://pypi.org/simple/";

/// `[release] keep`: how many snapshots `release prune` keeps.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct KeepConfig {
    /// Keep at least the newest this many snapshot versions.
    pub snapshots: Option<u32>,
    /// Keep every snapshot younger than this many days.
    pub days: Option<u32>,
}

impl Section for ReleaseConfig {
    const NAME: &'static str = "release";
    const DOCS: &'static str = "release.md";
}

/// `upstream-url`, refused at load when git would read it as an option.
fn upstream_url<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    lockstep_core::config::de::not_an_option(d, "upstream-url").map(Some)
}
