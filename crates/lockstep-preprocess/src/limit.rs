//! The machine-wide limit on tool processes, shared by every lockstep process
//! that preprocesses executables (the direct form's threads and the `--wrap`
//! processes that iree-compile starts in parallel).
//!
//! Two sources of permits:
//! - a token pool: `N` lock files `$LOCKSTEP_HOME/tokens/preprocess/slot-<i>`;
//!   a permit is an exclusive `flock` on one of them. The kernel releases it
//!   if the holder dies, so a crash never loses a slot. Processes asking for
//!   different `N` share slots `0..min`, so at most the largest `N` run at once.
//! - the GNU make jobserver, when `MAKEFLAGS` offers one
//!   (`--jobserver-auth=R,W` file descriptors or `--jobserver-auth=fifo:PATH`):
//!   a permit is one byte read from it, written back when done. Per make's
//!   convention, the job make started already holds one implicit token; the
//!   processes under that job share it through a lock file keyed by the job's
//!   pid (`$LOCKSTEP_HOME/tokens/jobserver/free-<pid>`): one of them runs on
//!   the implicit token, the others wait for bytes. So a job always makes
//!   progress (no deadlock when every make job waits) and the total never
//!   exceeds make's `-j`.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::lock::FileLock;
use lockstep_core::Error;

/// Where permits come from.
#[derive(Debug)]
enum Source {
    Pool {
        dir: PathBuf,
        slots: usize,
    },
    Jobserver {
        read: File,
        write: File,
        /// The implicit token's lock file.
        free: PathBuf,
        auth: String,
    },
}

/// Hands out permits to run one tool process.
#[derive(Debug)]
pub struct Limiter {
    source: Source,
}

/// Held while a tool runs; dropping it returns the permit.
pub struct Permit<'a> {
    limiter: &'a Limiter,
    held: Held,
}

enum Held {
    Lock(#[allow(dead_code)] FileLock),
    Byte(u8),
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if let (Held::Byte(b), Source::Jobserver { write, .. }) = (&self.held, &self.limiter.source)
        {
            let mut w: &File = write;
            if let Err(e) = w.write_all(&[*b]) {
                tracing::warn!("cannot return a token to the make jobserver: {e}");
            }
        }
        // A lock file is unlocked when closed.
    }
}

impl Limiter {
    /// A pool of `slots` lock files in `dir`.
    pub fn pool(dir: PathBuf, slots: usize) -> Result<Limiter, Error> {
        fs_err::create_dir_all(&dir).map_err(|e| {
            Error::failed("cannot create the preprocess token pool").cause(e.to_string())
        })?;
        Ok(Limiter {
            source: Source::Pool {
                dir,
                slots: slots.max(1),
            },
        })
    }

    /// The make jobserver when `makeflags` offers a usable one, else the token
    /// pool under `tokens` (`$LOCKSTEP_HOME/tokens`, lockstep_core::paths::tokens). `job_pid` is the process that holds make's implicit
    /// token (this process in the direct form, iree-compile for `--wrap`).
    pub fn from_env(
        makeflags: Option<&str>,
        tokens: &Path,
        slots: usize,
        job_pid: u32,
    ) -> Result<Limiter, Error> {
        if let Some(auth) = makeflags.and_then(jobserver_auth) {
            match open_jobserver(&auth) {
                Ok((read, write)) => {
                    let dir = tokens.join("jobserver");
                    fs_err::create_dir_all(&dir)?;
                    return Ok(Limiter {
                        source: Source::Jobserver {
                            read,
                            write,
                            free: dir.join(format!("free-{job_pid}")),
                            auth,
                        },
                    });
                }
                Err(e) => tracing::warn!(
                    "MAKEFLAGS names a jobserver ({auth}) that cannot be used ({e}); using lockstep's token pool (mark the make recipe with `+` to pass the jobserver down)"
                ),
            }
        }
        Limiter::pool(tokens.join("preprocess"), slots)
    }

    /// For messages: `token pool of 4 in DIR` or `make jobserver (fifo:PATH)`.
    pub fn describe(&self) -> String {
        match &self.source {
            Source::Pool { dir, slots } => format!("token pool of {slots} in {}", dir.display()),
            Source::Jobserver { auth, .. } => format!("make jobserver ({auth})"),
        }
    }

