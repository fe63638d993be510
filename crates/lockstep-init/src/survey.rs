//! What a repository already holds that lockstep.toml should name: the
//! upstream pin (a submodule, a pin file, or a pin inside a larger file),
//! the Python packages, the test suites, and the lit suites.
//!
//! Only the files git knows are looked at (`git ls-files`: tracked, and
//! untracked ones that are not ignored), so a build directory or a venv
//! never counts, and a submodule's own files are not the superproject's.
//! Every file read goes through `lockstep_core::fs::open_tree_file`: opened
//! without blocking, a regular file or refused (a link to a FIFO, a device
//! or a kernel file such as `/proc/kmsg` would never end), bounded. A file
//! read for its name (a pin file, a `.bzl` file, pyproject.toml, setup.py,
//! .gitmodules) that cannot be read, or is not a regular file, is an error
//! naming it (exit 2, nothing written): a setting guessed from half the
//! files would be wrong in a way nobody sees. A `*.json` file is only a
//! candidate config when it is a small regular file; any other is passed
//! over, as a large one is.
//!
//! Names are data: a path, URL or name that would go into lockstep.toml and
//! holds a control character or a bidi control ([`check_names`]) is refused
//! with the name spelled out, never written (a newline in a directory's
//! name would otherwise write settings of its own).

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use lockstep_core::error::{hides_text, spelled};
use lockstep_core::Error;
use lockstep_git::Repo;
use lockstep_pin::{ArchiveSpec, Pin, PinSpec};
use regex::Regex;
use serde::Serialize;

/// The most files looked at (a monorepo's listing beyond this is cut and
/// said so).
pub const MAX_FILES: usize = 2_000_000;
/// The largest file read (a pyproject.toml, a pin file, a .bzl file).
pub const MAX_READ_BYTES: u64 = 1 << 20;
/// The most packages written (more are listed in a comment).
pub const MAX_PACKAGES: usize = 32;

/// The URL a pin that looks like LLVM's is assumed to follow.
pub const LLVM_URL: &str = "https://github.com/llvm/llvm-project.git";
/// LLVM's source archive of a commit (a `.bzl` pin's checksum is its sha256).
pub const LLVM_ARCHIVE: &str = "https://github.com/llvm/llvm-project/archive/{commit}.tar.gz";

/// Where the upstream revision is pinned, in the settings `[integrate]`
/// reads it back from (exactly one of `submodule`, `pin-file` and `pin`:
/// the one configuration form of a pin, lockstep_pin's), with the upstream
/// URL to follow and why lockstep took it for the upstream's pin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FoundPin {
    pub submodule: Option<String>,
    pub pin_file: Option<String>,
    pub pin: Option<PinSpec>,
    /// What `upstream-url` is set to.
    pub upstream_url: String,
    /// The comment above the pin's setting.
    pub why: String,
    /// The comment above `upstream-url`.
    pub url_note: String,
}

impl FoundPin {
    /// A submodule from .gitmodules, with its URL there when it has one.
    pub fn submodule(path: String, url: Option<String>) -> FoundPin {
        let url_note = match url {
            Some(_) => "Its URL in .gitmodules; when that is your fork, put the upstream's here.",
            None => ".gitmodules gives no URL: the upstream's.",
        };
        FoundPin {
            submodule: Some(path),
            pin_file: None,
            pin: None,
            upstream_url: url.unwrap_or_else(|| LLVM_URL.to_string()),
            why: "The submodule in .gitmodules that looks like LLVM.".into(),
            url_note: url_note.into(),
        }
    }

    /// A file holding one 40-hex revision, named for LLVM.
    pub fn file(path: String) -> FoundPin {
        FoundPin {
            submodule: None,
            pin_file: Some(path),
            pin: None,
            upstream_url: LLVM_URL.into(),
            why: "A file holding one 40-hex revision, named for LLVM.".into(),
            url_note: "Guessed from the file's name: change it if you pin another upstream.".into(),
        }
    }

