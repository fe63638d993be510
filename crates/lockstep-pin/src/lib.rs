//! The pin: where a project records the upstream revision it builds, as
//! one type for every kind, read, staged, described and checked in one
//! place. integrate steps it, release bumps and records it, pkg stamps it
//! into wheels, history reads it for a run's provenance, init writes its
//! configuration; none of them knows which kind it is.
//!
//! Kinds:
//! - a **submodule**: git's own pin, a gitlink in the superproject's tree;
//!   upstream's history is the submodule's checkout, and the pinned commit
//!   may carry patches on top of upstream ([`Pin::carries_patches`]);
//! - a **pin file**: one line of 40 hex digits (`llvm-project.version`);
//! - a **pin inside a larger file**, found by a regular expression whose
//!   first group is the commit (TensorFlow, XLA and TFRT pin LLVM in
//!   `third_party/llvm/workspace.bzl` as `LLVM_COMMIT = "..."`), optionally
//!   with a companion checksum: the sha256 of the upstream's source archive
//!   for that commit (`LLVM_SHA256 = "..."`), found by its own pattern and
//!   computed by downloading the archive ([`Checksums`]).
//!
//! For the two kinds kept in files, upstream's history is a bare clone of
//! the upstream URL under the state directory ([`Pin::upstream_history`]).
//! Writing a pin keeps every other byte of its file; a pattern must match
//! exactly once (zero or two matches are an error naming the file), so a
//! pin is never written to the wrong place. A pin with a checksum is never
//! written without it: a download that fails is an error naming the URL.
//!
//! Adding a kind: its settings ([`Pin::from_settings`]), a variant of
//! `Kind` and its arms in this crate, its docs (docs/integrate.md) and
//! tests; nothing outside this crate changes (`tests/testsuite/docs.rs` checks that no
//! other crate names a kind).

mod archive;
mod checkout;
mod superproject;
mod words;

use std::path::Path;

use lockstep_core::Error;
use lockstep_git::{Oid, Repo};
use regex::Regex;
use serde::Deserialize;

pub use archive::{Checksums, Downloads};
pub use superproject::{IndexEntry, PinDirt};
pub use words::Reproduce;

/// How a pin is written in lockstep.toml (`[integrate] pin = { ... }`).
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PinSpec {
    /// The file holding the pin, relative to the repository's top.
    pub file: String,
    /// A regular expression matching the pin exactly once in `file`, its
    /// first group the 40-hex commit. Without it the whole file is the pin.
    pub pattern: Option<String>,
    /// The companion checksum written with the commit.
    pub sha256: Option<ArchiveSpec>,
}

/// `sha256 = { pattern = '...', archive = "https://.../{commit}.tar.gz" }`.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ArchiveSpec {
    /// A regular expression matching the checksum exactly once, its first
    /// group the 64-hex sha256.
    pub pattern: String,
    /// The upstream's source archive of a commit; `{commit}` is replaced.
    pub archive: String,
}

/// A pin, checked: its path is inside the repository and its patterns
/// compile with one group each.
#[derive(Debug, Clone)]
pub struct Pin {
    path: String,
    kind: Kind,
    /// The setting it came from (`[integrate] pin`), for messages.
    setting: String,
    /// Not configured, only assumed: the default submodule of a table that
    /// names no pin ([`Pin::assumed`]).
    assumed: bool,
}

#[derive(Debug, Clone)]
enum Kind {
    /// A git submodule: the gitlink at `path` in the superproject's tree.
    Submodule,
    /// The whole file is one 40-hex line.
    File,
    /// A match inside a larger file, and maybe its archive's checksum.
    Pattern {
        commit: Regex,
        sha256: Option<Archive>,
    },
}

#[derive(Debug, Clone)]
struct Archive {
    pattern: Regex,
    url: String,
}

/// The longest pattern taken (a regular expression's size is bounded by
/// the regex crate too; this keeps the error readable).
const MAX_PATTERN: usize = 1024;
/// The largest file a pin is read from or written into, in the work tree
/// or at a revision (4 MiB: a pin file is one line, a file with a pin
/// inside is a few KiB of build source). A larger one is named as too
/// large, never guessed at.
pub const MAX_PIN_FILE: u64 = 4 << 20;

