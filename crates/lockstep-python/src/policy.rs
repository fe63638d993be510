//! The one way the Python layer starts a child (uv, pip, python, a console
//! script, a smoke command) and the one environment policy every such child
//! gets.
//!
//! Why one: the layer's children used to be started in six places, some
//! without a timeout (a stuck `uv pip install` hung lockstep forever), some
//! reading index settings from the environment (a `UV_INDEX_URL` or
//! `PIP_FIND_LINKS` in the shell decided what a "validated" release
//! installed), and console scripts and smoke commands of the packages ran
//! with `GITHUB_TOKEN` and `TWINE_PASSWORD` in their environment, their
//! output copied into errors and `--events`. Here every child:
//!
//! - runs through [`lockstep_core::process`] with a timeout, in its own
//!   process group, dying with lockstep, its output in a log file that the
//!   error names (with the log's tail);
//! - loses the variables that steer where packages come from
//!   ([`INDEX_VARS`], and every `UV_INDEX_*`): an index is used only when
//!   the caller passes one explicitly (uv is also always run with
//!   `--no-config`, see [`crate::uv`]);
//! - loses lockstep's secrets ([`lockstep_core::process::SECRET_VARS`], plus
//!   whatever variable the caller names, such as `[integrate.notify]
//!   url-env`); only `uv publish` gets upload credentials, set explicitly;
//! - inside a venv, also loses `PYTHONPATH` and `PYTHONHOME` ([`VENV_VARS`]),
//!   so what runs is the installed wheels, not a source tree;
//! - loses the variables cargo sets for the crate it runs
//!   ([`CARGO_CRATE_VARS`]) when lockstep itself was started by `cargo run`
//!   or `cargo test`: a build backend's cargo (maturin, setuptools-rust)
//!   would take them for its own, and every build script that watches one
//!   (ring's, pest's, libsqlite3-sys's) would run again and rebuild what
//!   depends on it, in the build directory a wheel shares with its checkout.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lockstep_core::error::without_userinfo;
use lockstep_core::process::{self, Exit, Options, Spec};
use lockstep_core::Error;

/// Seconds every uv (and pip) command may take, instead of the defaults of
/// [`crate::uv::Timeouts`].
pub const ENV_TIMEOUT: &str = "LOCKSTEP_UV_TIMEOUT";

/// Variables that tell uv or pip where packages come from (or which
/// configuration file to read), taken out of every child's environment.
pub const INDEX_VARS: &[&str] = &[
    "UV_INDEX",
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
    "UV_NO_INDEX",
    "UV_INDEX_STRATEGY",
    "UV_CONFIG_FILE",
    "UV_WORKING_DIR",
    "UV_PROJECT",
    "UV_PUBLISH_URL",
    "UV_PUBLISH_INDEX",
    "UV_PUBLISH_CHECK_URL",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_NO_INDEX",
    "PIP_CONFIG_FILE",
];

/// Prefixes of more such variables (uv's named indexes and their
/// credentials: `UV_INDEX_<NAME>_URL`, `UV_INDEX_<NAME>_PASSWORD` ...).
const INDEX_PREFIXES: &[&str] = &["UV_INDEX_"];

/// What cargo sets in the environment of the crate it compiles or runs
/// (cargo's "environment variables Cargo sets for crates"), and the
/// prefixes of more ([`CARGO_CRATE_PREFIXES`]): meaningless to a nested
/// cargo, and watched by build scripts. Cargo's configuration variables
/// (`CARGO_HOME`, `CARGO_TARGET_DIR`, `CARGO_BUILD_*`, `CARGO_PROFILE_*`)
/// and `CARGO` itself are kept.
pub const CARGO_CRATE_VARS: &[&str] = &[
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_MANIFEST_LINKS",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "OUT_DIR",
];

/// Prefixes of cargo's crate variables: `CARGO_PKG_NAME`,
/// `CARGO_PKG_VERSION_MAJOR` ..., and `CARGO_BIN_EXE_<name>` of a test.
const CARGO_CRATE_PREFIXES: &[&str] = &["CARGO_PKG_", "CARGO_BIN_EXE_"];

/// Taken out of the environment of a program run inside a venv.
pub const VENV_VARS: &[&str] = &["PYTHONPATH", "PYTHONHOME"];

/// Which variables a child never sees: [`INDEX_VARS`], [`CARGO_CRATE_VARS`]
/// and lockstep's secrets (`lockstep_core::process::secret_vars`: the fixed
/// list and the webhook variable the loaded configuration registered).
#[derive(Debug, Clone, Default)]
pub struct Policy {}

impl Policy {
    /// Every variable taken out of a child's environment, now.
    pub fn stripped(&self) -> Vec<String> {
        let mut vars: Vec<String> = INDEX_VARS
            .iter()
            .chain(CARGO_CRATE_VARS)
            .map(|v| v.to_string())
            .collect();
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if INDEX_PREFIXES
                .iter()
                .chain(CARGO_CRATE_PREFIXES)
                .any(|p| name.starts_with(p))
            {
                vars.push(name.into_owned());
            }
        }
        vars.extend(process::secret_vars(&[]));
        vars.sort();
        vars.dedup();
        vars
    }
}

