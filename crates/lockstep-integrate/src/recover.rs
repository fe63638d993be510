//! Crash recovery and undo.
//!
//! Every mutating step is journaled in the store before it acts. When a command
//! starts and finds that the previous lockstep process died (its session marker
//! is still there), it removes the git lock files that process's killed git
//! children left behind (only those created after it started), kills a smoke
//! process group it left running, and then rolls each unfinished step forward
//! (so rerunning the same command continues) or, with `integrate abort`, back.
//! The records it reads are defined in [`crate::journal`]; each step's
//! resume and undo are its own module's (`Journaled`, implemented in
//! advance, probe, bisect and start): this module only finds the unfinished
//! steps and dispatches.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lockstep_core::Error;
use serde::{Deserialize, Serialize};

use crate::journal::{Journaled, Resumed, StartJournal, INTEGRATE_RECORD};
use crate::Integrate;

const SESSION_RECORD: &str = "session";

/// Marks a running mutating command; removed on drop. A marker left behind
/// means that command died.
pub struct Session<'i, 'a> {
    ig: &'i Integrate<'a>,
    /// Advances a dead predecessor left unfinished and this session finished.
    pub resumed: Vec<Resumed>,
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

/// Starts a mutating command: recovers from a dead predecessor, then
/// rolls unfinished steps forward.
pub fn begin_session<'i, 'a>(
    ig: &'i Integrate<'a>,
    command: &str,
) -> Result<Session<'i, 'a>, Error> {
    crate::recover::cleanup_after_crash(ig)?;
    ig.store.set(
        SESSION_RECORD,
        &SessionMarker {
            pid: std::process::id(),
            command: command.to_string(),
            started_at: lockstep_store::now(),
        },
    )?;
    let mut session = Session {
        ig,
        resumed: Vec::new(),
    };
    session.resumed = crate::recover::roll_forward(ig)?;
    Ok(session)
}

/// Removes lock files and processes left by a lockstep that died.
fn cleanup_after_crash<'a>(ig: &Integrate<'a>) -> Result<(), Error> {
    let Some(marker) = ig.store.get::<SessionMarker>(SESSION_RECORD)? else {
        return Ok(());
    };
    ig.warn(format!(
        "the previous `{}` (pid {}) did not finish; cleaning up after it",
        marker.command, marker.pid
    ));
    for op in ig.store.unfinished_all()? {
        // Only a process group id a smoke could have had: an out-of-range
        // number in the database must not wrap to another group.
        let pgid = op.state.get("pgid").and_then(|v| v.as_i64());
        if let Some(pgid) = pgid.and_then(|p| i32::try_from(p).ok()) {
            lockstep_core::process::kill_group(pgid);
        }
    }
    let since = lock_files_since(marker.started_at);
    let mut dirs = vec![ig.superproject.git_dir()?, ig.sub.git_dir()?];
    if let Some(url) = ig.sub.remote_url(&ig.cfg.export.remote)? {
        let path = PathBuf::from(&url);
        if path.is_dir() {
            dirs.push(git_dir_of_path(&path));
        }
    }
    for dir in dirs {
        for lock in stale_locks(&dir, since) {
            ig.warn(format!(
                "removing {} left by the killed process",
                lock.display()
            ));
            let _ = fs_err::remove_file(&lock);
        }
    }
    Ok(())
}

/// Finishes every journaled step a killed process left unfinished.
fn roll_forward<'a>(ig: &Integrate<'a>) -> Result<Vec<Resumed>, Error> {
    let mut resumed = Vec::new();
    for op in ig.store.unfinished_all()? {
        let finished = match crate::journal::entry(&op.kind) {
            Some(step) => (step.resume)(ig, op.id, &op.state)?,
            None => {
                ig.store.finish(op.id, "unknown")?;
                None
            }
        };
        resumed.extend(finished);
    }
    Ok(resumed)
}

/// `integrate abort`: undoes the last unfinished step, or with `all` the
/// whole integrate (back to the branch and pin `start` recorded). Commits
/// are never deleted: the integrate branch is kept.
pub fn abort<'a>(ig: &Integrate<'a>, all: bool) -> Result<Aborted, Error> {
    crate::recover::cleanup_after_crash(ig)?;
    let mut undone = Vec::new();
    for op in ig.store.unfinished_all()? {
        let what = match crate::journal::entry(&op.kind) {
            Some(step) => Some((step.undo)(ig, &op.state)?),
            None => None,
        };
        undone.extend(what);
        ig.store.finish(op.id, "aborted")?;
    }
    if all {
        if let Some(state) = ig.store.get::<StartJournal>(INTEGRATE_RECORD)? {
            ig.require_clean()?;
            // The start's own undo (start.rs), as for an unfinished one.
            state.undo(ig)?;
            ig.store.remove(INTEGRATE_RECORD)?;
            crate::halt::clear_halt(ig)?;
            undone.push(format!(
                "integrate {} (branch kept; delete it with `git branch -D {}`)",
                state.branch, state.branch
            ));
        } else if undone.is_empty() {
            return Err(Error::failed("there is no integrate to abort")
                .hint("`lockstep integrate start` begins one"));
        }
    }
    let _ = ig.store.remove(SESSION_RECORD);
    Ok(Aborted { undone })
}

/// Lock files at least this new may be the dead command's: from two
/// seconds before it started. The start time comes from the database, so a
/// value no clock can hold (NaN, infinite, negative, far future) means
/// "since the epoch" rather than a panic or an overflow.
fn lock_files_since(started_at: f64) -> SystemTime {
    Duration::try_from_secs_f64(started_at - 2.0)
        .ok()
        .and_then(|d| UNIX_EPOCH.checked_add(d))
        .unwrap_or(UNIX_EPOCH)
}

/// A bare repository is its own git dir; a work tree's is `.git`.
fn git_dir_of_path(path: &Path) -> PathBuf {
    if path.join(".git").is_dir() {
        path.join(".git")
    } else {
        path.to_path_buf()
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
