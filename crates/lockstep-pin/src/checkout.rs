//! Putting a commit in the work tree's pin without losing anyone's work
//! ([`Pin::put`]): the submodule checked out there, or the pin's file
//! rewritten. Local changes are allowed only when lockstep's own
//! interrupted change between two of `sources` explains them; anything else
//! is the user's work and stops it.

use std::collections::HashSet;

use lockstep_core::Error;
use lockstep_git::{Oid, Repo};

use crate::{Checksums, Kind, Pin};

impl Pin {
    /// Puts `target` in `superproject`'s work tree: the submodule checked
    /// out at it, or the pin's file holding it (with its checksum). The
    /// work tree may hold one of `sources` (lockstep's own earlier,
    /// interrupted change): for a submodule, a file whose content equals its
    /// content in one of `sources`, or a file that differs between the
    /// sources and is missing, empty or a prefix of one of its versions (git
    /// deletes, creates, then writes); for a pin in a file, the pin at one
    /// of `sources`, or a pin file missing or empty. Anything else is the
    /// user's work: an error naming it, nothing touched.
    pub fn put(
        &self,
        superproject: &Repo,
        target: &str,
        sources: &[&str],
        checksums: &dyn Checksums,
    ) -> Result<(), Error> {
        match self.kind {
            Kind::Submodule => checkout_submodule(
                &Repo::new(superproject.dir().join(&self.path)),
                target,
                sources,
            ),
            _ => self.put_in_file(superproject, target, sources, checksums),
        }
    }

    fn put_in_file(
        &self,
        superproject: &Repo,
        target: &str,
        sources: &[&str],
        checksums: &dyn Checksums,
    ) -> Result<(), Error> {
        let file = &self.path;
        let whole = matches!(self.kind, Kind::File);
        let held = self.read_worktree(superproject.dir());
        match held {
            Ok(held) if held == target => return Ok(()),
            Ok(held) if sources.contains(&held.as_str()) => {}
            Err(_) if whole && is_missing_or_empty(&superproject.dir().join(file)) => {}
            other => {
                let shown = match other {
                    Ok(held) => held,
                    // A pin file shows what it holds; a larger file why its pin
                    // cannot be read.
                    Err(_) if whole => std::fs::read_to_string(superproject.dir().join(file))
                        .unwrap_or_default()
                        .trim_end_matches(['\n', '\r'])
                        .to_ascii_lowercase(),
                    Err(e) => e.message,
                };
                return Err(Error::failed(format!(
                    "the pin file {file} holds `{}`, which lockstep did not write; not touching it",
                    shown.chars().take(60).collect::<String>().escape_debug()
                ))
                .hint(format!(
                    "commit or restore it, then rerun (lockstep wants it at {target})"
                )));
            }
        }
        self.write(superproject.dir(), target, checksums)
    }
}

/// Checks the submodule at `sub` out at `target` (see [`Pin::put`]).
fn checkout_submodule(sub: &Repo, target: &str, sources: &[&str]) -> Result<(), Error> {
    let dirt = sub.dirty()?;
    if dirt.is_empty() {
        if sub.head()? != target {
            sub.checkout_detached(target)?;
        }
        return Ok(());
    }
    let in_flight = paths_changed_between(sub, sources)?;
    let foreign: Vec<String> = dirt
        .iter()
        .filter(|d| !written_by_checkout(sub, &d.path, sources, &in_flight))
        .map(|d| format!("{} {}", d.code, d.path))
        .collect();
    if !foreign.is_empty() {
        let mut err = Error::failed(format!(
            "the submodule {} has changes lockstep did not make; not touching them",
            sub.dir().display()
        ));
        for f in foreign.iter().take(20) {
            err = err.cause(f.clone());
        }
        return Err(err.hint(format!(
            "commit or stash them in the submodule, then rerun (lockstep wants it at {target})"
        )));
    }
    sub.git(&["checkout", "-q", "-f", "--detach", target])?;
    // An interrupted checkout can also leave files git does not track.
    let leftover = sub.dirty()?;
    for d in leftover.iter().filter(|d| d.code == "??") {
        if written_by_checkout(sub, &d.path, sources, &in_flight) {
            let _ = fs_err::remove_file(sub.dir().join(&d.path));
        }
    }
    Ok(())
}

fn is_missing_or_empty(path: &std::path::Path) -> bool {
    std::fs::read(path).map_or(true, |bytes| bytes.iter().all(u8::is_ascii_whitespace))
}

/// Paths that differ between any two of `sources`.
fn paths_changed_between(repo: &Repo, sources: &[&str]) -> Result<HashSet<String>, Error> {
    let mut paths = HashSet::new();
    for (i, a) in sources.iter().enumerate() {
        for b in &sources[i + 1..] {
            if a != b {
                let out = repo.git(&["diff", "--name-only", "-z", "--no-renames", a, b])?;
                paths.extend(
                    out.split('\0')
                        .filter(|p| !p.is_empty())
                        .map(str::to_string),
                );
            }
        }
    }
    Ok(paths)
}

fn written_by_checkout(
    repo: &Repo,
    path: &str,
    sources: &[&str],
    in_flight: &HashSet<String>,
) -> bool {
    let on_disk = repo.dir().join(path);
    let disk: Option<Vec<u8>> = std::fs::read(&on_disk).ok();
    let versions: Vec<Option<Oid>> = sources
        .iter()
        .map(|src| repo.resolve_blob(&format!("{src}:{path}")).unwrap_or(None))
        .collect();
    let disk_id: Option<Oid> = match &disk {
        Some(_) => repo
            .git(&["hash-object", "--no-filters", "--", path])
            .ok()
            .map(|s| s.trim().to_string()),
        None => None,
    };
    if versions.contains(&disk_id) {
        return true;
    }
    if !in_flight.contains(path) {
        return false;
    }
    let Some(bytes) = disk else {
        return true; // deleted, not yet recreated
    };
    bytes.is_empty()
        || versions.iter().flatten().any(|blob| {
            repo.git(&["cat-file", "blob", blob])
                .map(|content| content.as_bytes().starts_with(&bytes))
                .unwrap_or(false)
        })
}