/// One child to start.
pub(crate) struct Child<'a> {
    /// How messages name it (`uv pip install`, ``[release] smoke `...` ``).
    pub what: String,
    pub argv: Vec<String>,
    pub cwd: &'a Path,
    /// Set explicitly (after the policy's removals).
    pub env: Vec<(String, String)>,
    /// Also removed (beyond the policy).
    pub remove: &'a [&'a str],
    pub timeout: Duration,
    /// Where stdout and stderr go; `None` = a fresh file in `logs`,
    /// removed again when the child succeeds.
    pub log: Option<&'a Path>,
    /// stdout apart from the log, for [`Ran::stdout`].
    pub capture_stdout: bool,
    /// The credentials handed to this child: scrubbed from its log and
    /// output before anything reads them (lockstep-core's one rule).
    pub scrub: Option<lockstep_core::scrub::Scrubber>,
}

/// How a child ended, and where its output is.
#[derive(Debug, Clone)]
pub struct Ran {
    /// How messages name it.
    pub what: String,
    /// The command line (credentials in URLs left out).
    pub command: String,
    pub exit: Exit,
    pub elapsed: Duration,
    pub timeout: Duration,
    /// stdout and stderr (stderr only when stdout was captured apart).
    pub log: PathBuf,
    stdout: Option<String>,
    header: usize,
    /// The output, read before a log of lockstep's own was removed.
    read: Option<String>,
}

/// The most of a log an error or a caller reads.
const MAX_READ: u64 = 1 << 20;

impl Ran {
    /// Exit status 0.
    pub fn success(&self) -> bool {
        self.exit == Exit::Code(0)
    }

    /// `self` when it exited 0; otherwise an error naming the command, how it
    /// ended (a timeout with its limit), the log and the log's last lines.
    pub fn require_success(self) -> Result<Ran, Error> {
        if self.success() {
            return Ok(self);
        }
        let mut err = match self.exit {
            Exit::TimedOut => Error::failed(format!(
                "{} did not finish within {} and was killed",
                self.what,
                describe(self.timeout)
            ))
            .hint(format!(
                "see the log for where it stopped; a slow network may need more time: set {}=SECONDS",
                ENV_TIMEOUT
            )),
            other => Error::failed(format!("{} failed ({})", self.what, other.describe())),
        };
        let tail = self.tail(15);
        if !tail.is_empty() && self.exit != Exit::TimedOut {
            err = err.cause(tail);
        }
        Err(err
            .cause(format!("command: {}", self.command))
            .cause(format!("log: {}", self.log.display())))
    }

    /// What the child printed (its log without lockstep's header), the last
    /// MiB at most.
    pub fn output(&self) -> String {
        if let Some(text) = &self.read {
            return text.clone();
        }
        let bytes = read_tail(&self.log, MAX_READ);
        let skip = if bytes.len() as u64 >= MAX_READ {
            0
        } else {
            self.header.min(bytes.len())
        };
        String::from_utf8_lossy(&bytes[skip..]).into_owned()
    }

    /// stdout, when it was captured apart.
    pub fn stdout(&self) -> &str {
        self.stdout.as_deref().unwrap_or_default()
    }

    /// The last `n` informative lines of the output ([`tail`]).
    pub fn tail(&self, n: usize) -> String {
        tail(self.output().as_bytes(), n)
    }
}

fn read_tail(path: &Path, max: u64) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > max {
        let _ = file.seek(SeekFrom::Start(len - max));
    }
    let mut bytes = Vec::new();
    let _ = file.take(max).read_to_end(&mut bytes);
    bytes
}

/// The last `n` informative lines of a process's output, without uv's
/// `error:` / `cause:` / `Caused by:` prefixes (the report adds its own).
pub fn tail(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("error: ").unwrap_or(l);
            let l = l.strip_prefix("Caused by: ").unwrap_or(l);
            l.strip_prefix("cause: ").unwrap_or(l)
        })
        .filter(|l| !l.is_empty() && !l.starts_with("Using Python "))
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// `90 s`, `30 min`.
pub fn describe(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 120 && s.is_multiple_of(60) {
        format!("{} min", s / 60)
    } else if s == 0 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{s} s")
    }
}

