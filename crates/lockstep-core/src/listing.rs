//! A record of the files a directory holds, each with its size and sha256,
//! written when lockstep makes the directory and checked when it reads it
//! back: what a bundle (`lockstep bench --bundle`, `lockstep test
//! --bundle`) carries in its manifest, so that a file altered, missing or
//! added after it was made is refused, naming the file, before anything in
//! it is used.
//!
//! Checking never blocks and never reads without end, whatever the
//! directory holds: entries are listed without following links (a link to a
//! directory is an entry, not a way in), at most [`MAX_DEPTH`] levels and
//! [`MAX_ENTRIES`] entries; every listed file is opened through
//! [`crate::fs::open_tree_file`] (a FIFO, a device or a kernel file is
//! refused at once, a link to one too) and hashed as it streams, no further
//! than the size the record gives it.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The deepest directory listed below the root.
pub const MAX_DEPTH: usize = 64;
/// The most entries (files and directories) one listing or check visits.
pub const MAX_ENTRIES: usize = 1_000_000;
/// The most files one refusal names.
const MAX_SHOWN: usize = 10;
/// The longest path a listing may name (Linux's PATH_MAX), and the longest
/// part of one (NAME_MAX): a longer one is no path inside the directory.
const MAX_PATH_BYTES: usize = 4096;
const MAX_NAME_BYTES: usize = 255;
/// How much of a listed path a refusal shows.
const SHOWN_CHARS: usize = 200;

/// A listed path as a refusal names it: escaped and bounded (a manifest's
/// names are not lockstep's).
fn shown(rel: &str) -> String {
    crate::error::shown(rel, SHOWN_CHARS)
}

/// A directory's files by relative path (`/`-separated, UTF-8).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Listing(pub BTreeMap<String, FileRecord>);

/// One file's size and sha256 (hex).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    pub size: u64,
    pub sha256: String,
}

/// Which entries a listing leaves out, by relative path: the manifest that
/// holds the listing, lock files. A directory left out is not entered.
pub type Skip<'a> = &'a dyn Fn(&str) -> bool;

impl Listing {
    /// Every file under `dir` but those `skip` leaves out, hashed. `dir` is
    /// one lockstep just wrote: a link, a FIFO or a name that is not UTF-8
    /// in it is an error naming it (`what` says which directory).
    pub fn of(dir: &Path, skip: Skip<'_>, what: &str) -> Result<Listing> {
        let mut files = BTreeMap::new();
        for (rel, kind) in entries(dir, skip, what)? {
            let path = dir.join(&rel);
            if kind == Kind::Dir {
                continue;
            }
            if kind != Kind::File {
                return Err(Error::failed(format!(
                    "{what}: {} is not a regular file",
                    path.display()
                ))
                .hint("it holds only the files lockstep wrote into it"));
            }
            let (sha256, size) = crate::fs::sha256_tree_file(what, &path, u64::MAX)?;
            files.insert(rel, FileRecord { size, sha256 });
        }
        Ok(Listing(files))
    }

    /// Checks that `dir` holds exactly these files, whole: refused (a usage
    /// error, the first line saying `what`, one cause per file when more
    /// than one is wrong) when an entry that `skip` does not leave out is
    /// not listed (added, or a link to a directory), when a listed file is
    /// missing or is not a regular file, or when its size or sha256 is not
    /// the recorded one. `manifest` names the file the listing came from.
    pub fn check(&self, dir: &Path, skip: Skip<'_>, what: &str, manifest: &str) -> Result<()> {
        let mut problems = Vec::new();
        for (rel, kind) in entries(dir, skip, what)? {
            if kind != Kind::Dir && !self.0.contains_key(&rel) {
                problems.push(format!(
                    "{} is not one of the files {manifest} lists (added after it was made)",
                    shown(&rel)
                ));
            }
        }
        for (rel, record) in &self.0 {
            if !is_relative_path(rel) || skip(rel) {
                problems.push(format!(
                    "{manifest} lists `{}`, which is not a path inside it",
                    shown(rel)
                ));
                continue;
            }
            let path = dir.join(rel);
            match crate::fs::sha256_tree_file("the file", &path, record.size) {
                Err(e) => problems.push(format!("{} cannot be used: {}", shown(rel), e.message)),
                Ok((sha256, size)) if size != record.size || sha256 != record.sha256 => {
                    problems.push(format!(
                        "{} does not match {manifest} ({size} bytes, sha256 {sha256}; {manifest} records {} bytes, sha256 {})",
                        shown(rel),
                        record.size,
                        crate::error::shown(&record.sha256, 64)
                    ))
                }
                Ok(_) => {}
            }
        }
        let err = match problems.as_slice() {
            [] => return Ok(()),
            [one] => Error::usage(format!("{what}: {one}")),
            many => {
                let mut err = Error::usage(format!(
                    "{what}: {} of its files do not match {manifest}",
                    many.len()
                ));
                for problem in many.iter().take(MAX_SHOWN) {
                    err = err.cause(problem.clone());
                }
                if many.len() > MAX_SHOWN {
                    err = err.cause(format!("... and {} more", many.len() - MAX_SHOWN));
                }
                err
            }
        };
        Err(err.hint(
            "it was altered, or copied in part, after it was made (a FIFO, a device or a link to one is never read): copy it again whole, or make it again",
        ))
    }

