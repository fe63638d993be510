//! Running external programs the way every lockstep command does: an argv
//! vector (never a shell unless the user's argv names one), an explicit working
//! directory and extra environment, a timeout, and output captured to a log file
//! that reports can point at.
//!
//! Each child gets its own process group so a timeout kills the whole tree the
//! child started (a build spawns compilers), not just the direct child.
//!
//! This module is the one place a child process is made (outside tests):
//! [`run`] for a child whose output goes to a log, [`capture`] for one whose
//! input and output lockstep holds in memory (git, preprocess's tools; each
//! stream bounded), [`command`] and [`spawn_group`] for the pipelines a
//! caller wires itself (`git archive | tar`), waited with [`wait_group`]'s
//! timeout. The workspace's `clippy.toml` forbids `Command::new`, `spawn`,
//! `output` and `status` everywhere else (`clippy::disallowed_methods`;
//! only test code allows them, once per test root).
//!
//! No child inherits lockstep's secrets ([`SECRET_VARS`], a configured webhook
//! variable, a job's `GIT_CONFIG_*` credentials): [`run`] and [`command`]
//! take them out for every child. A child that needs one gets it by name
//! (in its [`Spec::env`], or set on the [`command`]): git gets a job's
//! `GIT_CONFIG_*` back (its own configuration), and only `git push` gets a
//! credential, for one command.
//!
//! [`run_with`] adds what some callers need beyond a [`Spec`]: more variables
//! taken out of the inherited environment, the child dying with lockstep even
//! when lockstep is killed with SIGKILL, and stdout kept apart from the log
//! when the caller reads it.

// The one door: this module is where `Command::new` and `spawn` are
// allowed (clippy.toml's `disallowed-methods` forbid them everywhere else),
// because every child it makes loses lockstep's secrets, gets its own
// process group and is waited with a timeout.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

use crate::error::{Error, Result};

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Added to (not replacing) the inherited environment.
    pub env: Vec<(String, String)>,
    pub timeout: Option<Duration>,
    /// stdout and stderr both go here (created or truncated).
    pub log: PathBuf,
    /// Written at the top of the log before the output (e.g. the command),
    /// on lines of its own (a newline is added when it has none).
    pub header: Option<String>,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
}

impl Exit {
    pub fn describe(&self) -> String {
        match self {
            Exit::Code(c) => format!("exit status {c}"),
            Exit::Signal(s) => format!("killed by signal {s}"),
            Exit::TimedOut => "timed out".to_string(),
        }
    }
}

/// The result of [`run`].
#[derive(Debug, Clone)]
pub struct Finished {
    pub exit: Exit,
    pub elapsed: Duration,
}

/// The variables that hold lockstep's own credentials: the GitHub token
/// (`pkg fetch`), upload credentials (`release promote --upload`, twine's
/// and uv's names), GitHub's OIDC request token (trusted publishing), the
/// GitHub Actions runtime's token and endpoints (the Actions cache and
/// artifact services: a workflow that exports them for a cache action, as
/// sccache-action does, must not hand them to lit.cfg.py or a build
/// backend), and the default webhook variable of `[integrate.notify]
/// url-env`. A child that runs package or user code gets none of them
/// ([`secret_vars`]); one that needs one is given it by name.
pub const SECRET_VARS: &[&str] = &[
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "TWINE_USERNAME",
    "TWINE_PASSWORD",
    "UV_PUBLISH_USERNAME",
    "UV_PUBLISH_PASSWORD",
    "UV_PUBLISH_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_RUNTIME_URL",
    "ACTIONS_RESULTS_URL",
    "ACTIONS_CACHE_URL",
    "LOCKSTEP_WEBHOOK_URL",
];

/// [`SECRET_VARS`], the variables registered with [`also_secret`] and
/// `extra` (a webhook variable the configuration names, when the caller
/// knows it), without duplicates.
pub fn secret_vars(extra: &[String]) -> Vec<String> {
    let mut vars: Vec<String> = SECRET_VARS.iter().map(|v| v.to_string()).collect();
    let registered = REGISTERED_SECRETS
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default();
    for v in registered.iter().chain(extra) {
        if !v.is_empty() && !vars.contains(v) {
            vars.push(v.clone());
        }
    }
    vars
}