    /// A revision inside a larger file found by `pattern`, maybe with the
    /// sha256 of LLVM's source archive beside it (`sha256_pattern`).
    pub fn pattern(path: String, pattern: String, sha256_pattern: Option<String>) -> FoundPin {
        let why = format!(
            "The revision inside {path}{}.",
            if sha256_pattern.is_some() {
                ", with the sha256 of LLVM's source archive beside it"
            } else {
                ""
            }
        );
        FoundPin {
            submodule: None,
            pin_file: None,
            pin: Some(PinSpec {
                file: path,
                pattern: Some(pattern),
                sha256: sha256_pattern.map(|pattern| ArchiveSpec {
                    pattern,
                    archive: LLVM_ARCHIVE.into(),
                }),
            }),
            upstream_url: LLVM_URL.into(),
            why,
            url_note: "Guessed from the variable's name: change it if you pin another upstream."
                .into(),
        }
    }

    /// The pin these settings make, as `[integrate]` will read it back.
    pub fn pin(&self) -> Result<Pin, Error> {
        Pin::from_settings(
            "[integrate]",
            self.submodule.as_deref(),
            self.pin_file.as_deref(),
            self.pin.as_ref(),
        )
    }

    /// The path it lives at, as `--pin` names it.
    pub fn path(&self) -> &str {
        self.submodule
            .as_deref()
            .or(self.pin_file.as_deref())
            .or(self.pin.as_ref().map(|p| p.file.as_str()))
            .unwrap_or_default()
    }

    /// What it is, in words (the pin's own description).
    pub fn describe(&self) -> String {
        self.pin()
            .map(|p| p.describe())
            .unwrap_or_else(|_| self.path().to_string())
    }
}

/// A Python package: a directory with pyproject.toml or setup.py.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FoundPackage {
    /// The distribution name (`[project] name`, setup.py's `name=`, or the
    /// directory's name).
    pub name: String,
    /// Relative to the directory lockstep.toml goes in (`.` for itself).
    pub source: String,
    /// Where the name came from, for the comment.
    pub named_by: String,
}

/// Everything found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Survey {
    pub pin: Option<FoundPin>,
    pub packages: Vec<FoundPackage>,
    /// Directories with native suites (`*.suite.toml`) or iree-test-suites
    /// cases, for `[test] paths`.
    pub test_paths: Vec<String>,
    /// iree-test-suites configs (`config_name` and compile flags).
    pub suite_configs: Vec<String>,
    /// `lit.cfg.py` files (a comment saying how to run each with lit).
    pub lit_configs: Vec<String>,
    /// Directories of pytest tests (`test_*.py`, `*_test.py` under a
    /// `tests` or `test` directory), for a `[[test.pytest]]` suite.
    pub pytest_paths: Vec<String>,
    /// What was seen and left out, for comments.
    pub notes: Vec<String>,
}

/// Surveys the repository whose work tree holds `dir` (where lockstep.toml
/// goes), choosing the pin at `chosen` (`--pin`) when several are found.
pub fn survey(dir: &Path, chosen: Option<&str>) -> Result<Survey, Error> {
    let repo = Repo::new(dir);
    let files = list_files(&repo)?;
    let mut survey = Survey::default();
    if files.len() >= MAX_FILES {
        survey.notes.push(format!(
            "the repository lists more than {MAX_FILES} files; only the first {MAX_FILES} were looked at"
        ));
    }
    let mut pins = submodule_pins(&repo, dir)?;
    pins.extend(file_pins(dir, &files)?);
    survey.pin = choose_pin(pins, chosen)?;
    survey.packages = packages(dir, &files, &mut survey.notes)?;
    drop_same_names(&mut survey.packages, &mut survey.notes);
    (survey.test_paths, survey.suite_configs) = tests(dir, &files)?;
    survey.lit_configs = files
        .iter()
        .filter(|f| file_name(f) == "lit.cfg.py")
        .cloned()
        .collect();
    survey.pytest_paths = pytest_paths(&files, &survey.lit_configs, &mut survey.notes);
    check_names(&survey)?;
    Ok(survey)
}