/// The command line as a person can paste it, credentials in URLs left out.
fn command_line(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            let w = if w.contains("://") {
                without_userinfo(w)
            } else {
                w.clone()
            };
            process::quote(&w)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A fresh log path in `dir` for `what`.
fn fresh_log(dir: &Path, what: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let slug: String = what
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .take(4)
        .collect::<Vec<_>>()
        .join("-");
    dir.join(format!(
        "{slug}-{}-{}.log",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Runs `child` under `policy` to its end (or its timeout). A child that
/// cannot be started is an error; how it ended is the caller's to judge
/// ([`Ran::require_success`]).
pub(crate) fn run(policy: &Policy, logs: &Path, child: Child<'_>) -> Result<Ran, Error> {
    let own_log = child.log.is_none();
    let log = match child.log {
        Some(path) => path.to_path_buf(),
        None => fresh_log(logs, &child.what),
    };
    let command = command_line(&child.argv);
    let header = format!(
        "$ cd {} && {command}\n",
        process::quote(&child.cwd.display().to_string())
    );
    let stdout_file = child.capture_stdout.then(|| log.with_extension("stdout"));
    let mut env_remove = policy.stripped();
    env_remove.extend(child.remove.iter().map(|v| v.to_string()));
    let spec = Spec {
        argv: child.argv.clone(),
        cwd: child.cwd.to_path_buf(),
        env: child.env.clone(),
        timeout: Some(child.timeout),
        log: log.clone(),
        header: Some(header.clone()),
    };
    let options = Options {
        env_remove,
        die_with_parent: true,
        stdout: stdout_file.clone(),
        scrub: child.scrub,
    };
    let finished = match process::run_with(&spec, &options, |_| {}) {
        Ok(finished) => finished,
        Err(e) => {
            if own_log {
                let _ = std::fs::remove_file(&log);
            }
            if let Some(path) = &stdout_file {
                let _ = std::fs::remove_file(path);
            }
            return Err(e.context(format!("cannot run {}", child.what)));
        }
    };
    let stdout = stdout_file.map(|path| {
        let text = String::from_utf8_lossy(&read_tail(&path, MAX_READ)).into_owned();
        let _ = std::fs::remove_file(&path);
        text
    });
    let mut ran = Ran {
        what: child.what,
        command,
        exit: finished.exit,
        elapsed: finished.elapsed,
        timeout: child.timeout,
        log,
        stdout,
        header: header.len(),
        read: None,
    };
    if own_log && ran.success() {
        ran.read = Some(ran.output());
        let _ = std::fs::remove_file(&ran.log);
    }
    Ok(ran)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_strips_indexes_and_secrets() {
        std::env::set_var("UV_INDEX_PRIVATE_PASSWORD", "x");
        process::also_secret("MY_HOOK");
        let vars = Policy::default().stripped();
        for v in [
            "UV_INDEX_URL",
            "PIP_FIND_LINKS",
            "UV_INDEX_PRIVATE_PASSWORD",
            "GITHUB_TOKEN",
            "TWINE_PASSWORD",
            "UV_PUBLISH_TOKEN",
            "LOCKSTEP_WEBHOOK_URL",
            "MY_HOOK",
        ] {
            assert!(vars.iter().any(|x| x == v), "{v} in {vars:?}");
        }
        assert!(!vars.iter().any(|x| x == "PATH" || x == "HOME"));
    }

    #[test]
    fn a_parent_cargos_crate_variables_are_stripped_but_not_cargos_configuration() {
        // This test runs under `cargo test`: cargo set these for it.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
        let vars = Policy::default().stripped();
        for v in [
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "OUT_DIR",
        ] {
            assert!(vars.iter().any(|x| x == v), "{v} in {vars:?}");
        }
        for kept in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_BUILD_DIR",
            "CARGO_PROFILE_DEV_DEBUG",
        ] {
            assert!(!vars.iter().any(|x| x == kept), "{kept} kept: {vars:?}");
        }
    }

    #[test]
    fn command_lines_leave_credentials_out() {
        let line = command_line(&[
            "uv".into(),
            "--index-url".into(),
            "https://user:secret@host/simple/".into(),
        ]);
        assert_eq!(line, "uv --index-url https://host/simple/");
        assert_eq!(describe(Duration::from_secs(1800)), "30 min");
        assert_eq!(describe(Duration::from_secs(2)), "2 s");
    }

    #[test]
    fn a_failed_child_is_an_error_naming_command_log_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run(
            &Policy::default(),
            dir.path(),
            Child {
                what: "the probe".into(),
                argv: vec![
                    "sh".into(),
                    "-c".into(),
                    "echo one; echo two >&2; exit 4".into(),
                ],
                cwd: dir.path(),
                env: vec![],
                remove: &[],
                timeout: Duration::from_secs(60),
                log: None,
                capture_stdout: true,
                scrub: None,
            },
        )
        .unwrap();
        assert_eq!(ran.stdout(), "one\n");
        assert_eq!(ran.output(), "two\n");
        let err = ran.require_success().unwrap_err().render();
        assert!(err.contains("the probe failed (exit status 4)"), "{err}");
        assert!(
            err.contains("cause: two") && err.contains("cause: log: "),
            "{err}"
        );
        assert!(err.contains("cause: command: sh -c"), "{err}");
    }
}