/// Variable names the loaded configuration says hold a secret (`[integrate.notify]
/// url-env`): from then on no child gets them either.
static REGISTERED_SECRETS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Registers `var` as holding a secret for every child started from now on.
pub fn also_secret(var: &str) {
    if var.is_empty() {
        return;
    }
    if let Ok(mut r) = REGISTERED_SECRETS.lock() {
        if !r.iter().any(|v| v == var) {
            r.push(var.to_string());
        }
    }
}

/// The git configuration a job may carry in its environment
/// (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`, `GIT_CONFIG_VALUE_<n>`): the way
/// a workflow hands git an `Authorization` header. Only git gets them.
pub fn git_config_vars() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| {
            k == "GIT_CONFIG_COUNT"
                || k.starts_with("GIT_CONFIG_KEY_")
                || k.starts_with("GIT_CONFIG_VALUE_")
        })
        .collect()
}

/// The one spawn rule for secrets: takes lockstep's secrets ([`secret_vars`])
/// and a job's git credentials ([`git_config_vars`]) out of what `cmd`
/// inherits. A caller that must pass one sets it on `cmd` afterwards, by name.
pub fn without_secrets(cmd: &mut Command) -> &mut Command {
    for var in secret_vars(&[]).iter().chain(&git_config_vars()) {
        cmd.env_remove(var);
    }
    cmd
}

/// A command for `program` with none of lockstep's secrets or a job's git
/// credentials in its environment ([`without_secrets`]) and stdin null: the
/// one way a `Command` is made outside this module. Start it with
/// [`capture`] or [`spawn_group`].
pub fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    without_secrets(&mut cmd);
    cmd.stdin(Stdio::null());
    cmd
}

/// Starts `cmd` as the leader of its own process group, so that
/// [`wait_group`] (a timeout) or an interrupt kills everything it started.
pub fn spawn_group(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0).spawn()
}

/// How much of a captured child's output is kept.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bounds {
    /// The most of stdout accepted: a child that prints more is stopped at
    /// once (its group killed) and [`Captured::stdout_truncated`] set.
    pub max_stdout: Option<u64>,
    /// The most of stderr kept: its first and last halves, with a line
    /// saying how much was left out between them.
    pub max_stderr: Option<u64>,
}

/// How a captured child ended and what it printed.
#[derive(Debug, Clone)]
pub struct Captured {
    pub exit: Exit,
    pub elapsed: Duration,
    pub stdout: Vec<u8>,
    /// stdout went past [`Bounds::max_stdout`] (the rest was not read).
    pub stdout_truncated: bool,
    pub stderr: Vec<u8>,
}

/// Runs `cmd` in its own process group with `input` on its stdin and its
/// stdout and stderr read into memory (within `bounds`), killing the group
/// at `timeout`. The pipes are pumped on their own threads while this one
/// waits: a child answering per input line (git's `--stdin` commands) fills
/// its stdout long before it has read all its input, and writing
/// everything first would deadlock against it. An error only when the
/// child cannot be started or waited for.
pub fn capture(
    cmd: &mut Command,
    input: Option<&[u8]>,
    timeout: Option<Duration>,
    bounds: Bounds,
) -> std::io::Result<Captured> {
    use std::io::Write;
    let start = Instant::now();
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    if input.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = spawn_group(cmd)?;
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let group = i32::try_from(child.id()).unwrap_or(0);
    let (exit, out, err, written) = std::thread::scope(|s| {
        let feeder = s.spawn(move || match (input, stdin) {
            (Some(bytes), Some(mut pipe)) => pipe.write_all(bytes),
            _ => Ok(()),
        });
        let out = s.spawn(move || {
            let (kept, more) = read_bounded(stdout, bounds.max_stdout);
            if more {
                // Past the limit the output is refused anyway: stop the
                // child instead of reading (or buffering) the rest.
                kill_group(group);
            }
            (kept, more)
        });
        let err = s.spawn(move || head_and_tail(stderr, bounds.max_stderr));
        let exit = wait_group(&mut child, timeout);
        let written = feeder
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the stdin writer panicked")));
        let out = out.join().unwrap_or_default();
        let err = err.join().unwrap_or_default();
        (exit, out, err, written)
    });
    let exit = exit?;
    match written {
        // A child that exits without reading all its input closes the
        // pipe; its exit status tells the real story.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e),
        _ => {}
    }
    Ok(Captured {
        exit,
        elapsed: start.elapsed(),
        stdout: out.0,
        stdout_truncated: out.1,
        stderr: err,
    })
}

