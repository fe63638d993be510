//! PEP 751 lock files (`pylock.toml`) as lockstep writes and reads them: the
//! manifest of a set of built wheels.
//!
//! A manifest names every wheel of the set with its path (relative to the
//! manifest, so a wheelhouse can move as a CI artifact), size and sha256, so
//! `uv pip sync --offline pylock.toml` and `pip install -r pylock.toml` install
//! exactly those files; installing "the newest thing in a directory" (pip's
//! `-f DIR NAME`) is how a stable release once replaced a just-built candidate.
//! lockstep's own facts (source and pin revisions, matrix cell, build command
//! and seconds) live in `[packages.tool.lockstep]` and `[tool.lockstep]`,
//! where PEP 751 lets tools keep theirs.
//!
//! [`Lock::load`] reads any PEP 751 file leniently (unknown keys are other
//! tools' business) but checks what an exact install relies on; [`verify`]
//! checks the files themselves before anything is installed.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use lockstep_core::Error;
use serde::{Deserialize, Serialize};

use crate::wheel::{self, WheelName};

/// The variant every package has and that `pylock.toml` (without a variant
/// in its name) describes.
pub const DEFAULT_VARIANT: &str = "release";

/// The manifest of the default variant.
pub const FILE: &str = "pylock.toml";

/// The largest manifest lockstep reads.
const MAX_BYTES: u64 = 16 << 20;

/// The manifest file name of `variant` (`pylock.toml` for the default one,
/// `pylock.<variant>.toml` otherwise: PEP 751 names).
pub fn file_name(variant: &str) -> String {
    if variant == DEFAULT_VARIANT {
        FILE.to_string()
    } else {
        format!("pylock.{variant}.toml")
    }
}

/// The manifest of `variant` for `--variant NAME`: `pylock.NAME.toml` beside
/// `manifest` (a manifest file, or the wheelhouse directory holding it);
/// `manifest` itself for no variant or the default one. A bad name or a
/// variant without a manifest is a usage error.
pub fn variant_manifest(manifest: &Path, variant: Option<&str>) -> Result<PathBuf, Error> {
    let Some(variant) = variant.filter(|v| *v != DEFAULT_VARIANT) else {
        return Ok(manifest.to_path_buf());
    };
    if variant.is_empty()
        || !variant
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
    {
        return Err(Error::usage(format!(
            "--variant `{}` is not a variant name",
            lockstep_core::error::printable(variant)
        )));
    }
    let dir = if manifest.is_dir() {
        manifest
    } else {
        manifest.parent().unwrap_or(Path::new("."))
    };
    let path = dir.join(file_name(variant));
    if !path.is_file() {
        return Err(Error::usage(format!(
            "no manifest for variant {variant}: {} does not exist",
            path.display()
        ))
        .hint(format!(
            "build it with `lockstep pkg build --variant {variant}`"
        )));
    }
    Ok(path)
}

/// A whole `pylock.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Lock {
    pub lock_version: String,
    #[serde(default)]
    pub created_by: String,
    #[serde(default)]
    pub packages: Vec<Package>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<LockTool>,
}

/// `[tool]` of the file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LockTool {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lockstep: Option<SetInfo>,
}

/// `[tool.lockstep]`: facts about the whole set.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SetInfo {
    /// The variant these wheels were built as.
    pub variant: String,
    /// The commit the wheels were built from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_revision: Option<String>,
    /// The working tree had uncommitted changes (the build used the commit).
    #[serde(default)]
    pub dirty: bool,
    /// Built with `pkg build --package`: some packages of the set are
    /// missing, so no toolchain or release is made of it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// Each submodule staged with the commit (`path = "commit"`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub submodules: std::collections::BTreeMap<String, String>,
}

/// One `[[packages]]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Package {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `[packages.sdist]`: the package's source distribution, when the
    /// set has one (`[[pkg.package]] sdist = true`). Installs take the
    /// wheels; the sdist travels with them to the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdist: Option<Sdist>,
    #[serde(default)]
    pub wheels: Vec<Wheel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<PackageTool>,
}

/// `[packages.sdist]`: PEP 751 gives it the same keys as a wheel entry.
pub type Sdist = Wheel;

