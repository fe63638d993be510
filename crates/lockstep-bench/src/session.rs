//! One `lockstep bench` from request to results: the commands (a command
//! line or a commands file), the device, timeouts, limits and caches
//! resolved against `[bench]` and checked before anything runs
//! ([`prepare`]); then the batch in a work directory of its own, removed
//! afterwards unless a failed row cites a log in it ([`run`]). The binary
//! parses flags into a [`Request`] and writes the result formats.
//!
//! The work directory goes on every way out of [`run`] (errors and panics
//! drop it); one left by a lockstep that was killed (a signal, `kill -9`)
//! names its owner's pid and is removed by the next bench ([`sweep_stale`]).
//! A kept one no longer names an owner and is never swept.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lockstep_cache::{Area, Cache};
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_iree::Toolchain;

use crate::config::BenchConfig;
use crate::device::{self, Device};
use crate::jobs::{self, Job};
use crate::run::{self, Options, Summary};

/// What a `lockstep bench` command line asks for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub commands_file: Option<PathBuf>,
    /// The MIOpen command, or extra flags for every line of the file.
    pub command: Vec<String>,
    pub verify: bool,
    pub jobs: Option<usize>,
    pub device: Option<String>,
    pub compile_flags: Vec<String>,
    /// Seconds per compile and timed run.
    pub timeout: Option<f64>,
    pub threads: Option<usize>,
    pub splat_input_value: Option<String>,
    pub max_bytes: Option<String>,
    /// Compile (into the cache) and run nothing.
    pub compile_only: bool,
    /// Compile only, and write a bundle of the batch to this directory.
    pub bundle: Option<PathBuf>,
    /// Run the bundle in this directory (nothing is compiled).
    pub from_bundle: Option<PathBuf>,
    /// Time and verify every row again instead of answering from its record.
    pub no_cache: bool,
}

/// What a batch does besides compiling.
enum Mode {
    /// Compile, then time (and verify) on the device.
    Run,
    /// Compile only.
    CompileOnly,
    /// Compile only, then write a bundle here.
    Bundle(PathBuf),
    /// Run a bundle's modules; compile nothing.
    FromBundle(Box<crate::bundle::Loaded>),
}

/// The jobs and settings of a batch, checked.
pub struct Prepared {
    pub jobs: Vec<Job>,
    device: Device,
    compile_flags: Vec<String>,
    workers: usize,
    timeout: Duration,
    threads: Option<usize>,
    splat: Option<String>,
    verify: bool,
    max_bytes: Option<u64>,
    no_cache: bool,
    mode: Mode,
}

/// A finished batch.
pub struct Finished {
    pub summary: Summary,
    /// The work directory, kept because failed rows cite logs in it.
    pub kept: Option<PathBuf>,
}

/// Parses and checks everything `req` and `cfg` say; nothing runs.
pub fn prepare(req: &Request, cfg: &BenchConfig, sink: &dyn Sink) -> Result<Prepared, Error> {
    let mode = mode(req)?;
    let (jobs, device) = match &mode {
        Mode::FromBundle(loaded) => {
            // What to compare with the sha256 printed where it was made.
            sink.note(format!(
                "running the bundle {} (bundle.json sha256 {})",
                loaded.dir.display(),
                loaded.manifest.sha256
            ));
            let jobs = jobs::bundled(&loaded.dir.join(crate::bundle::COMMANDS), sink)?;
            crate::bundle::check_jobs(loaded, &jobs)?;
            let d = &loaded.manifest.device;
            let device = Device {
                name: d.name.clone(),
                runtime: d.runtime.clone(),
                target_flags: loaded.manifest.flags.clone(),
                run_flags: d.run_flags.clone(),
                unresolved: None,
            };
            (jobs, device)
        }
        _ => (
            jobs::jobs(req.commands_file.as_deref(), &req.command, sink)?,
            device::resolve(req.device.as_deref(), cfg)?,
        ),
    };
    let timeout = match req.timeout {
        Some(secs) => lockstep_core::config::seconds("--timeout", secs)?,
        None => cfg.timeout.unwrap_or(Duration::from_secs(600)),
    };
    if let Some(value) = &req.splat_input_value {
        jobs::check_splat(value, &jobs)?;
    }
    let workers = lockstep_core::pool::jobs(req.jobs, "-j")?;
    if req.threads == Some(0) {
        return Err(Error::usage("--threads 0: at least one thread is needed")
            .hint("give --threads 1 or more, or leave it out"));
    }
    let max_bytes =
        match req.max_bytes.as_deref().or(cfg.max_bytes.as_deref()) {
            Some(size) => Some(lockstep_cache::maintain::parse_size(size).map_err(|e| {
                e.context(format!("invalid --max-bytes / [bench] max-bytes `{size}`"))
            })?),
            None => None,
        };
    // A bundle's flags are all in its device's target flags.
    let compile_flags = match &mode {
        Mode::FromBundle(_) => Vec::new(),
        _ => cfg
            .compile_flags
            .iter()
            .chain(&req.compile_flags)
            .cloned()
            .collect(),
    };
    Ok(Prepared {
        jobs,
        device,
        compile_flags,
        mode,
        workers,
        timeout,
        threads: req.threads,
        splat: req.splat_input_value.clone(),
        verify: req.verify,
        max_bytes,
        no_cache: req.no_cache,
    })
}