/// Refuses a survey holding a name lockstep.toml cannot carry as it reads:
/// a path, URL or name with a control character (a newline would end the
/// comment or value it is in, ESC and CR hide text) or a bidi control
/// ([`hides_text`]). Exit 2, naming the setting and the name spelled out.
pub fn check_names(survey: &Survey) -> Result<(), Error> {
    let mut names: Vec<(&str, &str)> = Vec::new();
    if let Some(found) = &survey.pin {
        if let Some(path) = &found.submodule {
            names.push((
                "the submodule's path in .gitmodules ([integrate] submodule)",
                path,
            ));
        }
        if let Some(path) = &found.pin_file {
            names.push(("the pin file ([integrate] pin-file)", path));
        }
        if let Some(spec) = &found.pin {
            names.push(("the file holding the pin ([integrate] pin)", &spec.file));
            if let Some(pattern) = &spec.pattern {
                names.push(("the pin's pattern", pattern));
            }
            if let Some(sum) = &spec.sha256 {
                names.push(("the checksum's pattern", &sum.pattern));
            }
        }
        names.push((
            "the submodule's URL in .gitmodules ([integrate] upstream-url)",
            &found.upstream_url,
        ));
    }
    for package in &survey.packages {
        names.push((
            "a package's directory ([[pkg.package]] source)",
            &package.source,
        ));
        names.push(("a package's name ([[pkg.package]] name)", &package.name));
        names.push(("where a package's name came from", &package.named_by));
    }
    for path in &survey.test_paths {
        names.push(("a suite directory ([test] paths)", path));
    }
    for path in &survey.suite_configs {
        names.push(("an iree-test-suites config ([test] suite-configs)", path));
    }
    for path in &survey.lit_configs {
        names.push(("a lit suite's configuration", path));
    }
    for path in &survey.pytest_paths {
        names.push(("a pytest directory ([[test.pytest]] paths)", path));
    }
    for note in &survey.notes {
        names.push(("a note", note));
    }
    check_found_pin(survey)?;
    for (what, name) in names {
        if let Some(c) = name.chars().find(|c| hides_text(*c)) {
            return Err(Error::usage(format!(
                "lockstep init cannot write {what} `{}` into lockstep.toml: it holds U+{:04X}, a control character",
                spelled(name),
                u32::from(c)
            ))
            .cause("a name in lockstep.toml must read as it is: a newline would write settings of its own, and CR, ESC or a bidi control would hide or reorder text")
            .hint("rename it (`git mv`), or take it out of the repository's files and write that setting by hand (docs/getting-started.md); nothing was written"));
        }
    }
    Ok(())
}

/// The files git knows below `dir` (relative to it, `/`-separated):
/// tracked ones, and untracked ones that are not ignored.
fn list_files(repo: &Repo) -> Result<Vec<String>, Error> {
    let listing = repo.git(&[
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
    ])?;
    let mut files: Vec<String> = listing
        .split('\0')
        .filter(|f| !f.is_empty())
        .take(MAX_FILES)
        .map(str::to_string)
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map(|(p, _)| p).unwrap_or(".")
}