/// The keys a table gives a pin with.
struct Keys<'a> {
    table: &'a str,
    prefix: &'a str,
    default: Option<&'a str>,
}

impl Keys<'_> {
    fn pin(
        &self,
        submodule: Option<&str>,
        pin_file: Option<&str>,
        pin: Option<&PinSpec>,
    ) -> Result<Pin, Error> {
        let (table, prefix) = (self.table, self.prefix);
        let key = |name: &str| format!("{prefix}{name}");
        let given: Vec<String> = [
            pin.map(|_| key("pin")),
            pin_file.map(|_| key("pin-file")),
            submodule.map(|_| key("submodule")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let choices = format!(
            "{} = \"PATH\" for a submodule, {} = \"FILE\" for a one-line pin file, {} = {{ file, pattern }} for a pin inside a larger file",
            key("submodule"),
            key("pin-file"),
            key("pin")
        );
        if given.len() > 1 {
            return Err(Error::usage(format!(
                "{table} in lockstep.toml sets {}: one pin at a time",
                given.join(" and ")
            ))
            .hint(format!("keep one: {choices}")));
        }
        let setting = |name: &str| format!("{table} {}", key(name));
        match (pin, pin_file, submodule.or(self.default)) {
            (Some(spec), _, _) => Pin::from_spec(spec, &setting("pin")),
            (None, Some(file), _) => Pin::file(file, &setting("pin-file")),
            (None, None, Some(path)) => {
                let mut pin = Pin::submodule(path, &setting("submodule"))?;
                pin.assumed = submodule.is_none();
                Ok(pin)
            }
            (None, None, None) => Err(Error::usage(format!(
                "{table} in lockstep.toml: give exactly one of {}, {} and {}",
                key("pin-file"),
                key("submodule"),
                key("pin")
            ))
            .hint(choices)),
        }
    }
}

/// `pins` with one per path, sorted by path: where two name the same path,
/// the later one wins (list the more specific last: `[integrate]`'s pin,
/// which may be a pattern, after `[release] pin-files`).
pub fn one_per_path(pins: impl IntoIterator<Item = Pin>) -> Vec<Pin> {
    let mut by_path: std::collections::BTreeMap<String, Pin> = Default::default();
    for pin in pins {
        by_path.insert(pin.path.clone(), pin);
    }
    by_path.into_values().collect()
}

/// Where `[integrate]` pins upstream when it names nothing: LLVM's
/// submodule as IREE, torch-mlir and CIRCT keep it.
pub const DEFAULT_SUBMODULE: &str = "third_party/llvm-project";

impl Pin {
    /// The pin a configuration table describes (`table`: `[integrate]`),
    /// from its settings: `pin = { file, pattern, sha256 }`, `pin-file`, or
    /// `submodule` (the default, [`DEFAULT_SUBMODULE`], when none is set).
    /// Two of them at once is an error naming both: the one place a
    /// configuration becomes a pin.
    pub fn from_settings(
        table: &str,
        submodule: Option<&str>,
        pin_file: Option<&str>,
        pin: Option<&PinSpec>,
    ) -> Result<Pin, Error> {
        let keys = Keys {
            table,
            prefix: "",
            default: Some(DEFAULT_SUBMODULE),
        };
        keys.pin(submodule, pin_file, pin)
    }

    /// [`Pin::from_settings`] for a table whose keys carry `prefix`
    /// (`[[integrate.follow]]`'s `upstream-submodule`, `upstream-pin-file`,
    /// `upstream-pin`), with no default: exactly one must be given.
    pub fn from_prefixed_settings(
        table: &str,
        prefix: &str,
        submodule: Option<&str>,
        pin_file: Option<&str>,
        pin: Option<&PinSpec>,
    ) -> Result<Pin, Error> {
        let keys = Keys {
            table,
            prefix,
            default: None,
        };
        keys.pin(submodule, pin_file, pin)
    }

    /// A submodule at `path` in the superproject, its path checked.
    pub fn submodule(path: &str, what: &str) -> Result<Pin, Error> {
        check_path(path, what)?;
        Ok(Pin {
            path: path.to_string(),
            kind: Kind::Submodule,
            setting: what.to_string(),
            assumed: false,
        })
    }

    /// A pin file (one 40-hex line), its path checked.
    pub fn file(path: &str, what: &str) -> Result<Pin, Error> {
        check_path(path, what)?;
        Ok(Pin {
            path: path.to_string(),
            kind: Kind::File,
            setting: what.to_string(),
            assumed: false,
        })
    }

    /// The pin `spec` describes, checked before anything is touched. `what`
    /// names the setting in messages (`[integrate] pin`).
    pub fn from_spec(spec: &PinSpec, what: &str) -> Result<Pin, Error> {
        check_path(&spec.file, what)?;
        let kind = match (&spec.pattern, &spec.sha256) {
            (None, None) => Kind::File,
            (None, Some(_)) => {
                return Err(Error::usage(format!(
                    "{what} in lockstep.toml: `sha256` needs `pattern` (a checksum goes beside a pin inside a larger file)"
                ))
                .hint("add pattern = 'NAME = \"([0-9a-f]{40})\"' for the commit, or drop sha256"))
            }
            (Some(commit), sha256) => Kind::Pattern {
                commit: pattern(commit, &format!("{what}.pattern"))?,
                sha256: sha256
                    .as_ref()
                    .map(|a| {
                        check_archive_url(&a.archive, what)?;
                        Ok::<_, Error>(Archive {
                            pattern: pattern(&a.pattern, &format!("{what}.sha256.pattern"))?,
                            url: a.archive.clone(),
                        })
                    })
                    .transpose()?,
            },
        };
        Ok(Pin {
            path: spec.file.clone(),
            kind,
            setting: what.to_string(),
            assumed: false,
        })
    }

    /// Whether the pin was only assumed (the default submodule of a table
    /// that names none), not configured: a command that merely records pins
    /// (release cut, pkg's upstream revision) leaves out one it cannot read
    /// instead of failing; integrate itself still requires it.
    pub fn assumed(&self) -> bool {
        self.assumed
    }

    /// The setting the pin came from (`[integrate] pin-file`).
    pub fn setting(&self) -> &str {
        &self.setting
    }

    /// The path a checkout of the superproject must also check out to have
    /// the pinned upstream (a CI job's `submodules:`): the submodule's;
    /// none for a pin kept in a file (its history is cloned on demand).
    pub fn checkout_path(&self) -> Option<&str> {
        match self.kind {
            Kind::Submodule => Some(&self.path),
            _ => None,
        }
    }

    /// Whether the pinned commit may carry patches on top of upstream (a
    /// submodule's checkout is a branch of its own: carried patches,
    /// reverts, patched heads to export). A pin kept in a file names one of
    /// upstream's own commits.
    pub fn carries_patches(&self) -> bool {
        matches!(self.kind, Kind::Submodule)
    }

    /// The file the pin lives in, relative to the repository's top.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The commit the pin holds in `text` (the file's content).
    pub fn parse(&self, text: &str) -> Result<Oid, Error> {
        match &self.kind {
            Kind::Submodule => Err(Error::failed(format!(
                "internal: the submodule {} is not read from a file",
                self.path
            ))),
            Kind::File => parse_pin_file(&self.path, text),
            Kind::Pattern { commit, .. } => {
                let (value, _) = one_match(commit, text, &self.path, "pattern")?;
                if value.len() == 40 && value.bytes().all(|b| b.is_ascii_hexdigit()) {
                    Ok(value.to_ascii_lowercase())
                } else {
                    Err(Error::usage(format!(
                        "the pin in {} is not a commit: `{}`",
                        self.path,
                        lockstep_core::error::printable_line(&value.chars().take(60).collect::<String>())
                    ))
                    .hint("the pattern's first group must match the 40 hex digits of a full commit id"))
                }
            }
        }
    }

    /// The commit pinned at `rev` of `repo` (the file at most
    /// [`MAX_PIN_FILE`] bytes there).
    pub fn read_at(&self, repo: &Repo, rev: &str) -> Result<Oid, Error> {
        if let Kind::Submodule = self.kind {
            return repo.gitlink(rev, &self.path)?.ok_or_else(|| {
                Error::usage(format!(
                    "{rev} of {} has no submodule at `{}`",
                    repo.dir().display(),
                    self.path
                ))
                .hint(format!(
                    "set {} to the path of the pinned submodule",
                    self.setting
                ))
            });
        }
        let text = self.text_at(repo, rev)?;
        self.parse(&text)
    }

    /// The commit pinned in the work tree at `root`.
    pub fn read_worktree(&self, root: &Path) -> Result<Oid, Error> {
        self.parse(&self.worktree_text(root)?)
    }

    /// The pin's file in the work tree at `root`, whole: a regular file
    /// inside the repository (a FIFO, a device, a link out of the tree are
    /// refused at once, never read), at most [`MAX_PIN_FILE`] bytes, UTF-8.
    pub fn worktree_text(&self, root: &Path) -> Result<String, Error> {
        let path = lockstep_core::fs::inside_tree(root, &self.path, "the pin file")?;
        lockstep_core::fs::read_tree_text("the pin file", &path, MAX_PIN_FILE)
    }

    /// The archive whose checksum goes with `commit`, when the pin has one.
    pub fn archive_url(&self, commit: &str) -> Option<String> {
        match &self.kind {
            Kind::Pattern {
                sha256: Some(a), ..
            } => Some(a.url.replace("{commit}", commit)),
            _ => None,
        }
    }

    /// `text` with the pin set to `commit` (and its checksum to `sha256`),
    /// every other byte as it was. Checked whole before anything is
    /// written: each group matches what it must now (the commit's 40 hex
    /// digits, the checksum's 64) and the new text reads back as exactly
    /// `commit` and `sha256`, so that a pattern whose group is not the
    /// value (a name, part of a checksum) is refused, never written.
    pub fn render(&self, text: &str, commit: &str, sha256: Option<&str>) -> Result<String, Error> {
        if !is_hex(commit, 40) {
            return Err(Error::failed(format!(
                "internal: `{}` is not a full commit id to pin in {}",
                lockstep_core::error::printable_line(commit),
                self.path
            )));
        }
        let out = match &self.kind {
            Kind::Submodule => {
                return Err(Error::failed(format!(
                    "internal: the submodule {} has no file to render",
                    self.path
                )))
            }
            Kind::File => format!("{commit}\n"),
            Kind::Pattern {
                commit: pattern,
                sha256: archive,
            } => {
                let (_, commit_at) = one_match(pattern, text, &self.path, "pattern")?;
                let mut edits = vec![(commit_at.clone(), commit.to_string())];
                if let Some(a) = archive {
                    let sum = sha256.ok_or_else(|| {
                        Error::failed(format!(
                            "internal: the pin in {} needs its archive's sha256",
                            self.path
                        ))
                    })?;
                    if !is_hex(sum, 64) {
                        return Err(Error::failed(format!(
                            "the checksum for the pin in {} is not 64 hex digits: `{}`",
                            self.path,
                            lockstep_core::error::printable_line(&sum.chars().take(80).collect::<String>())
                        ))
                        .hint("nothing was written; run it again (a remembered checksum is computed again)"));
                    }
                    let (old, sum_at) = one_match(&a.pattern, text, &self.path, "sha256 pattern")?;
                    if !is_hex(&old, 64) {
                        return Err(not_a_checksum(&self.path, &old));
                    }
                    if sum_at.start < commit_at.end && commit_at.start < sum_at.end {
                        return Err(Error::usage(format!(
                            "in {}, the commit's and the checksum's matches overlap",
                            self.path
                        ))
                        .hint("make each pattern's group match its own value"));
                    }
                    edits.push((sum_at, sum.to_string()));
                }
                edits.sort_by_key(|(at, _)| std::cmp::Reverse(at.start));
                let mut out = text.to_string();
                for (at, value) in edits {
                    out.replace_range(at, &value);
                }
                out
            }
        };
        self.check_rendered(&out, commit, sha256)?;
        Ok(out)
    }

    /// That `new`, the text about to be written, reads back as `commit`
    /// (and its checksum as `sha256`): a pattern that matches the written
    /// value differently (more, less, twice) is refused before the write.
    fn check_rendered(&self, new: &str, commit: &str, sha256: Option<&str>) -> Result<(), Error> {
        let differs = |what: &str, found: &str| {
            Error::usage(format!(
                "the pin's {what} would not read back from {} after writing it",
                self.path
            ))
            .cause(format!(
                "it would read `{}`",
                lockstep_core::error::printable_line(&found.chars().take(80).collect::<String>())
            ))
            .hint("make the pattern's group match exactly the value, e.g. \"([0-9a-f]{40})\" for the commit and \"([0-9a-f]{64})\" for the checksum; nothing was written")
        };
        let read = self.parse(new).map_err(|e| {
            e.context(format!(
                "the pin would not read back from {} after writing it",
                self.path
            ))
        })?;
        if !read.eq_ignore_ascii_case(commit) {
            return Err(differs("commit", &read));
        }
        if let (
            Kind::Pattern {
                sha256: Some(a), ..
            },
            Some(sum),
        ) = (&self.kind, sha256)
        {
            let (found, _) = one_match(&a.pattern, new, &self.path, "sha256 pattern")?;
            if !found.eq_ignore_ascii_case(sum) {
                return Err(differs("checksum", &found));
            }
        }
        Ok(())
    }

    /// Sets the pin in the work tree at `root` to `commit`, with its
    /// archive's checksum from `checksums` when it has one (computed before
    /// the file is touched: a failed download leaves the file as it was).
    /// The new text is checked whole first ([`Pin::render`]); the file is
    /// replaced atomically, through a link that stays inside the
    /// repository.
    pub fn write(&self, root: &Path, commit: &str, checksums: &dyn Checksums) -> Result<(), Error> {
        let sha256 = match self.archive_url(commit) {
            Some(url) => Some(checksums.sha256(&url)?),
            None => None,
        };
        let text = match self.kind {
            Kind::Submodule => {
                return Err(Error::failed(format!(
                    "internal: the submodule {} is staged, not written",
                    self.path
                )))
            }
            Kind::File => String::new(),
            Kind::Pattern { .. } => self.worktree_text(root)?,
        };
        let new = self.render(&text, commit, sha256.as_deref())?;
        let path = lockstep_core::fs::inside_tree(root, &self.path, "the pin file")?;
        lockstep_core::output::write_as(
            "the pin file",
            &lockstep_core::output::Target::Path(path),
            new.as_bytes(),
        )
    }
}

/// Whether `text` is `len` hex digits.
fn is_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The sha256 pattern's group matched something that is not a checksum.
fn not_a_checksum(path: &str, found: &str) -> Error {
    Error::usage(format!(
        "the sha256 pattern's group matches `{}` in {path}, not a checksum (64 hex digits)",
        lockstep_core::error::printable_line(&found.chars().take(80).collect::<String>())
    ))
    .hint("make the group match the checksum's value exactly, e.g. sha256 = { pattern = 'LLVM_SHA256 = \"([0-9a-f]{64})\"', ... }; nothing was written")
}

/// The revision a pin file holds: exactly one line of 40 hex digits (a
/// trailing newline allowed, nothing else), lowercased.
fn parse_pin_file(path: &str, text: &str) -> Result<Oid, Error> {
    let trimmed = text.trim_end_matches(['\n', '\r']);
    if trimmed.len() == 40 && trimmed.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(trimmed.to_ascii_lowercase());
    }
    let shown: String = trimmed.chars().take(60).collect();
    Err(
        Error::usage(format!("pin file {path} does not hold one revision"))
            .cause(format!("it holds `{}`", shown.escape_debug()))
            .hint("a pin file is one line of 40 hex digits (a full commit id)"),
    )
}

