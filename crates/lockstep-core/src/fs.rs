//! Writing files so that a reader never sees half of one (a temporary name in
//! the same directory, then a rename), and reading the files a user names
//! with a bound, so that a device or a huge file is an error, not a hang.
//! A file size limit (`ulimit -f`) makes a write fail with `EFBIG`, an error
//! naming the file, instead of killing lockstep with `SIGXFSZ`
//! ([`file_size_limit_is_an_error`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use std::io::Read;
use std::os::unix::fs::FileTypeExt;

use crate::error::{Error, Result};

/// A unique temporary name next to `path` (same directory, so a rename into
/// `path` is atomic).
pub fn temp_name(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = crate::fs::file_name(path);
    path.with_file_name(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// `root/rel`, for a file lockstep writes inside a repository (a mark, a
/// pin file): refused when `rel` leaves `root` (`..`, absolute) or when a
/// link on the way (`rel` itself included) points out of the tree, naming
/// the link. A committed symlink must not make lockstep write or delete
/// somewhere else; a link that stays inside is followed.
pub fn inside_tree(root: &Path, rel: &str, what: &str) -> Result<PathBuf> {
    use std::path::Component;
    let leaves = || {
        Error::usage(format!(
            "{what} `{rel}` is not a path inside the repository"
        ))
        .hint("give a path relative to the repository's top, without `..`")
    };
    let real_root = root.canonicalize().map_err(|e| {
        Error::failed(format!("cannot resolve {}", root.display())).cause(e.to_string())
    })?;
    let mut at = root.to_path_buf();
    let mut parts = 0;
    for part in Path::new(rel).components() {
        match part {
            Component::Normal(name) => at.push(name),
            Component::CurDir => continue,
            _ => return Err(leaves()),
        }
        parts += 1;
        let Ok(meta) = at.symlink_metadata() else {
            break;
        };
        if !meta.file_type().is_symlink() {
            continue;
        }
        let target = std::fs::read_link(&at)
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        if !at.canonicalize().is_ok_and(|t| t.starts_with(&real_root)) {
            return Err(Error::usage(format!(
                "{what}: {} is a symbolic link out of the repository",
                at.display()
            ))
            .cause(format!(
                "it points at {}",
                crate::error::printable_line(&target)
            ))
            .hint("lockstep writes only inside the repository: replace the link with a file (git rm it, then commit), or point it inside; nothing was written"));
        }
    }
    if parts == 0 {
        return Err(leaves());
    }
    Ok(root.join(rel))
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir)?;
    }
    let tmp = temp_name(path);
    if let Err(e) = fs_err::write(&tmp, bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.into());
    }
    if let Err(e) = fs_err::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.into());
    }
    Ok(())
}

/// Reads the input file `path` that `what` (a flag or setting) names, whole,
/// refusing what is not a regular file (a directory, `/dev/zero`) and what
/// is larger than `max_bytes`, with an error that says which.
pub fn read_input(what: &str, path: &Path, max_bytes: u64) -> Result<Vec<u8>> {
    read_bounded(what, path, max_bytes, FIFO_WAIT)
}

/// How long a FIFO named as an input may wait for a program to write to
/// it (`<(cmd)` and a FIFO fed by another process start at once; a FIFO
/// nothing feeds would otherwise block lockstep forever).
const FIFO_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

fn read_bounded(
    what: &str,
    path: &Path,
    max_bytes: u64,
    fifo_wait: std::time::Duration,
) -> Result<Vec<u8>> {
    let fail = |message: String| {
        Error::usage(message).hint(format!("give {what} a readable regular file"))
    };
    let meta = std::fs::metadata(path).map_err(|e| {
        let problem = if e.kind() == std::io::ErrorKind::NotFound {
            "does not exist".to_string()
        } else {
            format!("cannot be read: {e}")
        };
        fail(format!("{what} {} {problem}", path.display()))
    })?;
    if meta.is_dir() {
        return Err(fail(format!("{what} {} is a directory", path.display())));
    }
    let regular = meta.is_file();
    if regular && meta.len() > max_bytes {
        return Err(too_large(what, path, max_bytes));
    }
    if meta.file_type().is_fifo() {
        let bytes = read_fifo(path, max_bytes, fifo_wait)
            .map_err(|e| fail(format!("{what} {} {e}", path.display())))?;
        if bytes.len() as u64 > max_bytes {
            return Err(too_large(what, path, max_bytes));
        }
        return Ok(bytes);
    }
    let file = std::fs::File::open(path)
        .map_err(|e| fail(format!("{what} {} cannot be read: {e}", path.display())))?;
    // A FIFO or device has no length: read one byte past the limit to tell.
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| fail(format!("{what} {} cannot be read: {e}", path.display())))?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(what, path, max_bytes));
    }
    Ok(bytes)
}

