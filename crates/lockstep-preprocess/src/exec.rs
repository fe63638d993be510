//! Runs one tool process: its input on stdin and its stdout and stderr
//! captured through pipes, in its own process group (a timeout kills
//! whatever it started), under a time limit. No file is created per run:
//! a module with 20,000 executables would otherwise create and delete
//! 80,000 files, and file systems slow down doing that (ext4's inode
//! allocator grew preprocess time faster than linearly). Files are written
//! only when a run fails or `--keep-temps` asks (see engine.rs).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lockstep_core::process::Exit;
use lockstep_core::Error;

/// The most of a tool's stdout kept: an executable's text is far smaller;
/// a runaway tool must not exhaust memory.
pub const MAX_STDOUT: u64 = 1 << 30;
/// The most of a tool's stderr kept (its tail is what error messages show).
pub const MAX_STDERR: u64 = 4 << 20;

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
    let start = Instant::now();
    let mut cmd = Command::new(r.program);
    if let Some(first) = r.argv.first() {
        cmd.arg0(first);
    }
    let mut child = cmd
        .args(r.argv.iter().skip(1))
        .current_dir(r.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| {
            Error::failed(format!("cannot start `{}`", r.argv.join(" ")))
                .cause(format!("{}: {e}", r.program.display()))
                .hint("check that the tool exists and is executable")
        })?;
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    // The pipes are pumped on their own threads while this one waits with
    // the timeout; killing the group at the timeout closes them.
    let (exit, out, err) = std::thread::scope(|s| {
        let feeder = s.spawn(move || {
            if let Some(mut pipe) = stdin {
                // A tool that exits without reading all of its input closes
                // the pipe: not an error of lockstep's.
                let _ = pipe.write_all(r.stdin);
            }
        });
        let out = s.spawn(move || drain(stdout, MAX_STDOUT));
        let err = s.spawn(move || drain(stderr, MAX_STDERR));
        let exit = lockstep_core::process::wait_group(&mut child, r.timeout);
        let _ = feeder.join();
        let out = out.join().unwrap_or_default();
        let err = err.join().unwrap_or_default();
        (exit, out, err)
    });
    Ok(Ran {
        exit: exit?,
        elapsed: start.elapsed(),
        stdout_truncated: out.1,
        stdout: out.0,
        stderr: err.0,
    })
}

/// Reads `pipe` to its end, keeping at most `max` bytes (and whether there
/// were more).
fn drain(pipe: Option<impl Read>, max: u64) -> (Vec<u8>, bool) {
    let Some(pipe) = pipe else {
        return (Vec::new(), false);
    };
    let mut kept = Vec::new();
    let mut limited = pipe.take(max);
    let _ = limited.read_to_end(&mut kept);
    let mut pipe = limited.into_inner();
    let more = std::io::copy(&mut pipe, &mut std::io::sink()).unwrap_or(0) > 0;
    (kept, more)
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
