//! Runs one tool process: stdin from a file, stdout and stderr to files, its
//! own process group (a timeout kills whatever it started), a time limit.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lockstep_core::process::Exit;
use lockstep_core::Error;

/// One tool run.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    pub program: &'a Path,
    /// argv[0] as given, then the arguments.
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub stdin: &'a Path,
    pub stdout: &'a Path,
    pub stderr: &'a Path,
    pub timeout: Option<Duration>,
}

/// How it ended and how long it took.
#[derive(Debug, Clone, Copy)]
pub struct Ran {
    pub exit: Exit,
    pub elapsed: Duration,
}

pub fn run(r: &Run) -> Result<Ran, Error> {
    use std::os::unix::process::CommandExt;
    let open = |p: &Path, write: bool| {
        let f = if write {
            std::fs::File::create(p)
        } else {
            std::fs::File::open(p)
        };
        f.map_err(|e| Error::failed(format!("cannot open {}", p.display())).cause(e.to_string()))
    };
    let start = Instant::now();
    let mut cmd = Command::new(r.program);
    if let Some(first) = r.argv.first() {
        cmd.arg0(first);
    }
    let mut child = cmd
        .args(r.argv.iter().skip(1))
        .current_dir(r.cwd)
        .stdin(Stdio::from(open(r.stdin, false)?))
        .stdout(Stdio::from(open(r.stdout, true)?))
        .stderr(Stdio::from(open(r.stderr, true)?))
        .process_group(0)
        .spawn()
        .map_err(|e| {
            Error::failed(format!("cannot start `{}`", r.argv.join(" ")))
                .cause(format!("{}: {e}", r.program.display()))
                .hint("check that the tool exists and is executable")
        })?;
    let exit = lockstep_core::process::wait_group(&mut child, r.timeout)?;
    Ok(Ran {
        exit,
        elapsed: start.elapsed(),
    })
}

/// The last `n` non-empty lines of a file (lossy UTF-8), for error messages.
pub fn tail_lines(path: &Path, n: usize) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
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