/// Reads `rel` below `dir`, at most [`MAX_READ_BYTES`]; a file that cannot
/// be read, or is not a regular file (a link to a FIFO, a device, a kernel
/// file: refused at once, never waited on), is an error naming it, a larger
/// one `None`.
fn read_bounded(dir: &Path, rel: &str) -> Result<Option<String>, Error> {
    let path = dir.join(rel);
    let unreadable = |e: Error| {
        Error::usage(format!(
            "cannot read {}",
            spelled(&path.display().to_string())
        ))
            .cause(e.to_string())
            .hint("lockstep init reads it for its name (a pin, a package, a config): make it a readable regular file or remove it from the repository, then run `lockstep init` again; nothing was written")
    };
    let (file, len) =
        lockstep_core::fs::open_tree_file("the file", &path, u64::MAX).map_err(unreadable)?;
    if len > MAX_READ_BYTES {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(MAX_READ_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(Error::failed(e.to_string())))?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Ok(None);
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Whether a submodule (by its path or URL) looks like an LLVM checkout:
/// the upstream the projects lockstep serves pin.
fn looks_like_llvm(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.contains("llvm")
}

/// Submodules that look like the pinned upstream, from .gitmodules.
fn submodule_pins(repo: &Repo, dir: &Path) -> Result<Vec<FoundPin>, Error> {
    // Present, even as a link to nothing or to a FIFO: reading it then
    // says why not (git would wait on a FIFO forever).
    if dir.join(".gitmodules").symlink_metadata().is_err() {
        return Ok(Vec::new());
    }
    if read_bounded(dir, ".gitmodules")?.is_none() {
        return Ok(Vec::new());
    }
    let out = repo.try_git_env(
        &[
            "config",
            "-z",
            "--file",
            ".gitmodules",
            "--get-regexp",
            r"^submodule\..*\.(path|url)$",
        ],
        &[],
        None,
    )?;
    // Exit 1: no submodule entries at all.
    if out.code != 0 {
        return Ok(Vec::new());
    }
    let mut paths: Vec<(String, String)> = Vec::new();
    let mut urls: Vec<(String, String)> = Vec::new();
    // `-z`: "KEY\nVALUE\0" per entry, so a value holding a newline is read
    // whole (and then refused by check_names), never split into two.
    for entry in out.stdout.split('\0') {
        let Some((key, value)) = entry.split_once('\n') else {
            continue;
        };
        if let Some(name) = key
            .strip_prefix("submodule.")
            .and_then(|k| k.strip_suffix(".path"))
        {
            paths.push((name.to_string(), value.to_string()));
        } else if let Some(name) = key
            .strip_prefix("submodule.")
            .and_then(|k| k.strip_suffix(".url"))
        {
            urls.push((name.to_string(), value.to_string()));
        }
    }
    Ok(paths
        .into_iter()
        .map(|(name, path)| {
            let url = urls
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, u)| u.clone());
            (path, url)
        })
        .filter(|(path, url)| looks_like_llvm(path) || url.as_deref().is_some_and(looks_like_llvm))
        .map(|(path, url)| FoundPin::submodule(path, url))
        .collect())
}

/// The pin found must be one `[integrate]` will read back (lockstep_pin's
/// own checks: a relative path below the top, not an option, ...); a path
/// git accepted in .gitmodules may still be none (`//host/x.git`). Refused
/// naming where it came from, before anything is written.
fn check_found_pin(survey: &Survey) -> Result<(), Error> {
    let Some(found) = &survey.pin else {
        return Ok(());
    };
    let what = if found.submodule.is_some() {
        "the submodule's path in .gitmodules ([integrate] submodule)"
    } else if found.pin_file.is_some() {
        "the pin file ([integrate] pin-file)"
    } else {
        "the file holding the pin ([integrate] pin)"
    };
    // git (and so [integrate] upstream-url) would read a URL starting
    // with `-` as an option: lockstep.toml refuses it, so init does first.
    if found.upstream_url.starts_with('-') {
        return Err(Error::usage(format!(
            "lockstep init cannot write the submodule's URL in .gitmodules `{}` as [integrate] upstream-url: it starts with `-`, which git reads as an option",
            lockstep_core::error::shown(&found.upstream_url, 80)
        ))
        .hint("fix the URL in .gitmodules, or write [integrate] by hand (docs/getting-started.md); nothing was written"));
    }
    found.pin().map(|_| ()).map_err(|e| {
        Error::usage(format!(
            "lockstep init cannot write {what} `{}` into lockstep.toml: lockstep would refuse it",
            lockstep_core::error::shown(found.path(), 80)
        ))
        .cause(e.message)
        .hint("fix it where it came from (or pass --pin PATH), or write [integrate] by hand (docs/getting-started.md); nothing was written")
    })
}

