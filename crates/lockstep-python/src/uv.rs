//! Finding (and if need be installing) uv, and running it and other Python
//! tools with their output captured.
//!
//! Every Python step of lockstep (IREE toolchains, wheel builds, exact venvs)
//! goes through uv: it is fast, installs offline from a lock file and checks
//! hashes. [`find_uv`] prefers the user's `uv`, then `python3 -m uv`, then a
//! private copy under `$LOCKSTEP_TOOLCHAINS/.uv`, and installs one only when
//! none works. Children die with lockstep ([`dies_with_us`]): a killed
//! install must not keep writing into a directory the next run removes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use lockstep_core::events::Sink;
use lockstep_core::Error;

/// How to run uv.
#[derive(Debug, Clone)]
pub struct Uv {
    argv: Vec<String>,
}

impl Uv {
    /// The words that start uv (`uv`, or `python3 -m uv`).
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// `uv` with its fixed arguments, run in `cwd` with no stdin and no colour.
    pub fn command(&self, cwd: &Path) -> Command {
        let mut cmd = Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..])
            // A project's pyproject.toml / uv.toml in the user's cwd must not steer the install.
            .current_dir(cwd)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        dies_with_us(&mut cmd);
        cmd
    }
}

/// The child is killed when lockstep dies: a killed install must not leave uv
/// or pip writing into a directory the next install is about to remove.
pub fn dies_with_us(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook only makes the prctl system call, which is
    // async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
}

/// `uv` on PATH, else `python3 -m uv`, else the private uv of an earlier
/// install (`$LOCKSTEP_TOOLCHAINS/.uv`), else installs uv: `python3 -m pip
/// install --user uv`, else without `--user`, else (a PEP 668 "externally
/// managed" Python refuses both) into the private venv `$LOCKSTEP_TOOLCHAINS/.uv`.
pub fn find_uv(root: &Path, cwd: &Path, sink: &dyn Sink) -> Result<Uv, Error> {
    let works = |argv: &[String]| {
        Command::new(&argv[0])
            .args(&argv[1..])
            .arg("--version")
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let python_uv: Vec<String> = ["python3", "-m", "uv"].map(String::from).to_vec();
    let private_uv = vec![private_uv_dir(root)
        .join("bin")
        .join("uv")
        .to_string_lossy()
        .into_owned()];
    for argv in [
        vec!["uv".to_string()],
        python_uv.clone(),
        private_uv.clone(),
    ] {
        if works(&argv) {
            return Ok(Uv { argv });
        }
    }
    sink.note("uv not found: installing it with `python3 -m pip install --user uv`");
    let pip = |user: bool| {
        let extra: &[&str] = if user { &["--user"] } else { &[] };
        pip_install_uv(
            Path::new("python3"),
            extra,
            cwd,
            "python3 -m pip install uv",
        )
    };
    let pip_error = match pip(true).or_else(|first| {
        tracing::info!(error = %first, "pip install --user uv failed; trying without --user");
        pip(false)
    }) {
        Ok(_) if works(&python_uv) => return Ok(Uv { argv: python_uv }),
        Ok(_) => Error::failed("pip installed uv, but `python3 -m uv --version` still fails"),
        Err(err) => err,
    };
    sink.note(format!(
        "pip cannot install uv for python3; installing it into {}",
        private_uv_dir(root).display()
    ));
    match install_private_uv(root, cwd) {
        Ok(()) if works(&private_uv) => Ok(Uv { argv: private_uv }),
        Ok(()) => Err(Error::failed(format!(
            "installed uv into {}, but `{} --version` fails",
            private_uv_dir(root).display(),
            private_uv[0]
        ))),
        Err(err) => {
            let mut err = err.context("cannot find uv, and cannot install it");
            let pip_tail: Vec<String> = pip_error
                .causes
                .iter()
                .flat_map(|c| c.lines().map(String::from).collect::<Vec<_>>())
                .collect();
            let pip_tail = pip_tail[pip_tail.len().saturating_sub(3)..].join("\n");
            err = err.cause(format!("before that, {}: {pip_tail}", pip_error.message));
            Err(err)
        }
    }
    .map_err(|e| e.hint("install uv (https://docs.astral.sh/uv/getting-started/installation/) so that `uv` is on PATH, and check network access to PyPI"))
}

/// `PYTHON -m pip install --quiet [EXTRA] uv`, its output kept for the error.
fn pip_install_uv(python: &Path, extra: &[&str], cwd: &Path, what: &str) -> Result<(), Error> {
    let mut cmd = Command::new(python);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ])
    .args(extra)
    .arg("uv")
    .current_dir(cwd)
    .stdin(Stdio::null());
    dies_with_us(&mut cmd);
    run_captured(&mut cmd, what).map(drop)
}

fn private_uv_dir(root: &Path) -> PathBuf {
    root.join(".uv")
}

/// `python3 -m venv` + `pip install uv`, built beside and renamed into place
/// (a concurrent install of another IREE version may do the same).
fn install_private_uv(root: &Path, cwd: &Path) -> Result<(), Error> {
    // Half-built private venvs of dead processes.
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name.strip_prefix(".uv.tmp-").and_then(|p| p.parse().ok());
            if pid.is_some_and(|pid| !lockstep_core::process::pid_alive(pid)) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let tmp = root.join(format!(".uv.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let result = (|| {
        let mut cmd = Command::new("python3");
        cmd.args(["-m", "venv"])
            .arg(&tmp)
            .current_dir(cwd)
            .stdin(Stdio::null());
        dies_with_us(&mut cmd);
        run_captured(&mut cmd, "python3 -m venv")?;
        pip_install_uv(
            &tmp.join("bin").join("python"),
            &[],
            cwd,
            "pip install uv (in a private venv)",
        )?;
        let dest = private_uv_dir(root);
        if std::fs::rename(&tmp, &dest).is_err() && !dest.join("bin").join("uv").is_file() {
            return Err(Error::failed(format!("cannot create {}", dest.display())));
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

/// Runs a command capturing its output; a failure carries the stderr tail.
pub fn run_captured(cmd: &mut Command, what: &str) -> Result<Output, Error> {
    let output = cmd.output().map_err(|e| {
        Error::failed(format!("cannot start {what}"))
            .cause(format!("{}: {e}", cmd.get_program().to_string_lossy()))
    })?;
    if output.status.success() {
        return Ok(output);
    }
    let mut err = Error::failed(format!("{what} failed ({})", output.status));
    let tail = tail(&output.stderr, 15);
    let tail = if tail.is_empty() {
        self::tail(&output.stdout, 15)
    } else {
        tail
    };
    if !tail.is_empty() {
        err = err.cause(tail);
    }
    Err(err)
}

/// The last `n` informative lines of a process's output, without uv's
/// `error:` / `cause:` prefixes (the report adds its own).
pub fn tail(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("error: ").unwrap_or(l);
            l.strip_prefix("cause: ").unwrap_or(l)
        })
        .filter(|l| !l.is_empty() && !l.starts_with("Using Python "))
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