/// `first | second`: `first`'s stdout feeds `second`'s stdin, each in its
/// own process group, both stopped at `timeout` (a `first` that keeps
/// `second` waiting past it is stopped with it). `second`'s output and
/// both stderrs are captured within `bounds`; `first`'s stdout is the pipe.
/// Returns `(first, second)`.
pub fn pipeline(
    first: &mut Command,
    second: &mut Command,
    timeout: Option<Duration>,
    bounds: Bounds,
) -> std::io::Result<(Captured, Captured)> {
    let start = Instant::now();
    first.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut feeder = spawn_group(first)?;
    let (Some(stdout), stderr) = (feeder.stdout.take(), feeder.stderr.take()) else {
        return Err(std::io::Error::other("the first command has no stdout"));
    };
    second.stdin(stdout);
    let group = i32::try_from(feeder.id()).unwrap_or(0);
    std::thread::scope(|s| {
        let err = s.spawn(move || head_and_tail(stderr, bounds.max_stderr));
        let second = capture(second, None, timeout, bounds);
        // `second` is done (or stopped): `first` has nobody left to write
        // to; one that kept `second` waiting past the limit goes with it.
        if matches!(&second, Ok(c) if c.exit == Exit::TimedOut) {
            kill_group(group);
        }
        let exit = wait_group(&mut feeder, timeout);
        let stderr = err.join().unwrap_or_default();
        let first = Captured {
            exit: exit?,
            elapsed: start.elapsed(),
            stdout: Vec::new(),
            stdout_truncated: false,
            stderr,
        };
        Ok((first, second?))
    })
}

/// Reads `pipe` to its end, or `max` bytes of it and whether there was
/// more (the rest left unread).
fn read_bounded(pipe: Option<impl std::io::Read>, max: Option<u64>) -> (Vec<u8>, bool) {
    use std::io::Read;
    let Some(mut pipe) = pipe else {
        return (Vec::new(), false);
    };
    let mut kept = Vec::new();
    let Some(max) = max else {
        let _ = pipe.read_to_end(&mut kept);
        return (kept, false);
    };
    let mut limited = pipe.take(max);
    let _ = limited.read_to_end(&mut kept);
    let mut pipe = limited.into_inner();
    let mut one = [0u8; 1];
    let more = matches!(pipe.read(&mut one), Ok(n) if n > 0);
    (kept, more)
}

/// Reads `pipe` to its end keeping its first and last `max / 2` bytes,
/// with a line saying how many were left out between them (all of it
/// without a `max`).
fn head_and_tail(pipe: Option<impl std::io::Read>, max: Option<u64>) -> Vec<u8> {
    let Some(max) = max else {
        return read_bounded(pipe, None).0;
    };
    let Some(mut pipe) = pipe else {
        return Vec::new();
    };
    let half = usize::try_from(max / 2).unwrap_or(usize::MAX);
    let mut head: Vec<u8> = Vec::new();
    let mut tail: Vec<u8> = Vec::new();
    let mut dropped: u64 = 0;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut chunk = &buf[..n];
        if head.len() < half {
            let take = chunk.len().min(half - head.len());
            head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        tail.extend_from_slice(chunk);
        if tail.len() > 2 * half.max(1) {
            let cut = tail.len() - half;
            dropped += cut as u64;
            tail.drain(..cut);
        }
    }
    if tail.len() > half {
        let cut = tail.len() - half;
        dropped += cut as u64;
        tail.drain(..cut);
    }
    if dropped > 0 {
        head.extend_from_slice(
            format!("\n[lockstep: {dropped} bytes of stderr left out here]\n").as_bytes(),
        );
    }
    head.extend_from_slice(&tail);
    head
}

/// What [`run_with`] does beyond [`Spec`] (kept apart so that every
/// `Spec { .. }` stays as it is).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Removed from the inherited environment before [`Spec::env`] is added
    /// (so a variable the caller sets explicitly still reaches the child).
    pub env_remove: Vec<String>,
    /// The child gets SIGKILL when lockstep dies, however it dies: a killed
    /// install must not keep writing into a directory the next run removes.
    pub die_with_parent: bool,
    /// stdout goes to this file instead of the log (stderr still goes to
    /// the log), for callers that read what the child printed.
    pub stdout: Option<PathBuf>,
    /// The credentials the caller handed this child (in [`Spec::env`]):
    /// scrubbed from the log and from [`Options::stdout`] once the child
    /// has ended, so what a server echoed (`you sent Basic user:PASSWORD`)
    /// never stays on disk or reaches an error.
    pub scrub: Option<crate::scrub::Scrubber>,
}

