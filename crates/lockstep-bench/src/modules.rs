//! A kernel's compiled module: found in the cache's `kernels` area or
//! compiled by iree-compile into it. The one path every caller takes,
//! `lockstep bench` and the `lockstep_kernels` Python package alike, so a
//! kernel compiled by either is a hit for the other: same key
//! ([`kernel_key`]), same entry (`<func_name>/<key>.{vmfb,mlir,cmd,json}`),
//! same lock (two processes or threads wanting the same new kernel compile
//! it once; the second waits and hits), and a corrupt entry is removed and
//! compiled again, never loaded.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use lockstep_cache::{Bucket, Key};
use lockstep_core::process::Exit;
use lockstep_iree::{Compile, Invocation, Limits, Toolchain};

use crate::cache;

/// How kernels are compiled.
pub struct Compiler<'a> {
    /// The compiler (its identity keys the cache).
    pub toolchain: &'a Toolchain,
    /// Every iree-compile flag (target flags first).
    pub flags: &'a [String],
    /// Per compile.
    pub timeout: Duration,
    /// Compile logs (`logs/KEY.compile.log`) and, with the cache off, the
    /// modules (`modules/FUNC/KEY.vmfb`).
    pub work_dir: &'a Path,
    /// Set when an error cites a log in `work_dir` (which must then be kept).
    pub logs_cited: &'a AtomicBool,
}

/// Counts of what [`obtain`] did, shared by a run's workers.
pub struct Counters<'a> {
    pub compiled: &'a AtomicUsize,
    pub hits: &'a AtomicUsize,
}

/// A module ready to load.
#[derive(Debug, Clone, PartialEq)]
pub struct Module {
    pub path: PathBuf,
    /// It came from the cache.
    pub cached: bool,
    /// Wall seconds of its compile (0 when cached).
    pub seconds: f64,
}

/// The cache key of a kernel compiled with `flags` by the compiler of
/// identity `toolchain_identity` (host-CPU builds also key on the CPU).
pub fn kernel_key(toolchain_identity: &str, mlir: &str, flags: &[String]) -> Key {
    let identity = lockstep_iree::key_identity(toolchain_identity, flags);
    cache::key(&identity, mlir, flags)
}

/// The module of a kernel: from `cache` (`None`: the cache is off), or
/// compiled (and cached). Errors read `compile failed (exit 1): FIRST
/// ERROR LINE (log: PATH)` or name the cache problem.
pub fn obtain(
    compiler: &Compiler,
    cache: Option<&Bucket>,
    key: &Key,
    func_name: &str,
    mlir: &str,
    counters: &Counters,
) -> Result<Module, String> {
    let Some(bucket) = cache else {
        return compile_uncached(compiler, key, func_name, mlir, counters);
    };
    let io = |e: lockstep_core::Error| format!("cannot use the kernel cache: {}", e.render());
    let slot = bucket.slot(key, Some(func_name));
    let hit = |entry: lockstep_cache::Entry| {
        counters.hits.fetch_add(1, Ordering::Relaxed);
        entry.file(cache::MODULE).map(|m| Module {
            path: m.to_path_buf(),
            cached: true,
            seconds: 0.0,
        })
    };
    if let Some(found) = slot.get().and_then(hit) {
        return Ok(found);
    }
    // Another process or thread building the same kernel holds the lock:
    // wait for it.
    let lock = slot.lock().map_err(io)?;
    if let Some(found) = lock.get().and_then(hit) {
        return Ok(found);
    }
    let mut stage = lock.stage();
    let source = stage.write(cache::SOURCE, mlir.as_bytes()).map_err(io)?;
    let out = stage.path(cache::MODULE).map_err(io)?;
    // The recorded command names the entry's files, not the staging ones.
    let command = compile(
        compiler,
        &slot.path(cache::SOURCE),
        &slot.path(cache::MODULE),
    )?
    .words();
    stage
        .write(cache::COMMAND, format!("{command}\n").as_bytes())
        .map_err(io)?;
    // A failed compile drops the stage: nothing of it stays in the cache.
    let seconds = run_compile(compiler, key, &compile(compiler, &source, &out)?, counters)?;
    let entry = stage
        .commit(serde_json::json!({ "command": command }))
        .map_err(io)?;
    let path = entry
        .file(cache::MODULE)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| slot.path(cache::MODULE));
    Ok(Module {
        path,
        cached: false,
        seconds,
    })
}

/// Compiles a kernel into the work directory (the cache is off).
fn compile_uncached(
    compiler: &Compiler,
    key: &Key,
    func_name: &str,
    mlir: &str,
    counters: &Counters,
) -> Result<Module, String> {
    let dir = compiler.work_dir.join("modules").join(func_name);
    let source = dir.join(format!("{key}.{}", cache::SOURCE));
    let path = dir.join(format!("{key}.{}", cache::MODULE));
    lockstep_core::fs::write_atomic(&source, mlir.as_bytes())
        .map_err(|e| format!("cannot write the kernel's source: {}", e.render()))?;
    let seconds = run_compile(compiler, key, &compile(compiler, &source, &path)?, counters)?;
    Ok(Module {
        path,
        cached: false,
        seconds,
    })
}

/// `iree-compile SOURCE FLAGS -o MODULE`.
fn compile(compiler: &Compiler, source: &Path, module: &Path) -> Result<Invocation, String> {
    compiler
        .toolchain
        .compile(&Compile {
            source,
            flags: compiler.flags,
            output: module,
            phase: None,
            statistics: None,
        })
        .map_err(|e| e.render())
}

/// Runs one compile, counted, its log in the work directory.
fn run_compile(
    compiler: &Compiler,
    key: &Key,
    invocation: &Invocation,
    counters: &Counters,
) -> Result<f64, String> {
    let log = compiler
        .work_dir
        .join("logs")
        .join(format!("{key}.compile.log"));
    counters.compiled.fetch_add(1, Ordering::Relaxed);
    let limits = Limits {
        cwd: compiler.work_dir,
        timeout: compiler.timeout,
        log: &log,
    };
    run_tool(invocation, &limits, compiler.logs_cited, "compile failed")
}

/// Runs one tool in its own process group under `limits`, its output in
/// the log; gives its wall seconds, or `"{failure} ({exit}): {first error
/// line} (log: ...)"` (then `logs_cited` is set).
pub fn run_tool(
    invocation: &Invocation,
    limits: &Limits,
    logs_cited: &AtomicBool,
    failure: &str,
) -> Result<f64, String> {
    let ran = invocation.run(limits).map_err(|e| e.render())?;
    if ran.exit != Exit::Code(0) {
        logs_cited.store(true, Ordering::Relaxed);
    }
    let log = limits.log.display();
    match ran.exit {
        Exit::Code(0) => Ok(ran.elapsed.as_secs_f64()),
        // What a killed process printed last is not the reason.
        Exit::TimedOut => Err(format!("{failure} ({}) (log: {log})", ran.describe_exit())),
        _ => Err(format!(
            "{failure} ({}): {} (log: {log})",
            ran.describe_exit(),
            ran.first_error(),
        )),
    }
}
