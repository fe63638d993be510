//! One integrate at a time per repository: the shared file lock
//! (`lockstep_core::lock`) on `<state dir>/lock`. A dead holder's lock is
//! taken over; a live holder is named in the error.

use std::path::Path;

use lockstep_core::lock::FileLock;
use lockstep_core::Error;

/// Held until dropped.
pub struct RepoLock {
    _lock: FileLock,
}

impl RepoLock {
    /// Takes the lock or fails at once naming the holder.
    /// A symbolic link at the lock's place, or the database's, is refused
    /// before the lock file is created (it would be followed out of the
    /// repository).
    pub fn acquire(dir: &Path, command: &str) -> Result<RepoLock, Error> {
        crate::ensure_state_dir(dir)?;
        crate::refuse_links(dir)?;
        let path = dir.join("lock");
        let lock = FileLock::take_or_fail(
            &path,
            command,
            "another integrate is running in this repository",
            "wait for it to finish, or stop it; a lock whose holder died is taken over automatically",
        )?;
        Ok(RepoLock { _lock: lock })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_then_admitted_after_release() {
        let dir = tempfile::tempdir().unwrap();
        let first = RepoLock::acquire(dir.path(), "integrate loop").unwrap();
        let err = RepoLock::acquire(dir.path(), "integrate next")
            .err()
            .unwrap();
        assert!(err.message.contains("integrate loop"), "{}", err.message);
        drop(first);
        RepoLock::acquire(dir.path(), "integrate next").unwrap();
    }
}