/// Pin files (`*llvm*version*`, `*llvm*hash*`, `*llvm*commit*` holding one
/// 40-hex revision) and pins inside `.bzl` files (`LLVM_COMMIT = "..."`).
fn file_pins(dir: &Path, files: &[String]) -> Result<Vec<FoundPin>, Error> {
    let hex40 = Regex::new(r"^[0-9a-f]{40}$").expect("a valid pattern");
    let commit =
        Regex::new(r#"(?m)^\s*(\w*LLVM\w*_COMMIT)\s*=\s*"[0-9a-f]{40}""#).expect("a valid pattern");
    let checksum =
        Regex::new(r#"(?m)^\s*(\w*LLVM\w*_SHA256)\s*=\s*"[0-9a-f]{64}""#).expect("a valid pattern");
    let mut found = Vec::new();
    for rel in files {
        let name = file_name(rel).to_ascii_lowercase();
        let pin_file_name = name.contains("llvm")
            && ["version", "hash", "commit", "rev"]
                .iter()
                .any(|w| name.contains(w))
            && !name.ends_with(".bzl")
            && !name.ends_with(".py")
            && !name.ends_with(".cmake");
        if pin_file_name {
            let Some(text) = read_bounded(dir, rel)? else {
                continue;
            };
            let lines: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .collect();
            if let [only] = lines.as_slice() {
                if hex40.is_match(only) {
                    found.push(FoundPin::file(rel.clone()));
                }
            }
        } else if name.ends_with(".bzl") {
            let Some(text) = read_bounded(dir, rel)? else {
                continue;
            };
            let commits: Vec<&str> = commit
                .captures_iter(&text)
                .filter_map(|c| c.get(1).map(|m| m.as_str()))
                .collect();
            let [variable] = commits.as_slice() else {
                continue;
            };
            let sums: Vec<&str> = checksum
                .captures_iter(&text)
                .filter_map(|c| c.get(1).map(|m| m.as_str()))
                .collect();
            found.push(FoundPin::pattern(
                rel.clone(),
                format!(r#"{variable} = "([0-9a-f]{{40}})""#),
                match sums.as_slice() {
                    [sum] => Some(format!(r#"{sum} = "([0-9a-f]{{64}})""#)),
                    _ => None,
                },
            ));
        }
    }
    Ok(found)
}

/// One pin, or none; several are an error unless `--pin` names one.
fn choose_pin(pins: Vec<FoundPin>, chosen: Option<&str>) -> Result<Option<FoundPin>, Error> {
    if let Some(chosen) = chosen {
        let chosen = chosen.trim_end_matches('/');
        return match pins.iter().find(|p| p.path() == chosen) {
            Some(pin) => Ok(Some(pin.clone())),
            None => Err(Error::usage(format!(
                "--pin {} is not a pin lockstep init found",
                spelled(chosen)
            ))
            .cause(if pins.is_empty() {
                "found none: no submodule or file that looks like an LLVM pin".to_string()
            } else {
                format!(
                    "found: {}",
                    pins.iter().map(|p| spelled(&p.describe())).collect::<Vec<_>>().join(", ")
                )
            })
            .hint("name one of those, or leave --pin out and set [integrate] by hand (docs/integrate.md); nothing was written")),
        };
    }
    match pins.len() {
        0 | 1 => Ok(pins.into_iter().next()),
        _ => Err(Error::usage(format!(
            "found {} candidate pins of the upstream: {}",
            pins.len(),
            pins.iter().map(|p| spelled(&p.describe())).collect::<Vec<_>>().join(", ")
        ))
        .hint(format!(
            "choose the one lockstep integrate moves with --pin PATH (e.g. --pin {}); nothing was written",
            spelled(pins[0].path())
        ))),
    }
}

/// Path components that hold code that is not the project's packages.
const NOT_PACKAGES: &[&str] = &[
    "test",
    "tests",
    "testing",
    "example",
    "examples",
    "samples",
    "docs",
    "third_party",
    "third-party",
    "external",
    "externals",
    "vendor",
];

/// The directories with pyproject.toml or setup.py, outside tests,
/// examples, docs and vendored code.
fn packages(
    dir: &Path,
    files: &[String],
    notes: &mut Vec<String>,
) -> Result<Vec<FoundPackage>, Error> {
    let mut dirs: BTreeSet<&str> = BTreeSet::new();
    for rel in files {
        let name = file_name(rel);
        if name != "pyproject.toml" && name != "setup.py" {
            continue;
        }
        let folder = parent(rel);
        let skipped = folder
            .split('/')
            .any(|c| c.starts_with('.') && c != "." || NOT_PACKAGES.contains(&c));
        if !skipped {
            dirs.insert(folder);
        }
    }
    let mut found = Vec::new();
    for folder in dirs {
        if found.len() == MAX_PACKAGES {
            notes.push(format!(
                "more than {MAX_PACKAGES} Python packages found; only the first {MAX_PACKAGES} are listed"
            ));
            break;
        }
        found.push(package(dir, folder)?);
    }
    Ok(found)
}

/// Packages whose names are one name for lockstep pkg (PEP 503: `hello`,
/// `Hello`, `he_llo`) cannot all be listed: lockstep would refuse the file
/// init wrote. None of them is listed, and a note names each with where its
/// name came from, so the one to build is added by hand.
fn drop_same_names(found: &mut Vec<FoundPackage>, notes: &mut Vec<String>) {
    let key = |p: &FoundPackage| lockstep_python::wheel::normalize(&p.name);
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for p in found.iter() {
        *counts.entry(key(p)).or_default() += 1;
    }
    for (name, _) in counts.iter().filter(|(_, n)| **n > 1) {
        let which: Vec<String> = found
            .iter()
            .filter(|p| &key(p) == name)
            .map(|p| format!("{} ({})", p.source, p.named_by))
            .collect();
        notes.push(format!(
            "{} packages are named `{name}`: {}; none is listed, since lockstep.toml names each package once: add the one to build as [[pkg.package]] (docs/pkg.md)",
            which.len(),
            which.join(", ")
        ));
    }
    found.retain(|p| counts.get(&key(p)).is_some_and(|n| *n == 1));
}

fn package(dir: &Path, folder: &str) -> Result<FoundPackage, Error> {
    // Present, even as a link to nothing: reading it then says why not.
    let present = |rel: &str| dir.join(rel).symlink_metadata().is_ok();
    let pyproject = join(folder, "pyproject.toml");
    if present(&pyproject) {
        if let Some(text) = read_bounded(dir, &pyproject)? {
            let name = toml::from_str::<toml::Table>(&text)
                .ok()
                .and_then(|t| t.get("project")?.get("name")?.as_str().map(str::to_string));
            if let Some(name) = name.filter(|n| valid_name(n)) {
                return Ok(FoundPackage {
                    name,
                    source: folder.to_string(),
                    named_by: format!("[project] name of {pyproject}"),
                });
            }
        }
    }
    let setup = join(folder, "setup.py");
    if present(&setup) {
        if let Some(text) = read_bounded(dir, &setup)? {
            let name_arg = Regex::new(r#"\bname\s*=\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["']"#)
                .expect("a valid pattern");
            if let Some(name) = name_arg.captures(&text).and_then(|c| c.get(1)) {
                return Ok(FoundPackage {
                    name: name.as_str().to_string(),
                    source: folder.to_string(),
                    named_by: format!("name= in {setup}"),
                });
            }
            // `name=NAME` with `NAME = "..."` set earlier (torch-mlir's
            // setup.py): the first assignment.
            let name_var = Regex::new(r"\bname\s*=\s*([A-Za-z_][A-Za-z0-9_]*)\s*[,)]")
                .expect("a valid pattern");
            for var in name_var.captures_iter(&text).filter_map(|c| c.get(1)) {
                let assigned = Regex::new(&format!(
                    r#"(?m)^\s*{}\s*=\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["']"#,
                    regex::escape(var.as_str())
                ))
                .expect("a valid pattern");
                if let Some(name) = assigned.captures(&text).and_then(|c| c.get(1)) {
                    return Ok(FoundPackage {
                        name: name.as_str().to_string(),
                        source: folder.to_string(),
                        named_by: format!("name={} in {setup}", var.as_str()),
                    });
                }
            }
        }
    }
    let fallback = if folder == "." {
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "package".into())
    } else {
        file_name(folder).to_string()
    };
    Ok(FoundPackage {
        name: fallback
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '-'
                }
            })
            .collect(),
        source: folder.to_string(),
        named_by: "the directory's name (no [project] name found: check it)".into(),
    })
}

/// A distribution name PEP 508 accepts.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

fn join(folder: &str, name: &str) -> String {
    if folder == "." {
        name.to_string()
    } else {
        format!("{folder}/{name}")
    }
}

/// The most pytest directories proposed (a large tree lists the rest in a note).
const MAX_PYTEST_PATHS: usize = 8;

/// The directories of pytest tests: for each `test_*.py` or `*_test.py`
/// with a `tests` or `test` directory in its path, that path up to the
/// first such directory (`tests`, `python/test`), outside lit suites and
/// `third_party`; each once, in order.
fn pytest_paths(files: &[String], lit_configs: &[String], notes: &mut Vec<String>) -> Vec<String> {
    let lit_dirs: Vec<&str> = lit_configs.iter().map(|c| parent(c)).collect();
    let mut found: BTreeSet<String> = BTreeSet::new();
    for rel in files {
        let name = file_name(rel);
        let is_test =
            name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"));
        if !is_test || rel.split('/').any(|part| part == "third_party") {
            continue;
        }
        if lit_dirs
            .iter()
            .any(|d| !d.is_empty() && rel.starts_with(&format!("{d}/")))
        {
            continue;
        }
        let parts: Vec<&str> = rel.split('/').collect();
        let Some(at) = parts[..parts.len().saturating_sub(1)]
            .iter()
            .position(|p| *p == "tests" || *p == "test")
        else {
            continue;
        };
        found.insert(parts[..=at].join("/"));
    }
    // A directory inside another found one is covered by it.
    let all: Vec<String> = found.iter().cloned().collect();
    let mut paths: Vec<String> = all
        .iter()
        .filter(|p| {
            !all.iter()
                .any(|q| q != *p && p.starts_with(&format!("{q}/")))
        })
        .cloned()
        .collect();
    if paths.len() > MAX_PYTEST_PATHS {
        notes.push(format!(
            "pytest tests in {} directories; [[test.pytest]] names the first {MAX_PYTEST_PATHS}",
            paths.len()
        ));
        paths.truncate(MAX_PYTEST_PATHS);
    }
    paths
}

/// `[test] paths` (the top directories holding native suites or
/// iree-test-suites cases) and `[test] suite-configs`.
fn tests(dir: &Path, files: &[String]) -> Result<(Vec<String>, Vec<String>), Error> {
    let all: BTreeSet<&str> = files.iter().map(String::as_str).collect();
    let mut paths: BTreeSet<String> = BTreeSet::new();
    let mut configs = Vec::new();
    let top = |rel: &str| -> String {
        match rel.split_once('/') {
            Some((first, _)) => first.to_string(),
            None => ".".to_string(),
        }
    };
    for rel in files {
        let name = file_name(rel);
        if name.ends_with(".suite.toml") {
            paths.insert(top(rel));
        } else if name == "run_module_io_flags.txt" {
            let folder = parent(rel);
            let has_model = ["model.mlir", "model.mlirbc"]
                .iter()
                .any(|m| all.contains(join(folder, m).as_str()));
            if has_model {
                paths.insert(top(rel));
            }
        } else if name.ends_with(".json") || name.ends_with(".json5") {
            // Only small files can be configs; reading every JSON file of a
            // large tree would be slow for nothing.
            // Nor other than regular files: a JSON name on a FIFO or a
            // device is not a config (and would never end).
            let small =
                std::fs::metadata(dir.join(rel)).is_ok_and(|m| m.is_file() && m.len() <= 64 << 10);
            if small {
                if let Some(text) = read_bounded(dir, rel)? {
                    if text.contains("\"config_name\"") && text.contains("iree_compile_flags") {
                        configs.push(rel.clone());
                    }
                }
            }
        }
    }
    Ok((paths.into_iter().collect(), configs))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file init cannot read is named spelled, on one line, whatever its
    /// name holds (a newline would split the message into two).
    #[test]
    fn an_unreadable_file_is_named_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let name = "a\nb\tllvm_version.txt";
        std::os::unix::fs::symlink("/dev/zero", dir.path().join(name)).unwrap();
        let err = read_bounded(dir.path(), name).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let text = format!("{}\n{}", err.message, err.causes.join("\n"));
        assert!(text.contains(&spelled(name)), "{text}");
        assert_eq!(text.lines().count(), 2, "{text:?}");
    }

    /// Two packages of one name (scikit-build-sample-projects has them)
    /// are both left out, with a note naming each: a file init writes is
    /// one lockstep reads.
    #[test]
    fn packages_of_one_name_are_named_and_left_out() {
        let package = |name: &str, source: &str| FoundPackage {
            name: name.into(),
            source: source.into(),
            named_by: format!("[project] name of {source}/pyproject.toml"),
        };
        let mut found = vec![
            package("hello", "a"),
            package("Hello", "b"),
            package("other", "c"),
        ];
        let mut notes = Vec::new();
        drop_same_names(&mut found, &mut notes);
        assert_eq!(
            found.iter().map(|p| p.source.as_str()).collect::<Vec<_>>(),
            ["c"]
        );
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("a ([project] name of a/pyproject.toml)") && notes[0].contains("b ("),
            "{}",
            notes[0]
        );
    }

    /// A .gitmodules URL git would read as an option is refused naming
    /// .gitmodules (fuzz: init-repo wrote it, and the loader refused it).
    #[test]
    fn a_submodule_url_starting_with_a_dash_names_gitmodules() {
        let survey = Survey {
            pin: Some(FoundPin::submodule(
                "third_party/llvm-project".into(),
                Some("-1 https://github.com/llvm/llvm-project.git".into()),
            )),
            ..Survey::default()
        };
        let err = check_names(&survey).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.message.contains(".gitmodules") && err.message.contains("starts with `-`"),
            "{}",
            err.message
        );
    }

    /// A submodule path git accepts but lockstep would not read back is
    /// refused naming .gitmodules, not lockstep.toml (fuzz: init-repo).
    #[test]
    fn a_submodule_path_lockstep_would_refuse_names_gitmodules() {
        let survey = Survey {
            pin: Some(FoundPin::submodule(
                "//github.com/llvm/llvm-project.git".into(),
                None,
            )),
            ..Survey::default()
        };
        let err = check_names(&survey).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.message.contains("the submodule's path in .gitmodules")
                && err.message.contains("//github.com/llvm/llvm-project.git"),
            "{}",
            err.message
        );
    }

    /// A refused name says where it came from: a submodule's path is read
    /// from .gitmodules (as its URL is), not from a file of that name.
    #[test]
    fn a_refused_submodule_path_names_gitmodules() {
        let survey = Survey {
            pin: Some(FoundPin::submodule("llvm\u{1b}]0;x".into(), None)),
            ..Survey::default()
        };
        let err = check_names(&survey).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.message.contains("the submodule's path in .gitmodules")
                && err.message.contains("llvm\\u{1b}]0;x"),
            "{}",
            err.message
        );
    }
}