/// Runs `spec` to completion. `on_spawn` receives the child's process group id
/// before waiting, so callers can journal it (and kill a leftover group after a
/// crash).
pub fn run(spec: &Spec, on_spawn: impl FnOnce(i32)) -> Result<Finished> {
    run_with(spec, &Options::default(), on_spawn)
}

/// [`run`] with [`Options`].
pub fn run_with(spec: &Spec, options: &Options, on_spawn: impl FnOnce(i32)) -> Result<Finished> {
    use std::os::unix::process::CommandExt;

    let Some((program, args)) = spec.argv.split_first() else {
        return Err(
            Error::usage("empty command").hint("configure a command with at least one word")
        );
    };
    if let Some(dir) = spec.log.parent() {
        fs_err::create_dir_all(dir)?;
    }
    let mut log = fs_err::File::create(&spec.log)?;
    if let Some(header) = &spec.header {
        use std::io::Write;
        log.write_all(header.as_bytes())?;
        // The child's first line starts a line of its own: a header without
        // its newline once glued lit's error onto the command line.
        if !header.ends_with('\n') {
            log.write_all(b"\n")?;
        }
        log.flush()?;
    }
    let stdout = match &options.stdout {
        Some(path) => Stdio::from(fs_err::File::create(path)?.into_parts().0),
        None => Stdio::from(log.try_clone()?.into_parts().0),
    };
    let start = Instant::now();
    let mut cmd = Command::new(resolve_program(program, &spec.cwd));
    cmd.args(args).current_dir(&spec.cwd);
    without_secrets(&mut cmd);
    for var in &options.env_remove {
        cmd.env_remove(var);
    }
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::from(log.into_parts().0))
        .process_group(0);
    if options.die_with_parent {
        die_with_parent(&mut cmd);
    }
    let mut child = cmd.spawn().map_err(|e| {
        Error::failed(format!("cannot start `{}`", spec.argv.join(" ")))
            .cause(format!("in {}: {e}", spec.cwd.display()))
            .hint("check that the command exists and is executable")
    })?;
    let pgid = child.id() as i32;
    on_spawn(pgid);
    let exit = wait_group(&mut child, spec.timeout);
    if let Some(scrubber) = options.scrub.as_ref().filter(|s| !s.is_empty()) {
        scrub_file(&spec.log, scrubber);
        if let Some(path) = &options.stdout {
            scrub_file(path, scrubber);
        }
    }
    let exit = exit?;
    Ok(Finished {
        exit,
        elapsed: start.elapsed(),
    })
}

/// The most of a child's output file that is scrubbed in place; a larger
/// one (a credentialed child never writes that much) is replaced by a note.
const MAX_SCRUBBED_BYTES: u64 = 256 << 20;

/// Rewrites `path` with every secret `scrubber` knows replaced (best effort:
/// a file that cannot be rewritten is removed rather than left holding one).
fn scrub_file(path: &Path, scrubber: &crate::scrub::Scrubber) {
    let text = match std::fs::metadata(path) {
        Ok(meta) if meta.len() > MAX_SCRUBBED_BYTES => {
            "(output removed: too large to scrub for credentials)\n".to_string()
        }
        Ok(_) => match std::fs::read(path) {
            Ok(bytes) => scrubber.apply(&String::from_utf8_lossy(&bytes)),
            Err(_) => return,
        },
        Err(_) => return,
    };
    // In place: the log is lockstep's own, and nothing reads it meanwhile.
    if std::fs::write(path, text.as_bytes()).is_err() {
        let _ = std::fs::remove_file(path);
    }
}

/// The child gets SIGKILL when the thread that started it dies (the thread
/// waits for it, so: when lockstep dies); a parent already gone by the time
/// the child runs the hook means the child exits at once.
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: between fork and exec the hook makes only the prctl and
    // getppid system calls, which are async-signal-safe, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)?;
            if nix::unistd::getppid().as_raw() as u32 != parent {
                return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Waits for a child started as the leader of its own process group, killing
/// the group at the timeout; whatever the child left running in its group is
/// killed too, so nothing outlives it. While it waits, the group is killed if
/// lockstep is interrupted ([`kill_children_on_signals`]).
pub fn wait_group(
    child: &mut std::process::Child,
    timeout: Option<Duration>,
) -> std::io::Result<Exit> {
    use std::os::unix::process::ExitStatusExt;
    let pgid = child.id() as i32;
    let _tracked = track_group(pgid);
    let status = match timeout {
        Some(limit) => match child.wait_timeout(limit)? {
            Some(status) => Some(status),
            None => {
                kill_group(pgid);
                let _ = child.wait();
                None
            }
        },
        None => Some(child.wait()?),
    };
    kill_group(pgid);
    Ok(match status {
        None => Exit::TimedOut,
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(sig)) => Exit::Signal(sig),
            (None, None) => Exit::Code(-1),
        },
    })
}