/// One `[[packages.wheels]]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Wheel {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub hashes: BTreeMap<String, String>,
}

/// `[packages.tool]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PackageTool {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lockstep: Option<PackageInfo>,
}

/// `[packages.tool.lockstep]`: how this package's wheels came to be.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PackageInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_revision: Option<String>,
    /// The upstream revision `[integrate]`'s pin (a submodule, a pin file or
    /// a pin inside a larger file) holds at that revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_revision: Option<String>,
    #[serde(default)]
    pub wheels: Vec<WheelInfo>,
    /// How the sdist was built, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdist: Option<WheelInfo>,
}

/// `[[packages.tool.lockstep.wheels]]`: one wheel's build.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WheelInfo {
    /// The wheel's file name.
    pub name: String,
    /// The matrix cells it serves (`python=3.11 variant=release`); a
    /// `py3-none-any` wheel serves every Python of the matrix.
    pub cells: Vec<String>,
    pub command: Vec<String>,
    pub seconds: f64,
    /// Taken from lockstep's wheel cache instead of built.
    #[serde(default)]
    pub cached: bool,
    /// The manylinux policy auditwheel repaired it to
    /// (`manylinux_2_5_x86_64`); none for a pure wheel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manylinux: Option<String>,
}

/// A wheel of a manifest, found and checked on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub package: String,
    /// The package's sdist, not one of its wheels (installs skip it).
    pub sdist: bool,
    pub version: String,
    pub file: PathBuf,
    pub sha256: String,
    pub size: u64,
}

impl Lock {
    /// A new, empty lock written by lockstep.
    pub fn new() -> Lock {
        Lock {
            lock_version: "1.0".into(),
            created_by: "lockstep".into(),
            packages: Vec::new(),
            tool: None,
        }
    }

    /// Reads and checks `path` (bounded; TOML errors name the file).
    pub fn load(path: &Path) -> Result<Lock, Error> {
        let text =
            lockstep_core::fs::read_input_text("the manifest", path, MAX_BYTES).map_err(|e| {
                e.hint("pass --manifest the pylock.toml that `lockstep pkg build` wrote")
            })?;
        Lock::parse(&text, path)
    }

    /// Parses manifest text (the fuzzable entry point).
    pub fn parse(text: &str, path: &Path) -> Result<Lock, Error> {
        let lock: Lock = toml::from_str(text).map_err(|e| {
            Error::usage(format!(
                "{} is not a valid PEP 751 lock file",
                path.display()
            ))
            .cause(lockstep_core::error::printable(e.message()).into_owned())
            .hint("pass --manifest the pylock.toml that `lockstep pkg build` wrote")
        })?;
        lock.check(path)?;
        Ok(lock)
    }

