//! `[release]` resolved once: the name, the base version (from the key or
//! a version file), the templates (checked with examples before any command
//! uses them) and the index directory.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use lockstep_core::Error;
use pep440_rs::Version;

use crate::config::ReleaseConfig;
use crate::template::{render_tag, VersionTemplate};

/// The longest `[release] name` (it goes into every tag).
const MAX_NAME: usize = 100;

/// The largest version file read.
const MAX_VERSION_FILE: u64 = 64 << 10;

#[derive(Debug, Clone)]
pub struct Settings {
    pub name: String,
    pub index: PathBuf,
    pub snapshot: VersionTemplate,
    pub candidate: VersionTemplate,
    pub tag: String,
    /// Every pin of the project, one per path: `[release] pin-files`, and
    /// `[integrate]`'s pin (any kind: a submodule, a pin file, a pin inside
    /// a larger file) when there is that table ([`Settings::with_pin`]).
    /// `cut` records them, `bump` moves them, `prune` keeps what they name.
    pub pins: Vec<lockstep_pin::Pin>,
    pub smoke: Option<String>,
    /// `[release] dependency-index`, checked (`None` for `"none"`).
    pub dependency_index: Option<String>,
    /// `[release] binaries`, checked.
    pub binaries: Vec<crate::config::BinaryConfig>,
    /// `[release] hosting`.
    pub hosting: crate::config::Hosting,
    /// `[release] pages-limit-mb` in bytes, when the files go to Pages.
    pub pages_limit: Option<u64>,
}

impl Settings {
    /// These settings with `pin` (`[integrate]`'s) among the pins; it wins
    /// over a `[release] pin-files` entry of the same path (it may be a
    /// pattern with a checksum).
    pub fn with_pin(mut self, pin: lockstep_pin::Pin) -> Settings {
        let pins = std::mem::take(&mut self.pins);
        self.pins = lockstep_pin::one_per_path(pins.into_iter().chain([pin]));
        self
    }

    /// The pins `release bump` moves: those kept in files. A submodule
    /// (which may carry patches, and whose commits must be fetched into its
    /// checkout) moves with `lockstep integrate`.
    pub fn bumped_pins(&self) -> Vec<lockstep_pin::Pin> {
        self.pins
            .iter()
            .filter(|p| !p.carries_patches())
            .cloned()
            .collect()
    }

    /// The paths of the pins (what `prune` searches for references).
    pub fn pin_paths(&self) -> Vec<String> {
        self.pins.iter().map(|p| p.path().to_string()).collect()
    }
}

/// Checks `[release]`; the base version is read separately (only `cut` needs it).
pub fn settings(release: &ReleaseConfig, root: &Path) -> Result<Settings, Error> {
    let name = match &release.name {
        Some(n) => n.clone(),
        None => std::path::absolute(root)?
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "release".into()),
    };
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return Err(Error::usage(format!(
            "[release] name has {} characters: it must have 1 to {MAX_NAME}",
            name.chars().count()
        ))
        .hint("the name goes into every tag; use the project's short name"));
    }
    let snapshot = VersionTemplate::parse("[release] snapshot", &release.snapshot)?;
    let candidate = VersionTemplate::parse("[release] candidate", &release.candidate)?;
    render_tag(&release.tag, &name, "0.0.0", "snapshot")?;
    let mut pins = Vec::new();
    for path in &release.pin_files {
        let text = path.to_string_lossy().into_owned();
        if path.is_absolute()
            || path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(Error::usage(format!(
                "[release] pin-files: `{text}` is not inside the repository"
            )));
        }
        pins.push(lockstep_pin::Pin::file(&text, "[release] pin-files")?);
    }
    let dependency_index = dependency_index(&release.dependency_index)?;
    for binary in &release.binaries {
        check_binary(binary)?;
    }
    Ok(Settings {
        binaries: release.binaries.clone(),
        hosting: release.hosting,
        pages_limit: match release.hosting {
            crate::config::Hosting::Pages => Some(release.pages_limit_mb.saturating_mul(1_000_000)),
            crate::config::Hosting::GithubReleases => None,
        },
        dependency_index,
        name,
        index: root.join(&release.index),
        snapshot,
        candidate,
        tag: release.tag.clone(),
        pins: lockstep_pin::one_per_path(pins),
        smoke: release.smoke.clone(),
    })
}

/// A `[release] binaries` entry: a distribution name, and a script name
/// that is a plain file name (it becomes a release asset's name).
fn check_binary(binary: &crate::config::BinaryConfig) -> Result<(), Error> {
    if !lockstep_python::wheel::is_valid_name(&binary.package) {
        return Err(Error::usage(format!(
            "[release] binaries: package `{}` is not a distribution name",
            binary.package.escape_debug()
        ))
        .hint("name the package whose wheels carry the program, e.g. \"lockstep-cli\""));
    }
    let plain = !binary.script.is_empty()
        && binary.script.len() <= 100
        && binary
            .script
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !binary.script.starts_with('.');
    if !plain {
        return Err(Error::usage(format!(
            "[release] binaries: script `{}` is not a program's file name",
            binary.script.escape_debug()
        ))
        .hint("the file name in the wheel's scripts (letters, digits, `-`, `_`, `.`), e.g. \"lockstep\""));
    }
    Ok(())
}

