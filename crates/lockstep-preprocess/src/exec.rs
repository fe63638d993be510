//! Runs one tool process: its input on stdin and its stdout and stderr
//! captured through pipes, in its own process group (a timeout kills
//! whatever it started), under a time limit. No file is created per run:
//! a module with 20,000 executables would otherwise create and delete
//! 80,000 files, and file systems slow down doing that (ext4's inode
//! allocator grew preprocess time faster than linearly). Files are written
//! only when a run fails or `--keep-temps` asks (see engine.rs).
//!
//! What a tool prints is bounded: at most [`MAX_STDOUT`] of stdout (a tool
//! that prints more is stopped at once) and the first and last halves of
//! [`MAX_STDERR`] of stderr, in memory and in the files kept on failure.
//! The run directories those files go to are pruned ([`prune_runs`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use lockstep_core::process::{Bounds, Exit};
use lockstep_core::Error;

/// The most of a tool's stdout accepted (an executable's text is far
/// smaller): a tool that prints more is stopped (its process group killed)
/// and fails; these bytes are what its kept output file holds, followed by
/// [`stdout_cut_marker`].
pub const MAX_STDOUT: u64 = 64 << 20;
/// The most of a tool's stderr kept: its first and last halves, with a
/// line saying how much was left out between them.
pub const MAX_STDERR: u64 = 4 << 20;

/// Run directories older than this are removed ([`prune_runs`]).
pub const RUNS_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// Beyond this many bytes in all run directories together, the oldest are
/// removed ([`prune_runs`]).
pub const RUNS_MAX_BYTES: u64 = 1 << 30;
/// Run directories changed this recently are never removed for size (a
/// concurrent run may be writing them).
const RUNS_IN_USE: Duration = Duration::from_secs(10 * 60);

/// The line that ends a kept output the tool was stopped in.
pub fn stdout_cut_marker() -> String {
    format!(
        "\n[lockstep: the tool printed more than {MAX_STDOUT} bytes on stdout and was stopped; only those are kept]\n"
    )
}

/// One tool run.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    pub program: &'a Path,
    /// argv[0] as given, then the arguments.
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub stdin: &'a [u8],
    pub timeout: Option<Duration>,
}

/// How it ended, how long it took and what it printed.
#[derive(Debug, Clone)]
pub struct Ran {
    pub exit: Exit,
    pub elapsed: Duration,
    pub stdout: Vec<u8>,
    /// True when stdout went past [`MAX_STDOUT`] (the rest was discarded).
    pub stdout_truncated: bool,
    pub stderr: Vec<u8>,
}

pub fn run(r: &Run) -> Result<Ran, Error> {
    use std::os::unix::process::CommandExt;
    let mut cmd = lockstep_core::process::command(r.program);
    if let Some(first) = r.argv.first() {
        cmd.arg0(first);
    }
    cmd.args(r.argv.iter().skip(1)).current_dir(r.cwd);
    let captured = lockstep_core::process::capture(
        &mut cmd,
        Some(r.stdin),
        r.timeout,
        Bounds {
            max_stdout: Some(MAX_STDOUT),
            max_stderr: Some(MAX_STDERR),
        },
    )
    .map_err(|e| {
        Error::failed(format!("cannot start `{}`", r.argv.join(" ")))
            .cause(format!("{}: {e}", r.program.display()))
            .hint("check that the tool exists and is executable")
    })?;
    Ok(Ran {
        exit: captured.exit,
        elapsed: captured.elapsed,
        stdout_truncated: captured.stdout_truncated,
        stdout: captured.stdout,
        stderr: captured.stderr,
    })
}

/// The last `n` non-empty lines of `bytes` (lossy UTF-8), for error messages.
pub fn tail_lines(bytes: &[u8], n: usize) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| {
            if l.len() > 300 {
                let mut cut = 300;
                while !l.is_char_boundary(cut) {
                    cut -= 1;
                }
                format!("{}...", &l[..cut])
            } else {
                l.to_string()
            }
        })
        .collect()
}