    /// How many files.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// `rel` is a plain relative path: no `..`, `.`, root, empty or NUL part,
/// no longer than a path or a name can be.
fn is_relative_path(rel: &str) -> bool {
    !rel.is_empty()
        && rel.len() <= MAX_PATH_BYTES
        && rel.split('/').all(|part| part.len() <= MAX_NAME_BYTES)
        && !rel.contains('\0')
        && !rel.contains('\\')
        && rel.split('/').all(|part| !part.is_empty())
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    /// A link (never followed here), a FIFO, a device, a socket.
    Other,
}

/// Every entry under `dir` (relative paths, sorted), links not followed;
/// an error past the bounds or for a name that is not UTF-8.
fn entries(dir: &Path, skip: Skip<'_>, what: &str) -> Result<Vec<(String, Kind)>> {
    let mut out = Vec::new();
    let mut pending = vec![(String::new(), 0usize)];
    let mut seen = 0usize;
    while let Some((rel_dir, depth)) = pending.pop() {
        let at = if rel_dir.is_empty() {
            dir.to_path_buf()
        } else {
            dir.join(&rel_dir)
        };
        let reader = std::fs::read_dir(&at).map_err(|e| {
            Error::usage(format!("{what}: cannot list {}", at.display())).cause(e.to_string())
        })?;
        for item in reader {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(Error::usage(format!(
                    "{what}: it holds more than {MAX_ENTRIES} entries, more than any bundle"
                )));
            }
            let item = item.map_err(|e| {
                Error::usage(format!("{what}: cannot list {}", at.display())).cause(e.to_string())
            })?;
            let name = item.file_name();
            let Some(name) = name.to_str() else {
                return Err(Error::usage(format!(
                    "{what}: {} has a name that is not UTF-8",
                    item.path().display()
                )));
            };
            let rel = match rel_dir.is_empty() {
                true => name.to_string(),
                false => format!("{rel_dir}/{name}"),
            };
            if skip(&rel) {
                continue;
            }
            let kind = match item.file_type() {
                Ok(t) if t.is_dir() => Kind::Dir,
                Ok(t) if t.is_file() => Kind::File,
                _ => Kind::Other,
            };
            if kind == Kind::Dir {
                if depth + 1 > MAX_DEPTH {
                    return Err(Error::usage(format!(
                        "{what}: {} is more than {MAX_DEPTH} levels deep",
                        shown(&rel)
                    )));
                }
                pending.push((rel.clone(), depth + 1));
            }
            out.push((rel, kind));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(rel: &str) -> bool {
        rel == "manifest.json" || rel.ends_with(".locks")
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::create_dir_all(dir.path().join("a/.locks")).unwrap();
        std::fs::write(dir.path().join("a/b/module.vmfb"), b"module").unwrap();
        std::fs::write(dir.path().join("top.txt"), b"top").unwrap();
        std::fs::write(dir.path().join("a/.locks/00.lock"), b"").unwrap();
        std::fs::write(dir.path().join("manifest.json"), b"{}").unwrap();
        dir
    }

    #[test]
    fn a_listed_tree_checks_and_every_change_is_named() {
        let dir = tree();
        let root = dir.path();
        let listing = Listing::of(root, &skip, "B").unwrap();
        assert_eq!(
            listing.0.keys().collect::<Vec<_>>(),
            ["a/b/module.vmfb", "top.txt"]
        );
        listing.check(root, &skip, "B", "manifest.json").unwrap();
        // Lock files and the manifest may change: they are not listed.
        std::fs::write(root.join("a/.locks/01.lock"), b"x").unwrap();
        std::fs::write(root.join("manifest.json"), b"{\"x\": 1}").unwrap();
        listing.check(root, &skip, "B", "manifest.json").unwrap();

        let refused = |change: &dyn Fn(&Path), says: &str| {
            let dir = tree();
            change(dir.path());
            let err = listing
                .check(dir.path(), &skip, "B", "manifest.json")
                .unwrap_err();
            assert_eq!(err.exit_code(), 2);
            let text = err.render();
            assert!(text.contains(says), "{says}: {text}");
        };
        let module = |root: &Path| root.join("a/b/module.vmfb");
        refused(
            &|r| std::fs::write(module(r), b"MODULE").unwrap(),
            "a/b/module.vmfb does not match manifest.json",
        );
        refused(
            &|r| std::fs::write(module(r), b"module!").unwrap(),
            "larger than 6 bytes",
        );
        refused(
            &|r| std::fs::remove_file(module(r)).unwrap(),
            "does not exist",
        );
        refused(
            &|r| std::fs::write(r.join("a/extra"), b"").unwrap(),
            "a/extra is not one of the files manifest.json lists",
        );
        refused(
            &|r| {
                std::fs::remove_file(module(r)).unwrap();
                std::os::unix::fs::symlink("/dev/zero", module(r)).unwrap();
            },
            "is a device (through a link)",
        );
        refused(
            &|r| {
                std::fs::remove_file(module(r)).unwrap();
                nix::unistd::mkfifo(&module(r), nix::sys::stat::Mode::S_IRWXU).unwrap();
            },
            "is a FIFO",
        );
        refused(
            &|r| {
                std::fs::remove_dir_all(r.join("a/b")).unwrap();
                std::os::unix::fs::symlink("/proc/self", r.join("a/b")).unwrap();
            },
            "a/b is not one of the files manifest.json lists",
        );
    }

    #[test]
    fn listed_paths_stay_inside_the_tree() {
        let dir = tree();
        for bad in [
            "../x",
            "/etc/passwd",
            "a//b",
            "./top.txt",
            "",
            "manifest.json",
        ] {
            let mut listing = Listing::of(dir.path(), &skip, "B").unwrap();
            listing.0.insert(
                bad.to_string(),
                FileRecord {
                    size: 0,
                    sha256: String::new(),
                },
            );
            let err = listing
                .check(dir.path(), &skip, "B", "manifest.json")
                .unwrap_err();
            assert!(
                err.message.contains("which is not a path inside it"),
                "{bad}: {err:?}"
            );
        }
    }

    /// A listing is the manifest's word: a path longer than a path can
    /// be, or one holding control characters, is named escaped and cut,
    /// so no refusal grows with it or rewrites the terminal.
    #[test]
    fn listed_names_are_shown_bounded_and_escaped() {
        let dir = tree();
        let long = "x".repeat(20_000);
        let deep = "a/".repeat(3000) + "x";
        let wide = format!("{}/x", "n".repeat(300));
        for bad in [
            long.as_str(),
            deep.as_str(),
            wide.as_str(),
            "esc\u{1b}[2J\u{202e}",
        ] {
            let mut listing = Listing::of(dir.path(), &skip, "B").unwrap();
            listing.0.insert(
                bad.to_string(),
                FileRecord {
                    size: 1,
                    sha256: "\u{1b}]0;x".repeat(10_000),
                },
            );
            let err = listing
                .check(dir.path(), &skip, "B", "manifest.json")
                .unwrap_err();
            let text = err.render();
            assert!(text.len() < 2_000, "{} bytes", text.len());
            assert!(
                !text.contains('\u{1b}') && !text.contains('\u{202e}'),
                "{text:?}"
            );
            if bad.len() > 4096 || bad.split('/').any(|p| p.len() > 255) {
                assert!(text.contains("which is not a path inside it"), "{text}");
            }
        }
    }
}