/// `[release] dependency-index`: `"none"`, or an https URL (http only to
/// this machine: what it serves is installed and run unchecked), without
/// `user:password@`.
fn dependency_index(text: &str) -> Result<Option<String>, Error> {
    if text.trim() == "none" {
        return Ok(None);
    }
    index_url(text, "[release] dependency-index")
        .map(Some)
        .map_err(|e| e.hint("give a PEP 503 simple index such as https://pypi.org/simple/ (the default), an http:// URL of this machine, or \"none\""))
}

/// An index whose packages are installed and run (`what` names the
/// setting or flag): https, or http only to this machine, without
/// `user:password@`.
pub fn index_url(text: &str, what: &str) -> Result<String, Error> {
    lockstep_http::address::parse_url(text, lockstep_http::address::UrlRules::CREDENTIALED)
        .map(|url| url.to_string())
        .map_err(|why| {
            Error::usage(format!("{what} is refused: {why}")).hint(
                "give a PEP 503 simple index such as https://pypi.org/simple/, or an http:// URL of this machine",
            )
        })
}

/// The base version: `[release] version-base`, else the `version-file`
/// (plain text, or JSON with `package-version`), as its release segment
/// (`3.12.0.dev` -> `3.12.0`).
pub fn base_version(release: &ReleaseConfig, root: &Path) -> Result<String, Error> {
    let (text, from) = match (&release.version_base, &release.version_file) {
        (Some(base), _) => (base.clone(), "[release] version-base".to_string()),
        (None, Some(file)) => {
            let path = root.join(file);
            let raw = lockstep_core::fs::read_input_text(
                "[release] version-file",
                &path,
                MAX_VERSION_FILE,
            )?;
            let value = match serde_json::from_str::<serde_json::Value>(&raw) {
                Ok(json) => json
                    .get("package-version")
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .ok_or_else(|| {
                        Error::usage(format!("{} has no \"package-version\"", path.display()))
                    })?,
                Err(_) => raw.trim().to_string(),
            };
            (value, path.display().to_string())
        }
        (None, None) => {
            return Err(
                Error::usage("[release] has no version-base or version-file")
                    .hint("add version-base = \"X.Y.Z\" (the release being prepared) to [release]"),
            )
        }
    };
    parse_base(&text, &from, release.version_base.is_some())
}

/// A base version given on the command line (`release cut --base`): a plain
/// release `X.Y.Z`, as `[release] version-base` must be.
pub fn check_base_version(text: &str, from: &str) -> Result<String, Error> {
    parse_base(text, from, true)
}

/// `text` as the release `X.Y.Z` it names; `explicit` values (not read
/// from a version file) may carry no pre-, post- or dev-release.
fn parse_base(text: &str, from: &str, explicit: bool) -> Result<String, Error> {
    // What a file holds is quoted on one line, shortened: a mistaken path
    // (`/etc/passwd`) must not spill into the error.
    let quoted = {
        let line = lockstep_core::error::printable_line(text.trim()).into_owned();
        match line.char_indices().nth(60) {
            Some((at, _)) => format!("{}...", &line[..at]),
            None => line,
        }
    };
    let version = Version::from_str(text.trim()).map_err(|e| {
        Error::usage(format!("{from}: `{quoted}` is not a PEP 440 version")).cause(e.to_string())
    })?;
    let plain = version.epoch() == 0 && version.local().is_empty();
    let suffixed = version.pre().is_some() || version.post().is_some() || version.dev().is_some();
    if !plain || (explicit && suffixed) {
        return Err(Error::usage(format!(
            "{from}: `{quoted}` is not a plain release version"
        ))
        .cause("snapshot and candidate versions are made below the release they lead to: it must be X.Y.Z (no epoch, pre-, post- or dev-release, or local part)")
        .hint("e.g. version-base = \"3.14.0\""));
    }
    Ok(version
        .release()
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join("."))
}

#[cfg(test)]
mod binaries_tests {
    use super::*;
    use crate::config::BinaryConfig;

    #[test]
    fn binaries_name_a_distribution_and_a_plain_program() {
        let good = BinaryConfig {
            package: "lockstep-cli".into(),
            script: "lockstep".into(),
        };
        assert!(check_binary(&good).is_ok());
        for (package, script, says) in [
            ("not a name!", "lockstep", "is not a distribution name"),
            ("lockstep-cli", "", "is not a program's file name"),
            (
                "lockstep-cli",
                "../lockstep",
                "is not a program's file name",
            ),
            ("lockstep-cli", ".hidden", "is not a program's file name"),
            ("lockstep-cli", "a b", "is not a program's file name"),
        ] {
            let err = check_binary(&BinaryConfig {
                package: package.into(),
                script: script.into(),
            })
            .unwrap_err();
            assert!(
                err.message.contains(says),
                "{package:?} {script:?}: {}",
                err.message
            );
            assert_eq!(err.kind, lockstep_core::ErrorKind::Usage);
        }
    }
}
