//! One integrate at a time per repository: an advisory `flock` on
//! `<state dir>/lock`. The kernel drops the lock when its holder dies, so a
//! dead holder's lock is simply taken over; a live holder is named in the error.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use lockstep_core::Error;
use serde::{Deserialize, Serialize};

/// Who holds the lock (written into the lock file for the next contender).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Holder {
    pub pid: u32,
    pub command: String,
    pub since: f64,
}

/// Held until dropped.
pub struct RepoLock {
    _file: File,
}

impl RepoLock {
    /// Takes the lock or fails at once naming the holder.
    pub fn acquire(dir: &Path, command: &str) -> Result<RepoLock, Error> {
        fs_err::create_dir_all(dir)?;
        let path = dir.join("lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| {
                Error::failed(format!("cannot open {}", path.display())).cause(e.to_string())
            })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let who = serde_json::from_str::<Holder>(&text)
                    .map(|h| format!("`{}` (pid {})", h.command, h.pid))
                    .unwrap_or_else(|_| "another lockstep process".to_string());
                return Err(Error::failed(format!(
                    "another integrate is running in this repository: {who}"
                ))
                .hint("wait for it to finish, or stop it; a lock whose holder died is taken over automatically"));
            }
            Err(TryLockError::Error(e)) => {
                return Err(
                    Error::failed(format!("cannot lock {}", path.display())).cause(e.to_string())
                )
            }
        }
        let holder = Holder {
            pid: std::process::id(),
            command: command.to_string(),
            since: crate::now(),
        };
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(
            serde_json::to_string(&holder)
                .unwrap_or_default()
                .as_bytes(),
        )?;
        Ok(RepoLock { _file: file })
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