/// A relative program path with a slash is relative to the child's working
/// directory (as a shell started there would see it); bare names use PATH.
fn resolve_program(program: &str, cwd: &Path) -> PathBuf {
    let p = Path::new(program);
    if p.is_relative() && program.contains('/') {
        cwd.join(p)
    } else {
        p.to_path_buf()
    }
}

/// The process groups of children running now (each started as the leader of
/// its own group, so a terminal's Ctrl-C does not reach them).
static LIVE_GROUPS: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// Keeps a child's process group on the list [`kill_children_on_signals`]
/// kills; dropping it takes the group off.
pub struct TrackedGroup(i32);

impl Drop for TrackedGroup {
    fn drop(&mut self) {
        let mut live = LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|&g| g != self.0);
    }
}

/// Puts `pgid` on the list of groups to kill when lockstep is interrupted.
pub fn track_group(pgid: i32) -> TrackedGroup {
    LIVE_GROUPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(pgid);
    TrackedGroup(pgid)
}

/// On SIGINT, SIGTERM or SIGHUP: kill every tracked child process group,
/// then die of the signal as if it had not been caught (same exit status, so
/// shells and `integrate`'s crash recovery see what they expect). Without
/// this, children in their own groups would outlive an interrupted lockstep.
pub fn kill_children_on_signals() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                // Before any child dies of it: whatever the main thread
                // makes of a killed child, it must not exit first.
                TERMINATING.store(true, std::sync::atomic::Ordering::SeqCst);
                let live = LIVE_GROUPS
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                for pgid in live {
                    kill_group(pgid);
                }
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        })?;
    Ok(())
}

/// Set by [`kill_children_on_signals`]'s thread when a signal arrived,
/// before it kills the children: lockstep is about to die of the signal.
static TERMINATING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// What the binary calls before it exits on its own: when a signal is being
/// handled, waits for [`kill_children_on_signals`]'s thread to end the
/// process as the signal. A command whose children the signal killed sees
/// them fail and finishes; without this wait it could exit first with its
/// own code (seen under load: an interrupted `bench` exited 1, not of
/// SIGINT). The flag is set before any child is killed, so a command that
/// finished because of the signal always finds it set.
pub fn defer_exit_to_signal() {
    if TERMINATING.load(std::sync::atomic::Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
}

/// Sends SIGKILL to a process group; a group that no longer exists is fine.
pub fn kill_group(pgid: i32) {
    use nix::sys::signal::{killpg, Signal};
    use nix::unistd::Pid;
    if pgid > 1 {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// Whether a process with this pid exists (a zombie counts as dead).
pub fn pid_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // Field 3 (after the parenthesised command) is the state.
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X"))
        }
        Err(_) => false,
    }
}

/// What `program ARGS` (`--version`) says its version is: the words of its
/// first line holding a version number, up to that number (`git version
/// 2.47.3`, `IREE compiler version 3.13.0`, `uv 0.13.9`); `None` when it
/// does not run, fails or prints no version within `timeout`. The child
/// gets none of lockstep's secrets; its output goes to a temporary log that
/// is removed.
pub fn version_line(program: &Path, args: &[&str], timeout: Duration) -> Option<String> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let log = std::env::temp_dir().join(format!(
        ".lockstep-first-line-{}-{n}.log",
        std::process::id()
    ));
    let mut argv = vec![program.to_string_lossy().into_owned()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let spec = Spec {
        argv,
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        timeout: Some(timeout),
        log: log.clone(),
        header: None,
    };
    let options = Options {
        env_remove: secret_vars(&[]),
        die_with_parent: true,
        ..Options::default()
    };
    let finished = run_with(&spec, &options, |_| {});
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    match finished {
        Ok(f) if f.exit == Exit::Code(0) => version_in(&text),
        _ => None,
    }
}