/// The one match of `re` in `text`: its first group's text and where it is.
fn one_match(
    re: &Regex,
    text: &str,
    path: &str,
    which: &str,
) -> Result<(String, std::ops::Range<usize>), Error> {
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let mut found = re.captures_iter(text);
    let first = found.next();
    let second = found.next();
    match (first, second) {
        (Some(caps), None) => {
            let group = caps.get(1).ok_or_else(|| {
                Error::usage(format!(
                    "the {which} matched {path} (line {}) but its group did not",
                    line_of(caps.get(0).map_or(0, |m| m.start()))
                ))
                .hint("make the group match whenever the pattern does")
            })?;
            Ok((group.as_str().to_string(), group.range()))
        }
        (None, _) => Err(Error::usage(format!(
            "the {which} `{}` does not match {path}",
            re.as_str()
        ))
        .hint("check the pattern against the file: it must match the pin exactly once")),
        (Some(a), Some(b)) => Err(Error::usage(format!(
            "the {which} `{}` matches {path} more than once (lines {} and {})",
            re.as_str(),
            line_of(a.get(0).map_or(0, |m| m.start())),
            line_of(b.get(0).map_or(0, |m| m.start()))
        ))
        .hint("make the pattern specific enough to match the pin exactly once")),
    }
}

fn pattern(text: &str, what: &str) -> Result<Regex, Error> {
    if text.len() > MAX_PATTERN {
        return Err(Error::usage(format!(
            "{what} in lockstep.toml is longer than {MAX_PATTERN} bytes"
        )));
    }
    let re = regex::RegexBuilder::new(text)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            Error::usage(format!(
                "{what} in lockstep.toml is not a regular expression"
            ))
            .cause(lockstep_core::error::printable(&e.to_string()).into_owned())
        })?;
    if re.captures_len() < 2 {
        return Err(Error::usage(format!(
            "{what} `{}` in lockstep.toml has no group",
            quoted(text)
        ))
        .hint("put the value in the first group: NAME = \"([0-9a-f]{40})\""));
    }
    Ok(re)
}