impl Prepared {
    /// Times and verifies every row, answering none from its record: a run
    /// recorded in the results history is a point of a trend, which must be
    /// a measurement.
    pub fn measuring_every_row(mut self) -> Prepared {
        self.no_cache = true;
        self
    }

    /// Whether the batch needs only IREE's runtime tools (a bundle's: a
    /// GPU machine may have no compiler).
    pub fn runtime_only(&self) -> bool {
        matches!(self.mode, Mode::FromBundle(_))
    }
}

/// The mode `req` asks for; conflicting flags are a usage error.
fn mode(req: &Request) -> Result<Mode, Error> {
    match (&req.bundle, &req.from_bundle) {
        (Some(_), Some(_)) => Err(Error::usage("--bundle and --from-bundle: pick one")
            .hint("--bundle DIR writes a bundle (compiling here), --from-bundle DIR runs one")),
        (None, Some(dir)) => {
            if req.commands_file.is_some() || !req.command.is_empty() || req.compile_only {
                return Err(Error::usage(
                    "--from-bundle runs the bundle's own commands: give no command, --commands-file or --compile-only",
                ));
            }
            if req.device.is_some() || !req.compile_flags.is_empty() {
                return Err(Error::usage(
                    "--from-bundle runs on the device the bundle was compiled for: give no --device or --compile-flag",
                ));
            }
            Ok(Mode::FromBundle(Box::new(crate::bundle::load(dir)?)))
        }
        (Some(dir), None) => {
            lockstep_core::fs::require_new_or_empty_dir("--bundle", dir)?;
            // Written through a link to the directory, never over the link.
            let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
            Ok(Mode::Bundle(dir))
        }
        (None, None) if req.compile_only => Ok(Mode::CompileOnly),
        (None, None) => Ok(Mode::Run),
    }
}

/// The tools a mode needs (a missing one is an error before any compile).
fn needed_tools(mode: &Mode) -> &'static [&'static str] {
    match mode {
        Mode::Run => &["iree-compile", "iree-benchmark-module", "iree-run-module"],
        Mode::CompileOnly | Mode::Bundle(_) => &["iree-compile"],
        Mode::FromBundle(_) => &["iree-benchmark-module", "iree-run-module"],
    }
}

/// Why the rows will not run on this machine: its device is missing here
/// (a GPU the runtime finds no device of). Local devices are always here;
/// a listing that fails lets the runs say what is wrong.
fn missing_device(device: &Device, toolchain: &Toolchain) -> Option<String> {
    let run_module = toolchain.tool("iree-run-module").ok()?;
    lockstep_iree::gpu::missing_device(&run_module, &device.runtime).map(|why| {
        format!(
            "{}no `{}` device on this machine: {why}",
            crate::rows::SKIPPED,
            device.name
        )
    })
}