    /// What an exact install relies on: lock-version 1.x, named packages,
    /// wheels with a plain relative path, a size and a sha256, whose file
    /// name matches the package and version (each package at its own
    /// version: a release checks that its set is at one).
    fn check(&self, path: &Path) -> Result<(), Error> {
        let bad = |what: String| {
            Error::usage(format!("{}: {what}", path.display()))
                .hint("rebuild the set with `lockstep pkg build` (manifests are written by it, not by hand)")
        };
        // `1.0` and `1.x`: digits and one dot, nothing else (no NUL, no
        // trailing text).
        let lock_version_ok = self
            .lock_version
            .split_once('.')
            .is_some_and(|(major, minor)| {
                major == "1" && !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit())
            });
        if !lock_version_ok {
            return Err(bad(format!(
                "lock-version `{}` is not supported (expected 1.x)",
                lockstep_core::error::printable(&self.lock_version)
            )));
        }
        if self.packages.is_empty() {
            return Err(bad("it lists no packages".into()));
        }
        let mut seen = std::collections::BTreeSet::new();
        for package in &self.packages {
            if !wheel::is_valid_name(&package.name) {
                return Err(bad(format!(
                    "invalid package name `{}`",
                    lockstep_core::error::printable(&package.name)
                )));
            }
            if !seen.insert(wheel::normalize(&package.name)) {
                return Err(bad(format!("package {} is listed twice", package.name)));
            }
            match package.version.as_deref() {
                None | Some("") => {
                    return Err(bad(format!(
                        "package {} has no version (an exact set pins every package)",
                        package.name
                    )))
                }
                Some(v) => {
                    wheel::parse_version(v).map_err(|e| {
                        bad(format!(
                            "package {} has version `{}`, not a PEP 440 version: {e}",
                            package.name,
                            lockstep_core::error::printable(v)
                        ))
                    })?;
                }
            }
            if package.wheels.is_empty() {
                return Err(bad(format!("package {} lists no wheels", package.name)));
            }
            for w in &package.wheels {
                check_wheel(package, w).map_err(bad)?;
            }
            if let Some(sdist) = &package.sdist {
                check_sdist(package, sdist).map_err(bad)?;
            }
        }
        // Each package has its own version (a monorepo of independently
        // versioned packages is one set); a release checks that its set is
        // at one version itself.
        Ok(())
    }

    /// `[tool.lockstep]`, if lockstep wrote it.
    pub fn set_info(&self) -> Option<&SetInfo> {
        self.tool.as_ref().and_then(|t| t.lockstep.as_ref())
    }

    /// An error when the manifest holds part of a set (`pkg build
    /// --package`): `what` (a toolchain, a release) needs all of it.
    pub fn require_whole(&self, path: &Path, what: &str) -> Result<(), Error> {
        if self.set_info().is_some_and(|i| i.partial) {
            return Err(Error::usage(format!(
                "{} holds part of a set (built with `pkg build --package`): {what} needs every package",
                path.display()
            ))
            .hint("build the whole set with `lockstep pkg build` (no --package)"));
        }
        Ok(())
    }

    /// The TOML text, deterministic for the same lock.
    pub fn to_toml(&self) -> Result<String, Error> {
        let body = toml::to_string(self)
            .map_err(|e| Error::failed("cannot encode the manifest").cause(e.to_string()))?;
        Ok(format!(
            "# PEP 751 lock file written by lockstep: the exact wheels of this set.\n\
             # Install with `lockstep pkg venv DIR --manifest THIS`, `uv pip sync --offline THIS`\n\
             # or `pip install -r THIS`.\n{body}"
        ))
    }
}

impl Default for Lock {
    fn default() -> Self {
        Lock::new()
    }
}

fn check_wheel(package: &Package, w: &Wheel) -> Result<(), String> {
    check_file(package, w, "wheel", |file_name| {
        WheelName::parse(file_name).map(|p| (p.name, p.version))
    })
}

fn check_sdist(package: &Package, s: &Sdist) -> Result<(), String> {
    check_file(package, s, "sdist", |file_name| {
        crate::sdist::SdistName::parse(file_name).map(|p| (p.name, p.version))
    })
}

