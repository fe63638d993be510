//! Moving the submodule's checkout without losing anyone's work:
//! [`checkout_submodule`] refuses local changes in the submodule unless
//! lockstep's own interrupted checkout explains them, and the `Integrate`
//! methods built on it put the submodule back at the superproject's pin, or
//! the user back on their branch.
//!
//! Every step that moves the submodule (`advance`, `probe`, `bisect`,
//! `start`) and `recover` use it, so it sits below all of them.

use std::collections::HashSet;

use lockstep_core::Error;
use lockstep_git::{Oid, Repo};

use crate::Integrate;

impl Integrate<'_> {
    /// Checks the submodule out at the pin recorded in the superproject's HEAD.
    pub(crate) fn sync_submodule_to_pin(&self) -> Result<(), Error> {
        let pin = self.pin()?;
        let current = self.checked_out()?;
        checkout_submodule(self, &pin, &[&current, &pin])
    }

    /// Checks out the branch (or detached commit) the user had, with its pin.
    pub(crate) fn return_to(&self, branch: Option<&str>, head: &str) -> Result<(), Error> {
        match branch {
            Some(b) => {
                self.superproject.git(&["checkout", "-q", b])?;
            }
            None => self.superproject.checkout_detached(head)?,
        }
        self.sync_submodule_to_pin()
    }
}

/// Checks the submodule out at `target`. Local changes are allowed only when
/// lockstep's own interrupted checkout between two of `sources` can explain
/// them: a file whose content equals its content in one of `sources`, or a
/// file that differs between the sources and is missing, empty or a prefix of
/// one of its versions (git deletes, creates, then writes). Anything else is
/// the user's work and stops the checkout.
pub fn checkout_submodule(ig: &Integrate, target: &str, sources: &[&str]) -> Result<(), Error> {
    if let Some(pin) = ig.file_pin() {
        return checkout_pin_file(ig, pin, target, sources);
    }
    let sub = &ig.sub;
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

/// Pin-file mode's checkout: the work tree's pin gets `target`. It may
/// hold one of `sources` (lockstep's own earlier write); anything else is
/// the user's edit and stops it. A missing or empty pin file (a whole-file
/// pin) is written; a larger file whose pin cannot be read is the user's.
fn checkout_pin_file(
    ig: &Integrate,
    pin: &lockstep_pin::Pin,
    target: &str,
    sources: &[&str],
) -> Result<(), Error> {
    let file = pin.path();
    let held = pin.read_worktree(ig.superproject.dir());
    match held {
        Ok(held) if held == target => return Ok(()),
        Ok(held) if sources.contains(&held.as_str()) => {}
        Err(_) if pin.is_whole_file() && is_missing_or_empty(&ig.superproject.dir().join(file)) => {
        }
        other => {
            let shown = match other {
                Ok(held) => held,
                // A pin file shows what it holds; a larger file why its pin
                // cannot be read.
                Err(_) if pin.is_whole_file() => {
                    std::fs::read_to_string(ig.superproject.dir().join(file))
                        .unwrap_or_default()
                        .trim_end_matches(['\n', '\r'])
                        .to_ascii_lowercase()
                }
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
    ig.write_pin(pin, target)
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