/// Compiles, times (and verifies) every job with `toolchain`.
pub fn run(
    prepared: Prepared,
    toolchain: &Toolchain,
    cache: &Cache,
    sink: &dyn Sink,
) -> Result<Finished, Error> {
    for tool in needed_tools(&prepared.mode) {
        toolchain.tool(tool)?;
    }
    let (mut kernels, mut references) = (
        cache.enabled(Area::Kernels),
        cache.enabled(Area::References),
    );
    let mut verify = prepared.verify;
    // A bundle is built beside its place and moved there whole at the end
    // (a failed one leaves nothing); its modules are compiled into it.
    let staged = match &prepared.mode {
        Mode::Bundle(dir) => Some(lockstep_core::fs::StagedDir::beside(dir)?),
        _ => None,
    };
    let (no_runs, no_compile) = match &prepared.mode {
        Mode::Run => {
            let missing = missing_device(&prepared.device, toolchain);
            if let (None, Some(unresolved)) = (&missing, &prepared.device.unresolved) {
                return Err(unresolved.clone());
            }
            (missing, false)
        }
        Mode::CompileOnly | Mode::Bundle(_) => {
            if let Some(unresolved) = &prepared.device.unresolved {
                return Err(unresolved.clone());
            }
            if let Some(staged) = &staged {
                let (bundle_kernels, bundle_references) = crate::bundle::areas(staged.path());
                kernels = Some(bundle_kernels);
                // With --verify, every kernel's reference goes into the
                // bundle (without, a verifying run computes its own).
                references = prepared.verify.then_some(bundle_references);
                verify = prepared.verify;
            }
            (Some(crate::rows::COMPILED_ONLY.to_string()), false)
        }
        Mode::FromBundle(loaded) => {
            crate::bundle::check_runtime(loaded, toolchain)?;
            kernels = Some(loaded.kernels.clone());
            // The bundle's references when it carries them (--verify);
            // else the cache's: a bundle is read, never written.
            if loaded.dir.join("references").is_dir() {
                references = Some(loaded.references.clone());
            }
            (missing_device(&prepared.device, toolchain), true)
        }
    };
    let mut toolchain = toolchain.clone();
    if let Mode::FromBundle(loaded) = &prepared.mode {
        // The keys are the bundle's compiler's (the runtime here may have
        // no compiler at all).
        toolchain.identity = loaded.manifest.compiler.identity.clone();
        toolchain.compiler_version = loaded.manifest.compiler.version.clone();
    }
    let work = work_dir()?;
    // Rows are answered from (and recorded in) the results area only when
    // they would be timed and verified here, with the kernel cache on;
    // `--no-cache` measures them again and records the new results.
    let results = cache.enabled(Area::Results).filter(|_| kernels.is_some());
    let record = match (&prepared.mode, &no_runs, results) {
        (Mode::Run, None, Some(area)) => crate::recorded::Record::new(
            area,
            !prepared.no_cache,
            runtime_tools(&toolchain),
            vec![
                format!("device={}", prepared.device.runtime),
                format!("run-flags={}", prepared.device.run_flags.join(" ")),
                format!("splat={:?}", prepared.splat),
                format!("threads={:?}", prepared.threads),
                format!("seed={}", run::VERIFY_SEED),
            ],
        ),
        _ => None,
    };
    let opts = Options {
        toolchain: toolchain.clone(),
        device: prepared.device,
        compile_flags: prepared.compile_flags,
        jobs: prepared.workers,
        timeout: prepared.timeout,
        threads: prepared.threads,
        splat: prepared.splat,
        verify,
        cache: kernels,
        references,
        max_bytes: prepared
            .max_bytes
            .unwrap_or_else(|| run::default_max_bytes(work.path())),
        work_dir: work.path().to_path_buf(),
        logs_cited: AtomicBool::new(false),
        no_runs,
        no_compile,
        record,
    };
    let summary = run::run(&prepared.jobs, &opts, sink);
    if let (Mode::Bundle(dir), Some(staged)) = (&prepared.mode, staged) {
        let flags = opts.all_flags();
        let written = crate::bundle::write(
            staged.path(),
            &prepared.jobs,
            &summary,
            &toolchain,
            &opts.device,
            &flags,
            run::VERIFY_SEED,
            verify,
        )?;
        staged
            .install()
            .map_err(|e| e.context(format!("cannot move the bundle into {}", dir.display())))?;
        sink.note(format!(
            "bundle written to {} ({} for {}, compiled by {}; bundle.json sha256 {})",
            dir.display(),
            lockstep_core::words::count(written.kernels.len(), "kernel", "kernels"),
            opts.device.runtime,
            toolchain.compiler_stamp(),
            written.sha256
        ));
    }
    let failed = summary.failed();
    let skipped = summary.skipped();
    sink.note(format!(
        "{}: {} ok, {} failed, {} not run ({} compiled, {} from the cache){}",
        lockstep_core::words::count(summary.rows.len(), "kernel", "kernels"),
        summary.rows.len() - failed - skipped,
        failed,
        skipped,
        summary.compiled,
        summary.cache_hits,
        match summary.recorded {
            0 => String::new(),
            n => format!(
                "; {} answered from {} record (unchanged kernel, runtime, device and machine; --no-cache measures again)",
                lockstep_core::words::count(n, "row", "rows"),
                if n == 1 { "its" } else { "their" }
            ),
        }
    ));
    let kept = match opts.logs_cited.load(Ordering::Relaxed) {
        true => {
            // Kept on purpose: no owner, so no later sweep removes it.
            let _ = std::fs::remove_file(work.path().join(OWNER));
            let kept = work.keep();
            sink.note(format!("logs kept in {}", kept.display()));
            Some(kept)
        }
        false => None,
    };
    Ok(Finished { summary, kept })
}

