//! Crash recovery and undo.
//!
//! Every mutating step is journaled in the store before it acts. When a command
//! starts and finds that the previous lockstep process died (its session marker
//! is still there), it removes the git lock files that process's killed git
//! children left behind (only those created after it started), kills a smoke
//! process group it left running, and then rolls each unfinished step forward
//! (so rerunning the same command continues) or, with `integrate abort`, back.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lockstep_core::Error;
use lockstep_git::{Oid, Repo};
use serde::{Deserialize, Serialize};

use crate::advance::AdvanceJournal;
use crate::bisect::SuperBisectJournal;
use crate::probe::ProbeJournal;
use crate::start::StartJournal;
use crate::Integrate;

const SESSION_RECORD: &str = "session";

/// Marks a running mutating command; removed on drop. A marker left behind
/// means that command died.
pub struct Session<'i, 'a> {
    ig: &'i Integrate<'a>,
    /// Advances a dead predecessor left unfinished and this session finished.
    pub resumed: Vec<Resumed>,
}

/// An interrupted advance that a new session finished.
#[derive(Debug, Clone, Serialize)]
pub struct Resumed {
    pub target: Oid,
    pub superproject_commit: Oid,
    pub message: String,
    pub export: Option<String>,
}

impl Drop for Session<'_, '_> {
    fn drop(&mut self) {
        let _ = self.ig.store.remove(SESSION_RECORD);
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct SessionMarker {
    pid: u32,
    command: String,
    started_at: f64,
}

/// What an abort undid.
#[derive(Debug, Clone, Serialize)]
pub struct Aborted {
    pub undone: Vec<String>,
}

impl<'a> Integrate<'a> {
    /// Starts a mutating command: recovers from a dead predecessor, then
    /// rolls unfinished steps forward.
    pub fn begin_session<'i>(&'i self, command: &str) -> Result<Session<'i, 'a>, Error> {
        self.cleanup_after_crash()?;
        self.store.set(
            SESSION_RECORD,
            &SessionMarker {
                pid: std::process::id(),
                command: command.to_string(),
                started_at: lockstep_store::now(),
            },
        )?;
        let mut session = Session {
            ig: self,
            resumed: Vec::new(),
        };
        session.resumed = self.roll_forward()?;
        Ok(session)
    }

    /// Removes lock files and processes left by a lockstep that died.
    fn cleanup_after_crash(&self) -> Result<(), Error> {
        let Some(marker) = self.store.get::<SessionMarker>(SESSION_RECORD)? else {
            return Ok(());
        };
        self.warn(format!(
            "the previous `{}` (pid {}) did not finish; cleaning up after it",
            marker.command, marker.pid
        ));
        for op in self.store.unfinished_all()? {
            if let Some(pgid) = op.state.get("pgid").and_then(|v| v.as_i64()) {
                lockstep_core::process::kill_group(pgid as i32);
            }
        }
        let since = UNIX_EPOCH + Duration::from_secs_f64((marker.started_at - 2.0).max(0.0));
        let mut dirs = vec![self.superproject.git_dir()?, self.sub.git_dir()?];
        if let Some(url) = self.sub.remote_url(&self.cfg.export.remote)? {
            let path = PathBuf::from(&url);
            if path.is_dir() {
                dirs.push(git_dir_of_path(&path));
            }
        }
        for dir in dirs {
            for lock in stale_locks(&dir, since) {
                self.warn(format!(
                    "removing {} left by the killed process",
                    lock.display()
                ));
                let _ = fs_err::remove_file(&lock);
            }
        }
        Ok(())
    }

    /// Finishes every journaled step a killed process left unfinished.
    fn roll_forward(&self) -> Result<Vec<Resumed>, Error> {
        let mut resumed = Vec::new();
        for op in self.store.unfinished_all()? {
            match op.kind.as_str() {
                "advance" => {
                    let state: AdvanceJournal = parse_state(&op.state)?;
                    self.info(format!(
                        "finishing the interrupted advance to {}",
                        state.target
                    ));
                    let (commit, export) = self.finish_advance(op.id, &state).map_err(|e| {
                        e.context("cannot finish an interrupted advance").hint(
                            "fix the cause and rerun, or `lockstep integrate abort` to undo the advance",
                        )
                    })?;
                    resumed.push(Resumed {
                        target: state.target.clone(),
                        superproject_commit: commit,
                        message: state.message.clone(),
                        export,
                    });
                }
                "probe" => {
                    let state: ProbeJournal = parse_state(&op.state)?;
                    self.undo_probe(&state)?;
                    self.store.finish(op.id, "interrupted")?;
                }
                "bisect-superproject" => {
                    let state: SuperBisectJournal = parse_state(&op.state)?;
                    self.restore_superproject(&state)?;
                    self.store.finish(op.id, "interrupted")?;
                }
                "start" => {
                    let state: StartJournal = parse_state(&op.state)?;
                    self.info(format!(
                        "finishing the interrupted start of {}",
                        state.branch
                    ));
                    self.finish_start(op.id, &state)?;
                }
                _ => self.store.finish(op.id, "unknown")?,
            }
        }
        Ok(resumed)
    }

    /// Puts the submodule back where a search found it.
    fn undo_probe(&self, state: &ProbeJournal) -> Result<(), Error> {
        let target = if self.superproject.head()? == state.superproject_head {
            state.restore.clone()
        } else {
            self.pin()?
        };
        let current = self.sub.head()?;
        let mut sources = vec![current.as_str(), target.as_str()];
        if let Some(m) = &state.moving_to {
            sources.push(m);
        }
        checkout_submodule(self, &target, &sources)
    }

    /// `integrate abort`: undoes the last unfinished step, or with `all` the
    /// whole integrate (back to the branch and pin `start` recorded). Commits
    /// are never deleted: the integrate branch is kept.
    pub fn abort(&self, all: bool) -> Result<Aborted, Error> {
        self.cleanup_after_crash()?;
        let mut undone = Vec::new();
        for op in self.store.unfinished_all()? {
            match op.kind.as_str() {
                "advance" => {
                    let state: AdvanceJournal = parse_state(&op.state)?;
                    let head = self.superproject.head()?;
                    if head != state.superproject_before {
                        let parent = self.superproject.resolve("HEAD^")?;
                        if parent.as_deref() == Some(state.superproject_before.as_str())
                            && self.pin()? == state.new_head
                        {
                            self.superproject.git(&[
                                "reset",
                                "-q",
                                "--keep",
                                &state.superproject_before,
                            ])?;
                        } else {
                            return Err(Error::failed(
                                "the superproject moved since the interrupted advance",
                            )
                            .hint("inspect `git log` and reset by hand"));
                        }
                    }
                    // Unstage the new pin an interrupted commit may have left staged.
                    self.superproject
                        .git(&["reset", "-q", "--", &self.cfg.submodule])?;
                    let current = self.sub.head()?;
                    checkout_submodule(
                        self,
                        &state.submodule_before,
                        &[&current, &state.new_head, &state.submodule_before],
                    )?;
                    undone.push(format!("advance to {}", state.target));
                }
                "probe" => {
                    let state: ProbeJournal = parse_state(&op.state)?;
                    self.undo_probe(&state)?;
                    undone.push("probe checkout".into());
                }
                "bisect-superproject" => {
                    let state: SuperBisectJournal = parse_state(&op.state)?;
                    self.restore_superproject(&state)?;
                    undone.push("superproject bisect checkout".into());
                }
                "start" => {
                    let state: StartJournal = parse_state(&op.state)?;
                    self.undo_start(&state)?;
                    undone.push(format!("start of {}", state.branch));
                }
                _ => {}
            }
            self.store.finish(op.id, "aborted")?;
        }
        if all {
            if let Some(state) = self
                .store
                .get::<StartJournal>(crate::start::INTEGRATE_RECORD)?
            {
                self.require_clean()?;
                self.undo_start(&state)?;
                self.store.remove(crate::start::INTEGRATE_RECORD)?;
                self.clear_halt()?;
                undone.push(format!(
                    "integrate {} (branch kept; delete it with `git branch -D {}`)",
                    state.branch, state.branch
                ));
            } else if undone.is_empty() {
                return Err(Error::failed("there is no integrate to abort")
                    .hint("`lockstep integrate start` begins one"));
            }
        }
        let _ = self.store.remove(SESSION_RECORD);
        Ok(Aborted { undone })
    }
}

fn parse_state<T: for<'de> Deserialize<'de>>(value: &serde_json::Value) -> Result<T, Error> {
    serde_json::from_value(value.clone())
        .map_err(|e| Error::failed("a journaled step is unreadable").cause(e.to_string()))
}

/// A bare repository is its own git dir; a work tree's is `.git`.
fn git_dir_of_path(path: &Path) -> PathBuf {
    if path.join(".git").is_dir() {
        path.join(".git")
    } else {
        path.to_path_buf()
    }
}

impl Integrate<'_> {
    /// Checks the submodule out at the pin recorded in the superproject's HEAD.
    pub(crate) fn sync_submodule_to_pin(&self) -> Result<(), Error> {
        let pin = self.pin()?;
        let current = self.sub.head()?;
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

/// `*.lock` files in a git dir modified since `since`: at the top level, in
/// `refs/` and `logs/`, and where git's maintenance and pack writers put them
/// in `objects/` (not the loose-object fan-out directories).
fn stale_locks(git_dir: &Path, since: SystemTime) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let places = [
        ("", false),
        ("refs", true),
        ("logs", true),
        ("objects", false),
        ("objects/info", true),
        ("objects/pack", false),
    ];
    for (sub, recursive) in places {
        collect_locks(&git_dir.join(sub), recursive, since, &mut found);
    }
    found
}

fn collect_locks(dir: &Path, recursive: bool, since: SystemTime, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        let path = entry.path();
        if meta.is_dir() {
            if recursive {
                collect_locks(&path, true, since, found);
            }
        } else if entry.file_name().to_string_lossy().ends_with(".lock")
            && meta.modified().map(|m| m >= since).unwrap_or(false)
        {
            found.push(path);
        }
    }
}

/// Checks the submodule out at `target`. Local changes are allowed only when
/// lockstep's own interrupted checkout between two of `sources` can explain
/// them: a file whose content equals its content in one of `sources`, or a
/// file that differs between the sources and is missing, empty or a prefix of
/// one of its versions (git deletes, creates, then writes). Anything else is
/// the user's work and stops the checkout.
pub fn checkout_submodule(ig: &Integrate, target: &str, sources: &[&str]) -> Result<(), Error> {
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