/// A unique directory name for a run: `<utc stamp>-<pid>`.
pub fn run_name(prefix: &str) -> PathBuf {
    PathBuf::from(format!(
        "{prefix}{}-{}",
        jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S%.3f"),
        std::process::id()
    ))
}

/// What [`prune_runs`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub dirs: usize,
    pub bytes: u64,
}

/// Prunes the run directories in `runs` (`$LOCKSTEP_HOME/preprocess/runs`,
/// where failed runs keep their files): those older than [`RUNS_MAX_AGE`],
/// then the oldest while all of them together hold more than
/// [`RUNS_MAX_BYTES`], never `keep` (the run that just kept its files) nor
/// one changed in the last ten minutes (a concurrent run's). Errors are
/// ignored: pruning never fails a run. Only directories are removed, never
/// through a link.
pub fn prune_runs(runs: &Path, keep: Option<&Path>) -> Pruned {
    let Ok(entries) = std::fs::read_dir(runs) else {
        return Pruned::default();
    };
    let now = SystemTime::now();
    let age = |t: SystemTime| now.duration_since(t).unwrap_or(Duration::ZERO);
    let mut dirs: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || keep.is_some_and(|k| k == path) {
            continue;
        }
        let modified = meta.modified().unwrap_or(now);
        dirs.push((modified, dir_bytes(&path), path));
    }
    dirs.sort();
    let mut pruned = Pruned::default();
    let mut total: u64 = dirs.iter().map(|d| d.1).sum();
    total = total.saturating_add(keep.map(dir_bytes).unwrap_or(0));
    for (modified, bytes, path) in dirs {
        let old = age(modified) > RUNS_MAX_AGE;
        let over = total > RUNS_MAX_BYTES && age(modified) > RUNS_IN_USE;
        if (old || over) && std::fs::remove_dir_all(&path).is_ok() {
            pruned.dirs += 1;
            pruned.bytes += bytes;
            total = total.saturating_sub(bytes);
        }
    }
    pruned
}

/// The bytes of the regular files below `dir` (links not followed).
fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                total = total.saturating_add(meta.len());
            }
        }
    }
    total
}

/// Writes `bytes` to `path` as a kept file; the error names the file, and
/// a file size limit reached (`EFBIG`, `ulimit -f`) says so.
pub fn write_kept(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| {
        let limit = if e.raw_os_error() == Some(27) {
            " (the file size limit, `ulimit -f`, was reached)"
        } else {
            ""
        };
        format!("cannot write {}: {e}{limit}", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_runs_and_runs_beyond_the_size_cap_are_pruned_oldest_first() {
        let runs = tempfile::tempdir().unwrap();
        let make = |name: &str, bytes: u64, age: Duration| {
            let dir = runs.path().join(name);
            std::fs::create_dir_all(dir.join("000-x")).unwrap();
            let file = std::fs::File::create(dir.join("000-x/1.out.mlir")).unwrap();
            file.set_len(bytes).unwrap();
            let when = SystemTime::now() - age;
            std::fs::File::open(&dir)
                .unwrap()
                .set_modified(when)
                .unwrap();
            dir
        };
        let hour = Duration::from_secs(3600);
        let ancient = make("ancient", 10, RUNS_MAX_AGE + hour);
        let big_old = make("big-old", RUNS_MAX_BYTES, 3 * hour);
        let mid = make("mid", 1 << 20, 2 * hour);
        let fresh = make("fresh", 1 << 20, Duration::ZERO);
        let pruned = prune_runs(runs.path(), None);
        assert!(!ancient.exists(), "older than the age limit");
        assert!(!big_old.exists(), "the oldest beyond the size cap");
        assert!(mid.exists(), "under the cap once the oldest went");
        assert!(fresh.exists(), "a run changed in the last minutes stays");
        assert_eq!(pruned.dirs, 2);
        // The run that just kept its files is never removed.
        let keep = make("keep", 2 * RUNS_MAX_BYTES, RUNS_MAX_AGE + hour);
        prune_runs(runs.path(), Some(&keep));
        assert!(keep.exists());
        assert_eq!(
            prune_runs(&runs.path().join("missing"), None),
            Pruned::default()
        );
    }
}