/// Reads a FIFO without ever blocking: opened and read non-blocking, each
/// wait for more bounded by `wait` (nothing written yet, or a writer that
/// holds it open and writes nothing more), at most `max_bytes` + 1 bytes.
/// The error completes "{what} {path} ...".
fn read_fifo(
    path: &Path,
    max_bytes: u64,
    wait: std::time::Duration,
) -> std::result::Result<Vec<u8>, String> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot be read: {e}"))?;
    let millis = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut written_to = false;
    loop {
        let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(millis)) {
            Ok(0) if written_to => {
                return Err(format!(
                    "is a FIFO whose writer wrote nothing more for {} s",
                    wait.as_secs()
                ))
            }
            Ok(0) => {
                return Err(format!(
                    "is a FIFO that nothing wrote to within {} s",
                    wait.as_secs()
                ))
            }
            Ok(_) => {}
            Err(e) => return Err(format!("cannot be read: {e}")),
        }
        match file.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) => {
                written_to = true;
                bytes.extend_from_slice(&chunk[..n]);
                if bytes.len() as u64 > max_bytes {
                    return Ok(bytes);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("cannot be read: {e}")),
        }
    }
}

/// A path in a tree lockstep did not write as its errors name it: spelled
/// ([`crate::error::spelled`]), so that a name holding a newline, CR or ESC
/// stays one line of the message and hides nothing.
fn shown(path: &Path) -> String {
    crate::error::spelled(&path.display().to_string())
}

/// Opens a file lockstep finds in a tree it did not write (a repository's
/// tracked files, a bundle, a suite) for reading, never blocking: opened
/// non-blocking (a FIFO opens at once), then refused unless what was opened
/// is a regular file (a link to a FIFO, `/dev/zero` or a socket is named as
/// such) outside the kernel's own filesystems (`/proc/kmsg` is "regular" and
/// blocks), and no larger than `max_bytes`. The check is made on the opened
/// file, so a link swapped between a check and the open cannot pass. Returns
/// the file (reads on it do not block) and its length.
pub fn open_tree_file(what: &str, path: &Path, max_bytes: u64) -> Result<(std::fs::File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |problem: String| {
        Error::usage(format!("{what} {} {problem}", shown(path)))
            .hint("it must be a regular file in the tree (not a FIFO, a device or a kernel file); replace it with one")
    };
    let refuse = |kind: &str| {
        let link = path
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink());
        let through = if link { " (through a link)" } else { "" };
        fail(format!("is {kind}{through}, not a regular file"))
    };
    // Looked at before it is opened: opening a device can act (a watchdog
    // arms, a tape rewinds, a terminal becomes the controlling one).
    let before = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => fail("does not exist".to_string()),
        _ => fail(format!("cannot be read: {e}")),
    })?;
    if let Some(kind) = not_regular(&before) {
        return Err(refuse(kind));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => fail("does not exist".to_string()),
            _ => fail(format!("cannot be read: {e}")),
        })?;
    // And again what was opened: a path swapped between the look and the
    // open cannot pass.
    let meta = file
        .metadata()
        .map_err(|e| fail(format!("cannot be read: {e}")))?;
    if let Some(kind) = not_regular(&meta) {
        return Err(refuse(kind));
    }
    if on_kernel_filesystem(&file) {
        return Err(refuse("a kernel file (/proc, /sys)"));
    }
    if meta.len() > max_bytes {
        return Err(too_large(what, path, max_bytes));
    }
    Ok((file, meta.len()))
}

/// What a file is when it is not a regular one.
fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else if kind.is_socket() {
        Some("a socket")
    } else if !kind.is_file() {
        Some("not a regular file")
    } else {
        None
    }
}