    /// Waits for a permit.
    pub fn acquire(&self) -> Result<Permit<'_>, Error> {
        let mut wait = Duration::from_micros(500);
        let offset = (std::process::id() as usize).wrapping_mul(7919) ^ thread_hash();
        loop {
            if let Some(held) = self.try_acquire(offset)? {
                return Ok(Permit {
                    limiter: self,
                    held,
                });
            }
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_millis(5));
        }
    }

    fn try_acquire(&self, offset: usize) -> Result<Option<Held>, Error> {
        match &self.source {
            Source::Pool { dir, slots } => {
                for k in 0..*slots {
                    let slot = (offset + k) % slots;
                    if let Ok(lock) =
                        FileLock::try_take(&dir.join(format!("slot-{slot}")), "a tool")?
                    {
                        return Ok(Some(Held::Lock(lock)));
                    }
                }
                Ok(None)
            }
            Source::Jobserver { read, free, .. } => {
                if let Ok(lock) = FileLock::try_take(free, "a tool")? {
                    return Ok(Some(Held::Lock(lock)));
                }
                let mut byte = [0u8; 1];
                let mut r: &File = read;
                match r.read(&mut byte) {
                    Ok(1) => Ok(Some(Held::Byte(byte[0]))),
                    Ok(_) => Ok(None),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(None),
                    Err(e) => Err(Error::failed("cannot read a token from the make jobserver")
                        .cause(e.to_string())
                        .hint("run without MAKEFLAGS, or check the make recipe passes the jobserver (`+`)")),
                }
            }
        }
    }
}

fn thread_hash() -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::thread::current().id().hash(&mut h);
    h.finish() as usize
}

/// The jobserver named in MAKEFLAGS (the last `--jobserver-auth=` or
/// `--jobserver-fds=` wins, as make documents).
pub fn jobserver_auth(makeflags: &str) -> Option<String> {
    makeflags
        .split_whitespace()
        .filter_map(|w| {
            w.strip_prefix("--jobserver-auth=")
                .or_else(|| w.strip_prefix("--jobserver-fds="))
        })
        .next_back()
        .map(str::to_string)
}

/// Opens the jobserver with a non-blocking read side of our own (a new open
/// file description, so make's descriptor flags are untouched).
fn open_jobserver(auth: &str) -> Result<(File, File), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let nonblock = nix::fcntl::OFlag::O_NONBLOCK.bits();
    let (rpath, wpath) = if let Some(path) = auth.strip_prefix("fifo:") {
        (PathBuf::from(path), PathBuf::from(path))
    } else {
        let (r, w) = auth
            .split_once(',')
            .ok_or_else(|| format!("unrecognised jobserver `{auth}`"))?;
        let r: i32 = r.parse().map_err(|_| format!("bad fd in `{auth}`"))?;
        let w: i32 = w.parse().map_err(|_| format!("bad fd in `{auth}`"))?;
        if r < 0 || w < 0 {
            return Err("make disabled the jobserver for this recipe".into());
        }
        (
            PathBuf::from(format!("/proc/self/fd/{r}")),
            PathBuf::from(format!("/proc/self/fd/{w}")),
        )
    };
    let read = File::options()
        .read(true)
        .custom_flags(nonblock)
        .open(&rpath)
        .map_err(|e| format!("{}: {e}", rpath.display()))?;
    let write = File::options()
        .write(true)
        .custom_flags(nonblock)
        .open(&wpath)
        .map_err(|e| format!("{}: {e}", wpath.display()))?;
    Ok((read, write))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn max_concurrency(limiter: Arc<Limiter>, threads: usize) -> usize {
        let now = Arc::new(AtomicUsize::new(0));
        let max = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (limiter, now, max) = (limiter.clone(), now.clone(), max.clone());
                std::thread::spawn(move || {
                    for _ in 0..3 {
                        let _p = limiter.acquire().unwrap();
                        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                        max.fetch_max(n, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(10));
                        now.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        max.load(Ordering::SeqCst)
    }

    #[test]
    fn pool_limits_threads() {
        let dir = tempfile::tempdir().unwrap();
        let limiter = Arc::new(Limiter::pool(dir.path().join("pool"), 2).unwrap());
        let max = max_concurrency(limiter, 6);
        assert!((1..=2).contains(&max), "max {max}");
    }

    #[test]
    fn fifo_jobserver_limits_and_returns_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("jobserver");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // Keep it open read-write so writes never block or fail.
        let keep = File::options().read(true).write(true).open(&fifo).unwrap();
        (&keep).write_all(b"++").unwrap(); // -j3: two tokens plus the implicit one
        let flags = format!(" -j3 --jobserver-auth=fifo:{}", fifo.display());
        assert_eq!(
            jobserver_auth(&flags).unwrap(),
            format!("fifo:{}", fifo.display())
        );
        let limiter = Arc::new(
            Limiter::from_env(Some(&flags), &dir.path().join("tokens"), 8, 12345).unwrap(),
        );
        assert!(limiter.describe().contains("jobserver"));
        let max = max_concurrency(limiter, 6);
        assert!((1..=3).contains(&max), "max {max}");
        // Both tokens came back.
        let mut r = File::options()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(&fifo)
            .unwrap();
        let mut buf = [0u8; 8];
        use std::os::unix::fs::OpenOptionsExt;
        assert_eq!(r.read(&mut buf).unwrap(), 2);
    }
}