/// The words of `text`'s first line holding a version number (digits, a
/// dot, digits), up to and including that word.
fn version_in(text: &str) -> Option<String> {
    let is_version = |w: &str| {
        let w = w.trim_start_matches('v');
        let mut parts = w.split('.');
        let first = parts.next().unwrap_or_default();
        let second = parts.next().unwrap_or_default();
        !first.is_empty()
            && first.bytes().all(|b| b.is_ascii_digit())
            && second.bytes().next().is_some_and(|b| b.is_ascii_digit())
    };
    text.lines().find_map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words.iter().position(|w| is_version(w))?;
        let shown = words[..=at].join(" ");
        Some(
            crate::error::printable_line(&shown)
                .chars()
                .take(120)
                .collect(),
        )
    })
}

/// The first executable file named `program` in the directories of `$PATH`.
pub fn on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// One word quoted for a POSIX shell when it needs to be (as is when it
/// cannot be: a NUL byte).
pub fn quote(w: &str) -> String {
    shlex::try_quote(w)
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| w.to_string())
}

/// A command line a person can paste into a shell: `cd DIR && prog args...`,
/// each word quoted when it needs to be.
pub fn shell_command(cwd: &Path, argv: &[String]) -> String {
    let words: Vec<String> = argv.iter().map(|w| quote(w)).collect();
    format!(
        "cd {} && {}",
        quote(&cwd.display().to_string()),
        words.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_keeps_its_head_and_tail_with_a_marker_between() {
        let text: Vec<u8> = (0..100_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let kept = head_and_tail(Some(&text[..]), Some(1000));
        assert!(kept.starts_with(b"0\n1\n2\n"));
        assert!(kept.ends_with(b"99999\n"));
        let shown = String::from_utf8_lossy(&kept);
        assert!(
            shown.contains(&format!(
                "[lockstep: {} bytes of stderr left out here]",
                text.len() - 1000
            )),
            "{shown}"
        );
        assert_eq!(head_and_tail(Some(&b"short"[..]), Some(1000)), b"short");
    }

    #[test]
    fn stdout_is_read_up_to_its_limit() {
        let (kept, more) = read_bounded(Some(&[7u8; 100][..]), Some(10));
        assert_eq!((kept.len(), more), (10, true));
        let (kept, more) = read_bounded(Some(&[7u8; 10][..]), Some(10));
        assert_eq!((kept.len(), more), (10, false));
    }

    #[test]
    fn capture_feeds_stdin_bounds_stdout_and_kills_at_the_timeout() {
        // Per-line answers larger than a pipe's buffer: no deadlock.
        let input: Vec<u8> = (0..20_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let mut cat = command("cat");
        let got = capture(
            &mut cat,
            Some(&input),
            Some(Duration::from_secs(30)),
            Bounds::default(),
        )
        .unwrap();
        assert_eq!((got.exit, got.stdout.len()), (Exit::Code(0), input.len()));
        // A child printing without end is stopped at the stdout bound.
        let mut yes = command("yes");
        let bounds = Bounds {
            max_stdout: Some(1000),
            max_stderr: None,
        };
        let got = capture(&mut yes, None, Some(Duration::from_secs(30)), bounds).unwrap();
        assert!(got.stdout_truncated && got.stdout.len() == 1000);
        // A child that never ends is killed at the timeout, with its group.
        let mut sleep = command("sh");
        sleep.args(["-c", "sleep 30 & sleep 30"]);
        let got = capture(
            &mut sleep,
            None,
            Some(Duration::from_millis(300)),
            Bounds::default(),
        )
        .unwrap();
        assert_eq!(got.exit, Exit::TimedOut);
        assert!(got.elapsed < Duration::from_secs(20), "{:?}", got.elapsed);
    }

    #[test]
    fn a_pipeline_feeds_the_second_command_and_reports_both() {
        let mut first = command("sh");
        first.args(["-c", "printf 'a\\nb\\n'; echo oops >&2; exit 3"]);
        let mut second = command("wc");
        second.arg("-l");
        let (first, second) = pipeline(
            &mut first,
            &mut second,
            Some(Duration::from_secs(30)),
            Bounds::default(),
        )
        .unwrap();
        assert_eq!(first.exit, Exit::Code(3));
        assert_eq!(String::from_utf8_lossy(&first.stderr).trim(), "oops");
        assert_eq!(second.exit, Exit::Code(0));
        assert_eq!(String::from_utf8_lossy(&second.stdout).trim(), "2");
    }

    #[test]
    fn a_command_starts_without_secrets() {
        // Checked on the command (the environment of this test process is
        // shared by the tests running beside it, so it is not changed).
        let cmd = command("env");
        let removed: Vec<String> = cmd
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(key, _)| key.to_string_lossy().into_owned())
            .collect();
        for var in SECRET_VARS {
            assert!(
                removed.iter().any(|r| r == *var),
                "{var} not removed: {removed:?}"
            );
        }
    }

    #[test]
    fn versions_are_read_from_the_line_that_holds_one() {
        assert_eq!(
            version_in("git version 2.47.3\n").as_deref(),
            Some("git version 2.47.3")
        );
        assert_eq!(
            version_in("IREE (https://iree.dev):\n  IREE compiler version 3.13.0 @ 89ece87b\n")
                .as_deref(),
            Some("IREE compiler version 3.13.0")
        );
        assert_eq!(
            version_in("auditwheel 6.8.2 installed at /x/y (python 3.11)").as_deref(),
            Some("auditwheel 6.8.2")
        );
        assert_eq!(
            version_in("uv 0.13.9 (abc 2026-01-01)").as_deref(),
            Some("uv 0.13.9")
        );
        assert_eq!(version_in("no version here\n"), None);
    }

    #[test]
    fn captures_output_and_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec {
            argv: vec![
                "sh".into(),
                "-c".into(),
                "echo hi; echo err >&2; exit 3".into(),
            ],
            cwd: dir.path().to_path_buf(),
            env: vec![],
            timeout: None,
            log: dir.path().join("log.txt"),
            header: None,
        };
        let done = run(&spec, |_| {}).unwrap();
        assert_eq!(done.exit, Exit::Code(3));
        let log = std::fs::read_to_string(dir.path().join("log.txt")).unwrap();
        assert!(log.contains("hi") && log.contains("err"));
    }

    /// The child's first line is never glued onto a header that lacks its
    /// newline (lit's config errors once read `$ lit ... suitelit: fatal`).
    #[test]
    fn the_childs_output_starts_on_a_line_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec {
            argv: vec!["sh".into(), "-c".into(), "echo 'lit: fatal' >&2".into()],
            cwd: dir.path().to_path_buf(),
            env: vec![],
            timeout: None,
            log: dir.path().join("log.txt"),
            header: Some("$ lit --show-tests suite".into()),
        };
        run(&spec, |_| {}).unwrap();
        let log = std::fs::read_to_string(dir.path().join("log.txt")).unwrap();
        assert_eq!(log, "$ lit --show-tests suite\nlit: fatal\n");
    }

    #[test]
    fn timeout_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec {
            argv: vec!["sh".into(), "-c".into(), "sleep 600 & sleep 600".into()],
            cwd: dir.path().to_path_buf(),
            env: vec![],
            timeout: Some(Duration::from_millis(200)),
            log: dir.path().join("log.txt"),
            header: None,
        };
        let done = run(&spec, |_| {}).unwrap();
        assert_eq!(done.exit, Exit::TimedOut);
        // Far below the children's own 600 s, whatever the load.
        assert!(done.elapsed < Duration::from_secs(300));
    }

    #[test]
    fn credentials_handed_to_a_child_never_stay_in_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec {
            argv: vec![
                "sh".into(),
                "-c".into(),
                "echo \"server: you sent Basic $U:$P\"; echo \"$P\" >&2; exit 3".into(),
            ],
            cwd: dir.path().to_path_buf(),
            env: vec![
                ("U".into(), "alice".into()),
                ("P".into(), "pypi-s3cret-t0ken".into()),
            ],
            timeout: Some(Duration::from_secs(60)),
            log: dir.path().join("log.txt"),
            header: None,
        };
        let mut scrubber = crate::scrub::Scrubber::new();
        scrubber.add_basic("alice", "pypi-s3cret-t0ken");
        let options = Options {
            stdout: Some(dir.path().join("out.txt")),
            scrub: Some(scrubber),
            ..Options::default()
        };
        let done = run_with(&spec, &options, |_| {}).unwrap();
        assert_eq!(done.exit, Exit::Code(3));
        let out = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
        let log = std::fs::read_to_string(dir.path().join("log.txt")).unwrap();
        assert_eq!(out, "server: you sent Basic <token>\n");
        assert_eq!(log, "<token>\n");
    }

    #[test]
    fn options_strip_variables_and_keep_stdout_apart() {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var("LOCKSTEP_TEST_STRIPPED", "secret");
        let spec = Spec {
            argv: vec![
                "sh".into(),
                "-c".into(),
                "echo \"out:${LOCKSTEP_TEST_STRIPPED:-none}:$KEPT\"; echo err >&2".into(),
            ],
            cwd: dir.path().to_path_buf(),
            env: vec![("KEPT".into(), "given".into())],
            timeout: Some(Duration::from_secs(60)),
            log: dir.path().join("log.txt"),
            header: None,
        };
        let options = Options {
            env_remove: vec!["LOCKSTEP_TEST_STRIPPED".into(), "KEPT".into()],
            die_with_parent: true,
            stdout: Some(dir.path().join("out.txt")),
            scrub: None,
        };
        let done = run_with(&spec, &options, |_| {}).unwrap();
        assert_eq!(done.exit, Exit::Code(0));
        let out = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
        assert_eq!(
            out, "out:none:given\n",
            "removed, but an explicit value wins"
        );
        let log = std::fs::read_to_string(dir.path().join("log.txt")).unwrap();
        assert_eq!(log, "err\n");
        let vars = secret_vars(&["HOOK".into(), "GH_TOKEN".into()]);
        assert_eq!(vars.last().map(String::as_str), Some("HOOK"));
        assert_eq!(vars.iter().filter(|v| *v == "GH_TOKEN").count(), 1);
    }

    #[test]
    fn no_child_inherits_a_secret_unless_it_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var("LOCKSTEP_TEST_REGISTERED_HOOK", "hook-secret");
        std::env::set_var("GIT_CONFIG_VALUE_77", "AUTHORIZATION: basic x");
        also_secret("LOCKSTEP_TEST_REGISTERED_HOOK");
        let spec = Spec {
            argv: vec!["sh".into(), "-c".into(), "env".into()],
            cwd: dir.path().to_path_buf(),
            env: vec![("GIT_CONFIG_VALUE_78".into(), "named".into())],
            timeout: Some(Duration::from_secs(60)),
            log: dir.path().join("log.txt"),
            header: None,
        };
        let done = run(&spec, |_| {}).unwrap();
        assert_eq!(done.exit, Exit::Code(0));
        let env = std::fs::read_to_string(dir.path().join("log.txt")).unwrap();
        assert!(!env.contains("hook-secret"), "{env}");
        assert!(!env.contains("GIT_CONFIG_VALUE_77"), "{env}");
        assert!(env.contains("GIT_CONFIG_VALUE_78=named"), "{env}");
        let mut cmd = Command::new("sh");
        let out = without_secrets(&mut cmd)
            .args(["-c", "env"])
            .output()
            .unwrap();
        let env = String::from_utf8_lossy(&out.stdout);
        assert!(!env.contains("hook-secret") && !env.contains("GIT_CONFIG_VALUE_77"));
    }

    /// The GitHub Actions runtime's token and endpoints (exported by cache
    /// actions) reach no child, unless the caller names one.
    #[test]
    fn the_actions_runtime_token_and_urls_reach_no_child_unless_named() {
        let dir = tempfile::tempdir().unwrap();
        let vars = [
            "ACTIONS_RUNTIME_TOKEN",
            "ACTIONS_RUNTIME_URL",
            "ACTIONS_RESULTS_URL",
            "ACTIONS_CACHE_URL",
        ];
        for var in vars {
            std::env::set_var(var, format!("actions-secret-{var}"));
        }
        let spec = Spec {
            argv: vec!["sh".into(), "-c".into(), "env".into()],
            cwd: dir.path().to_path_buf(),
            env: Vec::new(),
            timeout: Some(Duration::from_secs(60)),
            log: dir.path().join("log.txt"),
            header: None,
        };
        assert_eq!(run(&spec, |_| {}).unwrap().exit, Exit::Code(0));
        let env = std::fs::read_to_string(dir.path().join("log.txt")).unwrap();
        assert!(!env.contains("actions-secret-"), "{env}");
        let out = command("sh").args(["-c", "env"]).output().unwrap();
        let env = String::from_utf8_lossy(&out.stdout);
        assert!(!env.contains("actions-secret-"), "{env}");
        // Named by the caller: given.
        let named = Spec {
            env: vec![("ACTIONS_CACHE_URL".into(), "named-url".into())],
            ..spec
        };
        assert_eq!(run(&named, |_| {}).unwrap().exit, Exit::Code(0));
        let env = std::fs::read_to_string(dir.path().join("log.txt")).unwrap();
        assert!(env.contains("ACTIONS_CACHE_URL=named-url"), "{env}");
        assert!(!env.contains("actions-secret-"), "{env}");
    }
}