/// Reads the file [`open_tree_file`] opens, whole (at most `max_bytes`: a
/// file that grows while read is cut there and refused).
pub fn read_tree_file(what: &str, path: &Path, max_bytes: u64) -> Result<Vec<u8>> {
    let (file, len) = open_tree_file(what, path, max_bytes)?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| {
            Error::failed(format!("{what} {} cannot be read", shown(path))).cause(e.to_string())
        })?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(what, path, max_bytes));
    }
    Ok(bytes)
}

/// [`read_tree_file`] for text: invalid UTF-8 is an error naming the file.
pub fn read_tree_text(what: &str, path: &Path, max_bytes: u64) -> Result<String> {
    String::from_utf8(read_tree_file(what, path, max_bytes)?).map_err(|e| {
        Error::usage(format!("{what} {} is not UTF-8 text", shown(path))).cause(format!(
            "invalid byte at offset {}",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The sha256 (hex) and length of the file [`open_tree_file`] opens, hashed
/// as it streams (at most `max_bytes`: a file that grows while read is
/// refused): how a module, a seal's payload or a bundle's file is checked
/// without ever blocking or reading without end.
pub fn sha256_tree_file(what: &str, path: &Path, max_bytes: u64) -> Result<(String, u64)> {
    use sha2::{Digest, Sha256};
    let (file, _) = open_tree_file(what, path, max_bytes)?;
    let mut hasher = Sha256::new();
    let read =
        std::io::copy(&mut file.take(max_bytes.saturating_add(1)), &mut hasher).map_err(|e| {
            Error::failed(format!("{what} {} cannot be read", shown(path))).cause(e.to_string())
        })?;
    if read > max_bytes {
        return Err(too_large(what, path, max_bytes));
    }
    Ok((hex::encode(hasher.finalize()), read))
}

/// `path` as the filesystem resolves it, whether or not it exists: made
/// absolute (against the working directory), each existing component's
/// links followed (`..` after a link goes up from where the link leads,
/// as the kernel does), the components that do not exist yet appended as
/// written. Two paths that name one place, through links or not, resolve
/// alike; a path inside a directory resolves inside that directory's
/// resolved path.
pub fn real_path(path: &Path) -> PathBuf {
    use std::path::Component;
    let absolute = match path.is_absolute() {
        true => path.to_path_buf(),
        false => std::env::current_dir()
            .map(|cwd| cwd.join(path))
            .unwrap_or_else(|_| path.to_path_buf()),
    };
    let mut out = PathBuf::new();
    let mut exists = true;
    for part in absolute.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => out.push(part.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if exists {
                    match std::fs::canonicalize(&out) {
                        Ok(real) => out = real,
                        Err(_) => exists = false,
                    }
                }
            }
        }
    }
    out
}

/// Whether `file` lives on one of the kernel's pseudo filesystems, whose
/// "regular" files may block a reader or never end.
fn on_kernel_filesystem(file: &std::fs::File) -> bool {
    nix::sys::statfs::fstatfs(file).is_ok_and(|fs| is_kernel_filesystem(fs.filesystem_type()))
}

/// Whether `path` (a directory an output would go in, say) lives on one of
/// the kernel's pseudo filesystems (proc, sysfs, cgroup, debugfs ...,
/// wherever they are mounted); false when it cannot be read.
pub fn on_kernel_filesystem_at(path: &Path) -> bool {
    nix::sys::statfs::statfs(path).is_ok_and(|fs| is_kernel_filesystem(fs.filesystem_type()))
}

fn is_kernel_filesystem(kind: nix::sys::statfs::FsType) -> bool {
    use nix::sys::statfs::{
        BPF_FS_MAGIC, CGROUP2_SUPER_MAGIC, CGROUP_SUPER_MAGIC, DEBUGFS_MAGIC, DEVPTS_SUPER_MAGIC,
        NSFS_MAGIC, PROC_SUPER_MAGIC, SECURITYFS_MAGIC, SELINUX_MAGIC, SYSFS_MAGIC, TRACEFS_MAGIC,
    };
    let kernel = [
        PROC_SUPER_MAGIC,
        SYSFS_MAGIC,
        DEBUGFS_MAGIC,
        TRACEFS_MAGIC,
        SECURITYFS_MAGIC,
        SELINUX_MAGIC,
        CGROUP_SUPER_MAGIC,
        CGROUP2_SUPER_MAGIC,
        DEVPTS_SUPER_MAGIC,
        BPF_FS_MAGIC,
        NSFS_MAGIC,
    ];
    kernel.contains(&kind)
}

/// [`read_input`] for text: invalid UTF-8 is an error naming the file.
pub fn read_input_text(what: &str, path: &Path, max_bytes: u64) -> Result<String> {
    String::from_utf8(read_input(what, path, max_bytes)?).map_err(|e| {
        Error::usage(format!("{what} {} is not UTF-8 text", path.display())).cause(format!(
            "invalid byte at offset {}",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn too_large(what: &str, path: &Path, max_bytes: u64) -> Error {
    Error::usage(format!(
        "{what} {} is larger than {max_bytes} bytes, the most lockstep reads from it",
        shown(path)
    ))
    .hint("check that it is the file you meant")
}

/// The bytes of the regular files under `dir` (links inside not followed;
/// what cannot be read counts as nothing): how big a site, a store or one
/// of lockstep's directories is. `dir` itself may be a link to the
/// directory (`$LOCKSTEP_TOOLCHAINS` on another disk).
pub fn dir_size(dir: &Path) -> u64 {
    dir_size_without(dir, &[])
}

/// As [`dir_size`], leaving out the directories in `skip` (paths as they
/// appear under `dir`: another line of a listing counts them).
pub fn dir_size_without(dir: &Path, skip: &[&Path]) -> u64 {
    let mut total = 0u64;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        if skip.contains(&next.as_path()) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => pending.push(entry.path()),
                Ok(t) if t.is_file() => {
                    total = total.saturating_add(entry.metadata().map(|m| m.len()).unwrap_or(0))
                }
                _ => {}
            }
        }
    }
    total
}

/// The last component of `path` as text (lossy), empty when it has none:
/// what listings and messages compare and show.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `dir` may receive a new tree: it does not exist, or is an empty
/// directory. Otherwise a usage error naming `flag` and `dir` (an output
/// never overwrites files).
pub fn require_new_or_empty_dir(flag: &str, dir: &Path) -> Result<()> {
    match std::fs::read_dir(dir).map(|mut entries| entries.next().is_some()) {
        Ok(true) => Err(Error::usage(format!(
            "{flag} {}: the directory is not empty",
            dir.display()
        ))
        .hint("name a new or empty directory: nothing is ever written over files")),
        Ok(false) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::usage(format!("{flag} {}: {e}", dir.display()))
            .hint("name a new or empty directory")),
    }
}

/// A directory being built beside its final place, so that the final place
/// only ever holds a whole one: `.NAME.tmp-PID-N` in the same directory
/// (created fresh: nothing planted in advance is written through), moved
/// into place by [`StagedDir::install`], removed when dropped otherwise.
/// What a killed run left (`.NAME.tmp-PID-*` and `.NAME.old-PID-*` of a dead
/// PID) is reclaimed the next time a directory of that name is staged.
#[derive(Debug)]
pub struct StagedDir {
    path: PathBuf,
    dest: PathBuf,
}

impl StagedDir {
    /// A new empty staging directory for `dest` (its parent is created).
    pub fn beside(dest: &Path) -> Result<StagedDir> {
        let parent = parent_of(dest);
        fs_err::create_dir_all(&parent)?;
        reclaim_stale(dest);
        loop {
            let path = temp_name(dest);
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    return Ok(StagedDir {
                        path,
                        dest: dest.to_path_buf(),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(Error::failed(format!(
                        "cannot create a staging directory in {}",
                        parent.display()
                    ))
                    .cause(e.to_string()))
                }
            }
        }
    }

    /// Where to build.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves the built directory to its place, replacing what is there: the
    /// old one is moved aside first and removed after, so the place never
    /// holds half of either.
    pub fn install(self) -> Result<()> {
        let dest = self.dest.clone();
        let old = aside_name(&dest);
        let had_old = dest.symlink_metadata().is_ok();
        if had_old {
            std::fs::rename(&dest, &old).map_err(|e| move_error("move aside", &dest, e))?;
        }
        if let Err(e) = std::fs::rename(&self.path, &dest) {
            if had_old {
                let _ = std::fs::rename(&old, &dest);
            }
            return Err(move_error("move the new directory into", &dest, e));
        }
        if had_old {
            remove_any(&old);
        }
        std::mem::forget(self);
        Ok(())
    }

    /// Moves the built directory to its place, which must not exist.
    pub fn install_new(self) -> Result<()> {
        if self.dest.symlink_metadata().is_ok() {
            return Err(Error::failed(format!(
                "{} already exists",
                self.dest.display()
            )));
        }
        std::fs::rename(&self.path, &self.dest)
            .map_err(|e| move_error("move the new directory into", &self.dest, e))?;
        std::mem::forget(self);
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        remove_any(&self.path);
    }
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn aside_name(dest: &Path) -> PathBuf {
    let tmp = temp_name(dest);
    let name = crate::fs::file_name(&tmp);
    tmp.with_file_name(name.replacen(".tmp-", ".old-", 1))
}

fn move_error(what: &str, dest: &Path, e: std::io::Error) -> Error {
    Error::failed(format!("cannot {what} {}", dest.display())).cause(e.to_string())
}

fn remove_any(path: &Path) {
    let removed = match path.symlink_metadata() {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(_) => Ok(()),
    };
    if let Err(e) = removed {
        tracing::warn!(path = %path.display(), "cannot remove: {e}");
    }
}

/// Removes what killed runs left beside `dest`: `.NAME.tmp-PID-*` and
/// `.NAME.old-PID-*` (from [`temp_name`], [`StagedDir`], [`write_atomic`])
/// whose PID is not a live process. Best effort.
pub fn reclaim_stale(dest: &Path) {
    let Some(name) = dest.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(parent_of(dest)) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = stale_pid(&file, &name) {
            if !crate::process::pid_alive(pid) {
                tracing::info!(path = %entry.path().display(), "removing what a killed run left");
                remove_any(&entry.path());
            }
        }
    }
}

/// The PID in `.NAME.tmp-PID-N` / `.NAME.old-PID-N`.
fn stale_pid(file: &str, name: &str) -> Option<i32> {
    let rest = file.strip_prefix('.')?.strip_prefix(name)?;
    let rest = rest
        .strip_prefix(".tmp-")
        .or_else(|| rest.strip_prefix(".old-"))?;
    let (pid, n) = rest.split_once('-')?;
    n.bytes().all(|b| b.is_ascii_digit()).then_some(())?;
    pid.parse().ok()
}

/// Ignores `SIGXFSZ` for this process: a write past the file size limit
/// (`ulimit -f`) then fails with `EFBIG` ("File too large"), which callers
/// report naming the file, instead of the signal killing lockstep halfway
/// (exit 153, temporary files left behind). Child processes inherit it and
/// get `EFBIG` too. Called once at startup by the binary.
pub fn file_size_limit_is_an_error() {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: installing SIG_IGN runs no code of ours in the signal
    // handler; nothing else in lockstep handles SIGXFSZ.
    let _ = unsafe { signal(Signal::SIGXFSZ, SigHandler::SigIgn) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_atomic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x/y.bin");
        write_atomic(&path, b"abc").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left");
        // A directory in the way: the error leaves no temporary file.
        let blocked = dir.path().join("d");
        std::fs::create_dir_all(blocked.join("inner")).unwrap();
        assert!(write_atomic(&blocked, b"x").is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    /// The shapes of lockstep's directories: venvs whose `bin/python` is a
    /// link out of the tree, a linked directory, a FIFO, the directory
    /// itself reached through a link: only the regular files inside count.
    #[test]
    fn dir_size_counts_the_regular_files_inside_and_follows_only_the_top_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("python3.12"), vec![0u8; 5000]).unwrap();
        let venv = real.join("iree-3.13.0/venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::create_dir_all(venv.join("lib/python3.12/site-packages/m")).unwrap();
        std::fs::write(
            venv.join("lib/python3.12/site-packages/m/big.so"),
            vec![1u8; 3000],
        )
        .unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), b"home = /x\n").unwrap();
        std::os::unix::fs::symlink(outside.join("python3.12"), venv.join("bin/python")).unwrap();
        std::os::unix::fs::symlink("python", venv.join("bin/python3")).unwrap();
        std::os::unix::fs::symlink("lib", venv.join("lib64")).unwrap();
        std::os::unix::fs::symlink(&outside, real.join("elsewhere")).unwrap();
        std::fs::create_dir_all(real.join("uv/0.9.0")).unwrap();
        std::fs::write(real.join("uv/0.9.0/uv"), vec![2u8; 700]).unwrap();
        std::fs::write(real.join(".iree-3.13.0.lock"), b"pid 1\n").unwrap();
        nix::unistd::mkfifo(&real.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let expected = 3000 + 10 + 700 + 6;
        assert_eq!(dir_size(&real), expected);
        let link = dir.path().join("toolchains");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(dir_size(&link), expected);
        assert_eq!(dir_size_without(&link, &[&link.join("uv")]), expected - 700);
        assert_eq!(dir_size(&dir.path().join("missing")), 0);
    }

    #[test]
    fn a_device_is_named_before_it_is_ever_opened() {
        // /dev/tty cannot be opened without a controlling terminal (a test
        // run has none, or has one it must not take): named as a device,
        // not an error from opening it.
        let err = read_tree_file("FILE", Path::new("/dev/tty"), 10).unwrap_err();
        assert!(err.message.contains("is a device"), "{}", err.message);
    }

    #[test]
    fn tree_files_must_be_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let cases = [
            (dir.path().join("fifo"), "is a FIFO"),
            (dir.path().to_path_buf(), "is a directory"),
            (PathBuf::from("/dev/zero"), "is a device"),
            (PathBuf::from("/proc/self/status"), "kernel file"),
        ];
        for (path, said) in cases {
            let err = read_tree_file("FILE", &path, 1000).unwrap_err();
            assert!(err.message.contains(said), "{path:?}: {}", err.message);
        }
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let err = read_tree_file("FILE", &link, 1000).unwrap_err();
        assert!(
            err.message.contains("FIFO (through a link)"),
            "{}",
            err.message
        );
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; 11]).unwrap();
        let err = read_tree_file("FILE", &big, 10).unwrap_err();
        assert!(
            err.message.contains("larger than 10 bytes"),
            "{}",
            err.message
        );
        assert_eq!(read_tree_file("FILE", &big, 11).unwrap().len(), 11);
        let missing = read_tree_file("FILE", &dir.path().join("none"), 10).unwrap_err();
        assert!(
            missing.message.contains("does not exist"),
            "{}",
            missing.message
        );
    }

    /// A tree's names are not lockstep's: one holding a newline, a tab
    /// or ESC is named spelled, one line, whatever the refusal.
    #[test]
    fn a_tree_file_is_named_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("a\nb\tc\u{1b}[2J");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let big = dir.path().join("big\nfile");
        std::fs::write(&big, vec![b'x'; 11]).unwrap();
        let bad = dir.path().join("bad\rtext");
        std::fs::write(&bad, [0xff, 0xfe]).unwrap();
        for err in [
            read_tree_file("FILE", &fifo, 10).unwrap_err(),
            sha256_tree_file("FILE", &fifo, 10).unwrap_err(),
            read_tree_file("FILE", &big, 10).unwrap_err(),
            read_tree_text("FILE", &bad, 10).unwrap_err(),
            read_tree_file("FILE", &dir.path().join("no\nne"), 10).unwrap_err(),
        ] {
            assert!(
                !err.message.contains(['\n', '\t', '\r', '\u{1b}']),
                "{:?}",
                err.message
            );
        }
        let err = read_tree_file("FILE", &fifo, 10).unwrap_err();
        assert!(
            err.message.contains("a\\nb\\tc\\u{1b}[2J is a FIFO"),
            "{}",
            err.message
        );
    }

    #[test]
    fn inputs_are_read_with_a_bound() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_input("INPUT", dir.path(), 10).unwrap_err();
        assert!(err.message.contains("is a directory"), "{}", err.message);
        let err = read_input("INPUT", Path::new("/dev/zero"), 1000).unwrap_err();
        assert!(
            err.message.contains("larger than 1000 bytes"),
            "{}",
            err.message
        );
        let err = read_input("INPUT", &dir.path().join("none"), 10).unwrap_err();
        assert!(err.message.contains("does not exist"), "{}", err.message);
        let file = dir.path().join("f");
        std::fs::write(&file, "12345").unwrap();
        assert_eq!(read_input("INPUT", &file, 5).unwrap(), b"12345");
        assert!(read_input("INPUT", &file, 4).is_err());
        std::fs::write(&file, [0xff, 0xfe]).unwrap();
        let err = read_input_text("INPUT", &file, 5).unwrap_err();
        assert!(err.message.contains("not UTF-8"), "{}", err.message);
    }

    #[test]
    fn a_fifo_is_read_when_fed_and_refused_when_not() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let wait = std::time::Duration::from_millis(200);
        let err = read_bounded("--suite-config", &fifo, 10, wait).unwrap_err();
        assert!(
            err.message.contains("FIFO that nothing wrote to"),
            "{}",
            err.message
        );
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, "fed").unwrap())
        };
        let bytes = read_bounded(
            "--suite-config",
            &fifo,
            10,
            std::time::Duration::from_secs(20),
        );
        writer.join().unwrap();
        assert_eq!(bytes.unwrap(), b"fed");

        // A writer that holds the FIFO open and stops writing does not
        // block the reader either. Opened read-write, the FIFO takes the
        // bytes before the reader comes (no thread, no race with it).
        let writer = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .unwrap();
        std::io::Write::write_all(&mut &writer, b"half").unwrap();
        let err =
            read_bounded("NEW", &fifo, 10, std::time::Duration::from_millis(200)).unwrap_err();
        assert!(
            err.message.contains("wrote nothing more"),
            "{}",
            err.message
        );
        drop(writer);
    }

    #[test]
    fn a_staged_directory_replaces_the_old_one_whole() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("venv");
        std::fs::create_dir(&dest).unwrap();
        std::fs::write(dest.join("old"), "1").unwrap();
        let staged = StagedDir::beside(&dest).unwrap();
        std::fs::write(staged.path().join("new"), "2").unwrap();
        staged.install().unwrap();
        assert!(dest.join("new").is_file() && !dest.join("old").exists());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["venv"], "nothing left beside it");
    }

    #[test]
    fn a_dropped_staging_directory_is_removed_and_a_dead_runs_is_reclaimed() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("simple");
        let staged = StagedDir::beside(&dest).unwrap();
        let path = staged.path().to_path_buf();
        drop(staged);
        assert!(!path.exists());
        // A PID that cannot be alive (above the kernel's maximum).
        let dead = dir.path().join(".simple.tmp-99999999-0");
        let alive = dir
            .path()
            .join(format!(".simple.old-{}-0", std::process::id()));
        let other = dir.path().join(".simpler.tmp-99999999-0");
        for d in [&dead, &alive, &other] {
            std::fs::create_dir(d).unwrap();
        }
        StagedDir::beside(&dest).unwrap().install_new().unwrap();
        assert!(!dead.exists() && alive.exists() && other.exists());
        assert!(StagedDir::beside(&dest).unwrap().install_new().is_err());
    }

    #[test]
    fn paths_inside_a_tree_follow_links_that_stay_inside_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let out = dir.path().join("out");
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::os::unix::fs::symlink("real", root.join("inside")).unwrap();
        std::os::unix::fs::symlink(&out, root.join("away")).unwrap();
        std::os::unix::fs::symlink("../out/f", root.join("file-away")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/x", root.join("dangling")).unwrap();
        assert_eq!(
            inside_tree(&root, "inside/pin", "pin").unwrap(),
            root.join("inside/pin")
        );
        assert!(inside_tree(&root, "new/dir/pin", "pin").is_ok());
        for bad in [
            "away/pin",
            "file-away",
            "dangling",
            "../x",
            "/etc/passwd",
            "",
            ".",
        ] {
            let e = inside_tree(&root, bad, "pin").unwrap_err();
            assert_eq!(e.kind, crate::error::ErrorKind::Usage, "{bad}");
        }
        let e = inside_tree(&root, "away/pin", "pin").unwrap_err();
        assert!(e.message.contains("symbolic link"), "{e:?}");
    }
}
