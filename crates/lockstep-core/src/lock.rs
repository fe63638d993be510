//! The one file lock: an advisory `flock` on a small file that also records
//! who holds it, so that a contender can say whom it waits for (or fails
//! naming them). The kernel drops the lock when its holder dies, so a dead
//! holder's lock is simply taken over; nothing needs cleaning up.
//!
//! Every lock in lockstep goes through here: the integrate state of a
//! repository, the release store, toolchain installs, cache entries, the
//! machine-wide tool tokens. Lock files are never symbolic links: a link
//! planted where a lock lives is refused rather than followed.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::events::Sink;

/// Who holds a lock, as its lock file says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    /// What the holder is doing, in the user's terms (`integrate loop`,
    /// `installing IREE 3.13.0`).
    pub purpose: String,
    /// Seconds since the Unix epoch when it took the lock.
    pub since: f64,
}

impl Holder {
    /// `` `integrate loop` (pid 123) ``.
    pub fn describe(&self) -> String {
        format!("`{}` (pid {})", self.purpose, self.pid)
    }
}

/// A held lock; released when dropped (or when the process dies).
#[derive(Debug)]
pub struct FileLock {
    file: File,
    path: PathBuf,
}

impl FileLock {
    /// Takes the lock at `path`, waiting while another process holds it.
    /// With a `sink`, a contended lock is announced once, naming the holder
    /// (`waiting for ... to finish`); without one the wait is silent (hot
    /// paths such as cache entries, where waits are short).
    pub fn wait(path: &Path, purpose: &str, sink: Option<&dyn Sink>) -> Result<FileLock> {
        let file = open(path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                if let Some(sink) = sink {
                    let who = read_holder(&file)
                        .map(|h| h.describe())
                        .unwrap_or_else(|| "another lockstep process".into());
                    sink.note(format!(
                        "waiting for {who} to finish (lock {})",
                        path.display()
                    ));
                }
                tracing::info!(lock = %path.display(), "waiting for a lock");
                file.lock().map_err(|e| lock_error(path, e))?;
            }
            Err(TryLockError::Error(e)) => return Err(lock_error(path, e)),
        }
        Ok(FileLock::held(file, path, purpose))
    }

    /// The lock at `path` if nobody holds it; `None` (with the holder, when
    /// its lock file names one) if somebody does.
    pub fn try_take(
        path: &Path,
        purpose: &str,
    ) -> Result<std::result::Result<FileLock, Option<Holder>>> {
        let file = open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Ok(FileLock::held(file, path, purpose))),
            Err(TryLockError::WouldBlock) => Ok(Err(read_holder(&file))),
            Err(TryLockError::Error(e)) => Err(lock_error(path, e)),
        }
    }

    /// The lock at `path`, or an error naming who holds it: `what` says
    /// what is busy ("another integrate is running in this repository").
    pub fn take_or_fail(path: &Path, purpose: &str, what: &str, hint: &str) -> Result<FileLock> {
        match FileLock::try_take(path, purpose)? {
            Ok(lock) => Ok(lock),
            Err(holder) => {
                let who = holder
                    .map(|h| h.describe())
                    .unwrap_or_else(|| "another lockstep process".into());
                Err(Error::failed(format!("{what}: {who}")).hint(hint))
            }
        }
    }

    /// Where the lock file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn held(mut file: File, path: &Path, purpose: &str) -> FileLock {
        let holder = Holder {
            pid: std::process::id(),
            purpose: purpose.to_string(),
            since: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
        };
        // Best effort: the record only improves a contender's message.
        let _ = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| {
                file.write_all(
                    serde_json::to_string(&holder)
                        .unwrap_or_default()
                        .as_bytes(),
                )
            });
        FileLock {
            file,
            path: path.to_path_buf(),
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Unlock explicitly: a clone of the descriptor in a child would
        // otherwise keep the lock alive.
        let _ = self.file.unlock();
    }
}

/// Who holds the lock at `path`, if anyone does and says so.
pub fn holder(path: &Path) -> Option<Holder> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    match file.try_lock() {
        Ok(()) => None,
        Err(_) => read_holder(&file),
    }
}

fn open(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir)?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            let mut err = Error::failed(format!("cannot open the lock {}", path.display()))
                .cause(e.to_string());
            if e.raw_os_error() == Some(nix::libc::ELOOP) {
                err = err.hint("a lock file must not be a symbolic link: remove the link");
            }
            err
        })
}

fn read_holder(file: &File) -> Option<Holder> {
    let mut text = String::new();
    let mut reader = file;
    reader.seek(SeekFrom::Start(0)).ok()?;
    reader.take(4096).read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

fn lock_error(path: &Path, e: std::io::Error) -> Error {
    Error::failed(format!("cannot lock {}", path.display())).cause(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_learns_the_holder_then_gets_the_lock_after_release() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("lock");
        let first = FileLock::wait(&path, "integrate loop", None).unwrap();
        let holder = FileLock::try_take(&path, "integrate next")
            .unwrap()
            .unwrap_err()
            .expect("the holder is recorded");
        assert_eq!(holder.purpose, "integrate loop");
        assert_eq!(holder.pid, std::process::id());
        let err = FileLock::take_or_fail(&path, "x", "busy here", "wait").unwrap_err();
        assert!(err.message.contains("`integrate loop`"), "{}", err.message);
        assert_eq!(super::holder(&path).unwrap().purpose, "integrate loop");
        drop(first);
        assert!(super::holder(&path).is_none());
        FileLock::try_take(&path, "integrate next")
            .unwrap()
            .unwrap();
    }

    #[test]
    fn a_symlink_in_place_of_the_lock_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        let path = dir.path().join("lock");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let err = FileLock::wait(&path, "x", None).unwrap_err();
        assert!(err.render().contains("symbolic link"), "{}", err.render());
        assert!(!target.exists(), "the link was not followed");
    }

    #[test]
    fn a_waiter_is_admitted_when_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let first = FileLock::wait(&path, "first", None).unwrap();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || FileLock::wait(&path, "second", None).map(|_| ()))
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(first);
        waiter.join().unwrap().unwrap();
    }
}