/// A wheel or sdist entry (`what`): a plain relative path whose file name
/// (`parse` gives its name and version) matches the package, a sha256, a size.
fn check_file(
    package: &Package,
    w: &Wheel,
    what: &str,
    parse: impl Fn(&str) -> Option<(String, String)>,
) -> Result<(), String> {
    let Some(rel) = w.path.as_deref() else {
        return Err(format!(
            "a {what} of {} has no `path` (lockstep installs only local files)",
            package.name
        ));
    };
    if !is_plain_relative(rel) {
        return Err(format!(
            "the {what} path `{}` of {} must be relative and stay beside the manifest",
            lockstep_core::error::printable(rel),
            package.name
        ));
    }
    let file_name = rel.rsplit('/').next().unwrap_or(rel);
    let Some((name, file_version)) = parse(file_name) else {
        return Err(format!(
            "`{}` is not a valid {what} file name",
            lockstep_core::error::printable(file_name)
        ));
    };
    if name != wheel::normalize(&package.name) {
        return Err(format!(
            "the {what} {file_name} is listed under package {}",
            package.name
        ));
    }
    if let Some(version) = &package.version {
        let same = match (
            wheel::parse_version(version),
            wheel::parse_version(&file_version),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same {
            return Err(format!(
                "the {what} {file_name} is version {file_version}, but package {} is {version}",
                package.name
            ));
        }
    }
    match w.hashes.get("sha256") {
        Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {}
        _ => return Err(format!("the {what} {file_name} has no valid sha256 hash")),
    }
    if w.size.is_none() {
        return Err(format!("the {what} {file_name} has no size"));
    }
    Ok(())
}

/// A relative path of normal components only (`a/b.whl`, never `..`).
fn is_plain_relative(rel: &str) -> bool {
    let path = Path::new(rel);
    !rel.is_empty()
        && !rel.contains(['\\', '\0'])
        && path.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Checks every wheel of `lock` (read from `manifest`) on disk: present,
/// the listed size, the listed sha256. The first problem is the error,
/// naming the file; nothing is installed from a set that fails.
pub fn verify(lock: &Lock, manifest: &Path) -> Result<Vec<Checked>, Error> {
    let dir = manifest.parent().unwrap_or(Path::new("."));
    let mut checked = Vec::new();
    for package in &lock.packages {
        let files = package
            .wheels
            .iter()
            .map(|w| (w, false))
            .chain(package.sdist.iter().map(|s| (s, true)));
        for (w, sdist) in files {
            let what = if sdist { "sdist" } else { "wheel" };
            let rel = w.path.as_deref().unwrap_or_default();
            let file = dir.join(rel);
            let want = w
                .hashes
                .get("sha256")
                .map(|h| h.to_lowercase())
                .unwrap_or_default();
            let meta = std::fs::metadata(&file).map_err(|e| {
                Error::failed(format!("the {what} {} listed in {} is missing", file.display(), manifest.display()))
                    .cause(e.to_string())
                    .hint("copy the whole wheelhouse (wheels and manifest together), or rebuild it with `lockstep pkg build`")
            })?;
            if !meta.is_file() {
                return Err(Error::failed(format!(
                    "the {what} {} is not a regular file",
                    file.display()
                )));
            }
            if Some(meta.len()) != w.size {
                return Err(tampered(
                    what,
                    &file,
                    manifest,
                    format!(
                        "size {} bytes, the manifest says {}",
                        meta.len(),
                        w.size.unwrap_or_default()
                    ),
                ));
            }
            // Memoized by inode, size, mtime and ctime (as git's index does):
            // a rewrite changes the ctime, so a tampered file is hashed again.
            let found =
                lockstep_core::hash::sha256_file_memo(&file, &lockstep_core::paths::file_hashes())?;
            if found != want {
                return Err(tampered(
                    what,
                    &file,
                    manifest,
                    format!("sha256 {found}, the manifest says {want}"),
                ));
            }
            checked.push(Checked {
                package: wheel::normalize(&package.name),
                sdist,
                version: package.version.clone().unwrap_or_default(),
                file,
                sha256: found,
                size: meta.len(),
            });
        }
    }
    Ok(checked)
}

fn tampered(what: &str, file: &Path, manifest: &Path, found: String) -> Error {
    Error::failed(format!(
        "the {what} {} does not match {}",
        file.display(),
        manifest.display()
    ))
    .cause(found)
    .hint("the file changed after the manifest was written: fetch or rebuild the wheelhouse (`lockstep pkg build`), never edit it in place")
}

/// `pkg manifest DIR`: writes DIR/pylock.toml for the wheels in `dir`
/// ([`from_dir`]) with paths relative to it, so the directory can move;
/// returns the manifest's path.
pub fn write_for_dir(dir: &Path) -> Result<PathBuf, Error> {
    let mut lock = from_dir(dir)?;
    for package in &mut lock.packages {
        for wheel in &mut package.wheels {
            wheel.path = wheel.name.clone();
        }
    }
    let path = dir.join(FILE);
    lockstep_core::fs::write_atomic(&path, lock.to_toml()?.as_bytes())?;
    Ok(path)
}

/// A lock for the wheels directly in `dir` (`--wheels DIR`): one version
/// per package, or an error listing what was
/// found (a stable release beside a candidate is exactly the ambiguity an
/// exact install exists to refuse). Paths are absolute: the lock is
/// written outside `dir`.
pub fn from_dir(dir: &Path) -> Result<Lock, Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Error::usage(format!("cannot read the wheel directory {}", dir.display()))
            .cause(e.to_string())
            .hint("pass --wheels a directory of .whl files, or --manifest a pylock.toml")
    })?;
    let mut found: BTreeMap<String, BTreeMap<String, Vec<PathBuf>>> = BTreeMap::new();
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".whl") {
            continue;
        }
        // A `.whl` whose name does not parse would be left out of the set
        // silently: the set would then publish or install without it.
        let Some(parsed) = WheelName::parse(&name) else {
            return Err(Error::usage(format!(
                "{} is not a wheel file name lockstep can read",
                dir.join(&name).display()
            ))
            .cause(
                "a wheel is NAME-VERSION(-BUILD)?-PYTHON-ABI-PLATFORM.whl with a PEP 440 version",
            )
            .hint("rename or remove it; nothing was written"));
        };
        if !entry
            .file_type()
            .is_ok_and(|t| t.is_file() || t.is_symlink())
        {
            continue;
        }
        found
            .entry(parsed.name)
            .or_default()
            .entry(parsed.version)
            .or_default()
            .push(entry.path());
    }
    if found.is_empty() {
        return Err(Error::usage(format!("no wheels in {}", dir.display()))
            .hint("pass --wheels the directory `lockstep pkg build` or `pip download` wrote"));
    }
    let mut lock = Lock::new();
    for (name, versions) in found {
        if versions.len() > 1 {
            let listed: Vec<&str> = versions.keys().map(String::as_str).collect();
            return Err(Error::usage(format!(
                "{} holds {name} at several versions: {}",
                dir.display(),
                listed.join(", ")
            ))
            .hint("pass --manifest the pylock.toml of the set you mean, or keep one version per directory"));
        }
        let (version, mut files) = versions.into_iter().next().unwrap_or_default();
        files.sort();
        let mut wheels = Vec::new();
        for file in files {
            let abs = std::path::absolute(&file).unwrap_or(file);
            wheels.push(Wheel {
                name: abs.file_name().map(|n| n.to_string_lossy().into_owned()),
                size: Some(std::fs::metadata(&abs).map(|m| m.len()).unwrap_or(0)),
                hashes: BTreeMap::from([(
                    "sha256".to_string(),
                    lockstep_core::hash::sha256_file(&abs)?,
                )]),
                path: Some(abs.to_string_lossy().into_owned()),
            });
        }
        lock.packages.push(Package {
            name,
            version: Some(version),
            sdist: None,
            wheels,
            tool: None,
        });
    }
    let first = lock.packages[0].version.clone();
    if let Some(other) = lock.packages.iter().find(|p| p.version != first) {
        return Err(Error::usage(format!(
            "the wheels in {} are not one set: {} is {}, {} is {}",
            dir.display(),
            lock.packages[0].name,
            first.unwrap_or_default(),
            other.name,
            other.version.clone().unwrap_or_default()
        ))
        .hint("a compiler and runtime of different versions do not work together; pass --manifest to name the set"));
    }
    Ok(lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> String {
        let h = "a".repeat(64);
        format!(
            "lock-version = \"1.0\"\ncreated-by = \"x\"\n[[packages]]\nname = \"demo-c\"\nversion = \"1.0\"\n\
             [[packages.wheels]]\nname = \"demo_c-1.0-py3-none-any.whl\"\npath = \"demo_c-1.0-py3-none-any.whl\"\nsize = 3\nhashes = {{ sha256 = \"{h}\" }}\n"
        )
    }

    #[test]
    fn sdists_are_checked_like_wheels() {
        let h = "b".repeat(64);
        let with = |name: &str| {
            format!(
                "{}[packages.sdist]\nname = \"{name}\"\npath = \"{name}\"\nsize = 9\nhashes = {{ sha256 = \"{h}\" }}\n",
                sample()
            )
        };
        let lock = Lock::parse(&with("demo_c-1.0.tar.gz"), Path::new("m")).expect("valid");
        assert!(lock.packages[0].sdist.is_some());
        for (name, why) in [
            ("demo_c-2.0.tar.gz", "is version 2.0"),
            ("other-1.0.tar.gz", "listed under package"),
            ("demo_c-1.0.zip", "not a valid sdist file name"),
        ] {
            let err = Lock::parse(&with(name), Path::new("m")).unwrap_err();
            assert!(err.message.contains(why), "{name}: {}", err.message);
        }
    }

    #[test]
    fn reads_a_lock() {
        let lock = Lock::parse(&sample(), Path::new("m")).expect("valid");
        assert_eq!(lock.packages[0].name, "demo-c");
    }

    #[test]
    fn refuses_escaping_paths_and_mismatched_names() {
        for (from, to, why) in [
            ("path = \"demo_c", "path = \"../demo_c", "stay beside"),
            ("path = \"demo_c", "path = \"/abs/demo_c", "stay beside"),
            (
                "\nversion = \"1.0\"",
                "\nversion = \"2.0\"",
                "is version 1.0",
            ),
            ("name = \"demo-c\"", "name = \"other\"", "listed under"),
            (
                "lock-version = \"1.0\"",
                "lock-version = \"2.0\"",
                "not supported",
            ),
            ("size = 3\n", "", "no size"),
        ] {
            let text = sample().replacen(from, to, 1);
            let err = Lock::parse(&text, Path::new("m")).expect_err(why).render();
            assert!(err.contains(why), "{why}: {err}");
        }
    }

    #[test]
    fn versions_are_required_packages_unique_and_lock_versions_plain() {
        let twice = sample() + &sample()[sample().find("[[packages]]").unwrap()..];
        for (text, why) in [
            (
                sample().replacen("\nversion = \"1.0\"", "", 1),
                "has no version",
            ),
            (
                sample().replacen("\nversion = \"1.0\"", "\nversion = \"\"", 1),
                "has no version",
            ),
            (
                sample().replacen("\nversion = \"1.0\"", "\nversion = \"one\"", 1),
                "not a PEP 440 version",
            ),
            (twice, "listed twice"),
            (
                sample().replacen("\"1.0\"", "\"1.0\\u0000\"", 1),
                "not supported",
            ),
            (sample().replacen("\"1.0\"", "\"1.\"", 1), "not supported"),
        ] {
            let err = Lock::parse(&text, Path::new("m")).expect_err(why).render();
            assert!(err.contains(why), "{why}: {err}");
        }
    }

    #[test]
    fn a_wheel_whose_name_does_not_parse_is_named_not_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("demo_c-1.0-py3-none-any.whl"), "x").unwrap();
        std::fs::write(dir.path().join("demo_c-notaversion-py3-none-any.whl"), "x").unwrap();
        let err = from_dir(dir.path()).unwrap_err().render();
        assert!(err.contains("demo_c-notaversion-py3-none-any.whl"), "{err}");
        std::fs::remove_file(dir.path().join("demo_c-1.0-py3-none-any.whl")).unwrap();
        let err = from_dir(dir.path()).unwrap_err().render();
        assert!(!err.contains("no wheels"), "{err}");
    }

    #[test]
    fn variants_pick_their_manifest_beside_the_given_one() {
        let dir = tempfile::tempdir().unwrap();
        let release = dir.path().join(FILE);
        std::fs::write(&release, "").unwrap();
        std::fs::write(dir.path().join("pylock.asserts.toml"), "").unwrap();
        assert_eq!(variant_manifest(&release, None).unwrap(), release);
        assert_eq!(
            variant_manifest(&release, Some("release")).unwrap(),
            release
        );
        for from in [release.as_path(), dir.path()] {
            assert_eq!(
                variant_manifest(from, Some("asserts")).unwrap(),
                dir.path().join("pylock.asserts.toml")
            );
        }
        let err = variant_manifest(&release, Some("debug")).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.message.contains("no manifest for variant debug"),
            "{}",
            err.message
        );
        let err = variant_manifest(&release, Some("../x")).unwrap_err();
        assert!(
            err.message.contains("not a variant name"),
            "{}",
            err.message
        );
    }

    #[test]
    fn round_trips() {
        let lock = Lock::parse(&sample(), Path::new("m")).expect("valid");
        let text = lock.to_toml().expect("encodes");
        let again = Lock::parse(&text, Path::new("m")).expect("valid");
        assert_eq!(again.packages[0].wheels[0].size, Some(3));
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_a_lock_or_an_error(text in "(\\PC|\n|\\[|\\]|=|\"){0,300}") {
            let _ = Lock::parse(&text, Path::new("m"));
        }
    }
}