/// A value from lockstep.toml, fit for a one-line message: escaped, at
/// most 60 characters (a value can be any length).
fn quoted(value: &str) -> String {
    lockstep_core::error::shown(value, 60)
}

/// A pin's file: relative, below the top, not an option.
fn check_path(path: &str, what: &str) -> Result<(), Error> {
    use std::path::Component;
    let why = if path.trim().is_empty() {
        Some("it is empty")
    } else if Path::new(path).is_absolute() {
        Some("it must be relative to the repository's top")
    } else if Path::new(path)
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        Some("it must be a path below the repository's top, without `.` or `..`")
    } else if path.starts_with('-') {
        Some("it starts with `-`")
    } else if path.len() > 4096 || path.chars().any(char::is_control) {
        Some("it is too long or holds a control character")
    } else {
        None
    };
    match why {
        Some(why) => Err(Error::usage(format!(
            "{what} `{}` in lockstep.toml: {why}",
            quoted(path)
        ))
        .hint(
            "name the file by its path inside the repository, e.g. third_party/llvm/workspace.bzl",
        )),
        None => Ok(()),
    }
}

/// The archive URL template: `{commit}` in it, https (plain http only to
/// this machine: the checksum is computed from what arrives).
fn check_archive_url(template: &str, what: &str) -> Result<(), Error> {
    if !template.contains("{commit}") {
        return Err(Error::usage(format!(
            "{what}.sha256.archive `{}` in lockstep.toml has no {{commit}}",
            quoted(template)
        ))
        .hint("e.g. archive = \"https://github.com/llvm/llvm-project/archive/{commit}.tar.gz\""));
    }
    let sample = template.replace("{commit}", &"0".repeat(40));
    lockstep_http::parse_url(
        &sample,
        lockstep_http::UrlRules {
            userinfo: false,
            plain_http: lockstep_http::PlainHttp::LoopbackOnly,
        },
    )
    .map_err(|e| {
        Error::usage(format!(
            "{what}.sha256.archive `{}` in lockstep.toml is not a URL lockstep downloads",
            quoted(template)
        ))
        .cause(e.to_string())
        .hint("use an https URL (plain http only to this machine)")
    })?;
    Ok(())
}

#[cfg(test)]
mod tests;