/// The runtime tools' sha256, part of every row's record key (`None` when
/// one cannot be read: nothing is recorded).
fn runtime_tools(toolchain: &Toolchain) -> Option<Vec<String>> {
    let memo = lockstep_core::paths::file_hashes();
    ["iree-benchmark-module", "iree-run-module"]
        .iter()
        .map(|tool| {
            let path = toolchain.tool(tool).ok()?;
            let sha = lockstep_core::hash::sha256_file_memo(&path, &memo).ok()?;
            Some(format!("{tool}={sha}"))
        })
        .collect()
}

/// The prefix of work directories in the temporary directory.
const PREFIX: &str = "lockstep-bench-";
/// The file in a work directory naming the pid of the lockstep using it.
const OWNER: &str = ".lockstep-owner";

/// A new work directory in the temporary directory, naming this process as
/// its owner, after removing those whose owner died ([`sweep_stale`]).
fn work_dir() -> Result<tempfile::TempDir, Error> {
    sweep_stale(&std::env::temp_dir());
    let work = tempfile::Builder::new()
        .prefix(PREFIX)
        .tempdir()
        .map_err(|e| Error::failed("cannot create a temporary directory").cause(e.to_string()))?;
    let owner = work.path().join(OWNER);
    fs_err::write(&owner, format!("{}\n", std::process::id()))
        .map_err(|e| Error::failed("cannot set up bench's work directory").cause(e.to_string()))?;
    Ok(work)
}

/// Removes the work directories in `tmp` whose owner is no longer running
/// (a bench killed by a signal could not remove its own); returns how many.
/// Directories without an owner (kept for their logs, or not lockstep's)
/// and those of a running lockstep are left alone.
pub fn sweep_stale(tmp: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = entry.file_name().to_string_lossy().starts_with(PREFIX)
            && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if !ours {
            continue;
        }
        let owner = std::fs::read_to_string(path.join(OWNER))
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok());
        let Some(pid) = owner else {
            continue;
        };
        let mine = u32::try_from(pid).is_ok_and(|p| p == std::process::id());
        if !mine
            && !lockstep_core::process::pid_alive(pid)
            && std::fs::remove_dir_all(&path).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_directories_of_dead_owners_are_swept_and_no_others() {
        let tmp = tempfile::tempdir().unwrap();
        let make = |name: &str, owner: Option<String>| {
            let dir = tmp.path().join(name);
            std::fs::create_dir_all(dir.join("inputs/0")).unwrap();
            std::fs::write(dir.join("inputs/0/in0.bin"), [0u8; 64]).unwrap();
            if let Some(owner) = owner {
                std::fs::write(dir.join(OWNER), owner).unwrap();
            }
            dir
        };
        let dead = make("lockstep-bench-dead", Some("999999999\n".into()));
        let alive = make(
            "lockstep-bench-alive",
            Some(format!("{}\n", std::process::id())),
        );
        let kept = make("lockstep-bench-kept", None);
        let other = make("someone-else", Some("999999999".into()));
        let garbage = make("lockstep-bench-garbage", Some("not a pid".into()));
        assert_eq!(sweep_stale(tmp.path()), 1);
        assert!(!dead.exists());
        for dir in [alive, kept, other, garbage] {
            assert!(dir.exists(), "{}", dir.display());
        }
    }
}
